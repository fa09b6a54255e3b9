"""Must-links closed into groups by union-find, cannot-links checked against them, a contradiction explained.

:func:`close` reads constraints in order and keeps each unless it contradicts those kept before it (must-links
joining a cannot-linked pair): then it is dropped, or the error names the cannot-linked pair and the chain of
must-links that joins them (:func:`shortest_path`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from jaxclust.answers import KINDS
from jaxclust.errors import ConstraintConflictError, ConstraintError
from jaxclust.pairs import Pair, as_pair
from jaxclust.validation import Int, check_rule

__all__ = ["close", "shortest_path"]


def close(
    n: int, log: Sequence[tuple[Any, bool]], on_conflict: str, dropped: Sequence = ()
) -> tuple[tuple, tuple, np.ndarray]:
    """The constraints ``log`` (``((i, j), must)`` in order) over ``n`` items, closed.

    Returns ``(kept, dropped, roots)``: the kept constraints ``((i, j), must)`` in order (duplicates skipped),
    ``dropped`` with the contradicting ones appended as ``((i, j), "must" | "cannot")`` (``on_conflict="drop"``;
    ``"raise"`` raises :class:`~jaxclust.errors.ConstraintConflictError` instead), and ``roots`` (n,) an item
    of each item's must-link group. ``n`` that is not a positive int raises ``InvalidInputError``.
    """
    n = check_rule(Int(1), n, "n")
    parent = np.arange(n)

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    cl_adj: dict[int, dict[int, Pair]] = {}  # root -> {partner root: an item-level CL pair witnessing it}
    ml_edges: list[Pair] = []
    kept: list[tuple[Pair, bool]] = []
    seen: set[tuple[int, int, bool]] = set()
    dropped_now = list(dropped)
    for pair, must in log:
        i, j = as_pair(pair, n, KINDS[must])
        if not must and i == j:
            raise ConstraintError(f"cannot-link ({i}, {j}): an item cannot be cannot-linked to itself")
        if i == j:  # always true: accepting it would hide a mistake in the caller's pairs
            raise ConstraintError(f"must-link ({i}, {j}): a must-link needs two different items")
        key = (min(i, j), max(i, j), must)
        if key in seen:
            continue
        ri, rj = find(i), find(j)
        conflict = None
        if must and ri != rj and rj in cl_adj.get(ri, {}):
            a, b = cl_adj[ri][rj]
            conflict = ((a, b), ml_edges + [(i, j)])
        elif not must and ri == rj:
            conflict = ((i, j), ml_edges)
        if conflict is not None:
            (a, b), edges = conflict
            if on_conflict == "drop":
                dropped_now.append(((i, j), KINDS[must]))
                continue
            adjacency: dict[int, list[tuple[int, None]]] = {}
            for u, v in edges:
                adjacency.setdefault(u, []).append((v, None))
                adjacency.setdefault(v, []).append((u, None))
            chain = [(x, y) for x, y, _ in shortest_path(adjacency, a, b)]  # each edge along the path
            steps = " -> ".join(str(v) for v in [a] + [y for _, y in chain])
            new = f"the new must-link ({i}, {j})" if must else f"the new cannot-link ({i}, {j})"
            raise ConstraintConflictError(
                f"contradictory constraints: items {a} and {b} are cannot-linked but must-links join them "
                f"(chain {steps}); {new} makes the set infeasible",
                pair=(a, b),
                chain=chain,
            )
        seen.add(key)
        kept.append(((i, j), must))
        if must:
            ml_edges.append((i, j))
            if ri != rj:  # union; merge the cannot-link adjacency of the two roots
                parent[rj] = ri
                adj_j = cl_adj.pop(rj, {})
                adj_i = cl_adj.setdefault(ri, {})
                for partner, witness in adj_j.items():
                    adj_i.setdefault(partner, witness)
                    back = cl_adj[partner]
                    back.setdefault(ri, back.pop(rj))
        else:
            cl_adj.setdefault(ri, {}).setdefault(rj, (i, j))
            cl_adj.setdefault(rj, {}).setdefault(ri, (i, j))
    return tuple(kept), tuple(dropped_now), np.array([find(x) for x in range(n)])


def shortest_path(neighbours: Mapping[int, Iterable[tuple[int, Any]]], src: int, dst: int) -> list[tuple]:
    """The steps ``(x, y, label)`` of a shortest path from ``src`` to ``dst`` (breadth-first) in a graph given
    as ``neighbours[x] = [(y, label of the edge x-y), ...]``; ``[]`` when ``src == dst`` or no path exists.
    Used to name the must-links that join two items (a conflict's explanation)."""
    prev: dict[int, tuple[int, Any]] = {src: (src, None)}
    queue = deque([src])
    while queue and dst not in prev:
        x = queue.popleft()
        for y, label in neighbours.get(x, ()):
            if y not in prev:
                prev[y] = (x, label)
                queue.append(y)
    if src == dst or dst not in prev:
        return []
    steps, y = [], dst
    while y != src:
        x, label = prev[y]
        steps.append((x, y, label))
        y = x
    return steps[::-1]
