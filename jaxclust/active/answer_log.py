"""The answer store's records and its in-memory log, shared by the two back ends.

* the record format (answers, undo records, fit records, meta) and the checks that tell an intact record from a
  damaged one (:func:`classify_record`), with the checks of a store's path;
* :class:`AnswerLog`: every record read or written, in order, and what is in effect (answers not undone, fits
  made before any answer later undone);
* :func:`set_aside`: damaged records copied, with their exact bytes, to the side file ``<store>.corrupt``;
* :func:`check_same_file`: a store replaced, moved or deleted under a session stops it.

:class:`~jaxclust.active.store.AnswerStore` is the interface; :mod:`jaxclust.active.store_sqlite` and
:mod:`jaxclust.active.store_jsonl` are its back ends.
"""

from __future__ import annotations

import base64
import json
import os
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

from jaxclust.active.replies import ANSWERS
from jaxclust.errors import InvalidInputError, StoreError, StoreRecoveryWarning
from jaxclust.files import append_durably, fsync_dir
from jaxclust.validation import Int, check_rule

__all__ = [
    "ANSWERS",
    "AnswerLog",
    "Update",
    "check_annotator",
    "check_same_file",
    "check_shared_path",
    "check_store_path",
    "classify_record",
    "corrupt_path",
    "default_annotator",
    "is_sqlite_path",
    "set_aside",
]

_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
VERSION = 2
FORMAT = {"store": "jaxclust answers", "version": VERSION}
ANSWER_KEYS = ("i", "j", "answer", "kept", "round")
OPTIONAL_ANSWER_KEYS = ("annotator",)
UNDO_KEYS = ("target", "i", "j")
FIT_KEYS = ("n_fit", "seed", "n_answers", "round", "pos", "warm", "n_burnin", "settings", "final_labels")
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


#: How answers stored without an annotator are shown and counted; no annotator may take the name.
UNNAMED = "(unnamed)"


def check_annotator(value: Any, name: str = "annotator", quiet: bool = False) -> Any:
    """``value`` if it is a valid annotator name (a non-empty string of at most 100 printable characters other
    than :data:`UNNAMED`, or None); else ``InvalidInputError`` naming ``name`` (or False when ``quiet``)."""
    ok = value is None or (
        isinstance(value, str)
        and 0 < len(value.strip()) == len(value) <= _MAX_ANNOTATOR
        and value.isprintable()
        and value != UNNAMED
    )
    if quiet:
        return ok and value is not None
    if not ok:
        raise InvalidInputError(
            f"{name}: expected a name of 1 to {_MAX_ANNOTATOR} printable characters without surrounding "
            f"spaces, other than {UNNAMED!r} (the answers stored without a name), got {value!r}"
        )
    return value


def plain_meta(meta: Any) -> dict[str, Any] | None:
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


def make_record(
    i: int, j: int, answer: str, kept: bool = True, round: int = 0, annotator: str | None = None
) -> dict[str, Any]:
    if answer not in ANSWERS:
        raise InvalidInputError(f"answer: expected one of {ANSWERS}, got {answer!r}")
    i, j, round = (check_rule(Int(0), v, name) for name, v in (("i", i), ("j", j), ("round", round)))
    if i == j:
        raise InvalidInputError(f"i, j: a pair of two different items, got ({i}, {j})")
    if not (isinstance(kept, bool) or str(getattr(kept, "dtype", "")) == "bool"):  # bool("false") is True
        raise InvalidInputError(f"kept: expected True or False, got {kept!r}")
    check_annotator(annotator)
    return {
        "i": min(i, j),
        "j": max(i, j),
        "answer": answer,
        "kept": bool(kept),
        "round": int(round),
        "annotator": annotator,
    }


def public_record(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry[k] for k in (*ANSWER_KEYS, "annotator")}


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pair_problem(obj: dict, n: int | None) -> str | None:
    for k in ("i", "j"):
        if not is_int(obj[k]) or obj[k] < 0:
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


def answer_problem(obj: dict, n: int | None) -> str | None:
    """Why ``obj`` is not a valid answer record (None if it is one)."""
    missing = [k for k in ANSWER_KEYS if k not in obj]
    if missing:
        return f"missing field {missing[0]!r}"
    extra = sorted(k for k in obj if k not in ANSWER_KEYS + OPTIONAL_ANSWER_KEYS)
    if extra:
        return f"unexpected field {extra[0]!r}"
    if not is_int(obj["round"]) or obj["round"] < 0:
        return f"round is {obj['round']!r}, not a non-negative integer"
    problem = _pair_problem(obj, n)
    if problem is not None:
        return problem
    if obj["answer"] not in ANSWERS:
        return f"answer is {obj['answer']!r}, not one of {ANSWERS}"
    if not isinstance(obj["kept"], bool):
        return f"kept is {obj['kept']!r}, not true/false"
    return _annotator_problem(obj)


