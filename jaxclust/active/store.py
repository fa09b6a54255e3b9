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
* **Named errors.** A folder, a missing folder, a file that is not a store, a read-only or damaged SQLite file
  raise :class:`~jaxclust.errors.StoreError` naming the path and what to do, never a raw ``sqlite3`` error; a
  store written by a newer jaxclust is refused the same way.

Two formats, chosen by the file suffix:

* ``.sqlite`` / ``.sqlite3`` / ``.db``: SQLite tables ``meta``, ``answers``, ``undos``, ``fits`` and
  ``pending``;
* anything else (e.g. ``.jsonl``): JSON lines, the first one ``{"meta": {...}}``; undo records are lines
  ``{"undo": {"target": id, "i": i, "j": j, "annotator": name}}`` and fit records ``{"fit": {...}}``.

Answer records are dicts ``{"i": int, "j": int, "answer": "must" | "cannot" | "unknown", "kept": bool,
"round": int, "annotator": str | None}`` with ``i < j``; ``kept`` is False for an answer dropped because it
contradicted earlier ones, ``annotator`` names who gave it (None for answers stored before annotators were
recorded; JSON lines leave the field out then). Store format version 2 added the annotator and undo records;
older stores are read as they are (SQLite gains the new column and tables when opened; no record is rewritten).
Fit records (:meth:`AnswerStore.append_fit`) let :class:`~jaxclust.active.ActiveLearner` resume exactly where an
uninterrupted session would be: they hold the seed, position and final chain states of each model fit.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import time
import uuid
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from jaxclust.active.locks import SessionFile, StoreLock, session_alive, sessions_folder
from jaxclust.errors import (
    InvalidInputError,
    StoreError,
    StoreLockedError,
    StoreMismatchError,
    StoreRecoveryWarning,
)
from jaxclust.files import append_durably, atomic_write, fsync_dir

__all__ = ["AnswerStore", "ANSWERS", "Update", "check_store_path", "check_annotator", "default_annotator"]

ANSWERS = ("must", "cannot", "unknown")
_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
_VERSION = 2
_FORMAT = {"store": "jaxclust answers", "version": _VERSION}
_ANSWER_KEYS = ("i", "j", "answer", "kept", "round")
_OPTIONAL_ANSWER_KEYS = ("annotator",)
_UNDO_KEYS = ("target", "i", "j")
_FIT_KEYS = ("n_fit", "seed", "n_answers", "round", "pos", "warm", "n_burnin", "settings", "final_labels")
_OUR_TABLES = {"meta", "answers", "fits", "undos", "pending", "sqlite_sequence"}
_MAX_ANNOTATOR = 100


class Update(NamedTuple):
    """What other sessions stored since the last :meth:`AnswerStore.refresh`: their new answers (records
    still in effect) and the answers they undid (records)."""

    answers: list
    undone: list


def default_annotator() -> str:
    """The operating-system user name (``"unknown"`` where it cannot be found)."""
    import getpass

    try:
        name = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers
        name = ""
    return name if check_annotator(name, quiet=True) else "unknown"


def check_annotator(value: Any, name: str = "annotator", quiet: bool = False) -> Any:
    """``value`` if it is a valid annotator name (a non-empty string of at most 100 printable characters, or
    None); else ``InvalidInputError`` naming ``name`` (or False when ``quiet``)."""
    ok = value is None or (
        isinstance(value, str)
        and 0 < len(value.strip()) == len(value) <= _MAX_ANNOTATOR
        and value.isprintable()
    )
    if quiet:
        return ok and value is not None
    if not ok:
        raise InvalidInputError(
            f"{name}: expected a name of 1 to {_MAX_ANNOTATOR} printable characters without surrounding "
            f"spaces, got {value!r}"
        )
    return value


