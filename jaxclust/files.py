"""Durable file writes: a reader sees the old file or the new one, never half of one, and what is written
survives a crash of the process or of the machine.

* :func:`atomic_write`: replace a file's content (a temporary file beside it, written, ``fsync``'d,
  ``os.replace``'d over the file, then the folder ``fsync``'d so the rename itself is on disk);
* :func:`append_durably`: append to a file and ``fsync`` it (an answer store's JSON lines);
* :func:`write_all` and :func:`fsync_dir`, the two steps they are made of.

Errors are the ``OSError`` of the step that failed, with no temporary file left behind; callers turn it into
their own message (which store, what is safe, what to do).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["append_durably", "atomic_write", "fsync_dir", "write_all"]


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to the file descriptor ``fd`` (``os.write`` may write fewer)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(path: str | os.PathLike) -> None:
    """``fsync`` the folder ``path``, so that a file created or renamed in it stays after a crash; a no-op where
    the file system does not let a folder be opened or synced."""
    with contextlib.suppress(OSError):
        fd = os.open(str(path), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: str | os.PathLike, data: bytes, *, mode: int | None = None) -> None:
    """Replace the content of ``path`` by ``data`` atomically and durably.

    A symbolic link is followed: the file it points to is replaced and the link kept. ``mode`` is the new
    file's permission bits; default the old file's, else ``0o644``.
    """
    p = Path(os.path.realpath(path))
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    if mode is None:
        try:
            mode = stat.S_IMODE(p.stat().st_mode)
        except FileNotFoundError:
            mode = 0o644
    try:
        fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, p)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(p.parent)


def append_durably(fd: int, data: bytes) -> None:
    """Append ``data`` to the file open as ``fd`` (opened with ``O_APPEND``) and ``fsync`` it."""
    write_all(fd, data)
    os.fsync(fd)