def undo_problem(obj: Any, n: int | None) -> str | None:
    if not isinstance(obj, dict):
        return "undo is not an object"
    missing = [k for k in UNDO_KEYS if k not in obj]
    if missing:
        return f"undo record without {missing[0]!r}"
    extra = sorted(k for k in obj if k not in UNDO_KEYS + OPTIONAL_ANSWER_KEYS)
    if extra:
        return f"undo record with unexpected field {extra[0]!r}"
    if not is_int(obj["target"]) or obj["target"] < 1:
        return f"undo target is {obj['target']!r}, not an answer number"
    return _pair_problem(obj, n) or _annotator_problem(obj)


def fit_problem(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return "fit is not an object"
    missing = [k for k in FIT_KEYS if k not in obj]
    if missing:
        return f"fit record without {missing[0]!r}"
    for k in ("n_fit", "seed", "n_answers", "round", "pos"):
        if not is_int(obj[k]) or obj[k] < 0:
            return f"fit {k} is {obj[k]!r}"
    if not isinstance(obj["warm"], bool) or not isinstance(obj["settings"], str):
        return "fit warm/settings of the wrong type"
    if obj["n_burnin"] is not None and not is_int(obj["n_burnin"]):
        return f"fit n_burnin is {obj['n_burnin']!r}"
    for key in ("final_labels", "final_components"):
        rows = obj.get(key)
        if rows is not None and not (
            isinstance(rows, list) and all(isinstance(r, list) and all(is_int(v) for v in r) for r in rows)
        ):
            return f"fit {key} is not a list of integer lists"
    log = obj.get("log")
    if log is not None and not (
        isinstance(log, list) and len(log) == 2 and all(is_int(v) and v >= 0 for v in log)
    ):
        return f"fit log is {log!r}"
    return None


def classify_record(obj: Any, n: int | None) -> tuple[str | None, str | None]:
    """``(kind, problem)``: kind is "meta", "answer", "undo" or "fit"; problem is None for a valid record."""
    if not isinstance(obj, dict):
        return None, f"a JSON {type(obj).__name__}, not a record"
    if "meta" in obj:
        if len(obj) != 1 or not isinstance(obj["meta"], dict):
            return None, "malformed meta record"
        return "meta", None
    for kind, check in (("fit", lambda o: fit_problem(o)), ("undo", lambda o: undo_problem(o, n))):
        if kind in obj:
            if len(obj) != 1:
                return None, f"malformed {kind} record"
            problem = check(obj[kind])
            return (kind, None) if problem is None else (None, problem)
    problem = answer_problem(obj, n)
    return ("answer", None) if problem is None else (None, problem)


def check_store_path(path: str | os.PathLike) -> None:
    """Raise ``StoreError`` when ``path`` cannot be an answer store (a folder, a missing folder, a file that
    cannot be read or written, a folder where it cannot be created); creates nothing.
    """
    p = Path(path)
    parent = p.parent
    if p.is_symlink() and not p.exists():
        raise StoreError(
            f"answer store {p}: is a link to {os.readlink(p)}, which does not exist; pass the store's own path "
            "or remove the link"
        )
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


def corrupt_path(path: Path) -> Path:
    """The side file that receives a store's damaged records: ``<store>.corrupt``."""
    return path.with_name(path.name + ".corrupt")


def set_aside(path: Path, items: list[tuple[Any, bytes, str]]) -> None:
    """Append ``(line, raw bytes, reason)`` entries to the side file of the store ``path`` (durably), skipping
    ones already there."""
    side = corrupt_path(path)
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
            "source": path.name,
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
            f"answer store {path}: has damaged records but the side file {side} cannot be written "
            f"({exc.strerror}); nothing was changed, make the folder writable and run again"
        ) from exc


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file ``path`` names now (links followed), None when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def check_same_file(path: Path, opened: tuple[int, int] | None) -> None:
    """The file at ``path`` must still be the one a session opened (``opened``, its identity then): never write
    where nobody reads."""
    now = file_identity(path)
    if opened is None or now == opened:
        return
    what = "deleted" if now is None else "replaced by another file"
    raise StoreError(
        f"answer store {path}: was {what} while this session had it open (another program moved, "
        "replaced or removed it); nothing more is written, so that no answer goes to a file nobody reads. "
        "The answers this session stored went to the file it opened; put that file back or start a new "
        "session with the same command"
    )