def _plain_meta(meta: Any) -> dict[str, Any] | None:
    """``meta`` with NumPy scalars as Python numbers; a value JSON cannot hold raises naming its key."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise InvalidInputError(f"meta: expected a dict, got {type(meta).__name__}")
    out = {}
    for key, value in meta.items():
        if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()  # a NumPy scalar (np.int64(12)) is the number it holds
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"meta[{key!r}]: expected a JSON value (number, string, list, dict), got {type(value).__name__}"
            ) from None
        out[key] = value
    return out


def _record(
    i: int, j: int, answer: str, kept: bool = True, round: int = 0, annotator: str | None = None
) -> dict[str, Any]:
    if answer not in ANSWERS:
        raise InvalidInputError(f"answer: expected one of {ANSWERS}, got {answer!r}")
    for name, v in (("i", i), ("j", j), ("round", round)):
        if isinstance(v, bool) or not hasattr(v, "__index__") or int(v) < 0:
            raise InvalidInputError(f"{name}: expected a non-negative integer, got {v!r}")
    i, j = int(i), int(j)
    if i == j:
        raise InvalidInputError(f"i, j: a pair of two different items, got ({i}, {j})")
    check_annotator(annotator)
    return {
        "i": min(i, j),
        "j": max(i, j),
        "answer": answer,
        "kept": bool(kept),
        "round": int(round),
        "annotator": annotator,
    }


def _public(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry[k] for k in (*_ANSWER_KEYS, "annotator")}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pair_problem(obj: dict, n: int | None) -> str | None:
    for k in ("i", "j"):
        if not _is_int(obj[k]) or obj[k] < 0:
            return f"{k} is {obj[k]!r}, not a non-negative integer"
    if obj["i"] == obj["j"]:
        return f"i and j are both {obj['i']}"
    if n is not None and max(obj["i"], obj["j"]) >= n:
        return f"item {max(obj['i'], obj['j'])} is out of range for {n} items"
    return None


def _annotator_problem(obj: dict) -> str | None:
    if (
        "annotator" in obj
        and not check_annotator(obj["annotator"], quiet=True)
        and obj["annotator"] is not None
    ):
        return f"annotator is {obj['annotator']!r}, not a name"
    return None


def _answer_problem(obj: dict, n: int | None) -> str | None:
    """Why ``obj`` is not a valid answer record (None if it is one)."""
    missing = [k for k in _ANSWER_KEYS if k not in obj]
    if missing:
        return f"missing field {missing[0]!r}"
    extra = sorted(k for k in obj if k not in _ANSWER_KEYS + _OPTIONAL_ANSWER_KEYS)
    if extra:
        return f"unexpected field {extra[0]!r}"
    if not _is_int(obj["round"]) or obj["round"] < 0:
        return f"round is {obj['round']!r}, not a non-negative integer"
    problem = _pair_problem(obj, n)
    if problem is not None:
        return problem
    if obj["answer"] not in ANSWERS:
        return f"answer is {obj['answer']!r}, not one of {ANSWERS}"
    if not isinstance(obj["kept"], bool):
        return f"kept is {obj['kept']!r}, not true/false"
    return _annotator_problem(obj)


def _undo_problem(obj: Any, n: int | None) -> str | None:
    if not isinstance(obj, dict):
        return "undo is not an object"
    missing = [k for k in _UNDO_KEYS if k not in obj]
    if missing:
        return f"undo record without {missing[0]!r}"
    extra = sorted(k for k in obj if k not in _UNDO_KEYS + _OPTIONAL_ANSWER_KEYS)
    if extra:
        return f"undo record with unexpected field {extra[0]!r}"
    if not _is_int(obj["target"]) or obj["target"] < 1:
        return f"undo target is {obj['target']!r}, not an answer number"
    return _pair_problem(obj, n) or _annotator_problem(obj)


def _fit_problem(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return "fit is not an object"
    missing = [k for k in _FIT_KEYS if k not in obj]
    if missing:
        return f"fit record without {missing[0]!r}"
    for k in ("n_fit", "seed", "n_answers", "round", "pos"):
        if not _is_int(obj[k]) or obj[k] < 0:
            return f"fit {k} is {obj[k]!r}"
    if not isinstance(obj["warm"], bool) or not isinstance(obj["settings"], str):
        return "fit warm/settings of the wrong type"
    if obj["n_burnin"] is not None and not _is_int(obj["n_burnin"]):
        return f"fit n_burnin is {obj['n_burnin']!r}"
    fl = obj["final_labels"]
    if fl is not None and not (
        isinstance(fl, list) and all(isinstance(r, list) and all(_is_int(v) for v in r) for r in fl)
    ):
        return "fit final_labels is not a list of integer lists"
    log = obj.get("log")
    if log is not None and not (
        isinstance(log, list) and len(log) == 2 and all(_is_int(v) and v >= 0 for v in log)
    ):
        return f"fit log is {log!r}"
    return None


def _classify(obj: Any, n: int | None) -> tuple[str | None, str | None]:
    """``(kind, problem)``: kind is "meta", "answer", "undo" or "fit"; problem is None for a valid record."""
    if not isinstance(obj, dict):
        return None, f"a JSON {type(obj).__name__}, not a record"
    if "meta" in obj:
        if len(obj) != 1 or not isinstance(obj["meta"], dict):
            return None, "malformed meta record"
        return "meta", None
    for kind, check in (("fit", lambda o: _fit_problem(o)), ("undo", lambda o: _undo_problem(o, n))):
        if kind in obj:
            if len(obj) != 1:
                return None, f"malformed {kind} record"
            problem = check(obj[kind])
            return (kind, None) if problem is None else (None, problem)
    problem = _answer_problem(obj, n)
    return ("answer", None) if problem is None else (None, problem)


def check_store_path(path: str | os.PathLike) -> None:
    """Raise ``StoreError`` when ``path`` cannot be an answer store (a folder, a missing folder, a file that
    cannot be read or written, a folder where it cannot be created); creates nothing.
    """
    p = Path(path)
    parent = p.parent
    if p.is_dir():
        raise StoreError(f"answer store {p}: is a folder; pass a file path such as {p / 'answers.sqlite'}")
    if not parent.is_dir():
        raise StoreError(
            f"answer store {p}: the folder {parent} does not exist; create it or pass another path"
        )
    if p.exists():
        if not p.is_file():
            raise StoreError(f"answer store {p}: is not a regular file; pass a file path")
        if not os.access(p, os.R_OK):
            raise StoreError(f"answer store {p}: cannot be read (permission denied); check its permissions")
        if not os.access(p, os.W_OK):
            raise StoreError(
                f"answer store {p}: is read-only; make it writable (chmod u+w {p}) or copy it to a new "
                "path and pass the copy"
            )
    elif not os.access(parent, os.W_OK):
        raise StoreError(f"answer store {p}: cannot be created, the folder {parent} is read-only")


def is_sqlite_path(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an SQLite store (by its suffix)."""
    return Path(path).suffix.lower() in _SQLITE_SUFFIXES


