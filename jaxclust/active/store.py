"""Append-only, crash-safe store of oracle answers, so an annotation session can be killed and resumed, and
several annotators can work on one store at once.

What the store promises:

* **Durable answers.** :meth:`AnswerStore.append` returns only after the answer reached the disk (an SQLite
  commit with ``synchronous=FULL``, or a JSON line written and ``fsync``'d). A session killed at any point
  (``kill -9``, a power cut after the call returned) keeps every answer whose ``append`` returned.
* **Intact records are never dropped.** Opening a damaged JSON-lines store keeps every intact record, in order.
  A damaged line (not JSON, not a record, a field out of range) is copied with its exact bytes to the side file
  ``<store>.corrupt`` (one JSON line per damaged line: line number, reason, text and base64 bytes), a
  :class:`~jaxclust.errors.StoreRecoveryWarning` names its line number, and the store file is rewritten without
  it, atomically (temporary file, ``fsync``, ``os.replace``): the intact lines keep their exact bytes. A last
  line cut short by a crash (no trailing newline) is the only thing a crash can leave behind; it is repaired
  the same way (kept if it is a complete record, else set aside). A file in which no line is a jaxclust record
  is refused (:class:`~jaxclust.errors.StoreError`) and left untouched.
* **Nothing is deleted.** Undoing an answer (:meth:`AnswerStore.undo`) appends an *undo record*; the answer
  stays in the file, and :attr:`AnswerStore.records` leaves it out. :attr:`AnswerStore.all_answers` lists
  every answer ever given, undone ones included.
* **One process at a time (default).** The store holds an exclusive lock (``flock`` on ``<store>.lock``,
  released by the operating system when the process dies); a second process gets
  :class:`~jaxclust.errors.StoreLockedError` naming the other process (or waits ``wait`` seconds).
* **Several annotators at once (``shared=True``, SQLite only).** Every shared session holds a *shared* lock,
  so shared sessions run side by side (a single-writer session is refused while they run, and the other way
  round). SQLite runs in WAL mode and every write is a short ``BEGIN IMMEDIATE`` transaction (waiting up to
  ``busy_timeout`` seconds for another writer), so concurrent writers never lose an answer. A session
  :meth:`claims <AnswerStore.claim>` a question before showing it: a row in the ``pending`` table (pair,
  session, annotator, time), refused while another live session holds the pair or once the pair is answered.
  A claim lasts as long as its session: each shared session locks ``<store>.sessions/<token>.lock`` for its
  life, so the claims of a killed session are released as soon as another session looks at them, and those of
  a live one never expire however long the person takes. Answering deletes the claim in the same transaction
  that stores the answer. :meth:`AnswerStore.refresh` loads what the other sessions stored since.
  JSON-lines stores take one writer at a time.
* **One thread at a time.** An ``AnswerStore`` may be used from any thread, but not from two at once: a
  program that answers from several threads (``jaxclust serve``) holds one lock around every call.
* **Named errors.** A folder, a missing folder, a file that is not a store, a read-only or damaged SQLite file
  raise :class:`~jaxclust.errors.StoreError` naming the path and what to do, never a raw ``sqlite3`` error; a
  store written by a newer jaxclust is refused the same way.

Two formats, chosen by the file suffix, each a back end in its own module:

* ``.sqlite`` / ``.sqlite3`` / ``.db``: SQLite tables ``meta``, ``answers``, ``undos``, ``fits`` and
  ``pending`` (:mod:`jaxclust.active.store_sqlite`);
* anything else (e.g. ``.jsonl``): JSON lines, the first one ``{"meta": {...}}``; undo records are lines
  ``{"undo": {"target": id, "i": i, "j": j, "annotator": name}}`` and fit records ``{"fit": {...}}``
  (:mod:`jaxclust.active.store_jsonl`).

The record format, the checks that tell an intact record from a damaged one and the in-memory log both back ends
fill are in :mod:`jaxclust.active.answer_log`.

Answer records are dicts ``{"i": int, "j": int, "answer": "must" | "cannot" | "unknown", "kept": bool,
"round": int, "annotator": str | None}`` with ``i < j``; ``kept`` is False for an answer dropped because it
contradicted earlier ones, ``annotator`` names who gave it (None for answers stored before annotators were
recorded; JSON lines leave the field out then). Store format version 2 added the annotator and undo records;
older stores are read as they are (SQLite gains the new column and tables when opened; no record is rewritten).
Fit records (:meth:`AnswerStore.append_fit`) let :class:`~jaxclust.active.ActiveLearner` resume exactly where an
uninterrupted session would be: they hold the seed, position and final chain states of each model fit.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

from jaxclust.active.answer_log import (
    ANSWERS,
    VERSION,
    AnswerLog,
    Update,
    check_annotator,
    check_shared_path,
    check_store_path,
    corrupt_path,
    default_annotator,
    fit_problem,
    is_int,
    is_sqlite_path,
    make_record,
    plain_meta,
    public_record,
)
from jaxclust.active.locks import SessionFile, StoreLock, sessions_folder
from jaxclust.active.store_jsonl import JsonlBackend
from jaxclust.active.store_sqlite import SqliteBackend
from jaxclust.errors import InvalidInputError, StoreError, StoreMismatchError

#: The fields of an exported answer (:meth:`AnswerStore.export_rows`).
EXPORT_KEYS = ("i", "j", "answer", "annotator", "kept", "round")

__all__ = [
    "AnswerStore",
    "EXPORT_KEYS",
    "ANSWERS",
    "Update",
    "check_store_path",
    "check_annotator",
    "data_fingerprint",
    "default_annotator",
]


def data_fingerprint(X) -> str:
    """Short SHA-256 of the float64 feature matrix (n, D), stored with the answers (meta ``fingerprint``) so that
    answers about other data are refused."""
    import numpy as np  # deferred: reading a store needs no NumPy

    X = np.ascontiguousarray(X, dtype=np.float64)
    return hashlib.sha256(repr(X.shape).encode() + X.tobytes()).hexdigest()[:16]


class AnswerStore:
    """Durable append-only answer log (see the module docstring for its promises).

    Parameters
    ----------
    path : str or Path
        The store file; created if missing (its folder must exist). ``.sqlite``/``.sqlite3``/``.db``: SQLite;
        anything else: JSON lines.
    meta : dict, optional
        Facts about the session (e.g. ``{"n": 178, "fingerprint": "..."}``). Written when the store is
        created; when it already exists every given key must match the stored value, else
        :class:`~jaxclust.errors.StoreMismatchError` (an ``InvalidInputError``: resuming on different data
        would attach answers to the wrong items).
    wait : float
        Seconds to wait for another process to release the store before raising ``StoreLockedError``.
    shared : bool
        Multi-annotator mode (SQLite only): several processes may have the store open at once, each
        :meth:`claims <claim>` a question before asking it, and :meth:`refresh` loads the others' answers.
    busy_timeout : float
        Shared mode: seconds a write waits for another process's write transaction (they last milliseconds).

    Raises
    ------
    StoreError
        The path is a folder, its folder is missing, the file is not a jaxclust store, is read-only or damaged
        beyond the record level (a damaged SQLite file), or ``shared`` is asked of a JSON-lines store.
    StoreLockedError
        Another process has the store open (in the other mode, or in the default mode).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        meta: dict[str, Any] | None = None,
        *,
        wait: float = 0.0,
        shared: bool = False,
        busy_timeout: float = 30.0,
        readonly: bool = False,
    ):
        if not isinstance(path, str | os.PathLike) or isinstance(os.fspath(path), bytes):
            raise InvalidInputError(f"path: expected a file path (str or os.PathLike), got {path!r}")
        meta = plain_meta(meta)
        self.path = Path(path)
        self.shared = bool(shared)
        self.readonly = bool(readonly)
        if self.readonly and not self.path.is_file():
            raise StoreError(f"answer store {self.path}: is not a file (a read-only open creates nothing)")
        self.session = uuid.uuid4().hex[:16]
        self.n_appended = 0  # answers stored through this object
        self._log = AnswerLog(self.path)
        self._backend: SqliteBackend | JsonlBackend | None = None
        self._closed_meta: dict[str, Any] = {}
        self._lock: StoreLock | None = None
        self._session_file: SessionFile | None = None
        if self.shared:
            check_shared_path(self.path)
        if not self.readonly:  # a reader takes no lock: any number read beside the writers
            check_store_path(self.path)
            self._lock = StoreLock(self.path, wait, shared=self.shared)
        try:
            if self.shared and not self.readonly:
                self._session_file = SessionFile(self.path, self.session, None)
            if is_sqlite_path(self.path):
                self._backend = SqliteBackend(
                    self.path, self._log, shared=self.shared, busy_timeout=busy_timeout, session=self.session
                )
            else:
                self._backend = JsonlBackend(self.path, self._log)
            self._backend.readonly = self.readonly
            stored = self._backend.open()
            version = stored.get("version")
            if is_int(version) and version > VERSION:
                raise StoreError(
                    f"answer store {self.path}: was written by a newer jaxclust (store format {version}, this "
                    f"one reads up to {VERSION}); upgrade jaxclust to open it"
                )
            if self.readonly:
                self._mismatch(stored, meta or {})
                self._backend.meta = dict(stored)
            else:
                self._backend.write_meta(stored, meta or {}, self._mismatch)
            self._log.forget_news()  # refresh() reports what others store from now on
        except BaseException:
            self.close()
            raise

    @property
    def meta(self) -> dict[str, Any]:
        """The facts stored with the answers (``n``, the data's fingerprint, the format version, ...)."""
        return self._backend.meta if self._backend is not None else self._closed_meta

    @property
    def corrupt_path(self) -> Path:
        """The side file that receives damaged records: ``<store>.corrupt``."""
        return corrupt_path(self.path)

    # --- meta ----------------------------------------------------------------------------------------------------
    def check_meta(self, given: dict[str, Any]) -> dict[str, Any]:
        """Check ``given`` against the stored meta (:class:`~jaxclust.errors.StoreMismatchError` on a
        mismatch) and store new keys."""
        return dict(self._backend.write_meta(self.meta, given, self._mismatch))

    def _mismatch(self, stored: dict[str, Any], given: dict[str, Any]) -> None:
        for key, value in given.items():
            if key in stored and stored[key] != json.loads(json.dumps(value)):
                raise StoreMismatchError(
                    f"store {self.path}: was created with {key}={stored[key]!r}, "
                    f"this session has {key}={value!r}; "
                    "use a new store file for different data",
                    key=key,
                    stored=stored[key],
                    given=value,
                )

    # --- what is in effect ---------------------------------------------------------------------------------------
    @property
    def records(self) -> list[dict[str, Any]]:
        """The answers in effect (every stored answer except the undone ones), in the order they were given
        (copies). Each has ``annotator`` (None for answers stored without one)."""
        return [dict(r) for r in self._log.resolve()[0]]

    @property
    def all_answers(self) -> list[dict[str, Any]]:
        """Every answer ever stored, undone ones included, in order: the record plus ``id`` (its number in
        the store) and ``undone`` (True once an undo record cancelled it)."""
        undone = self._log.resolve()[1]
        return [
            {**public_record(a), "id": a["id"], "undone": k in undone}
            for k, a in enumerate(self._log.answers)
        ]

    def export_rows(self, include_undone: bool = False) -> list[dict[str, Any]]:
        """The answers as they are exported (``jaxclust store export``, the web annotator's answers.jsonl):
        ``i``, ``j``, ``answer``, ``annotator``, ``kept``, ``round`` in the order given; with
        ``include_undone`` every answer ever stored, with ``undone``."""
        keys = EXPORT_KEYS + (("undone",) if include_undone else ())
        return [{k: a[k] for k in keys} for a in self.all_answers if include_undone or not a["undone"]]

    @property
    def fits(self) -> list[dict[str, Any]]:
        """The fit records still valid, oldest first (see :meth:`append_fit`): a fit made after an answer that
        was later undone is left out, so a resumed session never builds on an undone answer."""
        return [dict(f) for f in self._log.resolve()[2]]

    def __len__(self) -> int:
        return len(self._log.resolve()[0])

    # --- writing -------------------------------------------------------------------------------------------------
    def _open_backend(self) -> SqliteBackend | JsonlBackend:
        """The back end to write through (every caller writes)."""
        if self._backend is None:
            raise StoreError(f"answer store {self.path}: is closed")
        if self.readonly:
            raise StoreError(f"answer store {self.path}: is open read-only; nothing can be stored through it")
        return self._backend

    def append(
        self,
        i: int,
        j: int,
        answer: str,
        kept: bool = True,
        round: int = 0,
        annotator: str | None = None,
    ) -> dict[str, Any]:
        """Store one answer durably and return its record; returns only after the data reached the disk.

        ``annotator`` names who gave it (None: not recorded). In shared mode the session's claim on the pair
        is released in the same transaction.
        """
        rec = make_record(i, j, answer, kept, round, annotator)
        backend = self._open_backend()
        n = backend.meta.get("n")
        limit = n if is_int(n) else 2**63
        for name, v in (("i", i), ("j", j)):
            if int(v) >= limit:
                raise InvalidInputError(
                    f"{name}: item {int(v)} is out of range for {self.path}"
                    + (f", whose data has {n} items (valid: 0..{n - 1})" if limit == n else "")
                )
        backend.append_answer(rec)
        self.n_appended += 1
        return dict(rec)

    def undo(self, annotator: str | None = None) -> dict[str, Any] | None:
        """Undo the latest answer still in effect (given by ``annotator``, or by anyone when None).

        Appends an undo record (the answer stays in the file, see :attr:`all_answers`) and returns the undone
        record, or None when there is nothing to undo. A resumed session then asks as if the answer had never
        been given: fit records made after it are not used (:attr:`fits`).
        """
        check_annotator(annotator)
        target = self._open_backend().append_undo(annotator)
        return None if target is None else public_record(target)

    def append_fit(self, fit: dict[str, Any]) -> None:
        """Store a model-fit record durably: ``n_fit`` (the learner's fit counter), ``seed``, ``n_answers``
        (answers it was fitted on), ``round`` and ``pos`` (where in the session its samples are first used),
        ``warm`` (started from the previous fit's ``final_labels``), ``n_burnin``, ``settings`` (a digest of
        the learner and model settings), ``final_labels`` (the chains' last states, or None) and, for a model of
        classes of components, ``final_components`` (the components in those states). The store
        adds ``log``: how many answer and undo records existed, so that a later undo can tell which fits it
        invalidates.
        """
        fit = json.loads(json.dumps(fit))
        fit["log"] = self._log.counts()
        problem = fit_problem(fit)
        if problem is not None:
            raise InvalidInputError(f"fit: {problem}")
        self._open_backend().append_fit(fit)

    # --- several annotators --------------------------------------------------------------------------------------
    def claim(self, i: int, j: int, annotator: str | None = None) -> bool:
        """Shared mode: claim the question ``(i, j)`` for this session before asking it.

        Returns False (and claims nothing) while another live session holds the pair, or when the pair already
        has an answer in effect; else records the claim (pair, session, annotator, time) and releases this
        session's other claims for the same annotator (each annotator is asked one question at a time; a team
        server's session holds one question for each of its annotators). Every session on a store, one
        annotator's or a team's, claims this way, so no two of them hand out the same pair. Outside shared mode
        nobody else can write: always True.
        """
        if not self.shared:
            return True
        return self._open_backend().claim(i, j, check_annotator(annotator))

    def release(self, annotator: str | None = None) -> None:
        """Shared mode: give back this session's claim for ``annotator`` (a question skipped, or handed to
        someone else); nothing outside shared mode."""
        if self.shared:
            self._open_backend().release(check_annotator(annotator))

    def pending(self) -> list[dict[str, Any]]:
        """Shared mode: the questions claimed and not yet answered, ``{"i", "j", "annotator", "claimed",
        "mine"}`` (empty outside shared mode)."""
        return [] if self._backend is None else self._backend.pending()

    def refresh(self) -> Update:
        """Load what other sessions stored since the last call (shared mode; outside it nobody else writes).

        Returns an :class:`Update`: their new answers still in effect, and the answers they undid.
        """
        if self._backend is not None:
            self._backend.sync()
        elif self.shared:
            raise StoreError(f"answer store {self.path}: is closed")
        return self._log.news()

    def close(self) -> None:
        """Release this session's claims, close the file and release the locks (idempotent)."""
        if getattr(self, "_backend", None) is not None:
            self._closed_meta = self._backend.meta
            try:
                self._backend.close()
            finally:
                self._backend = None
        if getattr(self, "_session_file", None) is not None:
            self._session_file.release()
            self._session_file = None
            try:
                sessions_folder(self.path).rmdir()  # only when it is empty: the last session out
            except OSError:
                pass
        if getattr(self, "_lock", None) is not None:
            self._lock.release()
            self._lock = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __enter__(self) -> AnswerStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = (", shared" if self.shared else "") + (", read-only" if self.readonly else "")
        return f"AnswerStore({str(self.path)!r}, {len(self)} answers{mode})"
