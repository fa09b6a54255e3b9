"""Append-only, crash-safe store of oracle answers, so an annotation session can be killed and resumed.

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
* **One process at a time.** The store holds an exclusive lock (``flock`` on ``<store>.lock``, released by the
  operating system when the process dies); a second process gets
  :class:`~jaxclust.errors.StoreLockedError` naming the other process (or waits ``wait`` seconds).
* **Named errors.** A folder, a missing folder, a file that is not a store, a read-only or damaged SQLite file
  raise :class:`~jaxclust.errors.StoreError` naming the path and what to do, never a raw ``sqlite3`` error.

Two formats, chosen by the file suffix:

* ``.sqlite`` / ``.sqlite3`` / ``.db``: SQLite tables ``answers``, ``meta`` and ``fits``;
* anything else (e.g. ``.jsonl``): JSON lines, the first one ``{"meta": {...}}``.

Answer records are dicts ``{"i": int, "j": int, "answer": "must" | "cannot" | "unknown", "kept": bool,
"round": int}`` with ``i < j``; ``kept`` is False for an answer dropped because it contradicted earlier ones.
Fit records (:meth:`AnswerStore.append_fit`) let :class:`~jaxclust.active.ActiveLearner` resume exactly where an
uninterrupted session would be: they hold the seed, position and final chain states of each model fit.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import socket
import sqlite3
import stat
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from jaxclust.errors import InvalidInputError, StoreError, StoreLockedError, StoreRecoveryWarning

__all__ = ["AnswerStore", "ANSWERS", "check_store_path"]

ANSWERS = ("must", "cannot", "unknown")
_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
_FORMAT = {"store": "jaxclust answers", "version": 1}
_ANSWER_KEYS = ("i", "j", "answer", "kept", "round")
_FIT_KEYS = ("n_fit", "seed", "n_answers", "round", "pos", "warm", "n_burnin", "settings", "final_labels")
_OUR_TABLES = {"meta", "answers", "fits", "sqlite_sequence"}


def _record(i: int, j: int, answer: str, kept: bool = True, round: int = 0) -> dict[str, Any]:
    if answer not in ANSWERS:
        raise InvalidInputError(f"answer: expected one of {ANSWERS}, got {answer!r}")
    for name, v in (("i", i), ("j", j), ("round", round)):
        if isinstance(v, bool) or not hasattr(v, "__index__") or int(v) < 0:
            raise InvalidInputError(f"{name}: expected a non-negative integer, got {v!r}")
    i, j = int(i), int(j)
    if i == j:
        raise InvalidInputError(f"i, j: a pair of two different items, got ({i}, {j})")
    return {"i": min(i, j), "j": max(i, j), "answer": answer, "kept": bool(kept), "round": int(round)}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _answer_problem(obj: dict, n: int | None) -> str | None:
    """Why ``obj`` is not a valid answer record (None if it is one)."""
    missing = [k for k in _ANSWER_KEYS if k not in obj]
    if missing:
        return f"missing field {missing[0]!r}"
    extra = sorted(k for k in obj if k not in _ANSWER_KEYS)
    if extra:
        return f"unexpected field {extra[0]!r}"
    for k in ("i", "j", "round"):
        if not _is_int(obj[k]) or obj[k] < 0:
            return f"{k} is {obj[k]!r}, not a non-negative integer"
    if obj["i"] == obj["j"]:
        return f"i and j are both {obj['i']}"
    if n is not None and max(obj["i"], obj["j"]) >= n:
        return f"item {max(obj['i'], obj['j'])} is out of range for {n} items"
    if obj["answer"] not in ANSWERS:
        return f"answer is {obj['answer']!r}, not one of {ANSWERS}"
    if not isinstance(obj["kept"], bool):
        return f"kept is {obj['kept']!r}, not true/false"
    return None


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
    return None


def _classify(obj: Any, n: int | None) -> tuple[str | None, str | None]:
    """``(kind, problem)``: kind is "meta", "answer" or "fit"; problem is None for a valid record."""
    if not isinstance(obj, dict):
        return None, f"a JSON {type(obj).__name__}, not a record"
    if "meta" in obj:
        if len(obj) != 1 or not isinstance(obj["meta"], dict):
            return None, "malformed meta record"
        return "meta", None
    if "fit" in obj:
        if len(obj) != 1:
            return None, "malformed fit record"
        problem = _fit_problem(obj["fit"])
        return ("fit", None) if problem is None else (None, problem)
    problem = _answer_problem(obj, n)
    return ("answer", None) if problem is None else (None, problem)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(str(path), os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


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


# --- the lock -----------------------------------------------------------------------------------------------


class _FileLock:
    """Exclusive advisory lock on ``<store>.lock``, held while the store is open.

    The kernel drops an ``flock`` when its process dies, so a killed session never leaves the store locked. The
    lock file holds the owner's pid, host and start time (for the error message of the next process) and is
    removed on a clean close; after taking the lock, its inode is compared with the path's so a lock file
    removed by a closing owner in the meantime is never trusted.
    """

    def __init__(self, store: Path, wait: float):
        self.path = store.with_name(store.name + ".lock")
        self.fd: int | None = None
        deadline = time.monotonic() + max(0.0, float(wait))
        while True:
            try:
                fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(
                    f"answer store {store}: cannot create the lock file {self.path} ({exc.strerror}); "
                    "the store's folder must be writable"
                ) from exc
            if self._try_lock(fd):
                try:
                    same = os.fstat(fd).st_ino == os.stat(str(self.path)).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    self.fd = fd
                    self._write_holder()
                    return
                os.close(fd)  # the owner removed this lock file while we waited: take the new one
                continue
            holder = self._read_holder(fd)
            os.close(fd)
            if time.monotonic() >= deadline:
                who = ", ".join(f"{k} {holder[k]}" for k in ("pid", "host", "since") if k in holder)
                cmd = f" running {holder['command']!r}" if holder.get("command") else ""
                raise StoreLockedError(
                    f"answer store {store} is in use by another process ({who or 'unknown process'}{cmd}); "
                    "wait for that session to end (or stop it), then run again, or use another store file",
                    path=str(store),
                    holder=holder,
                )
            time.sleep(0.05)

    @staticmethod
    def _try_lock(fd: int) -> bool:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            import msvcrt

            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                return True
            except OSError:
                return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise

    @staticmethod
    def _read_holder(fd: int) -> dict:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            data = os.read(fd, 4096)
            holder = json.loads(data) if data.strip() else {}
            return holder if isinstance(holder, dict) else {}
        except (OSError, ValueError):
            return {}

    def _write_holder(self) -> None:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:200] if sys.argv else "",
        }
        try:
            os.ftruncate(self.fd, 0)
            os.lseek(self.fd, 0, os.SEEK_SET)
            _write_all(self.fd, json.dumps(info).encode())
        except OSError:  # the lock itself holds; the note is only for the error message
            pass

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(str(self.path))  # while still holding the lock (see the class docstring)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


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
        ``InvalidInputError`` (resuming on different data would attach answers to the wrong items).
    wait : float
        Seconds to wait for another process to release the store before raising ``StoreLockedError``.

    Raises
    ------
    StoreError
        The path is a folder, its folder is missing, the file is not a jaxclust store, is read-only or damaged
        beyond the record level (a damaged SQLite file).
    StoreLockedError
        Another process has the store open.
    """

    def __init__(self, path: str | os.PathLike, meta: dict[str, Any] | None = None, *, wait: float = 0.0):
        self.path = Path(path)
        self._sqlite = self.path.suffix.lower() in _SQLITE_SUFFIXES
        self._records: list[dict[str, Any]] = []
        self._fits: list[dict[str, Any]] = []
        self._conn: sqlite3.Connection | None = None
        self._fd: int | None = None
        self._lock: _FileLock | None = None
        check_store_path(self.path)
        self._lock = _FileLock(self.path, wait)
        try:
            stored = self._open_sqlite() if self._sqlite else self._open_jsonl()
            self.meta = self._check_meta(stored, meta or {})
        except BaseException:
            self.close()
            raise

    # --- SQLite
    # -----------------------------------------------------------------------------------------------
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

    def _open_sqlite(self) -> dict[str, Any]:
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            self._conn = sqlite3.connect(str(self.path), timeout=0.0)
            self._conn.execute("PRAGMA synchronous=FULL")
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if existed and ("answers" not in tables or not tables <= _OUR_TABLES):
                raise StoreError(
                    f"answer store {self.path}: is an SQLite database but not a jaxclust answer store (tables: "
                    f"{', '.join(sorted(tables)) or 'none'}); nothing was changed, pass a new path"
                )
            with self._conn:
                self._conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS answers (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                    " i INTEGER, j INTEGER, answer TEXT, kept INTEGER, round INTEGER)"
                )
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS fits (seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)"
                )
            stored: dict[str, Any] = {}
            damaged: list[tuple[str, bytes, str]] = []
            for key, value in self._conn.execute("SELECT key, value FROM meta"):
                try:
                    stored[key] = json.loads(value)
                except (TypeError, ValueError):
                    damaged.append((f"meta {key!r}", str(value).encode(), "meta value is not JSON"))
            n = stored.get("n") if _is_int(stored.get("n")) else None
            rows = self._conn.execute("SELECT seq, i, j, answer, kept, round FROM answers ORDER BY seq")
            for seq, i, j, a, k, r in rows:
                obj = {"i": i, "j": j, "answer": a, "kept": bool(k) if k in (0, 1) else k, "round": r}
                problem = _answer_problem(obj, n)
                if problem is None:
                    self._records.append(_record(**obj))
                else:
                    damaged.append((f"answers row {seq}", json.dumps([i, j, a, k, r]).encode(), problem))
            for seq, body in self._conn.execute("SELECT seq, body FROM fits ORDER BY seq"):
                try:
                    fit = json.loads(body)
                    problem = _fit_problem(fit)
                except (TypeError, ValueError):
                    problem = "fit record is not JSON"
                if problem is None:
                    self._fits.append(fit)
                else:
                    damaged.append((f"fits row {seq}", str(body).encode(), problem))
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, "opened") from exc
        if damaged:  # left in the database (never deleted), set aside and reported
            self._set_aside([(where, raw, why) for where, raw, why in damaged])
            where = "; ".join(f"{w} ({why})" for w, _, why in damaged[:5])
            more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
            warnings.warn(
                f"answer store {self.path}: skipped damaged records: {where}{more}; kept "
                f"{_plural(len(self._records), 'intact answer')}; the damaged ones are copied to {self.corrupt_path}",
                StoreRecoveryWarning,
                stacklevel=3,
            )
        return stored

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
                _write_all(fd, b"".join(out))
                os.fsync(fd)
            finally:
                os.close(fd)
            _fsync_dir(side.parent)
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
            _fsync_dir(p.parent)
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
                f"{_plural(len(self._records), 'intact answer')}; the damaged bytes are in {self.corrupt_path}",
                StoreRecoveryWarning,
                stacklevel=3,
            )
        try:
            self._fd = os.open(str(p), os.O_WRONLY | os.O_APPEND)
            if torn_ok and not damaged:  # only the newline was missing
                _write_all(self._fd, b"\n")
                os.fsync(self._fd)
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
            self._records.append(_record(**obj))
        elif kind == "fit":
            self._fits.append(obj["fit"])

    def _rewrite(self, data: bytes) -> None:
        """Replace the store file by ``data`` atomically (temporary file, fsync, ``os.replace``, fsync dir)."""
        p = self.path
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        try:
            mode = stat.S_IMODE(p.stat().st_mode)
            fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, p)
            _fsync_dir(p.parent)
        except OSError as exc:
            try:
                tmp.unlink()
            except OSError:
                pass
            raise StoreError(
                f"answer store {p}: could not be repaired ({exc.strerror}); the damaged lines are copied to "
                f"{self.corrupt_path}, the store is unchanged"
            ) from exc

    def _append_line(self, obj: dict[str, Any]) -> None:
        if self._fd is None:
            raise StoreError(f"answer store {self.path}: is closed")
        data = json.dumps(obj, sort_keys=True).encode() + b"\n"
        try:
            size = os.fstat(self._fd).st_size
        except OSError:
            size = None
        try:
            _write_all(self._fd, data)
            os.fsync(self._fd)
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

    # --- meta
    # -------------------------------------------------------------------------------------------------
    def check_meta(self, given: dict[str, Any]) -> dict[str, Any]:
        """Check ``given`` against the stored meta (``InvalidInputError`` on a mismatch) and store new keys."""
        self.meta = self._check_meta(self.meta, given)
        return dict(self.meta)

    def _check_meta(self, stored: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        for key, value in given.items():
            if key in stored and stored[key] != json.loads(json.dumps(value)):
                raise InvalidInputError(
                    f"store {self.path}: was created with {key}={stored[key]!r}, "
                    f"this session has {key}={value!r}; "
                    "use a new store file for different data"
                )
        missing = {k: v for k, v in given.items() if k not in stored}
        if not stored and not self._records and not self._fits:
            missing = {**_FORMAT, **missing}  # a new store says what it is
        if missing:
            if self._sqlite:
                try:
                    with self._conn:
                        self._conn.executemany(
                            "INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in missing.items()]
                        )
                except sqlite3.Error as exc:
                    raise self._sqlite_error(exc, "written") from exc
            else:  # a later meta line extends the earlier one
                self._append_line({"meta": missing})
        return {**stored, **missing}

    # --- public
    # -----------------------------------------------------------------------------------------------
    @property
    def records(self) -> list[dict[str, Any]]:
        """All stored answers in the order they were given (copies)."""
        return [dict(r) for r in self._records]

    @property
    def fits(self) -> list[dict[str, Any]]:
        """The fit records (see :meth:`append_fit`), oldest first."""
        return [dict(f) for f in self._fits]

    def __len__(self) -> int:
        return len(self._records)

    def append(self, i: int, j: int, answer: str, kept: bool = True, round: int = 0) -> dict[str, Any]:
        """Store one answer durably and return its record; returns only after the data reached the disk."""
        rec = _record(i, j, answer, kept, round)
        if self._sqlite:
            if self._conn is None:
                raise StoreError(f"answer store {self.path}: is closed")
            try:
                with self._conn:
                    self._conn.execute(
                        "INSERT INTO answers (i, j, answer, kept, round) VALUES (?, ?, ?, ?, ?)",
                        (rec["i"], rec["j"], rec["answer"], int(rec["kept"]), rec["round"]),
                    )
            except sqlite3.Error as exc:
                raise self._sqlite_error(exc, "written") from exc
        else:
            self._append_line(rec)
        self._records.append(rec)
        return dict(rec)

    def append_fit(self, fit: dict[str, Any]) -> None:
        """Store a model-fit record durably: ``n_fit`` (the learner's fit counter), ``seed``, ``n_answers``
        (answers it was fitted on), ``round`` and ``pos`` (where in the session its samples are first used),
        ``warm`` (started from the previous fit's ``final_labels``), ``n_burnin``, ``settings`` (a digest of
        the learner and model settings) and ``final_labels`` (the chains' last states, or None).
        """
        fit = json.loads(json.dumps(fit))
        problem = _fit_problem(fit)
        if problem is not None:
            raise InvalidInputError(f"fit: {problem}")
        if self._sqlite:
            if self._conn is None:
                raise StoreError(f"answer store {self.path}: is closed")
            try:
                with self._conn:
                    self._conn.execute(
                        "INSERT INTO fits (body) VALUES (?)", (json.dumps(fit, sort_keys=True),)
                    )
            except sqlite3.Error as exc:
                raise self._sqlite_error(exc, "written") from exc
        else:
            self._append_line({"fit": fit})
        self._fits.append(fit)

    def close(self) -> None:
        """Close the file and release the lock (idempotent)."""
        if getattr(self, "_conn", None) is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)
            self._fd = None
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
        return f"AnswerStore({str(self.path)!r}, {len(self)} answers)"
