"""The SQLite back end of :class:`~jaxclust.active.store.AnswerStore`: durable commits, several writers.

Tables ``meta`` (key, JSON value), ``answers``, ``undos``, ``fits`` (a JSON body) and ``pending`` (the questions
claimed by live shared sessions). Every write is one short ``BEGIN IMMEDIATE`` transaction with
``synchronous=FULL``; in shared mode the database runs in WAL mode and each write first reads the rows the other
sessions stored, so the log stays in order. Rows are never deleted or rewritten (a damaged row is skipped, copied
to the side file and reported); SQLite errors become named :class:`~jaxclust.errors.StoreError` s.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jaxclust.active.answer_log import (
    FORMAT,
    VERSION,
    AnswerLog,
    answer_problem,
    check_same_file,
    corrupt_path,
    file_identity,
    fit_problem,
    is_int,
    make_record,
    plural,
    set_aside,
    undo_problem,
)
from jaxclust.active.locks import FileHold, real_store, session_alive
from jaxclust.errors import StoreError, StoreLockedError, StoreRecoveryWarning

__all__ = ["SqliteBackend"]

_OUR_TABLES = {"meta", "answers", "fits", "undos", "pending", "sqlite_sequence"}


class SqliteBackend:
    """An SQLite answer database; ``shared``: several sessions at once (see :meth:`claim`)."""

    def __init__(self, path: Path, log: AnswerLog, *, shared: bool, busy_timeout: float, session: str):
        self.path = path  # as the user named it, for messages
        self.real = real_store(path)  # what SQLite opens: one name, so one journal and one write-ahead log
        self.hold: FileHold | None = None  # the database file itself, held while open (writers)
        self.log = log
        self.shared = shared
        self.busy = float(busy_timeout)
        self.session = session
        self.meta: dict[str, Any] = {}
        self.conn: sqlite3.Connection | None = None
        self.opened: tuple[int, int] | None = None
        self.seq = {"answers": 0, "undos": 0, "fits": 0}  # the last row read from each table
        self.readonly = False  # set before open(): read the rows, write nothing (jaxclust store stats)
        self.wal: tuple[int, int] | None = None  # the write-ahead log's identity once open (WAL mode)
        self.loaded = False  # opened and read as a jaxclust store: a later "not a store" means it was damaged

    # --- errors and transactions -----------------------------------------------------------------------------
    def error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        msg = str(exc)
        low = msg.lower()
        damage = ("not a database", "malformed", "corrupt", "no such table", "no such column")
        if self.loaded and any(w in low for w in damage):  # it was a store when this session opened it
            try:
                size = f"now {self.path.stat().st_size} bytes"
            except OSError:
                size = "now unreadable"
            return StoreError(
                f"answer store {self.path}: was truncated or overwritten by another program while this session "
                f"had it open ({size}; SQLite: {msg}); answers stored before may be gone from it. Nothing more is "
                "written: restore the file from a copy if there is one, else start a new store"
            )
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
    def write(self, doing: str = "written") -> Iterator[sqlite3.Connection]:
        """One short write transaction (``BEGIN IMMEDIATE``: it waits for, never deadlocks with, other
        writers)."""
        if self.conn is None:
            raise StoreError(f"answer store {self.path}: is closed")
        check_same_file(self.path, self.opened)
        self._check_wal()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self.error(exc, doing) from exc
        try:
            yield self.conn
        except BaseException as exc:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if isinstance(exc, sqlite3.Error):
                raise self.error(exc, doing) from exc
            raise
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise self.error(exc, doing) from exc

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: the answers, undos and fits read inside it are one consistent state."""
        try:
            self.conn.execute("BEGIN")
        except sqlite3.Error as exc:
            raise self.error(exc, "read") from exc
        try:
            yield
        finally:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.Error:
                pass

    # --- opening ---------------------------------------------------------------------------------------------
    def open(self) -> dict[str, Any]:
        """Connect, create the tables or bring an older store up to date (adds, never rewrites), read every row
        into the log; returns the stored meta."""
        existed = self.path.exists() and self.path.stat().st_size > 0
        self._check_one_name()
        if self.readonly:
            return self._open_readonly()
        try:
            os.close(os.open(str(self.real), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))  # a new store
        except FileExistsError:
            pass
        except OSError as exc:
            raise StoreError(f"answer store {self.path}: cannot be created ({exc.strerror})") from exc
        self.hold = FileHold(self.real, shared=self.shared)
        try:
            # any thread may use the store (a web server answers from a thread pool); the caller serialises
            # the calls, as AnswerStore says
            self.conn = sqlite3.connect(
                str(self.real),
                timeout=self.busy if self.shared else 0.0,
                isolation_level=None,
                check_same_thread=False,
            )
            self.opened = file_identity(self.path)
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if existed:
                self._check_ours(tables)
            self.conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            raise self.error(exc, "opened") from exc
        if self.shared:
            self._wal()
        with self.write("opened") as con:
            con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            con.execute(
                "CREATE TABLE IF NOT EXISTS answers (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                " i INTEGER, j INTEGER, answer TEXT, kept INTEGER, round INTEGER, annotator TEXT)"
            )
            columns = {r[1] for r in con.execute("PRAGMA table_info(answers)")}
            if "annotator" not in columns:  # a version-1 store: its answers get annotator NULL
                con.execute("ALTER TABLE answers ADD COLUMN annotator TEXT")
                con.execute("UPDATE meta SET value = ? WHERE key = 'version'", (json.dumps(VERSION),))
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
        self.wal = file_identity(self._wal_path())  # None outside WAL mode (a single writer's journal)
        with self.snapshot():
            stored, damaged = self._read_meta()
            self.load(stored, damaged)
        self.loaded = True
        return stored

    def _check_one_name(self) -> None:
        """``StoreError`` when the database file has several hard links. SQLite keeps a database's journal and
        write-ahead log beside the name it was opened by, so sessions opening one file by two names write two
        logs, and a crash under one name loses what the other name's readers and recovery never see."""
        try:
            links = os.stat(self.real).st_nlink
        except FileNotFoundError:
            return
        if links > 1:
            raise StoreError(
                f"answer store {self.path}: the file has {links} names (hard links); SQLite keeps its journal "
                "beside the name a session opens, so two names can lose answers in a crash. Nothing was "
                f"opened: remove the other names (find / -samefile {self.real}), or copy the store to a new file "
                "and use the copy"
            )

    def _check_ours(self, tables: set[str]) -> None:
        """``StoreError`` unless the database's ``tables`` are a jaxclust store's (or none: a new database, which
        another session may be creating right now)."""
        if tables and ("answers" not in tables or not tables <= _OUR_TABLES):
            raise StoreError(
                f"answer store {self.path}: is an SQLite database but not a jaxclust answer store (tables: "
                f"{', '.join(sorted(tables))}); nothing was changed, pass a new path"
            )

    def _wal_path(self) -> Path:
        return self.real.with_name(self.real.name + "-wal")

    def _check_wal(self) -> None:
        """The write-ahead log must still be the one this session writes to. Another program that removes it
        leaves SQLite appending to a file nobody will read, so a crash would lose every answer since the last
        checkpoint: the acknowledged answers are copied into the database now (a checkpoint reads the log this
        session still holds open), and nothing more is written."""
        if self.wal is None or file_identity(self._wal_path()) == self.wal:
            return
        try:
            self.conn.execute("PRAGMA wal_checkpoint(FULL)")
            saved = "copied into the database file"
        except sqlite3.Error as exc:
            saved = (
                f"could not be copied into the database file ({exc}); keep this process running and copy it"
            )
        self.wal = None
        raise StoreError(
            f"answer store {self.path}: its write-ahead log {self._wal_path().name} was removed or replaced while "
            f"this session had the store open; the answers acknowledged so far were {saved}. Nothing more is "
            "written: start the session again (it resumes from the store)"
        )

    def _open_readonly(self) -> dict[str, Any]:
        """Read every row without writing anything (no table is created, no claim released)."""
        try:
            self.conn = sqlite3.connect(
                f"file:{self.real}?mode=ro",
                uri=True,
                timeout=self.busy,
                isolation_level=None,
                check_same_thread=False,
            )
            self.opened = file_identity(self.path)
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.Error as exc:
            raise self.error(exc, "read") from exc
        self._check_ours(tables)
        if not tables:
            return {}
        with self.snapshot():
            stored, damaged = self._read_meta()
            self.load(stored, damaged)
        return stored

    def _wal(self) -> None:
        """Switch to WAL (it persists in the file). SQLite does not wait for a busy database here, so two
        sessions opening a new store at once retry, up to ``busy_timeout``."""
        deadline = time.monotonic() + self.busy
        while True:
            try:
                mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
                if (
                    str(mode).lower() == "wal"
                    or str(self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower() == "wal"
                ):
                    return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc).lower() and "busy" not in str(exc).lower():
                    raise self.error(exc, "opened") from exc
                if time.monotonic() >= deadline:
                    raise self.error(exc, "opened") from exc
            except sqlite3.Error as exc:
                raise self.error(exc, "opened") from exc
            time.sleep(0.02)

    def _read_meta(self) -> tuple[dict[str, Any], list]:
        stored: dict[str, Any] = {}
        damaged: list[tuple[str, bytes, str]] = []
        try:
            for key, value in self.conn.execute("SELECT key, value FROM meta"):
                try:
                    stored[key] = json.loads(value)
                except (TypeError, ValueError):
                    damaged.append((f"meta {key!r}", str(value).encode(), "meta value is not JSON"))
        except sqlite3.Error as exc:
            raise self.error(exc, "opened") from exc
        return stored, damaged

    def load(self, stored: dict[str, Any] | None = None, damaged: list | None = None) -> None:
        """Read the rows written since the last call (all of them the first time) into the log."""
        stored = self.meta if stored is None else stored
        damaged = [] if damaged is None else damaged
        n = stored.get("n") if is_int(stored.get("n")) else None
        last = self.seq
        try:
            rows = self.conn.execute(
                "SELECT seq, i, j, answer, kept, round, annotator FROM answers WHERE seq > ? ORDER BY seq",
                (last["answers"],),
            ).fetchall()
            for seq, i, j, a, k, r, who in rows:
                last["answers"] = seq
                obj = {"i": i, "j": j, "answer": a, "kept": bool(k) if k in (0, 1) else k, "round": r}
                if who is not None:
                    obj["annotator"] = who
                problem = answer_problem(obj, n)
                if problem is None:
                    self.log.add_answer(seq, obj)
                else:
                    damaged.append((f"answers row {seq}", json.dumps([i, j, a, k, r, who]).encode(), problem))
            rows = self.conn.execute(
                "SELECT seq, target, i, j, annotator FROM undos WHERE seq > ? ORDER BY seq", (last["undos"],)
            ).fetchall()
            for seq, target, i, j, who in rows:
                last["undos"] = seq
                obj = {"target": target, "i": i, "j": j, "annotator": who}
                problem = undo_problem(obj, n)
                if problem is None:
                    self.log.add_undo(seq, obj)
                else:
                    damaged.append((f"undos row {seq}", json.dumps([target, i, j, who]).encode(), problem))
            rows = self.conn.execute(
                "SELECT seq, body FROM fits WHERE seq > ? ORDER BY seq", (last["fits"],)
            ).fetchall()
            for seq, body in rows:
                last["fits"] = seq
                try:
                    fit = json.loads(body)
                    problem = fit_problem(fit)
                except (TypeError, ValueError):
                    problem = "fit record is not JSON"
                if problem is None:
                    self.log.add_fit(fit)
                else:
                    damaged.append((f"fits row {seq}", str(body).encode(), problem))
        except sqlite3.Error as exc:
            raise self.error(exc, "read") from exc
        if damaged and not self.readonly:  # left in the database (never deleted), set aside and reported
            set_aside(self.path, damaged)
            where = "; ".join(f"{w} ({why})" for w, _, why in damaged[:5])
            more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
            warnings.warn(
                f"answer store {self.path}: skipped damaged records: {where}{more}; kept "
                f"{plural(len(self.log.answers), 'intact answer')}; the damaged ones are copied to "
                f"{corrupt_path(self.path)}",
                StoreRecoveryWarning,
                stacklevel=4,
            )

    # --- writing ---------------------------------------------------------------------------------------------
    def write_meta(self, stored: dict[str, Any], given: dict[str, Any], mismatch) -> dict[str, Any]:
        """Check ``given`` against the meta read again inside the transaction (another session may have written
        it; ``mismatch`` raises) and store the keys not stored yet."""
        with self.write() as con:
            fresh, _ = self._read_meta()
            mismatch(fresh, given)
            missing = {k: v for k, v in given.items() if k not in fresh}
            if not fresh and not self.log.answers and not self.log.fits:
                missing = {**FORMAT, **missing}  # a new store says what it is
            con.executemany(
                "INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in missing.items()]
            )
        self.meta = {**fresh, **json.loads(json.dumps(missing))}
        return self.meta

    def append_answer(self, rec: dict[str, Any]) -> None:
        with self.write() as con:
            self.load()  # the others' rows first: the log stays in order
            cur = con.execute(
                "INSERT INTO answers (i, j, answer, kept, round, annotator) VALUES (?, ?, ?, ?, ?, ?)",
                (rec["i"], rec["j"], rec["answer"], int(rec["kept"]), rec["round"], rec["annotator"]),
            )
            seq = cur.lastrowid
            con.execute("DELETE FROM pending WHERE i = ? AND j = ?", (rec["i"], rec["j"]))  # its claim
        self.seq["answers"] = seq
        self.log.add_answer(seq, rec, news=False)

    def append_undo(self, annotator: str | None) -> dict[str, Any] | None:
        with self.write() as con:
            self.load()
            target = self.log.latest(annotator)
            if target is None:
                return None
            cur = con.execute(
                "INSERT INTO undos (target, i, j, annotator) VALUES (?, ?, ?, ?)",
                (target["id"], target["i"], target["j"], annotator),
            )
            seq = cur.lastrowid
        self.seq["undos"] = seq
        obj = {"target": target["id"], "i": target["i"], "j": target["j"], "annotator": annotator}
        self.log.add_undo(seq, obj, news=False)
        return target

    def append_fit(self, fit: dict[str, Any]) -> None:
        with self.write() as con:
            self.load()  # the others' rows first: the log stays in order
            fit["log"] = self.log.counts()
            cur = con.execute("INSERT INTO fits (body) VALUES (?)", (json.dumps(fit, sort_keys=True),))
            self.seq["fits"] = cur.lastrowid
        self.log.add_fit(fit)

    # --- several annotators ----------------------------------------------------------------------------------
    def claim(self, i: int, j: int, annotator: str | None) -> bool:
        """Claim the question for this session (see :meth:`AnswerStore.claim`)."""
        if not self.shared:
            return True
        rec = make_record(i, j, "unknown", annotator=annotator)
        a, b = rec["i"], rec["j"]
        with self.write("claimed") as con:
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
            # one question at a time per annotator (a team server's session holds one for each of its annotators)
            con.execute("DELETE FROM pending WHERE session = ? AND annotator IS ?", (self.session, annotator))
            con.execute(
                "INSERT OR REPLACE INTO pending (i, j, session, annotator, claimed) VALUES (?, ?, ?, ?, ?)",
                (a, b, self.session, annotator, time.strftime("%Y-%m-%d %H:%M:%S")),
            )
        return True

    def release(self, annotator: str | None) -> None:
        """Give back this session's claim for ``annotator`` (see :meth:`AnswerStore.release`)."""
        if not self.shared:
            return
        with self.write("released") as con:
            con.execute("DELETE FROM pending WHERE session = ? AND annotator IS ?", (self.session, annotator))

    def pending(self) -> list[dict[str, Any]]:
        if not self.shared or self.conn is None:
            return []
        try:
            rows = self.conn.execute("SELECT i, j, session, annotator, claimed FROM pending ORDER BY claimed")
            return [
                {"i": i, "j": j, "annotator": who, "claimed": t, "mine": s == self.session}
                for i, j, s, who, t in rows.fetchall()
            ]
        except sqlite3.Error as exc:
            raise self.error(exc, "read") from exc

    def sync(self) -> None:
        """Read what other sessions stored (shared mode; outside it nobody else writes)."""
        if not self.shared:
            return
        if self.conn is None:
            raise StoreError(f"answer store {self.path}: is closed")
        with self.snapshot():
            self.load()

    def close(self) -> None:
        """Release this session's claims, close the connection, then let go of the file (idempotent)."""
        try:
            if self.conn is not None:
                try:
                    if self.shared and not self.readonly:
                        try:
                            with self.write("closed") as con:
                                con.execute("DELETE FROM pending WHERE session = ?", (self.session,))
                        except StoreError:  # the claims die with the session file anyway
                            pass
                finally:
                    self.conn.close()
                    self.conn = None
        finally:
            if self.hold is not None:  # after the connection: see FileHold
                self.hold.release()
                self.hold = None
