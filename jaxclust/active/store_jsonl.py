"""The JSON-lines back end of :class:`~jaxclust.active.store.AnswerStore`: one writer at a time.

The file's first line is ``{"meta": {...}}`` (a later meta line extends it); an answer is one line
``{"i", "j", "answer", "kept", "round"[, "annotator"]}``, an undo ``{"undo": {"target", "i", "j"[,
"annotator"]}}`` and a fit ``{"fit": {...}}``. Each record is appended and ``fsync``'d before the call returns.
Opening a damaged file keeps every intact line with its exact bytes: the damaged ones are copied to the side file
and the file is rewritten without them, atomically; a last line cut short by a crash is kept when it is a complete
record (only its newline was missing).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path
from typing import Any

from jaxclust.active.answer_log import (
    FORMAT,
    VERSION,
    AnswerLog,
    check_same_file,
    classify_record,
    corrupt_path,
    is_int,
    plural,
    public_record,
    set_aside,
)
from jaxclust.active.locks import FileHold
from jaxclust.errors import StoreError, StoreRecoveryWarning
from jaxclust.files import append_durably, atomic_write, fsync_dir

__all__ = ["JsonlBackend"]


def _parse(line: bytes) -> tuple[Any, str | None]:
    try:
        return json.loads(line), None
    except UnicodeDecodeError:
        return None, "not valid UTF-8"
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON: {str(exc).split(':')[0]}"


class JsonlBackend:
    """A JSON-lines answer file, read into ``log`` when opened and appended to after."""

    def __init__(self, path: Path, log: AnswerLog):
        self.path = path
        self.log = log
        self.meta: dict[str, Any] = {}
        self.fd: int | None = None
        self.hold: FileHold | None = None  # the file itself, held while open: one writer whatever its name
        self.size = 0  # the file's size after this session's last write: a smaller file was truncated
        self.readonly = False  # set before open(): read the records, write and lock nothing (store stats)

    # --- opening ---------------------------------------------------------------------------------------------
    def open(self) -> dict[str, Any]:
        """Create or read (and repair) the file; returns the stored meta. The file itself is held (a
        :class:`~jaxclust.active.locks.FileHold`) from before it is read until :meth:`close`."""
        p = self.path
        if not p.exists():
            try:
                self.fd = os.open(str(p), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            except OSError as exc:
                raise StoreError(f"answer store {p}: cannot be created ({exc.strerror})") from exc
            self.hold = FileHold(p)
            fsync_dir(p.parent)
            return {}
        if not self.readonly:
            self.hold = FileHold(p)  # released by close(), also when opening fails below
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise StoreError(f"answer store {p}: cannot be read ({exc.strerror})") from exc
        pieces = raw.split(b"\n")
        tail = pieces.pop()  # b"" when the file ends with a newline; else a line cut short by a crash
        parsed = [(k, line, *_parse(line)) for k, line in enumerate(pieces, 1)]
        meta: dict[str, Any] = {}
        for _, _, obj, problem in parsed:
            if problem is None and classify_record(obj, None)[0] == "meta":
                meta.update(obj["meta"])
        n = meta.get("n") if is_int(meta.get("n")) else None
        keep: list[bytes] = []  # the lines of the repaired file, intact bytes unchanged
        damaged: list[tuple[int, bytes, str]] = []
        n_intact = 0
        for k, line, obj, problem in parsed:
            if not line.strip():
                keep.append(line)
                continue
            kind = None
            if problem is None:
                kind, problem = classify_record(obj, n)
            if kind is None:
                damaged.append((k, line, problem))
                continue
            keep.append(line)
            n_intact += 1
            self._take(kind, obj)
        torn_ok = False
        if tail and self.readonly:  # a line a writer is writing now (or a crash cut): its writer repairs it
            obj, problem = _parse(tail)
            kind = None if problem is not None else classify_record(obj, n)[0]
            if kind is not None:
                self._take(kind, obj)
            tail = b""
        if tail:
            obj, problem = _parse(tail)
            kind = None
            if problem is None:
                kind, problem = classify_record(obj, n)
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
        if damaged and not self.readonly:
            set_aside(p, damaged)
            self._rewrite(b"".join(line + b"\n" for line in keep))
            where = "; ".join(f"line {k} ({why})" for k, _, why in damaged[:5])
            more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
            warnings.warn(
                f"answer store {p}: set aside {plural(len(damaged), 'damaged line')}: {where}{more}; kept "
                f"{plural(len(self.log.answers), 'intact answer')}; the damaged bytes are in {corrupt_path(p)}",
                StoreRecoveryWarning,
                stacklevel=3,
            )
        if self.readonly:
            if damaged:
                warnings.warn(
                    f"answer store {p}: skipped {plural(len(damaged), 'damaged line')} (the next session that "
                    "writes to it sets them aside)",
                    StoreRecoveryWarning,
                    stacklevel=3,
                )
            return meta
        try:
            self.fd = os.open(str(p), os.O_WRONLY | os.O_APPEND)
            if os.fstat(self.fd).st_ino != self.hold.key[1]:  # repaired: a new file, held afresh
                old, self.hold = self.hold, FileHold(p)
                old.release()
            if torn_ok and not damaged:  # only the newline was missing
                append_durably(self.fd, b"\n")
            self.size = os.fstat(self.fd).st_size
        except OSError as exc:
            raise StoreError(f"answer store {p}: cannot be opened for writing ({exc.strerror})") from exc
        return meta

    def _take(self, kind: str, obj: dict) -> None:
        if kind == "answer":
            self.log.add_answer(len(self.log.answers) + 1, obj)
        elif kind == "undo":
            self.log.add_undo(len(self.log.undos) + 1, obj["undo"])
        elif kind == "fit":
            self.log.add_fit(obj["fit"])

    def _rewrite(self, data: bytes) -> None:
        """Replace the file by ``data`` atomically; a store opened through a symbolic link is rewritten where
        the link points, the link kept."""
        p = Path(os.path.realpath(self.path))
        try:
            atomic_write(p, data)
        except OSError as exc:
            raise StoreError(
                f"answer store {p}: could not be repaired ({exc.strerror}); the damaged lines are copied to "
                f"{corrupt_path(self.path)}, the store is unchanged"
            ) from exc

    # --- writing ---------------------------------------------------------------------------------------------
    def _append_line(self, obj: dict[str, Any]) -> None:
        if self.fd is None:
            raise StoreError(f"answer store {self.path}: is closed")
        st = os.fstat(self.fd)
        check_same_file(self.path, (st.st_dev, st.st_ino))
        if st.st_size < self.size:
            saved = self._save_elsewhere()
            raise StoreError(
                f"answer store {self.path}: was cut to {st.st_size} bytes while this session had it open (it had "
                f"written {self.size}); another program truncated it, so records this session stored are gone "
                f"from the file, and nothing more is written to it. {saved}"
            )
        data = json.dumps(obj, sort_keys=True).encode() + b"\n"
        size = st.st_size
        try:
            append_durably(self.fd, data)
        except OSError as exc:
            try:  # never leave half a line for the next append to be glued onto
                os.ftruncate(self.fd, size)
            except OSError:
                pass
            raise StoreError(
                f"answer store {self.path}: could not save a record ({exc.strerror}); the answers before it "
                "are safe; free disk space or fix permissions and run again"
            ) from exc
        self.size = size + len(data)

    def _save_elsewhere(self) -> str:
        """Write the meta and the answers in effect that this session holds to a new store file beside this one
        (the truncated file is left as it is); returns what to tell the user."""
        real = Path(os.path.realpath(self.path))
        target = real.with_name(f"{real.stem}.saved-{time.strftime('%Y%m%d-%H%M%S')}{real.suffix}")
        lines = [{"meta": self.meta}]
        for rec in self.log.resolve()[0]:
            lines.append({k: v for k, v in rec.items() if not (k == "annotator" and v is None)})
        try:
            atomic_write(target, b"".join(json.dumps(x, sort_keys=True).encode() + b"\n" for x in lines))
        except OSError as exc:
            return f"Saving this session's answers elsewhere failed too ({exc.strerror}): restore the file from a copy"
        return (
            f"The {plural(len(lines) - 1, 'answer')} in effect that this session held are saved in {target}: "
            "pass that file as the store to go on"
        )

    def _upgrade(self) -> None:
        """Before the first record only version 2 can read (an annotator, an undo): say so in the meta."""
        version = self.meta.get("version")
        if is_int(version) and version < VERSION:
            self._append_line({"meta": {"version": VERSION}})
            self.meta = {**self.meta, "version": VERSION}

    def write_meta(self, stored: dict[str, Any], given: dict[str, Any], mismatch) -> dict[str, Any]:
        """Check ``given`` against ``stored`` (``mismatch`` raises) and append the keys not stored yet."""
        mismatch(stored, given)
        missing = {k: v for k, v in given.items() if k not in stored}
        if not stored and not self.log.answers and not self.log.fits and not self.log.undos:
            missing = {**FORMAT, **missing}
        if missing:  # a later meta line extends the earlier one
            self._append_line({"meta": missing})
        self.meta = {**stored, **json.loads(json.dumps(missing))}
        return self.meta

    def append_answer(self, rec: dict[str, Any]) -> None:
        line = public_record(rec)
        if rec["annotator"] is None:
            del line["annotator"]  # the bytes of a version-1 record
        else:
            self._upgrade()
        self._append_line(line)
        self.log.add_answer(len(self.log.answers) + 1, rec, news=False)

    def append_undo(self, annotator: str | None) -> dict[str, Any] | None:
        target = self.log.latest(annotator)
        if target is None:
            return None
        self._upgrade()
        obj = {"target": target["id"], "i": target["i"], "j": target["j"]}
        if annotator is not None:
            obj["annotator"] = annotator
        self._append_line({"undo": obj})
        self.log.add_undo(len(self.log.undos) + 1, {**obj, "annotator": annotator}, news=False)
        return target

    def append_fit(self, fit: dict[str, Any]) -> None:
        self._append_line({"fit": fit})
        self.log.add_fit(fit)

    # --- sessions --------------------------------------------------------------------------------------------
    def claim(self, i: int, j: int, annotator: str | None) -> bool:  # noqa: ARG002 - one writer: nobody else
        return True

    def release(self, annotator: str | None) -> None:  # noqa: ARG002 - one writer: nothing is claimed
        return None

    def pending(self) -> list[dict[str, Any]]:
        return []

    def sync(self) -> None:
        """Nothing to read: nobody else writes to a JSON-lines store while it is open."""

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.hold is not None:
            self.hold.release()
            self.hold = None
