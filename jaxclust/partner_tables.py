"""A constraint set's group-level partner graph in the padded tables jitted code reads.

Each must-link group's partners (the groups it is cannot-linked to, or shares answers with) form a row of a table
padded with ``-1``, with a log-weight per entry (``-inf`` for a cannot-link). Widths are powers of two, so the
programs that read a table re-compile only when a degree doubles; :class:`PartnerRows` keeps the width fixed and
continues a hub's list in spill rows. :func:`colouring` orders groups for moves that update many at once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxclust.errors import InvalidInputError
from jaxclust.shapes import next_pow2

__all__ = [
    "MIN_PARTNER_CAPACITY",
    "MIN_SPILL_ROWS",
    "PartnerRows",
    "PartnerTables",
    "check_rows",
    "colouring",
    "padded_lists",
    "partner_capacity",
    "spill_capacity",
    "spilled_lists",
    "table_capacity",
]

MIN_PARTNER_CAPACITY = (
    8  # narrowest padded partner table: an unconstrained fit and early rounds share a shape
)


def partner_capacity(degree: int) -> int:
    """Columns of a padded partner table for groups of at most ``degree`` partners: a power of two, at least
    ``MIN_PARTNER_CAPACITY``. Jitted code over the table (the sampler's cannot-link masks, COP-KMeans, the pair
    selection) then re-compiles only when the largest degree passes 8, 16, 32, ..., not with every answer."""
    return max(MIN_PARTNER_CAPACITY, next_pow2(int(degree)))


def padded_lists(
    edges: np.ndarray, weights: np.ndarray, rows: int, cap: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each group's partners (both ends of every edge (E, 2)) and the edge weights, in rows padded with -1 / 0:
    ``(partners (rows, cap) int32, weights (rows, cap) float64)``, partners in increasing order (``cap`` at
    least the largest degree)."""
    table = spilled_lists(edges, weights, rows, cap, spill_rows=0)
    return table.partners, table.weights


MIN_SPILL_ROWS = 32  # fewest spill rows of a partner table: a session's hubs rarely outgrow them


class PartnerRows(NamedTuple):
    """Each group's partners in a table of fixed width ``w``; a group with more than ``w`` partners (a *hub*)
    keeps its first ``w`` in its own row and the rest in *spill rows*, ``w`` per row, so the table's shapes
    change only when the spill rows (a power of two, at least ``MIN_SPILL_ROWS``) run out, not when one group's
    degree doubles.

    partners : (n_rows, w) int32, -1 padded, increasing
    weights : (n_rows, w) float64 (``-inf`` a cannot-link, else a soft answer's net log-weight)
    spill : (S, w) int32, -1 padded; a hub's spill rows are consecutive and follow its row's partners
    spill_weights : (S, w) float64
    spill_owner : (S,) int32, the group of each spill row (-1: unused)
    spill_span : (n_rows, 2) int32, each group's first spill row and number of spill rows
    """

    partners: np.ndarray
    weights: np.ndarray
    spill: np.ndarray
    spill_weights: np.ndarray
    spill_owner: np.ndarray
    spill_span: np.ndarray


def spill_capacity(needed: int) -> int:
    """Spill rows of a partner table that needs ``needed``: a power of two, at least ``MIN_SPILL_ROWS``."""
    return max(MIN_SPILL_ROWS, next_pow2(int(needed)))


