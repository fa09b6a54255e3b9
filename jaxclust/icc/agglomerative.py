"""Constrained complete-link clustering (Klein, Kamvar & Manning, ICML 2002) and Klein's active selection.

Must-links set distances to 0 and are propagated by shortest paths, so the neighbours of linked points come
closer ("space-level" constraints). Each must-link component is contracted to one node; shortest paths through
the G contracted nodes are exact for a metric ``D``; the min-plus update only visits the pairs that a lower
bound does not rule out (see :func:`propagate_must_links`), and equals the per-edge incremental update
``D <- min(D, D[:, i] + D[j, :], D[:, j] + D[i, :])`` applied for every must-link. scipy's csgraph is not used
(it reads dense zeros as missing edges).

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

from collections.abc import Callable, Sequence

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform
from sklearn.base import BaseEstimator, ClusterMixin

from jaxclust.constraints import as_constraints
from jaxclust.errors import InvalidInputError, NotFittedError
from jaxclust.validation import check_array

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


_SPARSE_FRACTION = 0.25  # gather candidate pairs below this share of a block, else dense passes (measured)


def _group_paths(D: np.ndarray, groups: Sequence[np.ndarray]):
    """Contracted shortest-path pieces for must-link groups (each of size > 1).

    Returns ``members`` (M,) indices, ``gid`` (M,) their group, ``C`` (n, G) distance from every point to
    each group, ``SP`` (G, G) group-to-group shortest paths and ``E`` (n, G) the shortest distance from every
    point to each group through any groups (``E[m, H] = SP[gid[m], H]`` for a member ``m``, up to rounding).
    """
    members = np.concatenate(groups)
    gid = np.repeat(np.arange(len(groups)), [g.size for g in groups])
    starts = np.cumsum([0] + [g.size for g in groups[:-1]])
    C = np.minimum.reduceat(D[:, members], starts, axis=1)  # (n, G)
    SP = np.minimum.reduceat(C[members], starts, axis=0)  # (G, G)
    for h in range(SP.shape[0]):  # Floyd–Warshall on the small group graph
        np.minimum(SP, SP[:, h : h + 1] + SP[h : h + 1, :], out=SP)
    E = C.copy()  # SP has a zero diagonal: the G = H term is C itself
    for g in range(SP.shape[0]):  # one (n, G) pass per group, no (n, G, G) temporary
        np.minimum(E, C[:, g : g + 1] + SP[g : g + 1, :], out=E)
    return members, gid, C, SP, E


def _minplus_candidates(
    out: np.ndarray, E: np.ndarray, C: np.ndarray, skip: np.ndarray | None = None, rows: int = 128
):
    """In place ``out = min(out, min_h E[:, h] + C[:, h]^T)`` on a symmetric matrix, with the G-fold min
    evaluated only where a lower bound does not rule it out (rows/columns flagged in ``skip`` are left
    alone).

    A path from ``a`` to ``b`` enters the groups at some G and leaves at some H. With ``g_a`` the nearest
    group of ``a`` (distance ``c_a``) and ``c2_a`` the distance to the second nearest:

    1. pairs with ``c_a + c_b >= out[a, b]`` cannot improve;
    2. the others take the paths leaving at ``g_b`` (``E[a, g_b] + c_b``) and, read from ``b``, those
       entering at ``g_a`` (``E[b, g_a] + c_a``): two gathers instead of G (two dense passes over the
       block instead when step 1 keeps more than a quarter of it: groups close to everything);
    3. every other path enters elsewhere and leaves elsewhere, so is at least ``c2_a + c2_b`` long: only the
       pairs still above that bound (0.2 % of a block on the labelled benchmark data) get the min over
       all G groups.

    The bound holds in floating point (rounded addition is monotone); a path read from either end may
    differ in the last bit. Row blocks of the upper triangle, mirrored, keep the temporaries small (128
    rows measured a little faster than 64, 256 or 512).
    """
    n, G = C.shape
    ar = np.arange(n)
    g = C.argmin(axis=1)
    c = C[ar, g]
    C2 = C.copy()
    C2[ar, g] = np.inf
    c2 = C2.min(axis=1) if G > 1 else np.full(n, np.inf)
    if skip is not None:
        c, c2 = np.where(skip, np.inf, c), np.where(skip, np.inf, c2)
    Et, Ct = np.ascontiguousarray(E.T), np.ascontiguousarray(C.T)  # (G, n)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        blk = out[r0:r1, r0:]  # upper block row (a view)
        # pairs with c_a + c_b >= out[a, b] cannot improve: where these are most pairs (diffuse data), only
        # the others are gathered; otherwise (groups close to everything) dense passes are cheaper
        # decided on every 8th column: the full test is only computed where it is used
        dense = ((c[r0:r1, None] + c[None, r0::8]) < blk[:, ::8]).mean() >= _SPARSE_FRACTION
        if dense:
            t = E[r0:r1].take(g[r0:], axis=1)  # E[a, g_b]; take keeps C order (fancy indexing gives F)
            t += c[None, r0:]
            np.minimum(blk, t, out=blk)
            t = Et[g[r0:r1], r0:]  # E[b, g_a]
            t += c[r0:r1, None]
            np.minimum(blk, t, out=blk)
            ai, bj = _nonzero2((c2[r0:r1, None] + c2[None, r0:]) < blk)
        else:
            ai, bj = _nonzero2((c[r0:r1, None] + c[None, r0:]) < blk)
        upper = bj > ai  # each pair once: the diagonal square holds both orders
        ai, bj = ai[upper] + r0, bj[upper] + r0
        v = out[ai, bj]
        if not dense:
            np.minimum(v, E[ai, g[bj]] + c[bj], out=v)
            np.minimum(v, E[bj, g[ai]] + c[ai], out=v)
            rest = (c2[ai] + c2[bj]) < v
            done_a, done_b = ai[~rest], bj[~rest]
            out[done_a, done_b] = out[done_b, done_a] = v[~rest]
            ai, bj, v = ai[rest], bj[rest], v[rest]
        for h in range(G if ai.size else 0):  # vectorised over the remaining pairs, one pass per group
            np.minimum(v, Et[h, ai] + Ct[h, bj], out=v)
        out[ai, bj] = out[bj, ai] = v
        if dense:  # mirror the block row; the diagonal square's upper triangle is authoritative
            sq = out[r0:r1, r0:r1]
            lower = np.tril_indices(r1 - r0, -1)
            sq[lower] = sq.T[lower]
            out[r1:, r0:r1] = out[r0:r1, r1:].T


def _nonzero2(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero`` of a C-contiguous 2-D mask, via the 1-D scan (about 20x faster on sparse masks)."""
    return np.divmod(np.flatnonzero(mask), mask.shape[1])