class AnswerLog:
    """Every record of one store in the order stored, and what is in effect.

    The back ends add what they read or write (:meth:`add_answer`, :meth:`add_undo`, :meth:`add_fit`);
    :meth:`resolve` works out which answers were undone and which fits are still valid; :meth:`news` reports what
    other sessions stored since the last call.
    """

    def __init__(self, path: Path):
        self.path = path
        self.answers: list[dict[str, Any]] = []  # every answer record, with its "id"
        self.undos: list[dict[str, Any]] = []  # every undo record, with its "id" and "before"
        self.fits: list[dict[str, Any]] = []
        self._cache: tuple | None = None  # (records, undone answer positions, valid fits)
        self._news: list[dict[str, Any]] = []  # answers of other sessions not yet reported
        self._undone_news: list[dict[str, Any]] = []  # their undo records, not yet reported
        self._orphans = 0  # undo records of no answer, already reported

    def add_answer(self, ident: int, obj: dict[str, Any], news: bool = True) -> dict[str, Any]:
        entry = {**make_record(**obj), "id": ident}
        self.answers.append(entry)
        self._cache = None
        if news:
            self._news.append(entry)
        return entry

    def add_undo(self, ident: int, obj: dict[str, Any], news: bool = True) -> dict[str, Any]:
        entry = {**obj, "annotator": obj.get("annotator"), "id": ident, "before": len(self.answers)}
        self.undos.append(entry)
        self._cache = None
        if news:
            self._undone_news.append(entry)
        return entry

    def add_fit(self, fit: dict[str, Any]) -> None:
        self.fits.append(fit)
        self._cache = None

    def counts(self) -> list[int]:
        """``[answer records, undo records]`` so far: a fit record's ``log``."""
        return [len(self.answers), len(self.undos)]

    def forget_news(self) -> None:
        self._news, self._undone_news = [], []

    def resolve(self) -> tuple[list[dict[str, Any]], dict[int, int], list[dict[str, Any]]]:
        """``(records in effect, {undone answer position: undo position}, valid fits)``, cached."""
        if self._cache is not None:
            return self._cache
        where = {a["id"]: k for k, a in enumerate(self.answers)}
        undone: dict[int, int] = {}
        orphans = 0
        for u, rec in enumerate(self.undos):
            k = where.get(rec["target"])
            if (
                k is None
                or (self.answers[k]["i"], self.answers[k]["j"]) != (rec["i"], rec["j"])
                or k in undone
            ):
                # the numbering moved (a damaged line set aside before it): the latest answer on that pair
                # by that annotator that was stored before the undo and is still in effect
                k = next(
                    (
                        m
                        for m in range(min(rec["before"], len(self.answers)) - 1, -1, -1)
                        if m not in undone
                        and (self.answers[m]["i"], self.answers[m]["j"]) == (rec["i"], rec["j"])
                        and (rec["annotator"] is None or self.answers[m]["annotator"] == rec["annotator"])
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
                f"answer store {self.path}: {plural(orphans, 'undo record')} refer to no stored answer and "
                "are ignored",
                StoreRecoveryWarning,
                stacklevel=4,
            )
        records = [public_record(a) for k, a in enumerate(self.answers) if k not in undone]
        fits = []
        for fit in self.fits:
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

    def latest(self, annotator: str | None) -> dict[str, Any] | None:
        """The latest answer still in effect given by ``annotator`` (by anyone when None)."""
        undone = self.resolve()[1]
        for k in range(len(self.answers) - 1, -1, -1):
            a = self.answers[k]
            if k not in undone and (annotator is None or a["annotator"] == annotator):
                return a
        return None

    def news(self) -> Update:
        """What other sessions stored since the last call: their answers still in effect, and the answers they
        undid that were reported before."""
        news, undos = self._news, self._undone_news
        self.forget_news()
        undone = self.resolve()[1]
        undone_ids = {self.answers[k]["id"] for k in undone}
        answers = [public_record(a) for a in news if a["id"] not in undone_ids]
        fresh_undos = {id(u) for u in undos}
        fresh_answers = {a["id"] for a in news}  # never reported: their undoing need not be either
        cancelled = [
            public_record(self.answers[k])
            for k, u in sorted(undone.items())
            if id(self.undos[u]) in fresh_undos and self.answers[k]["id"] not in fresh_answers
        ]
        return Update(answers, cancelled)