def spilled_lists(
    edges: np.ndarray, weights: np.ndarray, rows: int, width: int, spill_rows: int | None = None
) -> PartnerRows:
    """:func:`padded_lists` at a fixed ``width``, the partners beyond it in spill rows (:class:`PartnerRows`)."""
    width = int(width)
    if width < 1:
        raise InvalidInputError(f"partner_capacity: expected at least 1 column, got {width}")
    partners = np.full((rows, width), -1, dtype=np.int32)
    out_w = np.zeros((rows, width), dtype=np.float64)
    n_spill = np.zeros(rows, dtype=np.int64)
    src = dst = ww = rank = np.zeros(0, np.int64)
    if len(edges):
        src = np.concatenate([edges[:, 0], edges[:, 1]])
        dst = np.concatenate([edges[:, 1], edges[:, 0]])
        ww = np.concatenate([weights, weights])
        order = np.lexsort((dst, src))
        src, dst, ww = src[order], dst[order], ww[order]
        rank = np.arange(len(src)) - np.searchsorted(src, src, side="left")
        deg = np.bincount(src, minlength=rows)
        n_spill = -(-np.maximum(deg - width, 0) // width)
    needed = int(n_spill.sum())
    S = spill_capacity(needed) if spill_rows is None else int(spill_rows)
    if S < needed:
        raise InvalidInputError(f"spill_rows: {S} is fewer than the {needed} spill rows these partners need")
    start = np.concatenate([[0], np.cumsum(n_spill)[:-1]]).astype(np.int64)
    spill = np.full((S, width), -1, dtype=np.int32)
    spill_w = np.zeros((S, width), dtype=np.float64)
    owner = np.full(S, -1, dtype=np.int32)
    owner[:needed] = np.repeat(np.arange(rows), n_spill)
    main = rank < width
    partners[src[main], rank[main]] = dst[main]
    out_w[src[main], rank[main]] = ww[main]
    extra = rank[~main] - width
    at = start[src[~main]] + extra // width
    spill[at, extra % width] = dst[~main]
    spill_w[at, extra % width] = ww[~main]
    span = np.stack([np.where(n_spill > 0, start, 0), n_spill], axis=1).astype(np.int32)
    return PartnerRows(partners, out_w, spill, spill_w, owner, span)


def check_rows(n_rows: int | None, n_groups: int) -> int:
    """Rows of a table over ``n_groups`` groups: ``n_rows`` (at least ``n_groups``; padding rows beyond them
    keep shapes fixed while groups merge), or ``n_groups``."""
    rows = n_groups if n_rows is None else int(n_rows)
    if rows < n_groups:
        raise InvalidInputError(f"n_rows: expected at least the {n_groups} groups, got {n_rows!r}")
    return rows


def table_capacity(capacity: int | None, degree: int, what: str) -> int:
    """Columns of a table whose largest row holds ``degree`` partners: ``capacity``, or ``degree`` rounded up
    to a power of two (at least 1); ``what`` names the partners in the error when ``capacity`` is too small."""
    cap = next_pow2(max(degree, 1)) if capacity is None else int(capacity)
    if cap < degree:
        raise InvalidInputError(
            f"capacity: {cap} is below the largest number of {what} of one group ({degree})"
        )
    return cap


def colouring(edges: np.ndarray, rows: int) -> tuple[np.ndarray, int]:
    """Greedy colouring (largest degree first) of the graph of ``edges`` (E, 2) over ``rows`` groups: groups of
    one colour share no edge. Returns ``(colour (rows,) int32, n_colours)``; a group without edges has colour 0."""
    colour = np.zeros(rows, dtype=np.int32)
    if len(edges) == 0:
        return colour, 1
    nbrs: dict[int, list[int]] = {}
    for a, b in np.asarray(edges).tolist():
        nbrs.setdefault(a, []).append(b)
        nbrs.setdefault(b, []).append(a)
    done = np.zeros(rows, dtype=bool)
    for g in sorted(nbrs, key=lambda g: (-len(nbrs[g]), g)):
        used = {int(colour[h]) for h in nbrs[g] if done[h]}
        colour[g] = next(c for c in range(len(used) + 1) if c not in used)
        done[g] = True
    return colour, int(colour.max()) + 1


class PartnerTables:
    """The partner tables of a constraint set (one concern of :class:`jaxclust.Constraints`), read from its
    built state: ``_cl_groups`` (E, 2) the group-level cannot-link edges, ``_soft_groups`` (A, 2) and
    ``_soft_weights`` (A,) the soft answers' group pairs and log-weights, and ``n_groups``."""

    __slots__ = ()

    def _partner_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Group-level edges (E, 2) of cannot-links then soft answers, and their log-weights (E,)."""
        e = np.concatenate([self._cl_groups, self._soft_groups])
        return e, np.concatenate([np.full(len(self._cl_groups), -np.inf), self._soft_weights])

    def colouring(self, n_rows: int | None = None) -> tuple[np.ndarray, int]:
        """Greedy colouring (largest degree first) of the group-level graph of cannot-links and soft answers.

        Groups of one colour share no cannot-link or answer, so a sampler may move all of them at once.

        Returns
        -------
        colour : np.ndarray, shape (n_rows,), int32
            Groups without cannot-links (and padding rows beyond ``n_groups``) have colour 0.
        n_colours : int
        """
        return colouring(self._partner_edges()[0], check_rows(n_rows, self.n_groups))

    def cannot_partners(self, capacity: int | None = None, n_rows: int | None = None) -> np.ndarray:
        """Group-level cannot-link partner lists, padded with -1.

        Parameters
        ----------
        capacity : int, optional
            Columns of the table; defaults to ``max_degree`` rounded up to a power of two (at least 1), so a
            sampler that re-uses the capacity across rounds re-compiles only when a degree doubles.
        n_rows : int, optional
            Rows of the table (default ``n_groups``); pad to ``n`` to keep shapes fixed while groups merge.

        Returns
        -------
        np.ndarray, shape (n_rows, capacity), int32
        """
        rows = check_rows(n_rows, self.n_groups)
        cap = table_capacity(capacity, self.max_degree, "cannot-link partners")
        return padded_lists(self._cl_groups, np.zeros(len(self._cl_groups)), rows, cap)[0]

    @property
    def max_partner_degree(self) -> int:
        """The largest number of partner groups (cannot-links and soft answers) of one group."""
        e = self._partner_edges()[0]
        return int(np.bincount(e.ravel(), minlength=self.n_groups).max()) if len(e) else 0

    def partner_table(self, capacity: int | None = None, n_rows: int | None = None):
        """Padded partner lists with log-weights: ``(partners (n_rows, capacity) int32, -1 padded; weights
        (n_rows, capacity) float64)``, a cannot-link weighing ``-inf`` and a soft answer its net log-weight
        (see the module docstring). ``capacity`` defaults to :attr:`max_partner_degree` rounded up to a power
        of two."""
        rows = check_rows(n_rows, self.n_groups)
        cap = table_capacity(capacity, self.max_partner_degree, "partners (cannot-links and answers)")
        return padded_lists(*self._partner_edges(), rows, cap)

    def partner_rows(
        self, width: int, n_rows: int | None = None, spill_rows: int | None = None
    ) -> PartnerRows:
        """The partners and log-weights of :meth:`partner_table` in a table of fixed ``width``, the partners of
        groups with more than ``width`` of them continued in spill rows
        (:class:`~jaxclust.partner_tables.PartnerRows`); ``spill_rows`` defaults to what they need rounded up
        by :func:`~jaxclust.partner_tables.spill_capacity`."""
        return spilled_lists(*self._partner_edges(), check_rows(n_rows, self.n_groups), width, spill_rows)