def propagate_must_links(D: np.ndarray, groups: Sequence[np.ndarray], copy: bool = True) -> np.ndarray:
    """All-pairs shortest-path distances after joining each group's members by zero-length edges.

    Exact for a metric ``D``, by contracting each group to one node (a path never needs a non-group
    intermediate, by the triangle inequality)::

        C[a, H] = min_{h in H} D[a, h]                 (n, G) distance to each group
        S[G, H] = min_{g in G} C[g, H], SP = Floyd–Warshall(S)   (G, G) group-to-group shortest paths
        E[a, H] = min_G C[a, G] + SP[G, H]             (n, G) shortest distance to H through any groups
        D'[a, b] = min(D[a, b], min_H E[a, H] + C[b, H])   (the last group on the path is H)

    A member ``m`` of group ``H`` gets ``D'[m, :] = E[:, H]``; the min-plus step between other points only
    visits the pairs that a cheap lower bound on the path length does not rule out (see
    ``_minplus_candidates``), instead of all n^2 G / 2.

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
    out = D.copy()
    n = out.shape[0]
    if not groups:
        return out
    members, gid, C, SP, E = _group_paths(D, groups)
    skip = np.zeros(n, bool)
    skip[members] = True  # member rows are set in closed form below
    _minplus_candidates(out, E, C, skip)
    out[:, members] = E[:, gid]
    out[members, :] = E[:, gid].T
    out[np.ix_(members, members)] = SP[np.ix_(gid, gid)]  # exactly symmetric (E's rounding may differ)
    return out


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
    D: np.ndarray,
    n_clusters: int,
    groups: Sequence[np.ndarray] = (),
    cannot_pairs: np.ndarray | None = None,
    contract: bool | str = "auto",
):
    """Klein et al. constrained complete link on a metric distance matrix.

    With must-links, the members of a group have identical rows after the shortest-path step and merge first
    at height 0; the complete-link distance of the merged group to anything else is that shared row. So
    (``contract=True``) complete linkage can run on the contracted matrix, one node per group plus the other
    points: the first ``n - n_clusters`` merges of the full problem are the ``M - G`` zero-height merges
    inside the groups followed by the contracted tree's first ``n' - n_clusters``. The result equals the
    full-matrix path up to the order of exactly tied merges. The full path is taken when the contraction
    does not apply (a cannot-link inside a group, or more clusters asked than contracted nodes). Gathering
    the contracted block costs about what a few per cent fewer rows save in the linkage, so ``"auto"``
    contracts only when it removes at least a tenth of the rows (measured, labelled must-links: 0.69x /
    0.56x the full path's time with a quarter of the rows removed at n = 2000 / 5000, 0.99x / 1.08x with
    2-5 % removed).

    Parameters
    ----------
    D : (n, n) metric distances (not modified).
    n_clusters : number of clusters of the cut.
    groups : must-link components (index arrays).
    cannot_pairs : (E, 2) cannot-linked index pairs.
    contract : True / False: cluster the contracted / full matrix; "auto": contract when that removes at
        least ``n / 10`` rows.

    Returns
    -------
    labels : (n,) int64 cluster ids numbered by first member; Z : (n - 1, 4) linkage of the full problem;
    D_constrained : the matrix clustered, (n, n), or when contracted the condensed (scipy ``pdist`` layout)
    matrix of the ``n'`` nodes (one per group, then the non-members in index order);
    violated : (V, 2) cannot-linked pairs that share a cluster.
    """
    D = np.asarray(D, dtype=np.float64)
    n = D.shape[0]
    cl = (
        np.zeros((0, 2), np.int64)
        if cannot_pairs is None
        else np.asarray(cannot_pairs, np.int64).reshape(-1, 2)
    )
    groups = [np.asarray(g, dtype=np.int64) for g in groups if len(g) > 1]
    if contract not in (True, False, "auto"):
        raise InvalidInputError(f"contract: expected True, False or 'auto', got {contract!r}")
    n_nodes = n - sum(g.size for g in groups) + len(groups)
    if contract == "auto":
        contract = n - n_nodes >= n / 10
    if contract and groups:
        gid_of = np.full(n, -1)
        for g, idx in enumerate(groups):
            gid_of[idx] = g
        inside = cl.size and bool(((gid_of[cl[:, 0]] >= 0) & (gid_of[cl[:, 0]] == gid_of[cl[:, 1]])).any())
        if n_clusters <= n_nodes and not inside:
            labels, Z, Dc = _contracted_complete_link(D, n_clusters, groups, gid_of, cl)
            violated = cl[labels[cl[:, 0]] == labels[cl[:, 1]]] if cl.size else cl
            return labels, Z, Dc, violated
    Dc = propagate_must_links(D, groups)
    Dc, _ = impose_cannot_links(Dc, cl, copy=False)
    Z = complete_link(Dc)
    labels = cut_by_merge_count(Z, n, n_clusters)
    violated = cl[labels[cl[:, 0]] == labels[cl[:, 1]]] if cl.size else cl
    return labels, Z, Dc, violated


def _contracted_complete_link(D, n_clusters, groups, gid_of, cl):
    """Contracted path of :func:`constrained_complete_link`: (labels, full-size Z, condensed matrix).

    Nodes are the G groups first, then the non-members in index order, so the condensed matrix is the G
    group rows followed by the condensed non-member block: no larger square matrix is assembled.
    """
    n = D.shape[0]
    members, gid, C, SP, E = _group_paths(D, groups)
    G = len(groups)
    nm = np.flatnonzero(gid_of < 0)
    n1 = nm.size
    N = n1 + G
    A = D[np.ix_(nm, nm)]  # non-member block
    _minplus_candidates(A, E[nm], C[nm])
    R = np.empty((G, N))  # group rows: a member's row of the full matrix is E[:, its group]
    R[:, :G] = SP
    R[:, G:] = E[nm].T
    node_of = np.empty(n, np.int64)
    node_of[members] = gid
    node_of[nm] = G + np.arange(n1)
    if cl.size:  # as impose_cannot_links on the full matrix: all members of a group share the entry
        B = max(float(A.max(initial=0.0)), float(R.max())) + 1.0
        u, v = np.sort(node_of[cl], axis=1).T
        g = u < G  # pairs with a group end: only R's upper part (u < v) is read
        R[u[g], v[g]] = B + R[u[g], v[g]]
        ua, va = u[~g] - G, v[~g] - G
        vals = B + A[ua, va]
        A[ua, va] = vals
        A[va, ua] = vals
    y = np.concatenate([R[h, h + 1 :] for h in range(G)] + [squareform(A, checks=False)])
    Zk = linkage(y, method="complete")
    lab = cut_by_merge_count(Zk, N, n_clusters)[node_of]
    _, first, inv = np.unique(lab, return_index=True, return_inverse=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first)] = np.arange(first.size)  # renumber by first member of the full problem
    return rank[inv], _expand_linkage(Zk, n, nm, groups), y


def _expand_linkage(Zk: np.ndarray, n: int, nm: np.ndarray, groups) -> np.ndarray:
    """Full-problem linkage from the contracted one (nodes: groups, then non-members): each group is first
    chained at height 0, then the contracted merges follow with ids mapped to full ids, sizes in points."""
    G = len(groups)
    N = nm.size + G
    n_zero = n - N  # zero-height merges inside the groups
    Z = np.empty((n - 1, 4))
    full_id = np.empty(2 * N - 1, np.int64)  # contracted node / cluster id -> full id
    full_id[G:N] = nm
    full_id[N:] = n + n_zero + np.arange(N - 1)
    size = np.ones(2 * N - 1)
    t = 0
    for g, idx in enumerate(groups):
        cur = idx[0]
        for k, m in enumerate(idx[1:], start=2):
            Z[t] = (min(cur, m), max(cur, m), 0.0, k)
            cur = n + t
            t += 1
        full_id[g] = cur
        size[g] = idx.size
    a, b = Zk[:, 0].astype(np.int64), Zk[:, 1].astype(np.int64)
    for r in range(N - 1):  # cluster sizes in points (the contracted counts count groups as one)
        size[N + r] = size[a[r]] + size[b[r]]
    fa, fb = full_id[a], full_id[b]
    Z[n_zero:, 0] = np.minimum(fa, fb)
    Z[n_zero:, 1] = np.maximum(fa, fb)
    Z[n_zero:, 2] = Zk[:, 2]
    Z[n_zero:, 3] = size[N:]
    return Z


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

    Fit with ``fit(X, constraints)`` (positional or by name, no ``y``: the convention of every constrained
    jaxclust estimator); ``constraints`` is a Constraints, a dict with ``must_link``/``cannot_link``, a pair
    ``(must_link, cannot_link)`` or None, and an array there raises ``ConstraintError``.

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

    def fit(self, X, constraints=None):
        """Cluster ``X`` (or a distance matrix) under ``constraints``.

        Parameters
        ----------
        X : (n, d) array-like, or (n, n) distances with ``metric="precomputed"``.
        constraints : Constraints, dict, (must_link, cannot_link) or None
            Also positional, ``fit(X, constraints)``: the convention of every constrained jaxclust estimator
            (there is no ``y``; an array here raises ``ConstraintError``).
        """

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
        if isinstance(k, bool) or not (isinstance(k, (int, np.integer)) and 1 <= k <= n):
            raise InvalidInputError(f"n_clusters: expected an int in [1, {n}], got {k!r}")
        groups, cl = (), np.zeros((0, 2), np.int64)
        constraints = as_constraints(constraints, n, where="ConstrainedAgglomerative.fit", soft=False)
        if constraints is not None:
            groups = [g for g in constraints.groups if len(g) > 1]
            cl = np.asarray(constraints.cannot_link, np.int64).reshape(-1, 2)
        labels, Z, _, violated = constrained_complete_link(D, int(k), groups, cl)
        self.labels_ = labels
        self.linkage_ = Z
        self.violated_ = violated
        self.n_violated_ = int(len(violated))
        self.n_features_in_ = X.shape[1]
        return self

    def fit_predict(self, X, constraints=None):
        """``fit(X, constraints)`` then return ``labels_``."""
        return self.fit(X, constraints).labels_

    def predict(self, X):
        """Not available: a merge tree clusters the items it was built on and has no rule for new ones (as
        scikit-learn's ``AgglomerativeClustering``); raises ``InvalidInputError`` saying so."""
        raise InvalidInputError(
            "ConstrainedAgglomerative has no predict: agglomerative clustering labels only the items it was "
            "fitted on (use fit_predict or labels_; to label new points, fit a classifier on labels_, as "
            "jaxclust.icc.cluster_and_label does)"
        )

    def _check_fitted(self):
        if not hasattr(self, "labels_"):
            raise NotFittedError("ConstrainedAgglomerative: call fit first")
