"""The chat model's votes kept on disk, so that no pair is sent twice, even across sessions.

:class:`VoteCache` is a JSON-lines file beside an answer store (the apps name it ``<store>.chat.jsonl``): one
line per pair asked, ``{"i", "j", "prompt", "items", "votes"}`` with the prompt's digest (another prompt is
another annotator: its votes are not reused), a digest of the two items' texts (other data: not reused) and
``[same, different, abstained]``. Each line is appended and ``fsync``'d before the votes are used, so a crash
loses at most the pair being asked; a torn last line is skipped when read, and the next line starts on a line
of its own. A :class:`~jaxclust.active.chat.ChatOracle` given a cache reads it once and adds to it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from jaxclust.errors import InvalidInputError
from jaxclust.files import append_durably

__all__ = ["VoteCache", "items_digest"]

log = logging.getLogger(__name__)


def items_digest(a: str, b: str) -> str:
    """Sixteen hex digits naming the texts of a pair's two items (in the pair's order)."""
    return hashlib.sha256(f"{a}\0{b}".encode()).hexdigest()[:16]


class VoteCache:
    """A chat model's votes per pair, in the JSON-lines file ``path`` (created when the first pair is added)."""

    def __init__(self, path: str | os.PathLike):
        if not isinstance(path, str | os.PathLike):
            raise InvalidInputError(f"cache: expected a file path, got {type(path).__name__}")
        self.path = Path(path)

    def read(self, prompt: str) -> dict[tuple[int, int, str], tuple[int, int, int]]:
        """The votes stored for ``prompt`` (a digest), keyed by ``(i, j, items digest)``; unreadable lines (a
        torn last line) are skipped and logged."""
        out: dict[tuple[int, int, str], tuple[int, int, int]] = {}
        if not self.path.exists():
            return out
        for k, line in enumerate(self.path.read_text(encoding="utf-8", errors="replace").splitlines()):
            try:
                row = json.loads(line)
                key = (int(row["i"]), int(row["j"]), str(row["items"]))
                votes = tuple(int(v) for v in row["votes"])
                if len(votes) != 3:
                    raise ValueError("votes: expected three counts")
            except (ValueError, KeyError, TypeError) as exc:
                if line.strip():
                    log.warning("chat cache %s: line %d skipped (%s)", self.path, k + 1, exc)
                continue
            if row.get("prompt") == prompt:
                out[key] = votes  # type: ignore[assignment]
        return out

    def add(self, i: int, j: int, prompt: str, items: str, votes: tuple[int, int, int]) -> None:
        """Append one pair's votes, durably."""
        line = json.dumps({"i": i, "j": j, "prompt": prompt, "items": items, "votes": list(votes)}) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size and not _ends_with_newline(self.path):
                line = "\n" + line  # after a torn line: start a line of our own
            append_durably(fd, line.encode())
        finally:
            os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"
