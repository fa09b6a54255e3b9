"""Pairs of items as users write them: indices checked, lists and entries parsed, every error naming the entry.

The constraint set and the answer log read their pairs through these, so a bad index reads the same everywhere
(``must-link (3, 7.5): index 7.5 is not an integer``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from jaxclust.errors import ConstraintError

__all__ = ["Pair", "as_index", "as_pair", "entry", "index_array", "pair_list", "read_dict", "show"]

Pair = tuple[int, int]


def index_array(values: Any, name: str) -> np.ndarray:
    """Item indices as int64; a non-integer value (1.9, NaN, a bool, a string) raises ``ConstraintError`` naming
    it instead of being truncated."""
    arr = np.asarray(values)
    if arr.size and (arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer)):
        bad = arr.ravel()[0]
        raise ConstraintError(
            f"{name}: index {bad.item() if isinstance(bad, np.generic) else bad!r} is not an integer"
        )
    return arr.astype(np.int64)


def as_index(value: Any, n: int, what: str) -> int:
    """``value`` as an index into ``n`` items; ConstraintError naming ``what`` when it is no integer or out of
    range."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ConstraintError(f"{what}: index {value!r} is not an integer")
    v = int(value)
    if not 0 <= v < n:
        raise ConstraintError(f"{what}: index {v} is out of range for {n} items (valid: 0..{n - 1})")
    return v


def as_pair(pair: Any, n: int, kind: str) -> Pair:
    """``pair`` as two indices into ``n`` items; ConstraintError naming the ``kind``-link as written otherwise."""
    try:
        i, j = pair
    except (TypeError, ValueError) as exc:
        raise ConstraintError(f"{kind}-link {pair!r}: expected a pair (i, j)") from exc
    what = f"{kind}-link ({i!r}, {j!r})"
    return as_index(i, n, what), as_index(j, n, what)


def show(item: Any) -> str:
    """A constraint entry as the user wrote it, with NumPy scalars shown as numbers."""
    if isinstance(item, tuple | list):
        return "(" + ", ".join(repr(v.item()) if isinstance(v, np.generic) else repr(v) for v in item) + ")"
    return repr(item)


def pair_list(pairs: Any, name: str) -> list:
    """``pairs`` as a list, or ConstraintError naming ``name`` when it is not a collection of pairs."""
    if isinstance(pairs, str | bytes | Mapping) or not isinstance(pairs, Iterable):
        raise ConstraintError(f"{name}: expected a list of pairs (i, j), got {type(pairs).__name__}")
    return list(pairs)


def entry(item: Any, name: str) -> tuple:
    """A serialised ``[i, j, kind]`` entry as a tuple, or ConstraintError naming it."""
    if isinstance(item, str | bytes) or not isinstance(item, Sequence) or len(item) != 3:
        raise ConstraintError(f"{name}: entry {item!r} is not [i, j, 'must' | 'cannot']")
    return tuple(item)


def read_dict(d: Any) -> tuple[Any, Any, list, list, list]:
    """The parts of a serialised constraint set ``{"n", "on_conflict", "constraints", "dropped", "answers"}``:
    ``(n, on_conflict, constraints [(i, j, kind)], dropped [(i, j, kind)], answers [((i, j), must,
    error_rate)])``, each entry's shape and kind checked (indices are checked by the set built from them);
    ConstraintError naming the bad key or entry otherwise."""
    if not isinstance(d, Mapping):
        raise ConstraintError(f"from_dict: expected a dict, got {type(d).__name__}")
    if "n" not in d:
        raise ConstraintError(f"from_dict: no 'n' (number of items) among the keys {sorted(map(str, d))}")
    unknown = sorted(str(k) for k in set(d) - {"n", "on_conflict", "constraints", "dropped", "answers"})
    if unknown:
        raise ConstraintError(
            f"from_dict: unknown keys {unknown} (expected 'n', 'on_conflict', 'constraints', 'dropped', "
            "'answers')"
        )
    entries = [entry(c, "constraints") for c in pair_list(d.get("constraints", []), "constraints")]
    dropped = []
    for item in pair_list(d.get("dropped", []), "dropped"):
        i, j, k = entry(item, "dropped")
        if k not in ("must", "cannot"):
            raise ConstraintError(f"dropped: entry {item!r} has kind {k!r}, expected 'must' or 'cannot'")
        dropped.append((i, j, k))
    soft = []
    for item in pair_list(d.get("answers", []), "answers"):
        if isinstance(item, str | bytes) or not isinstance(item, Sequence) or len(item) != 4:
            raise ConstraintError(f"answers: entry {item!r} is not [i, j, 'must' | 'cannot', error_rate]")
        i, j, k, eps = item
        if k not in ("must", "cannot"):
            raise ConstraintError(f"answers: entry {item!r} has kind {k!r}, expected 'must' or 'cannot'")
        soft.append(((i, j), k == "must", eps))
    return d["n"], d.get("on_conflict", "raise"), entries, dropped, soft
