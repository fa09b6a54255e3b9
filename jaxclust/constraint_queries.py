"""What a constraint set says about items and pairs: its must-link groups, their cannot-link edges, the status of
any pair (implied by transitivity included) and the constraints a labelling breaks.

:class:`GroupQueries` is one concern of :class:`jaxclust.Constraints`, kept apart from how a set is built
(:mod:`jaxclust.constraints`), its partner tables (:mod:`jaxclust.partner_tables`) and its soft answers
(:mod:`jaxclust.answers`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxclust.answers import KINDS
from jaxclust.errors import ConstraintError
from jaxclust.pairs import as_index, index_array
from jaxclust.validation import check_labels

__all__ = ["GroupQueries"]


class GroupQueries:
    """Groups and pair queries of a constraint set, read from its built state: ``_n`` items, ``_group_of`` (n,)
    each item's group, ``_cl_groups`` (E, 2) the group-level cannot-link edges with ``_cl_group_keys`` their
    sorted keys ``g * n + h``, ``_log`` the kept constraints ``((i, j), must)`` and ``_groups`` a cache."""

    __slots__ = ()

    @property
    def group_of(self) -> np.ndarray:
        """(n,) int32 must-link group id per item; groups are numbered 0..G-1 in order of their first member."""
        return self._group_of

    @property
    def n_groups(self) -> int:
        return int(self._group_of.max()) + 1

    @property
    def group_sizes(self) -> np.ndarray:
        """(G,) int32 number of items per group."""
        return np.bincount(self._group_of, minlength=self.n_groups).astype(np.int32)

    @property
    def groups(self) -> list[np.ndarray]:
        """Member indices (sorted) of each group, in group-id order."""
        if self._groups is None:
            order = np.argsort(self._group_of, kind="stable")
            self._groups = np.split(order, np.cumsum(self.group_sizes)[:-1])
        return self._groups

    @property
    def cannot_link_groups(self) -> np.ndarray:
        """(E, 2) int32 distinct group-level cannot-link edges ``(g, h)`` with ``g < h``."""
        return self._cl_groups

    @property
    def degrees(self) -> np.ndarray:
        """(G,) number of distinct cannot-link partner groups of each group."""
        e = self._cl_groups
        return np.bincount(e.ravel(), minlength=self.n_groups).astype(np.int32)

    @property
    def max_degree(self) -> int:
        d = self.degrees
        return int(d.max()) if d.size else 0

    def status_codes(self, i: Any, j: Any) -> np.ndarray:
        """Vectorised status of pairs: int8 array, 1 = must (same group), -1 = cannot (implied), 0 = unknown."""
        i, j = index_array(i, "i"), index_array(j, "j")
        for arr, name in ((i, "i"), (j, "j")):
            if arr.size and (arr.min() < 0 or arr.max() >= self._n):
                bad = arr[(arr < 0) | (arr >= self._n)].ravel()[0]
                raise ConstraintError(f"{name}: index {int(bad)} is out of range for {self._n} items")
        gi, gj = self._group_of[i].astype(np.int64), self._group_of[j].astype(np.int64)
        keys = np.minimum(gi, gj) * self._n + np.maximum(gi, gj)
        out = np.zeros(np.broadcast(gi, gj).shape, dtype=np.int8)
        if len(self._cl_group_keys):
            pos = np.searchsorted(self._cl_group_keys, keys)
            pos = np.minimum(pos, len(self._cl_group_keys) - 1)
            out[self._cl_group_keys[pos] == keys] = -1
        out[gi == gj] = 1
        return out

    def is_known(self, i: Any, j: Any) -> np.ndarray:
        """Vectorised: True where the pair's status is implied (directly or by transitivity)."""
        return self.status_codes(i, j) != 0

    def status(self, i: int, j: int) -> str | None:
        """``"must"``, ``"cannot"`` or ``None`` for the pair ``(i, j)``, including what transitivity implies."""
        i = as_index(i, self._n, "status")
        j = as_index(j, self._n, "status")
        code = int(self.status_codes(i, j))
        return {1: "must", -1: "cannot", 0: None}[code]

    def check_assignment(self, labels: Any) -> list[tuple[int, int, str]]:
        """The constraints a labelling violates, as ``(i, j, kind)``; empty when it satisfies all."""
        z = check_labels(labels, n=self._n, name="labels")
        out = []
        for (i, j), must in self._log:
            if (z[i] == z[j]) != must:
                out.append((i, j, KINDS[must]))
        return out