def check_shared_path(path: str | os.PathLike, name: str = "shared") -> None:
    """``StoreError`` when several annotators cannot share ``path`` (a JSON-lines store); creates nothing."""
    if not is_sqlite_path(path):
        raise StoreError(
            f"{name}: answer store {path} is JSON lines, which take one writer at a time; for several "
            "annotators at once use an SQLite store (.sqlite, .sqlite3 or .db)"
        )


# --- the store ----------------------------------------------------------------------------------------------


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
    ):
        if not isinstance(path, str | os.PathLike) or isinstance(os.fspath(path), bytes):
            raise InvalidInputError(f"path: expected a file path (str or os.PathLike), got {path!r}")
        meta = _plain_meta(meta)
        self.path = Path(path)
        self.shared = bool(shared)
        self.session = uuid.uuid4().hex[:16]
        self._sqlite = is_sqlite_path(self.path)
        self._answers: list[dict[str, Any]] = []  # every answer record, with its "id"
        self._undos: list[dict[str, Any]] = []  # every undo record, with its "id"
        self._fits: list[dict[str, Any]] = []
        self._cache: tuple | None = None  # (records, undone answer ids, valid fits)
        self._seq = {"answers": 0, "undos": 0, "fits": 0}  # SQLite: last row read from each table
        self._news: list[dict[str, Any]] = []  # answers of other sessions not yet reported by refresh()
        self._undone_news: list[dict[str, Any]] = []  # their undo records, not yet reported
        self._busy = float(busy_timeout)
        self.n_appended = 0  # answers stored through this object
        self._orphans = 0  # undo records of no answer, already reported
        self._conn: sqlite3.Connection | None = None
        self._fd: int | None = None
        self._lock: StoreLock | None = None
        self._session_file: SessionFile | None = None
        if self.shared:
            check_shared_path(self.path)
        check_store_path(self.path)
        self._lock = StoreLock(self.path, wait, shared=self.shared)
        try:
            if self.shared:
                self._session_file = SessionFile(self.path, self.session, None)
            stored = self._open_sqlite() if self._sqlite else self._open_jsonl()
            version = stored.get("version")
            if _is_int(version) and version > _VERSION:
                raise StoreError(
                    f"answer store {self.path}: was written by a newer jaxclust (store format {version}, this "
                    f"one reads up to {_VERSION}); upgrade jaxclust to open it"
                )
            self.meta = self._check_meta(stored, meta or {})
            self._news, self._undone_news = [], []  # refresh() reports what others store from now on
        except BaseException:
            self.close()
            raise

    # --- SQLite
    # -----------------------------------------------------------------------------------------------
    def _identity(self) -> tuple[int, int] | None:
        """(device, inode) of the file the path names now (links followed), None when it is gone."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _check_same_file(self, opened: tuple[int, int] | None) -> None:
        """The file at the path must still be the one this session opened: never write where nobody reads."""
        now = self._identity()
        if opened is None or now == opened:
            return
        what = "deleted" if now is None else "replaced by another file"
        raise StoreError(
            f"answer store {self.path}: was {what} while this session had it open (another program moved, "
            "replaced or removed it); nothing more is written, so that no answer goes to a file nobody reads. "
            "The answers this session stored went to the file it opened; put that file back or start a new "
            "session with the same command"
        )

    def _sqlite_error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        msg = str(exc)
        low = msg.lower()
        if "not a database" in low:
            hint = (
                "is not an SQLite database (it may be damaged, or another kind of file); move it aside (keep "
                "it if it held answers) and pass a new path, or use a .jsonl store"
            )
        elif "malformed" in low or "corrupt" in low:
            hint = (
                "is damaged (SQLite: database disk image is malformed); keep a copy and try "
                f"'sqlite3 {self.path} .recover', or pass a new path"
            )
        elif "readonly" in low or "read-only" in low:
            hint = f"is read-only; make it and its folder writable (chmod u+w {self.path}) or pass a copy"
        elif "locked" in low or "busy" in low:
            return StoreLockedError(
                f"answer store {self.path}: is locked by another program (SQLite: {msg}); close it and run again",
                path=str(self.path),
            )
        elif "no such column" in low or "no such table" in low:
            hint = "is an SQLite database but not a jaxclust answer store; pass a new path"
        else:
            hint = f"could not be {doing} (SQLite: {msg}); check the file and its folder"
        return StoreError(f"answer store {self.path}: {hint}")

    @contextmanager
    def _write(self, doing: str = "written"):
        """One short write transaction (``BEGIN IMMEDIATE``: it waits for, never deadlocks with, other
        writers); SQLite errors become named ``StoreError``s."""
        if self._conn is None:
            raise StoreError(f"answer store {self.path}: is closed")
        self._check_same_file(getattr(self, "_opened", None))
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, doing) from exc
        try:
            yield self._conn
        except BaseException as exc:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if isinstance(exc, sqlite3.Error):
                raise self._sqlite_error(exc, doing) from exc
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise self._sqlite_error(exc, doing) from exc

    @contextmanager
    def _snapshot(self):
        """One read transaction: the answers, undos and fits read inside it are one consistent state."""
        try:
            self._conn.execute("BEGIN")
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, "read") from exc
        try:
            yield
        finally:
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error:
                pass

    def _open_sqlite(self) -> dict[str, Any]:
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=self._busy if self.shared else 0.0, isolation_level=None
            )
            self._opened = self._identity()
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            # no table at all: a new database (another session may be creating it right now)
            if existed and tables and ("answers" not in tables or not tables <= _OUR_TABLES):
                raise StoreError(
                    f"answer store {self.path}: is an SQLite database but not a jaxclust answer store (tables: "
                    f"{', '.join(sorted(tables)) or 'none'}); nothing was changed, pass a new path"
                )
            self._conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, "opened") from exc
        if self.shared:
            self._wal()
        with self._write(
            "opened"
        ) as con:  # create, or bring an older store up to date (adds, never rewrites)
            con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            con.execute(
                "CREATE TABLE IF NOT EXISTS answers (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                " i INTEGER, j INTEGER, answer TEXT, kept INTEGER, round INTEGER, annotator TEXT)"
            )
            columns = {r[1] for r in con.execute("PRAGMA table_info(answers)")}
            if "annotator" not in columns:  # a version-1 store: its answers get annotator NULL
                con.execute("ALTER TABLE answers ADD COLUMN annotator TEXT")
                con.execute("UPDATE meta SET value = ? WHERE key = 'version'", (json.dumps(_VERSION),))
            con.execute("CREATE TABLE IF NOT EXISTS fits (seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)")
            con.execute(
                "CREATE TABLE IF NOT EXISTS undos (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                " target INTEGER, i INTEGER, j INTEGER, annotator TEXT)"
            )
            con.execute(
                "CREATE TABLE IF NOT EXISTS pending (i INTEGER, j INTEGER, session TEXT, annotator TEXT,"
                " claimed TEXT, PRIMARY KEY (i, j))"
            )
            if not self.shared:  # nobody else is in: claims left by shared sessions are stale
                con.execute("DELETE FROM pending")
        with self._snapshot():
            stored, damaged = self._read_meta()
            self._load(stored, damaged)
        return stored

    def _wal(self) -> None:
        """Switch to WAL (it persists in the file). SQLite does not wait for a busy database here, so two
        sessions opening a new store at once retry, up to ``busy_timeout``."""
        deadline = time.monotonic() + self._busy
        while True:
            try:
                mode = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
                if (
                    str(mode).lower() == "wal"
                    or str(self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower() == "wal"
                ):
                    return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc).lower() and "busy" not in str(exc).lower():
                    raise self._sqlite_error(exc, "opened") from exc
                if time.monotonic() >= deadline:
                    raise self._sqlite_error(exc, "opened") from exc
            except sqlite3.Error as exc:
                raise self._sqlite_error(exc, "opened") from exc
            time.sleep(0.02)

    def _read_meta(self) -> tuple[dict[str, Any], list]:
        stored: dict[str, Any] = {}
        damaged: list[tuple[str, bytes, str]] = []
        try:
            for key, value in self._conn.execute("SELECT key, value FROM meta"):
                try:
                    stored[key] = json.loads(value)
                except (TypeError, ValueError):
                    damaged.append((f"meta {key!r}", str(value).encode(), "meta value is not JSON"))
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, "opened") from exc
        return stored, damaged

    def _load(self, stored: dict[str, Any] | None = None, damaged: list | None = None) -> None:
        """Read the SQLite rows written since the last call (all of them the first time)."""
        stored = self.meta if stored is None else stored
        damaged = [] if damaged is None else damaged
        n = stored.get("n") if _is_int(stored.get("n")) else None
        last = self._seq
        try:
            rows = self._conn.execute(
                "SELECT seq, i, j, answer, kept, round, annotator FROM answers WHERE seq > ? ORDER BY seq",
                (last["answers"],),
            ).fetchall()
            for seq, i, j, a, k, r, who in rows:
                last["answers"] = seq
                obj = {"i": i, "j": j, "answer": a, "kept": bool(k) if k in (0, 1) else k, "round": r}
                if who is not None:
                    obj["annotator"] = who
                problem = _answer_problem(obj, n)
                if problem is None:
                    self._add_answer(seq, obj)
                else:
                    damaged.append((f"answers row {seq}", json.dumps([i, j, a, k, r, who]).encode(), problem))
            rows = self._conn.execute(
                "SELECT seq, target, i, j, annotator FROM undos WHERE seq > ? ORDER BY seq", (last["undos"],)
            ).fetchall()
            for seq, target, i, j, who in rows:
                last["undos"] = seq
                obj = {"target": target, "i": i, "j": j, "annotator": who}
                problem = _undo_problem(obj, n)
                if problem is None:
                    self._add_undo(seq, obj)
                else:
                    damaged.append((f"undos row {seq}", json.dumps([target, i, j, who]).encode(), problem))
            rows = self._conn.execute(
                "SELECT seq, body FROM fits WHERE seq > ? ORDER BY seq", (last["fits"],)
            ).fetchall()
            for seq, body in rows:
                last["fits"] = seq
                try:
                    fit = json.loads(body)
                    problem = _fit_problem(fit)
                except (TypeError, ValueError):
                    problem = "fit record is not JSON"
                if problem is None:
                    self._fits.append(fit)
                    self._cache = None
                else:
                    damaged.append((f"fits row {seq}", str(body).encode(), problem))
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, "read") from exc
        if damaged:  # left in the database (never deleted), set aside and reported
            self._set_aside([(where, raw, why) for where, raw, why in damaged])
            where = "; ".join(f"{w} ({why})" for w, _, why in damaged[:5])
            more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
            warnings.warn(
                f"answer store {self.path}: skipped damaged records: {where}{more}; kept "
                f"{_plural(len(self._answers), 'intact answer')}; the damaged ones are copied to "
                f"{self.corrupt_path}",
                StoreRecoveryWarning,
                stacklevel=4,
            )

    def _add_answer(self, ident: int, obj: dict[str, Any], news: bool = True) -> dict[str, Any]:
        entry = {**_record(**obj), "id": ident}
        self._answers.append(entry)
        self._cache = None
        if news:
            self._news.append(entry)
        return entry

    def _add_undo(self, ident: int, obj: dict[str, Any], news: bool = True) -> dict[str, Any]:
        entry = {**obj, "annotator": obj.get("annotator"), "id": ident, "before": len(self._answers)}
        self._undos.append(entry)
        self._cache = None
        if news:
            self._undone_news.append(entry)
        return entry

    # --- JSON lines
    # -------------------------------------------------------------------------------------------
    @property
    def corrupt_path(self) -> Path:
        """The side file that receives damaged records: ``<store>.corrupt``."""
        return self.path.with_name(self.path.name + ".corrupt")

    def _set_aside(self, items: list[tuple[Any, bytes, str]]) -> None:
        """Append ``(line, raw bytes, reason)`` entries to the side file (fsync'd), skipping ones already there."""
        side = self.corrupt_path
        seen: set[tuple[str, str]] = set()
        if side.exists():
            for line in side.read_bytes().splitlines():
                try:
                    old = json.loads(line)
                    seen.add((str(old.get("line")), old.get("bytes_base64")))
                except (ValueError, AttributeError):
                    continue
        out = []
        for where, raw, why in items:
            b64 = base64.b64encode(raw).decode("ascii")
            if (str(where), b64) in seen:
                continue
            entry = {
                "source": self.path.name,
                "line": where,
                "reason": why,
                "text": raw.decode("utf-8", errors="backslashreplace"),
                "bytes_base64": b64,
                "set_aside_at": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
            out.append(json.dumps(entry, sort_keys=True).encode() + b"\n")
        if not out:
            return
        try:
            fd = os.open(str(side), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                append_durably(fd, b"".join(out))
            finally:
                os.close(fd)
            fsync_dir(side.parent)
        except OSError as exc:
            raise StoreError(
                f"answer store {self.path}: has damaged records but the side file {side} cannot be written "
                f"({exc.strerror}); nothing was changed, make the folder writable and run again"
            ) from exc

    def _open_jsonl(self) -> dict[str, Any]:
        p = self.path
        if not p.exists():
            try:
                self._fd = os.open(str(p), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            except OSError as exc:
                raise StoreError(f"answer store {p}: cannot be created ({exc.strerror})") from exc
            fsync_dir(p.parent)
            return {}
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise StoreError(f"answer store {p}: cannot be read ({exc.strerror})") from exc
        pieces = raw.split(b"\n")
        tail = pieces.pop()  # b"" when the file ends with a newline; else a line cut short by a crash
        parsed: list[tuple[int, bytes, Any, str | None]] = []  # (line number, bytes, object, json problem)
        for k, line in enumerate(pieces, 1):
            parsed.append((k, line, *self._parse(line)))
        meta: dict[str, Any] = {}
        for _, _, obj, problem in parsed:
            if problem is None and _classify(obj, None)[0] == "meta":
                meta.update(obj["meta"])
        n = meta.get("n") if _is_int(meta.get("n")) else None
        keep: list[bytes] = []  # the lines of the repaired file, intact bytes unchanged
        damaged: list[tuple[int, bytes, str]] = []
        n_intact = 0
        for k, line, obj, problem in parsed:
            if not line.strip():
                keep.append(line)
                continue
            kind = None
            if problem is None:
                kind, problem = _classify(obj, n)
            if kind is None:
                damaged.append((k, line, problem))
                continue
            keep.append(line)
            n_intact += 1
            self._take(kind, obj)
        torn_ok = False
        if tail:
            obj, problem = self._parse(tail)
            kind = None
            if problem is None:
                kind, problem = _classify(obj, n)
            if kind is not None:  # a complete record whose newline was not written: keep it
                keep.append(tail)
                n_intact += 1
                torn_ok = True
                self._take(kind, obj)
            else:
                damaged.append((len(pieces) + 1, tail, f"cut short by a crash while writing ({problem})"))
        if damaged and n_intact == 0 and not (len(damaged) == 1 and tail and tail.lstrip().startswith(b"{")):
            k, line, why = damaged[0]
            raise StoreError(
                f"answer store {p}: does not look like a jaxclust answer store (line {k}: {why}; no line is a "
                "jaxclust record); nothing was changed, pass a new file"
            )
        if damaged:
            self._set_aside(damaged)
            self._rewrite(b"".join(line + b"\n" for line in keep))
            where = "; ".join(f"line {k} ({why})" for k, _, why in damaged[:5])
            more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
            warnings.warn(
                f"answer store {p}: set aside {_plural(len(damaged), 'damaged line')}: {where}{more}; kept "
                f"{_plural(len(self._answers), 'intact answer')}; the damaged bytes are in {self.corrupt_path}",
                StoreRecoveryWarning,
                stacklevel=3,
            )
        try:
            self._fd = os.open(str(p), os.O_WRONLY | os.O_APPEND)
            if torn_ok and not damaged:  # only the newline was missing
                append_durably(self._fd, b"\n")
        except OSError as exc:
            raise StoreError(f"answer store {p}: cannot be opened for writing ({exc.strerror})") from exc
        return meta

    @staticmethod
    def _parse(line: bytes) -> tuple[Any, str | None]:
        try:
            return json.loads(line), None
        except UnicodeDecodeError:
            return None, "not valid UTF-8"
        except (ValueError, RecursionError) as exc:
            return None, f"not valid JSON: {str(exc).split(':')[0]}"

    def _take(self, kind: str, obj: dict) -> None:
        if kind == "answer":
            self._add_answer(len(self._answers) + 1, obj)
        elif kind == "undo":
            self._add_undo(len(self._undos) + 1, obj["undo"])
        elif kind == "fit":
            self._fits.append(obj["fit"])
            self._cache = None

    def _rewrite(self, data: bytes) -> None:
        """Replace the store file by ``data`` atomically; a store opened through a symbolic link is rewritten
        where the link points, the link kept."""
        p = Path(os.path.realpath(self.path))
        try:
            atomic_write(p, data)
        except OSError as exc:
            raise StoreError(
                f"answer store {p}: could not be repaired ({exc.strerror}); the damaged lines are copied to "
                f"{self.corrupt_path}, the store is unchanged"
            ) from exc

    def _append_line(self, obj: dict[str, Any]) -> None:
        if self._fd is None:
            raise StoreError(f"answer store {self.path}: is closed")
        st = os.fstat(self._fd)
        self._check_same_file((st.st_dev, st.st_ino))
        data = json.dumps(obj, sort_keys=True).encode() + b"\n"
        try:
            size = os.fstat(self._fd).st_size
        except OSError:
            size = None
        try:
            append_durably(self._fd, data)
        except OSError as exc:
            if size is not None:  # never leave half a line for the next append to be glued onto
                try:
                    os.ftruncate(self._fd, size)
                except OSError:
                    pass
            raise StoreError(
                f"answer store {self.path}: could not save a record ({exc.strerror}); the answers before it "
                "are safe; free disk space or fix permissions and run again"
            ) from exc

    def _upgrade_jsonl(self) -> None:
        """Before the first record only version 2 can read (an annotator, an undo): say so in the meta."""
        version = self.meta.get("version") if hasattr(self, "meta") else None
        if _is_int(version) and version < _VERSION:
            self._append_line({"meta": {"version": _VERSION}})
            self.meta = {**self.meta, "version": _VERSION}

    # --- meta
    # -------------------------------------------------------------------------------------------------
    def check_meta(self, given: dict[str, Any]) -> dict[str, Any]:
        """Check ``given`` against the stored meta (:class:`~jaxclust.errors.StoreMismatchError` on a
        mismatch) and store new keys."""
        self.meta = self._check_meta(self.meta, given)
        return dict(self.meta)

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

    def _check_meta(self, stored: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        if self._sqlite:
            with self._write() as con:  # read again inside the transaction: another session may have written
                fresh, _ = self._read_meta()
                self._mismatch(fresh, given)
                missing = {k: v for k, v in given.items() if k not in fresh}
                if not fresh and not self._answers and not self._fits:
                    missing = {**_FORMAT, **missing}  # a new store says what it is
                con.executemany(
                    "INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in missing.items()]
                )
            return {**fresh, **json.loads(json.dumps(missing))}
        self._mismatch(stored, given)
        missing = {k: v for k, v in given.items() if k not in stored}
        if not stored and not self._answers and not self._fits and not self._undos:
            missing = {**_FORMAT, **missing}
        if missing:  # a later meta line extends the earlier one
            self._append_line({"meta": missing})
        return {**stored, **json.loads(json.dumps(missing))}

    # --- what is in effect
    # -----------------------------------------------------------------------------------------------
    def _resolve(self) -> tuple[list[dict[str, Any]], dict[int, int], list[dict[str, Any]]]:
        """``(records in effect, {undone answer position: undo position}, valid fits)``, cached."""
        if self._cache is not None:
            return self._cache
        where = {a["id"]: k for k, a in enumerate(self._answers)}
        undone: dict[int, int] = {}
        orphans = 0
        for u, rec in enumerate(self._undos):
            k = where.get(rec["target"])
            if (
                k is None
                or (self._answers[k]["i"], self._answers[k]["j"]) != (rec["i"], rec["j"])
                or k in undone
            ):
                # the numbering moved (a damaged line set aside before it): the latest answer on that pair
                # by that annotator that was stored before the undo and is still in effect
                k = next(
                    (
                        m
                        for m in range(min(rec["before"], len(self._answers)) - 1, -1, -1)
                        if m not in undone
                        and (self._answers[m]["i"], self._answers[m]["j"]) == (rec["i"], rec["j"])
                        and (rec["annotator"] is None or self._answers[m]["annotator"] == rec["annotator"])
                    ),
                    None,
                )
            if k is None:
                orphans += 1
            else:
                undone[k] = u
        if orphans > self._orphans:  # each once
            self._orphans = orphans
            warnings.warn(
                f"answer store {self.path}: {_plural(orphans, 'undo record')} refer to no stored answer and "
                "are ignored",
                StoreRecoveryWarning,
                stacklevel=4,
            )
        records = [_public(a) for k, a in enumerate(self._answers) if k not in undone]
        fits = []
        for fit in self._fits:
            log = fit.get("log")
            if log is None:  # written before undo records existed: valid while nothing is undone
                ok = not undone
            else:
                n_answers, n_undos = log
                ok = all(k >= n_answers for k, u in undone.items() if u >= n_undos)
            if ok:
                fits.append(fit)
        self._cache = (records, undone, fits)
        return self._cache

    @property
    def records(self) -> list[dict[str, Any]]:
        """The answers in effect (every stored answer except the undone ones), in the order they were given
        (copies). Each has ``annotator`` (None for answers stored without one)."""
        return [dict(r) for r in self._resolve()[0]]

    @property
    def all_answers(self) -> list[dict[str, Any]]:
        """Every answer ever stored, undone ones included, in order: the record plus ``id`` (its number in
        the store) and ``undone`` (True once an undo record cancelled it)."""
        undone = self._resolve()[1]
        return [{**_public(a), "id": a["id"], "undone": k in undone} for k, a in enumerate(self._answers)]

    @property
    def fits(self) -> list[dict[str, Any]]:
        """The fit records still valid, oldest first (see :meth:`append_fit`): a fit made after an answer that
        was later undone is left out, so a resumed session never builds on an undone answer."""
        return [dict(f) for f in self._resolve()[2]]

    def __len__(self) -> int:
        return len(self._resolve()[0])

    # --- writing
    # -----------------------------------------------------------------------------------------------
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
        rec = _record(i, j, answer, kept, round, annotator)
        n = self.meta.get("n") if isinstance(getattr(self, "meta", None), dict) else None
        limit = n if isinstance(n, int) and not isinstance(n, bool) else 2**63
        for name, v in (("i", i), ("j", j)):
            if int(v) >= limit:
                raise InvalidInputError(
                    f"{name}: item {int(v)} is out of range for {self.path}"
                    + (f", whose data has {n} items (valid: 0..{n - 1})" if limit == n else "")
                )
        if self._sqlite:
            with self._write() as con:
                self._load()  # the others' rows first: the log stays in order
                cur = con.execute(
                    "INSERT INTO answers (i, j, answer, kept, round, annotator) VALUES (?, ?, ?, ?, ?, ?)",
                    (rec["i"], rec["j"], rec["answer"], int(rec["kept"]), rec["round"], annotator),
                )
                seq = cur.lastrowid
                con.execute("DELETE FROM pending WHERE i = ? AND j = ?", (rec["i"], rec["j"]))
            self._seq["answers"] = seq
            self._add_answer(seq, rec, news=False)
        else:
            line = _public(rec)
            if annotator is None:
                del line["annotator"]  # the bytes of a version-1 record
            else:
                self._upgrade_jsonl()
            self._append_line(line)
            self._add_answer(len(self._answers) + 1, rec, news=False)
        self.n_appended += 1
        return dict(rec)

    def undo(self, annotator: str | None = None) -> dict[str, Any] | None:
        """Undo the latest answer still in effect (given by ``annotator``, or by anyone when None).

        Appends an undo record (the answer stays in the file, see :attr:`all_answers`) and returns the undone
        record, or None when there is nothing to undo. A resumed session then asks as if the answer had never
        been given: fit records made after it are no longer used (:attr:`fits`).
        """
        check_annotator(annotator)

        def latest() -> dict[str, Any] | None:
            undone = self._resolve()[1]
            for k in range(len(self._answers) - 1, -1, -1):
                a = self._answers[k]
                if k not in undone and (annotator is None or a["annotator"] == annotator):
                    return a
            return None

        if self._sqlite:
            with self._write() as con:
                self._load()
                target = latest()
                if target is None:
                    return None
                cur = con.execute(
                    "INSERT INTO undos (target, i, j, annotator) VALUES (?, ?, ?, ?)",
                    (target["id"], target["i"], target["j"], annotator),
                )
                seq = cur.lastrowid
            self._seq["undos"] = seq
        else:
            target = latest()
            if target is None:
                return None
            self._upgrade_jsonl()
            obj = {"target": target["id"], "i": target["i"], "j": target["j"]}
            if annotator is not None:
                obj["annotator"] = annotator
            self._append_line({"undo": obj})
            seq = len(self._undos) + 1
        self._add_undo(
            seq,
            {"target": target["id"], "i": target["i"], "j": target["j"], "annotator": annotator},
            news=False,
        )
        return _public(target)

    def append_fit(self, fit: dict[str, Any]) -> None:
        """Store a model-fit record durably: ``n_fit`` (the learner's fit counter), ``seed``, ``n_answers``
        (answers it was fitted on), ``round`` and ``pos`` (where in the session its samples are first used),
        ``warm`` (started from the previous fit's ``final_labels``), ``n_burnin``, ``settings`` (a digest of
        the learner and model settings) and ``final_labels`` (the chains' last states, or None). The store
        adds ``log``: how many answer and undo records existed, so that a later undo can tell which fits it
        invalidates.
        """
        fit = json.loads(json.dumps(fit))
        fit["log"] = [len(self._answers), len(self._undos)]
        problem = _fit_problem(fit)
        if problem is not None:
            raise InvalidInputError(f"fit: {problem}")
        if self._sqlite:
            with self._write() as con:
                self._load()  # the others' rows first: the log stays in order
                fit["log"] = [len(self._answers), len(self._undos)]
                cur = con.execute("INSERT INTO fits (body) VALUES (?)", (json.dumps(fit, sort_keys=True),))
                self._seq["fits"] = cur.lastrowid
        else:
            self._append_line({"fit": fit})
        self._fits.append(fit)
        self._cache = None

    # --- several annotators
    # -----------------------------------------------------------------------------------------------
    def claim(self, i: int, j: int, annotator: str | None = None) -> bool:
        """Shared mode: claim the question ``(i, j)`` for this session before asking it.

        Returns False (and claims nothing) while another live session holds the pair, or when the pair already
        has an answer in effect; else records the claim (pair, session, annotator, time) and releases this
        session's other claims (a session asks one question at a time). Outside shared mode nobody else can
        write: always True.
        """
        if not self.shared:
            return True
        rec = _record(i, j, "unknown", annotator=check_annotator(annotator))
        a, b = rec["i"], rec["j"]
        with self._write("claimed") as con:
            row = con.execute("SELECT session FROM pending WHERE i = ? AND j = ?", (a, b)).fetchone()
            if row is not None and row[0] != self.session:
                if session_alive(self.path, row[0]):
                    return False
                con.execute("DELETE FROM pending WHERE session = ?", (row[0],))  # its session died
            answered = con.execute(
                "SELECT 1 FROM answers WHERE i = ? AND j = ? AND seq NOT IN (SELECT target FROM undos) LIMIT 1",
                (a, b),
            ).fetchone()
            if answered is not None:
                return False
            con.execute("DELETE FROM pending WHERE session = ?", (self.session,))
            con.execute(
                "INSERT INTO pending (i, j, session, annotator, claimed) VALUES (?, ?, ?, ?, ?)",
                (a, b, self.session, annotator, time.strftime("%Y-%m-%d %H:%M:%S")),
            )
        return True

    def pending(self) -> list[dict[str, Any]]:
        """Shared mode: the questions claimed and not yet answered, ``{"i", "j", "annotator", "claimed",
        "mine"}`` (empty outside shared mode)."""
        if not self.shared or self._conn is None:
            return []
        try:
            rows = self._conn.execute(
                "SELECT i, j, session, annotator, claimed FROM pending ORDER BY claimed"
            )
            return [
                {"i": i, "j": j, "annotator": who, "claimed": t, "mine": s == self.session}
                for i, j, s, who, t in rows.fetchall()
            ]
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, "read") from exc

    def refresh(self) -> Update:
        """Load what other sessions stored since the last call (shared mode; outside it nobody else writes).

        Returns an :class:`Update`: their new answers still in effect, and the answers they undid.
        """
        if self._sqlite and self.shared:
            if self._conn is None:
                raise StoreError(f"answer store {self.path}: is closed")
            with self._snapshot():
                self._load()
        news, undos = self._news, self._undone_news
        self._news, self._undone_news = [], []
        undone = self._resolve()[1]
        undone_ids = {self._answers[k]["id"] for k in undone}
        answers = [_public(a) for a in news if a["id"] not in undone_ids]
        fresh_undos = {id(u) for u in undos}
        fresh_answers = {a["id"] for a in news}  # never reported: their undoing need not be either
        cancelled = [
            _public(self._answers[k])
            for k, u in sorted(undone.items())
            if id(self._undos[u]) in fresh_undos and self._answers[k]["id"] not in fresh_answers
        ]
        return Update(answers, cancelled)

    def close(self) -> None:
        """Release this session's claims, close the file and release the locks (idempotent)."""
        if getattr(self, "_conn", None) is not None:
            try:
                if self.shared:
                    try:
                        with self._write("closed") as con:
                            con.execute("DELETE FROM pending WHERE session = ?", (self.session,))
                    except StoreError:  # the claims die with the session file anyway
                        pass
            finally:
                self._conn.close()
                self._conn = None
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)
            self._fd = None
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
        mode = ", shared" if self.shared else ""
        return f"AnswerStore({str(self.path)!r}, {len(self)} answers{mode})"
