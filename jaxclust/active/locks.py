"""File locks of an answer store: who may open it, and which shared sessions are alive.

* :class:`StoreLock` is an advisory ``flock`` on ``<store>.lock``, held while the store is open: *exclusive*
  in the default (single-writer) mode, *shared* in the multi-annotator mode, so any number of shared sessions
  run side by side while a single-writer session excludes every other one. The kernel drops an ``flock`` when
  its process dies, so a killed session never leaves the store locked.
* :class:`FileHold` is an ``flock`` on the store file itself, so the file is held by its identity whatever name
  (a symbolic or hard link) opened it, and also after its ``.lock`` was deleted.
* :class:`SessionFile` marks one shared session as alive: an exclusive ``flock`` on
  ``<store>.sessions/<token>.lock``, held for the session's life. Another session can tell a live session (its
  file is locked) from a dead one (missing, or lockable): the claims of a dead session are released.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

from jaxclust.errors import StoreError, StoreLockedError
from jaxclust.files import write_all

__all__ = [
    "StoreLock",
    "FileHold",
    "SessionFile",
    "session_alive",
    "sessions_folder",
    "try_lock",
    "real_store",
]

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: msvcrt has exclusive locks only
    fcntl = None


def try_lock(fd: int, shared: bool = False) -> bool:
    """Take an ``flock`` without blocking; False when another open file holds a conflicting one."""
    if fcntl is None:  # pragma: no cover - Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


def real_store(store: Path) -> Path:
    """The store's path with every symbolic link resolved: its lock and session files sit beside the file itself,
    so that sessions opening it through different links see each other."""
    return Path(os.path.realpath(store))


def _same_inode(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(str(path)).st_ino
    except FileNotFoundError:
        return False


def _holder_info(**extra) -> dict:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:200] if sys.argv else "",
        **extra,
    }


class StoreLock:
    """Advisory lock on ``<store>.lock``, held while the store is open (exclusive, or shared).

    The exclusive holder writes its pid, host, start time and command into the lock file (for the error
    message of the next process) and removes the file on a clean close; after taking the lock, its inode is
    compared with the path's so a lock file removed by a closing owner in the meantime is never trusted.
    """

    def __init__(self, store: Path, wait: float, shared: bool = False):
        real = real_store(store)
        self.path = real.with_name(real.name + ".lock")
        self.shared = shared
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
            if try_lock(fd, shared):
                if _same_inode(fd, self.path):
                    self.fd = fd
                    if not shared:
                        self._write_holder()
                    return
                os.close(fd)  # the owner removed this lock file while we waited: take the new one
                continue
            # a single-writer request that could take a shared lock is held off by shared sessions
            by_shared = not shared and try_lock(fd, shared=True)
            holder = {} if by_shared else self._read_holder(fd)
            os.close(fd)
            if time.monotonic() >= deadline:
                raise StoreLockedError(
                    self._message(store, holder, by_shared), path=str(store), holder=holder
                )
            time.sleep(0.05)

    @staticmethod
    def _message(store: Path, holder: dict, by_shared: bool) -> str:
        if by_shared:
            return (
                f"answer store {store} is in use by annotators working on it together (shared mode); join them "
                "with --shared (Python: shared=True), or wait until they finish, or use another store file"
            )
        who = ", ".join(f"{k} {holder[k]}" for k in ("pid", "host", "since") if k in holder)
        cmd = f" running {holder['command']!r}" if holder.get("command") else ""
        text = (
            f"answer store {store} is in use by another process ({who or 'unknown process'}{cmd}); "
            "wait for that session to end (or stop it), then run again, or use another store file"
        )
        if store.suffix.lower() in (".sqlite", ".sqlite3", ".db"):
            return (
                text
                + "; for several annotators at once, every session opens it with --shared (Python: shared=True)"
            )
        return (
            text + "; a JSON-lines store takes one writer at a time: for several annotators at once, use an "
            "SQLite store (.sqlite) opened with --shared"
        )

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
        try:
            os.ftruncate(self.fd, 0)
            os.lseek(self.fd, 0, os.SEEK_SET)
            write_all(self.fd, json.dumps(_holder_info()).encode())
        except OSError:  # the lock itself holds; the note is only for the error message
            pass

    def release(self) -> None:
        if self.fd is None:
            return
        # remove the file only while holding it exclusively: the last shared holder upgrades (without waiting)
        if not self.shared or try_lock(self.fd, shared=False):
            try:
                os.unlink(str(self.path))
            except OSError:
                pass
        os.close(self.fd)
        self.fd = None


class FileHold:
    """An ``flock`` on the store file itself, held from open to close: exclusive for a single writer, shared for
    the sessions of the multi-annotator mode.

    One descriptor per file and process, counted across the stores of the process that hold the file: closing
    any descriptor of a file drops every POSIX lock the process holds on it, and SQLite's transactions are POSIX
    locks, so a second store of this process on the same file must never open (and close) a descriptor of its
    own. A conflict inside the process is decided from the table, without opening the file.
    """

    _held: dict[tuple[int, int], list] = {}  # (device, inode) -> [descriptor, shared, holders]
    _table = threading.Lock()

    def __init__(self, path: Path, shared: bool = False):
        self.key: tuple[int, int] | None = None
        try:
            st = os.stat(path)
        except OSError as exc:
            raise StoreError(f"answer store {path}: cannot be read ({exc.strerror})") from exc
        key = (st.st_dev, st.st_ino)
        with FileHold._table:
            entry = FileHold._held.get(key)
            if entry is not None:
                if not (shared and entry[1]):
                    raise self._refused(path)
                entry[2] += 1
            else:
                try:
                    fd = os.open(str(path), os.O_RDONLY)
                except OSError as exc:
                    raise StoreError(f"answer store {path}: cannot be read ({exc.strerror})") from exc
                if not try_lock(fd, shared):
                    os.close(fd)
                    raise self._refused(path)
                FileHold._held[key] = [fd, shared, 1]
        self.key = key

    @staticmethod
    def _refused(path: Path) -> StoreLockedError:
        return StoreLockedError(
            f"answer store {path}: is open in another session under another name (a link to the same file) or "
            "with its .lock file removed; wait for that session to end, or use another store file",
            path=str(path),
        )

    def release(self) -> None:
        """Let go (idempotent); the descriptor closes with the file's last holder in this process, which must
        have closed its database connection first."""
        if self.key is None:
            return
        with FileHold._table:
            entry = FileHold._held[self.key]
            entry[2] -= 1
            if entry[2] == 0:
                del FileHold._held[self.key]
                os.close(entry[0])
        self.key = None


def sessions_folder(store: Path) -> Path:
    """Where shared sessions keep their session files: ``<store>.sessions/`` beside the file itself."""
    real = real_store(store)
    return real.with_name(real.name + ".sessions")


class SessionFile:
    """``<store>.sessions/<token>.lock``, locked exclusively while a shared session lives.

    It is written under a temporary name, locked, then renamed into place, so whoever sees the final name sees
    a locked file while its session lives.
    """

    def __init__(self, store: Path, token: str, annotator: str | None = None):
        self.folder = sessions_folder(store)
        self.path = self.folder / f"{token}.lock"
        self.fd: int | None = None
        tmp = self.folder / f".{token}.tmp"
        for attempt in range(3):
            try:
                self.folder.mkdir(exist_ok=True)
                fd = os.open(str(tmp), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
                break
            except FileNotFoundError:  # the last session out removed the folder meanwhile: make it again
                if attempt == 2:
                    raise StoreError(f"answer store {store}: cannot create {self.folder}") from None
            except OSError as exc:
                raise StoreError(
                    f"answer store {store}: cannot create the session file in {self.folder} ({exc.strerror}); "
                    "the store's folder must be writable"
                ) from exc
        try:
            try_lock(fd)  # a fresh random name: nobody else has it
            write_all(fd, json.dumps(_holder_info(annotator=annotator)).encode())
            os.replace(
                tmp, self.path
            )  # published already locked: a file, not its content, is what is atomic here
        except OSError as exc:
            os.close(fd)
            raise StoreError(
                f"answer store {store}: cannot create the session file {self.path} ({exc.strerror}); "
                "the store's folder must be writable"
            ) from exc
        self.fd = fd

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(str(self.path))
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


def session_alive(store: Path, token: str) -> bool:
    """Whether the shared session ``token`` still runs (its session file exists and is locked)."""
    path = sessions_folder(store) / f"{token}.lock"
    try:
        fd = os.open(str(path), os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - cannot tell: assume it lives (its claims stay)
        return True
    try:
        if fcntl is None:  # pragma: no cover - Windows: no way to tell
            return True
        if try_lock(fd, shared=True):  # nobody holds it: the session died without cleaning up
            try:
                if _same_inode(fd, path):
                    os.unlink(str(path))
            except OSError:
                pass
            return False
        return True
    finally:
        os.close(fd)
