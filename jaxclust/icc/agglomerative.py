"""Constrained complete-link clustering (Klein, Kamvar & Manning, ICML 2002) and Klein's active selection.

Must-links set distances to 0 and are propagated by shortest paths, so the neighbours of linked points come
closer ("space-level" constraints). Each must-link component is contracted to one node; shortest paths through
the G contracted nodes are exact for a metric ``D`` and cost one tiled O(n^2 G / 2) pass (see
:func:`propagate_must_links`), equal to the per-edge incremental update ``D <- min(D, D[:, i] + D[j, :], D[:,
j] + D[i, :])`` applied for every must-link. scipy's csgraph is not used (it reads dense zeros as missing
edges).

Cannot-links then get ``B_ij = max D + 1 + D_ij``: larger than any real distance (complete linkage keeps the
two clusters apart as long as any other merge is possible) while keeping distinct heights, so the cut by merge
count stays meaningful after a dead end. Complete linkage itself is scipy's; the tree is cut into ``k``
clusters by applying its first ``n - k`` merges.

Example
-------
>>> import numpy as np
>>> from jaxclust import Constraints
>>> from jaxclust.icc import ConstrainedAgglomerative
>>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
>>> ConstrainedAgglomerative(2).fit(X, Constraints(4, cannot_link=[(0, 1)])).n_violated_
0
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform
from sklearn.base import BaseEstimator, ClusterMixin

from jaxclust.errors import InvalidInputError, NotFittedError

__all__ = [
    "ConstrainedAgglomerative",
    "propagate_must_links",
    "impose_cannot_links",
    "complete_link",
    "cut_by_merge_count",
    "constrained_complete_link",
    "klein_active_queries",
    "euclidean_distances",
]


def euclidean_distances(X: np.ndarray) -> np.ndarray:
    """(n, n) float64 Euclidean distances from centred data (exact zero diagonal)."""
    Xc = X - X.mean(axis=0)
    g = np.einsum("ij,ij->i", Xc, Xc)
    D2 = g[:, None] + g[None, :] - 2.0 * (Xc @ Xc.T)
    np.maximum(D2, 0.0, out=D2)
    np.fill_diagonal(D2, 0.0)
    return np.sqrt(D2, out=D2)


def propagate_must_links(D: np.ndarray, groups: Sequence[np.ndarray], copy: bool = True) -> np.ndarray:
    """All-pairs shortest-path distances after joining each group's members by zero-length edges.

    Exact for a metric ``D``, by contracting each group to one node (a path never needs a non-group
    intermediate, by the triangle inequality)::

        C[a, H] = min_{h in H} D[a, h]                 (n, G) distance to each group
        S[G, H] = min_{g in G} C[g, H], SP = Floyd–Warshall(S)   (G, G) group-to-group shortest paths
        E[a, H] = min_G C[a, G] + SP[G, H]             (n, G) shortest distance to H through any groups
        D'[a, b] = min(D[a, b], min_H E[a, H] + C[b, H])   (the last group on the path is H)

    The final min-plus step is one jitted pass over the upper-triangular tiles of ``D`` (about n^2 G / 2
    operations; the result is symmetric), instead of G passes over the whole matrix.

    Parameters
    ----------
    D : (n, n) symmetric metric distances.
    groups : must-link components (index arrays); groups of size 1 are ignored.
    copy : kept for API symmetry; the result is always a new array.

    Returns
    -------
    (n, n) float64 distances, 0 inside every group, triangle inequality restored.
    """
    del copy
    D = np.asarray(D, dtype=np.float64)
    groups = [np.asarray(g, dtype=np.int64) for g in groups if len(g) > 1]
    if not groups:
        return D.copy()
    members = np.concatenate(groups)
    starts = np.cumsum([0] + [g.size for g in groups[:-1]])
    C = np.minimum.reduceat(D[:, members], starts, axis=1)  # (n, G)
    S = np.minimum.reduceat(C[members], starts, axis=0)  # (G, G)
    for h in range(S.shape[0]):  # Floyd–Warshall on the small group graph
        np.minimum(S, S[:, h : h + 1] + S[h : h + 1, :], out=S)
    E = (C[:, :, None] + S[None, :, :]).min(axis=1)  # (n, G)
    return _minplus_symmetric(D, E, C)


def _minplus_symmetric(D: np.ndarray, E: np.ndarray, C: np.ndarray, tile: int = 256) -> np.ndarray:
    """``min(D, min_h E[:, h] + C[:, h]^T)`` for a symmetric result: only the upper-triangular tiles are
    computed (jitted); the lower ones are their transposes."""
    n, G = E.shape
    n_pad = -(-n // tile) * tile
    Dp = np.zeros((n_pad, n_pad))
    Dp[:n, :n] = D
    Ep = np.full((n_pad, G), np.inf)  # padded rows/columns never improve anything
    Ep[:n] = E
    Ctp = np.full((G, n_pad), np.inf)
    Ctp[:, :n] = C.T
    ti, tj = np.triu_indices(n_pad // tile)
    with jax.enable_x64(True):
        tiles = _minplus_tiles(
            jnp.asarray(Dp), jnp.asarray(Ep), jnp.asarray(Ctp), jnp.asarray(ti), jnp.asarray(tj), tile=tile
        )
        tiles = np.asarray(tiles)
    out = Dp  # reuse the padded buffer
    for t, (i, j) in enumerate(zip(ti, tj, strict=True)):
        out[i * tile : (i + 1) * tile, j * tile : (j + 1) * tile] = tiles[t]
        if i != j:
            out[j * tile : (j + 1) * tile, i * tile : (i + 1) * tile] = tiles[t].T
    return np.ascontiguousarray(out[:n, :n])


@functools.partial(jax.jit, static_argnames=("tile",))
def _minplus_tiles(D, E, Ct, ti, tj, *, tile: int):
    """(T, tile, tile) tiles ``(ti[t], tj[t])`` of ``min(D, min_h E[:, h] + Ct[h])``; each tile stays in cache
    while every group is applied to it."""
    G = E.shape[1]

    def one(ij):
        i, j = ij
        Dt = jax.lax.dynamic_slice(D, (i * tile, j * tile), (tile, tile))
        Et = jax.lax.dynamic_slice(E, (i * tile, 0), (tile, G))
        Cb = jax.lax.dynamic_slice(Ct, (0, j * tile), (G, tile))

        def body(Dt, xs):
            e, c = xs  # distances of the tile's rows / columns to group h
            return jnp.minimum(Dt, e[:, None] + c[None, :]), None

        return jax.lax.scan(body, Dt, (Et.T, Cb))[0]

    return jax.lax.map(one, (ti, tj))


def impose_cannot_links(
    D: np.ndarray, cannot_pairs: np.ndarray, copy: bool = True
) -> tuple[np.ndarray, float]:
    """Set ``D_ij = D_ji = max D + 1 + D_ij`` for every cannot-linked pair.

    Returns the modified matrix and ``B = max D + 1``. Call after :func:`propagate_must_links` (shortest paths
    would shortcut the large entries).
    """
    D = np.array(D, dtype=np.float64, copy=True) if copy else D
    P = np.asarray(cannot_pairs, dtype=np.int64).reshape(-1, 2)
    B = float(D.max()) + 1.0
    if P.size:
        vals = B + D[P[:, 0], P[:, 1]]
        D[P[:, 0], P[:, 1]] = vals
        D[P[:, 1], P[:, 0]] = vals
    return D, B


def complete_link(D: np.ndarray) -> np.ndarray:
    """scipy complete-linkage matrix ``Z`` ((n - 1, 4)) of a square distance matrix."""
    return linkage(squareform(D, checks=False), method="complete")


def cut_by_merge_count(Z: np.ndarray, n: int, n_clusters: int) -> np.ndarray:
    """(n,) labels after the first ``n - n_clusters`` merges of ``Z``, numbered 0.. by first member."""
    parent = np.arange(2 * n - 1)
    for t in range(n - n_clusters):
        a, b = int(Z[t, 0]), int(Z[t, 1])
        parent[a] = parent[b] = n + t
    # the root of each leaf: follow parents (iterate to the fixed point; depth is at most n)
    root = parent[:n].copy()
    while True:
        nxt = parent[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    _, first = np.unique(root, return_index=True)
    order = np.argsort(first)  # clusters numbered by first member
    remap = np.empty(order.size, np.int64)
    remap[order] = np.arange(order.size)
    return remap[np.unique(root, return_inverse=True)[1]]


def constrained_complete_link(
    D: np.ndarray, n_clusters: int, groups: Sequence[np.ndarray] = (), cannot_pairs: np.ndarray | None = None
):
    """Klein et al. constrained complete link on a metric distance matrix.

    Parameters
    ----------
    D : (n, n) metric distances (not modified).
    n_clusters : number of clusters of the cut.
    groups : must-link components (index arrays).
    cannot_pairs : (E, 2) cannot-linked index pairs.

    Returns
    -------
    labels : (n,) int64 cluster ids; Z : (n - 1, 4) linkage; D_constrained : (n, n) the matrix clustered;
    violated : (V, 2) cannot-linked pairs that share a cluster.
    """
    n = D.shape[0]
    Dc = propagate_must_links(D, groups)
    cl = (
        np.zeros((0, 2), np.int64)
        if cannot_pairs is None
        else np.asarray(cannot_pairs, np.int64).reshape(-1, 2)
    )
    Dc, _ = impose_cannot_links(Dc, cl, copy=False)
    Z = complete_link(Dc)
    labels = cut_by_merge_count(Z, n, n_clusters)
    violated = cl[labels[cl[:, 0]] == labels[cl[:, 1]]] if cl.size else cl
    return labels, Z, Dc, violated


def _medoid(D: np.ndarray, members: np.ndarray) -> int:
    return int(members[np.argmin(D[np.ix_(members, members)].sum(axis=1))])


def klein_active_queries(
    D: np.ndarray, query: Callable[[int], object], budget: int, n_start: int | None = None
) -> tuple[list[int], list]:
    """Klein et al.'s single-pass active selection, asking for instance labels (as the ICC seed does).

    Unconstrained complete link runs down to ``n_start`` clusters (those merges are trusted). From there, each
    merge that complete link would make next (closest pair under the cluster-level complete-link distance) is
    checked by asking the labels of the two clusters' roots (medoids): equal labels -> merge (the merged
    cluster keeps the root of the larger one); different labels -> the pair is blocked (a cluster-level
    cannot-link, inherited by supersets through the max). Stops when ``budget`` labels have been asked or no
    unblocked pair is left.

    Parameters
    ----------
    D : (n, n) distances.
    query : called with one index, returns its label (each call counts against the budget).
    budget : number of labels to ask.
    n_start : clusters at which querying begins (default ``budget``, so the budget can be spent).

    Returns
    -------
    (queried indices in order, their labels)
    """
    n = D.shape[0]
    m = int(min(n, max(2, budget if n_start is None else n_start)))
    labels = cut_by_merge_count(complete_link(D), n, m)
    members = [np.flatnonzero(labels == c) for c in range(m)]
    roots = [_medoid(D, mb) for mb in members]
    # cluster-level complete-link distances: max over members (rows then columns)
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(m))
    R = np.maximum.reduceat(D[order], starts, axis=0)  # (m, n)
    M = np.maximum.reduceat(R[:, order], starts, axis=1)  # (m, m)
    np.fill_diagonal(M, np.inf)
    size = np.array([mb.size for mb in members])
    known: dict[int, object] = {}
    queried: list[int] = []

    def ask(i: int):
        if i not in known:
            known[i] = query(i)
            queried.append(i)
        return known[i]

    while len(queried) < budget:
        if not np.isfinite(M).any():
            break
        a, b = np.unravel_index(int(np.argmin(M)), M.shape)
        la = ask(roots[a])
        if len(queried) >= budget and roots[b] not in known:
            break
        lb = ask(roots[b])
        if la == lb:
            keep, drop = (a, b) if size[a] >= size[b] else (b, a)
            row = np.maximum(M[keep], M[drop])
            row[keep] = np.inf
            M[keep, :] = row
            M[:, keep] = row
            M[drop, :] = np.inf
            M[:, drop] = np.inf
            size[keep] += size[drop]
        else:
            M[a, b] = M[b, a] = np.inf
    return queried, [known[i] for i in queried]


class ConstrainedAgglomerative(ClusterMixin, BaseEstimator):
    """Constrained complete-link clustering (Klein, Kamvar & Manning 2002).

    Parameters
    ----------
    n_clusters : int
        Number of clusters of the cut (by merge count).
    metric : {"euclidean", "precomputed"}
        ``"precomputed"``: ``fit`` receives an (n, n) metric distance matrix.

    Attributes
    ----------
    labels_ : (n,) int64 cluster ids numbered by first member.
    linkage_ : (n - 1, 4) scipy linkage matrix of the constrained distances.
    violated_ : (V, 2) cannot-linked pairs forced into one cluster (dead ends), ``n_violated_`` their number.
    """

    def __init__(self, n_clusters=2, metric="euclidean"):
        self.n_clusters = n_clusters
        self.metric = metric

    def fit(self, X, y=None, constraints=None):
        """Cluster ``X`` (or a distance matrix) under a ``jaxclust.Constraints`` set (or None).

        ``fit(X, constraints)`` works positionally too: a Constraints object given as ``y`` is taken as the
        constraints (``y`` is otherwise ignored, as in scikit-learn's clusterers).
        """
        if constraints is None and hasattr(y, "must_link"):
            constraints, y = y, None
        from jaxclust.validation import check_array

        X = check_array(X, name="X", min_rows=2)
        n = X.shape[0]
        if self.metric == "precomputed":
            if X.shape != (n, n):
                raise InvalidInputError(f"X: metric='precomputed' needs a square matrix, got shape {X.shape}")
            if not np.allclose(X, X.T):
                raise InvalidInputError("X: precomputed distances must be symmetric")
            if (X < 0).any():
                raise InvalidInputError("X: precomputed distances must be non-negative")
            D = X
        elif self.metric == "euclidean":
            D = euclidean_distances(X)
        else:
            raise InvalidInputError(f"metric: expected 'euclidean' or 'precomputed', got {self.metric!r}")
        k = self.n_clusters
        if not (isinstance(k, (int, np.integer)) and 1 <= k <= n):
            raise InvalidInputError(f"n_clusters: expected an int in [1, {n}], got {k!r}")
        groups, cl = (), np.zeros((0, 2), np.int64)
        if constraints is not None:
            if constraints.n != n:
                raise InvalidInputError(f"constraints: built for n={constraints.n} items, X has {n} rows")
            groups = [g for g in constraints.groups if len(g) > 1]
            cl = np.asarray(constraints.cannot_link, np.int64).reshape(-1, 2)
        labels, Z, _, violated = constrained_complete_link(D, int(k), groups, cl)
        self.labels_ = labels
        self.linkage_ = Z
        self.violated_ = violated
        self.n_violated_ = int(len(violated))
        self.n_features_in_ = X.shape[1]
        return self

    def fit_predict(self, X, y=None, constraints=None):
        """``fit`` then return ``labels_``."""
        return self.fit(X, y, constraints).labels_

    def _check_fitted(self):
        if not hasattr(self, "labels_"):
            raise NotFittedError("ConstrainedAgglomerative: call fit first")
