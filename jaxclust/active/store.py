"""Append-only, crash-safe store of oracle answers, so an annotation session can be killed and resumed.

Every answer is made durable (SQLite commit with ``synchronous=FULL``, or a JSON line written, flushed and
``fsync``'d) before the next query is chosen. A session restarted on the same store replays the stored answers
in order and asks only new questions. Two formats, chosen by the file suffix:

* ``.sqlite`` / ``.sqlite3`` / ``.db``: one SQLite table ``answers`` plus a ``meta`` table;
* anything else (e.g. ``.jsonl``): JSON lines, the first line ``{"meta": {...}}``. A line cut short by a crash
  (no trailing newline / not valid JSON) is the only thing that can be lost: it is ignored and overwritten.

Records are dicts ``{"i": int, "j": int, "answer": "must" | "cannot" | "unknown", "kept": bool, "round":
int}`` with ``i < j``; ``kept`` is False for an answer dropped because it contradicted earlier ones.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from jaxclust.errors import InvalidInputError

__all__ = ["AnswerStore", "ANSWERS"]

ANSWERS = ("must", "cannot", "unknown")
_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def _record(i: int, j: int, answer: str, kept: bool = True, round: int = 0) -> dict[str, Any]:
    if answer not in ANSWERS:
        raise InvalidInputError(f"answer: expected one of {ANSWERS}, got {answer!r}")
    i, j = int(i), int(j)
    return {"i": min(i, j), "j": max(i, j), "answer": answer, "kept": bool(kept), "round": int(round)}


class AnswerStore:
    """Durable append-only answer log.

    Parameters
    ----------
    path : str or Path
        The store file; created if missing.
    meta : dict, optional
        Facts about the session (e.g. ``{"n": 178, "fingerprint": "..."}``). Written when the store is
        created; when it already exists every given key must match the stored value, else
        ``InvalidInputError`` (resuming on different data would attach answers to the wrong items).
    """

    def __init__(self, path: str | os.PathLike, meta: dict[str, Any] | None = None):
        self.path = Path(path)
        self._sqlite = self.path.suffix.lower() in _SQLITE_SUFFIXES
        self._records: list[dict[str, Any]] = []
        if self._sqlite:
            self._conn = sqlite3.connect(str(self.path))
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS answers (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                " i INTEGER, j INTEGER, answer TEXT, kept INTEGER, round INTEGER)"
            )
            self._conn.commit()
            stored = {k: json.loads(v) for k, v in self._conn.execute("SELECT key, value FROM meta")}
            rows = self._conn.execute("SELECT i, j, answer, kept, round FROM answers ORDER BY seq").fetchall()
            self._records = [_record(i, j, a, bool(k), r) for i, j, a, k, r in rows]
        else:
            stored = self._read_jsonl()
        self.meta = self._check_meta(stored, meta or {})

    # --- JSON lines
    # -------------------------------------------------------------------------------------------
    def _read_jsonl(self) -> dict[str, Any]:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return {}
        raw = self.path.read_bytes()
        good_end, meta = 0, {}
        for line in raw.split(b"\n")[:-1]:  # the last piece is empty or a line torn by a crash (no newline)
            if line.strip():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    break  # a damaged line: it and everything after it are dropped
                if "meta" in obj:
                    meta = obj["meta"]
                else:
                    self._records.append(_record(**obj))
            good_end += len(line) + 1
        if good_end < len(raw):  # truncate the torn tail so the next append starts on a clean line
            with open(self.path, "r+b") as fh:
                fh.truncate(good_end)
                fh.flush()
                os.fsync(fh.fileno())
        return meta

    def _append_line(self, obj: dict[str, Any]) -> None:
        with open(self.path, "ab") as fh:
            fh.write(json.dumps(obj, sort_keys=True).encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())

    # --- meta
    # -------------------------------------------------------------------------------------------------
    def _check_meta(self, stored: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        for key, value in given.items():
            if key in stored and stored[key] != json.loads(json.dumps(value)):
                raise InvalidInputError(
                    f"store {self.path}: was created with {key}={stored[key]!r}, "
                    f"this session has {key}={value!r}; "
                    "use a new store file for different data"
                )
        missing = {k: v for k, v in given.items() if k not in stored}
        if missing:
            if self._sqlite:
                self._conn.executemany(
                    "INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in missing.items()]
                )
                self._conn.commit()
            else:  # a later meta line extends the earlier one
                self._append_line({"meta": {**stored, **missing}})
        return {**stored, **missing}

    # --- public
    # -----------------------------------------------------------------------------------------------
    @property
    def records(self) -> list[dict[str, Any]]:
        """All stored answers in the order they were given (copies)."""
        return [dict(r) for r in self._records]

    def __len__(self) -> int:
        return len(self._records)

    def append(self, i: int, j: int, answer: str, kept: bool = True, round: int = 0) -> dict[str, Any]:
        """Store one answer durably and return its record; returns only after the data reached the disk."""
        rec = _record(i, j, answer, kept, round)
        if self._sqlite:
            self._conn.execute(
                "INSERT INTO answers (i, j, answer, kept, round) VALUES (?, ?, ?, ?, ?)",
                (rec["i"], rec["j"], rec["answer"], int(rec["kept"]), rec["round"]),
            )
            self._conn.commit()
        else:
            self._append_line(rec)
        self._records.append(rec)
        return dict(rec)

    def close(self) -> None:
        if self._sqlite:
            self._conn.close()

    def __enter__(self) -> AnswerStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AnswerStore({str(self.path)!r}, {len(self)} answers)"
