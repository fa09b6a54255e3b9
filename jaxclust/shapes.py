"""Static sizes for compiled programs: sizes are rounded up to a power of two, so a growing input re-traces a
program only when it crosses the next power (grow by re-tracing, never by truncation)."""

from __future__ import annotations

__all__ = ["next_pow2"]


def next_pow2(x: int, minimum: int = 1) -> int:
    """The smallest power of two ``>= max(x, minimum, 1)``."""
    x = max(int(x), int(minimum), 1)
    return 1 << (x - 1).bit_length()
