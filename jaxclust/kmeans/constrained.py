"""Constrained k-means baselines: COP-KMeans (hard constraints) and PCKMeans (penalised constraints).

* COP-KMeans (Wagstaff, Cardie, Rogers & Schroedl, ICML 2001): the classify step visits items in order and
  puts each into the closest cluster that violates no constraint with the items already placed. Must-linked items
  are placed together as one must-link group (the group goes to the cluster with the least summed squared
  distance), so only cannot-links can make a cluster infeasible. When a group has no feasible cluster the run
  fails; the estimator tries its ``n_init`` restarts and raises
  :class:`~jaxclust.errors.InfeasibleConstraintsError` naming the item only if every restart fails (the
  original returns nothing).
* PCKMeans (Basu, Banerjee & Mooney, SDM 2004): minimises
  Σ_i ½‖x_i - μ_{l_i}‖² + Σ_{(i,j)∈ML} w·1[l_i ≠ l_j] + Σ_{(i,j)∈CL} w̄·1[l_i = l_j]
  by Lloyd-style iterations whose classify step assigns constrained items one at a time, in a random order,
  each to its cheapest cluster given its partners' current labels (unconstrained items take the closest
  centre).
  With w = w̄ = 0 it is exactly :func:`jaxclust.kmeans.lloyd`. Constraints are used as given (no transitive
  closure), as in Basu et al.'s algorithm box.

Both are jitted: the sequential part is a ``lax.scan`` over must-link groups (COP) or constrained items (PCK)
with
fixed-capacity partner tables; distances for all items are one matmul. Memory is O(n · k).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from sklearn.base import BaseEstimator, ClusterMixin

from jaxclust.constraints import Constraints, as_constraints
from jaxclust.errors import InfeasibleConstraintsError
from jaxclust.kmeans import common
from jaxclust.kmeans.lloyd_kmeans import assign
from jaxclust.kmeans.seeding import kmeans_plusplus
from jaxclust.partner_tables import partner_capacity
from jaxclust.shapes import next_pow2
from jaxclust.transfer import to_device
from jaxclust.validation import Int, Real, check_fitted, prng_key, validate_params

__all__ = ["COPResult", "cop_kmeans", "PCKResult", "pck_kmeans", "COPKMeans", "PCKMeans"]


def _sq_dists(X, centers):
    """(n, k) squared distances by the matmul expansion, clipped at 0."""
    x_sq = jnp.sum(X * X, axis=1)
    c_sq = jnp.sum(centers * centers, axis=1)
    return jnp.maximum(x_sq[:, None] - 2.0 * X @ centers.T + c_sq[None, :], 0.0)


def _means(X, labels, centers, k):
    """Cluster means; a cluster without members keeps its centre (moving it could break hard constraints)."""
    ok = labels >= 0
    sums = jax.ops.segment_sum(jnp.where(ok[:, None], X, 0.0), jnp.where(ok, labels, 0), num_segments=k)
    counts = jax.ops.segment_sum(ok.astype(X.dtype), jnp.where(ok, labels, 0), num_segments=k)
    return common.estimate_centers(centers, sums, counts)


# ------------------------------------------------------------------------------------------------------------
# ----
# COP-KMeans
# ------------------------------------------------------------------------------------------------------------
# ----


class COPResult(NamedTuple):
    """Outcome of a COP-KMeans run.

    Attributes
    ----------
    centers : (k, d)
    labels : (n,) int32; -1 for items not placed when the run failed.
    inertia : () sum of squared distances (inf when failed).
    n_iter : () int32
    failed : () bool, some group had no feasible cluster.
    failed_group : () int32, the first such group (-1 if none).
    """

    centers: jax.Array
    labels: jax.Array
    inertia: jax.Array
    n_iter: jax.Array
    failed: jax.Array
    failed_group: jax.Array


def _cop_classify(X, centers, group_of, partners):
    """Place must-link groups in order into the closest cluster holding none of their cannot-link partners.

    Returns group labels (G,) (-1 where infeasible) and the first infeasible group (-1 if none).
    """
    k = centers.shape[0]
    G = partners.shape[0]
    cost = jax.ops.segment_sum(_sq_dists(X, centers), group_of, num_segments=G)  # (G, k)

    def place(zg, g):
        p = partners[g]
        pz = jnp.where(p >= 0, zg[jnp.maximum(p, 0)], -1)
        forbidden = jnp.any(jax.nn.one_hot(pz, k, dtype=bool), axis=0)  # -1 one-hots to all False
        c = jnp.where(forbidden, jnp.inf, cost[g])
        best = jnp.argmin(c).astype(jnp.int32)
        best = jnp.where(jnp.all(forbidden), -1, best)
        return zg.at[g].set(best), best < 0

    zg, bad = lax.scan(place, jnp.full((G,), -1, jnp.int32), jnp.arange(G))
    first_bad = jnp.where(jnp.any(bad), jnp.argmax(bad), -1).astype(jnp.int32)
    return zg, first_bad


@functools.partial(jax.jit, static_argnames=("max_iter",))
def cop_kmeans(X, centers, group_of, partners, tol=0.0, max_iter=300) -> COPResult:
    """COP-KMeans from given centres.

    Parameters
    ----------
    X : (n, d)
    centers : (k, d) initial centres.
    group_of : (n,) int32 must-link group of each item (groups numbered by first member, as
        :attr:`jaxclust.Constraints.group_of`).
    partners : (G, capacity) int32 group-level cannot-link partners padded with -1
        (:meth:`jaxclust.Constraints.cannot_partners`).
    tol : absolute tolerance on Σ‖Δc‖² ; max_iter : int (static).
    """
    k = centers.shape[0]
    centers = centers.astype(X.dtype)

    def cond(s):
        _c, _z, it, done, failed, _fg = s
        return (it < max_iter) & ~done & ~failed

    def body(s):
        c, z_old, it, _done, _failed, _fg = s
        zg, fg = _cop_classify(X, c, group_of, partners)
        z = zg[group_of]
        new = _means(X, z, c, k)
        failed = fg >= 0
        done = jnp.all(z == z_old) | (jnp.sum((new - c) ** 2) <= tol)
        return (jnp.where(failed, c, new), z, it + 1, done, failed, fg)

    n = X.shape[0]
    s0 = (
        centers,
        jnp.full((n,), -1, jnp.int32),
        jnp.int32(0),
        jnp.bool_(False),
        jnp.bool_(False),
        jnp.int32(-1),
    )
    c, z, it, _done, failed, fg = lax.while_loop(cond, body, s0)
    # Labels consistent with the final centres (when still feasible; COP's greedy pass may fail from them).
    zg, fg2 = _cop_classify(X, c, group_of, partners)
    z_final = jnp.where(failed | (fg2 >= 0), z, zg[group_of])
    d = X - c[jnp.maximum(z_final, 0)]
    inertia = jnp.where(failed, jnp.inf, jnp.sum(d * d))
    return COPResult(c, z_final, inertia, it, failed, fg)


@functools.partial(jax.jit, static_argnames=("n_clusters", "n_init", "max_iter"))
def _cop_restarts(key, X, group_of, partners, n_clusters, n_init, max_iter, tol):
    def one(k):
        return cop_kmeans(
            X, kmeans_plusplus(k, X, n_clusters), group_of, partners, tol=tol, max_iter=max_iter
        )

    return jax.vmap(one)(jax.random.split(key, n_init))


# ------------------------------------------------------------------------------------------------------------
# ----
# PCKMeans
# ------------------------------------------------------------------------------------------------------------
# ----


class PCKResult(NamedTuple):
    """Outcome of a PCKMeans run: centres (k, d), labels (n,), inertia (Σ squared distances), objective
    (½·inertia + constraint penalties), n_iter."""

    centers: jax.Array
    labels: jax.Array
    inertia: jax.Array
    objective: jax.Array
    n_iter: jax.Array


def _pck_classify(key, X, centers, points, ml, cl, w, w_bar):
    """Closest centre for everyone, then constrained items one at a time (random order) by penalised cost."""
    k = centers.shape[0]
    D = _sq_dists(X, centers)
    labels = jnp.argmin(D, axis=1).astype(jnp.int32)
    m = points.shape[0]
    if m == 0:
        return labels
    Dc = D[jnp.maximum(points, 0)]  # (m, k)
    order = jax.random.permutation(key, m)

    def visit(z, p):
        i = points[p]
        ml_oh = jax.nn.one_hot(jnp.where(ml[p] >= 0, z[jnp.maximum(ml[p], 0)], -1), k, dtype=X.dtype).sum(0)
        cl_oh = jax.nn.one_hot(jnp.where(cl[p] >= 0, z[jnp.maximum(cl[p], 0)], -1), k, dtype=X.dtype).sum(0)
        n_ml = jnp.sum(ml[p] >= 0).astype(X.dtype)
        cost = 0.5 * Dc[p] + w * (n_ml - ml_oh) + w_bar * cl_oh
        best = jnp.argmin(cost).astype(jnp.int32)
        return z.at[jnp.maximum(i, 0)].set(jnp.where(i >= 0, best, z[jnp.maximum(i, 0)])), None

    labels, _ = lax.scan(visit, labels, order)
    return labels


def _pck_objective(X, centers, labels, points, ml, cl, w, w_bar):
    """Inertia and ½·inertia + penalties; each pair appears in both partners' rows, hence the halving."""
    d = X - centers[labels]
    inertia = jnp.sum(d * d)
    own = labels[jnp.maximum(points, 0)][:, None]

    def violations(table, same):
        lab = labels[jnp.maximum(table, 0)]
        bad = (lab == own) if same else (lab != own)
        return 0.5 * jnp.sum(bad & (table >= 0) & (points >= 0)[:, None])

    return inertia, 0.5 * inertia + w * violations(ml, False) + w_bar * violations(cl, True)


@functools.partial(jax.jit, static_argnames=("max_iter",))
def pck_kmeans(key, X, centers, points, ml, cl, w, w_bar, tol=0.0, max_iter=300) -> PCKResult:
    """PCKMeans from given centres.

    Parameters
    ----------
    key : PRNG key (visiting order of constrained items).
    X : (n, d) float array
    centers : (k, d) initial centres.
    points : (m,) int32 constrained items (-1 padding).
    ml, cl : (m, cap) int32
        Their must-/cannot-link partners (item indices, -1 padding), from :func:`pack_point_constraints`.
    w, w_bar : scalars, must-link and cannot-link violation costs.
    tol : absolute tolerance on Σ‖Δc‖².
    max_iter : int (static)

    Notes
    -----
    Empty clusters are re-seeded from the farthest points exactly as in :func:`jaxclust.kmeans.lloyd`, so
    with ``w = w_bar = 0`` the two agree.
    """
    n = X.shape[0]
    k = centers.shape[0]
    centers = centers.astype(X.dtype)
    w = jnp.asarray(w, X.dtype)
    w_bar = jnp.asarray(w_bar, X.dtype)

    def cond(s):
        return (s[2] < max_iter) & ~s[4]

    def body(s):
        c, z_old, it, _strict, _done = s
        z = _pck_classify(jax.random.fold_in(key, it), X, c, points, ml, cl, w, w_bar)
        diff = X - c[z]
        dist = jnp.sum(diff * diff, axis=1)
        sums = jax.ops.segment_sum(X, z, num_segments=k)
        counts = jax.ops.segment_sum(jnp.ones((n,), X.dtype), z, num_segments=k)
        sums, counts = common.relocate_empty(X, z, dist, sums, counts)
        new = common.estimate_centers(c, sums, counts)
        strict = jnp.all(z == z_old)
        return (new, z, it + 1, strict, strict | (jnp.sum((new - c) ** 2) <= tol))

    s0 = (centers, jnp.full((n,), -1, jnp.int32), jnp.int32(0), jnp.bool_(False), jnp.bool_(max_iter <= 0))
    c, z, it, strict, _ = lax.while_loop(cond, body, s0)
    z_new = _pck_classify(jax.random.fold_in(key, it), X, c, points, ml, cl, w, w_bar)
    z = jnp.where(strict, z, z_new)
    inertia, objective = _pck_objective(X, c, z, points, ml, cl, w, w_bar)
    return PCKResult(c, z, inertia, objective, it)


@functools.partial(jax.jit, static_argnames=("n_clusters", "n_init", "max_iter"))
def _pck_restarts(key, X, points, ml, cl, w, w_bar, n_clusters, n_init, max_iter, tol):
    def one(k):
        k_init, k_run = jax.random.split(k)
        c0 = kmeans_plusplus(k_init, X, n_clusters)
        return pck_kmeans(k_run, X, c0, points, ml, cl, w, w_bar, tol=tol, max_iter=max_iter)

    return jax.vmap(one)(jax.random.split(key, n_init))


def pack_point_constraints(constraints, n: int, capacity: int = 1):
    """Item-level partner tables for :func:`pck_kmeans` (host NumPy).

    Returns ``points`` (m,) and the ``ml`` and ``cl`` (m, cap) partner tables; m and cap are rounded up to
    powers of two and to at least ``capacity`` (padding -1) so repeated fits with growing constraint sets
    rarely recompile.
    """
    ml_pairs = (
        np.asarray(constraints.must_link, dtype=np.int32).reshape(-1, 2)
        if constraints
        else np.zeros((0, 2), np.int32)
    )
    cl_pairs = (
        np.asarray(constraints.cannot_link, dtype=np.int32).reshape(-1, 2)
        if constraints
        else np.zeros((0, 2), np.int32)
    )
    pts = np.unique(np.concatenate([ml_pairs.ravel(), cl_pairs.ravel()])).astype(np.int32)
    pos = np.full(n, -1, np.int64)
    pos[pts] = np.arange(len(pts))
    capacity = max(int(capacity), 8)  # small floor: tiny constraint sets share one compilation
    m = next_pow2(max(len(pts), capacity, 32))

    def table(pairs):
        if len(pairs) == 0:
            return np.full((m, next_pow2(capacity)), -1, np.int32)
        src = np.concatenate([pairs[:, 0], pairs[:, 1]])
        dst = np.concatenate([pairs[:, 1], pairs[:, 0]])
        order = np.lexsort((dst, pos[src]))
        src, dst = pos[src][order], dst[order]
        slot = np.arange(len(src)) - np.searchsorted(src, src, side="left")
        out = np.full((m, next_pow2(max(int(slot.max()) + 1, capacity))), -1, np.int32)
        out[src, slot] = dst
        return out

    points = np.full(m, -1, np.int32)
    points[: len(pts)] = pts
    return points, table(ml_pairs), table(cl_pairs)


# ------------------------------------------------------------------------------------------------------------
# ----
# Estimators
# ------------------------------------------------------------------------------------------------------------
# ----


def _check_constraints(constraints, n: int, cls: str):
    """``constraints`` as a Constraints over n items (empty for None); see
    :func:`jaxclust.constraints.as_constraints` for what is accepted."""

    c = as_constraints(constraints, n, where=f"{cls}.fit", soft=False)
    return Constraints(n) if c is None else c


class _ConstrainedBase(ClusterMixin, BaseEstimator):
    """Shared by the constrained k-means estimators.

    Convention (every constrained estimator in jaxclust, :class:`~jaxclust.DPMM` included): the second
    argument of ``fit`` and ``fit_predict`` is ``constraints``, positionally or by name; there is no ``y``.
    ``constraints`` is a :class:`~jaxclust.Constraints`, a dict ``{"must_link": pairs, "cannot_link":
    pairs}``, a pair ``(must_link, cannot_link)`` or None; anything else (e.g. a label array passed as
    ``fit(X, y)``) raises :class:`~jaxclust.errors.ConstraintError`, so constraints are never dropped.
    """

    def predict(self, X):
        """Closest fitted centre (constraints concern the training items only)."""
        check_fitted(self, "cluster_centers_", "predict")
        X = common.check_X(self, X, reset=False)
        Xs, C, _ = common.scaled_centres(X, self.cluster_centers_)
        with common.x64_for(X):
            labels, _ = assign(to_device(common.bucket_rows(Xs)), to_device(C))
            return np.asarray(labels[: X.shape[0]], dtype=np.int32)

    def fit_predict(self, X, constraints=None):
        """``fit(X, constraints)`` then ``labels_``."""
        return self.fit(X, constraints).labels_

    def _prepare(self, X, constraints):
        """Validated X, the data the core sees (scaled by 2**-p when its magnitude needs it, then centred),
        the centring mean, the absolute tolerance, the constraints and p."""
        X = common.check_X(self, X, reset=True)
        n = X.shape[0]
        common.check_params(self, n)
        c = _check_constraints(constraints, n, type(self).__name__)
        p = common.scale_exponent(X.dtype, X)
        Xs = np.ldexp(X, -p).astype(X.dtype) if p else X
        mean = Xs.mean(axis=0)
        tol = float(np.mean(np.var(Xs, axis=0)) * self.tol) if self.tol else 0.0
        return X, Xs - mean, mean, tol, c, p

    def _set_centres(self, centres, mean, p, dtype):
        centres = np.asarray(centres, dtype=dtype) + mean
        self.cluster_centers_ = np.ldexp(centres, p).astype(dtype) if p else centres


class COPKMeans(_ConstrainedBase):
    """COP-KMeans: k-means whose classify step never violates a must-link or cannot-link constraint.

    Fit with ``fit(X, constraints)`` (positional or by name, no ``y``: the convention of every constrained
    jaxclust estimator, see ``_ConstrainedBase``).

    Parameters
    ----------
    n_clusters : int, default 8
    n_init : int, default 10
        k-means++ restarts run together under ``vmap``; the feasible run with the lowest inertia is kept.
    max_iter : int, default 300
    tol : float, default 1e-4 (relative to the mean feature variance, as :class:`~jaxclust.kmeans.KMeans`)
    random_state : int, None or PRNG key, default 0

    Attributes
    ----------
    cluster_centers_, labels_, inertia_, n_iter_, n_features_in_

    Raises
    ------
    InfeasibleConstraintsError
        From ``fit`` when every restart meets an item with no feasible cluster; the message names the item and
        its cannot-link partners.
    """

    _parameter_constraints = common.KMEANS_PARAMS

    def __init__(self, n_clusters=8, *, n_init=10, max_iter=300, tol=1e-4, random_state=0):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, constraints=None):
        """Fit on X (n, d) under ``constraints``. Returns self.

        Parameters
        ----------
        X : array-like, shape (n, d)
        constraints : Constraints, dict, (must_link, cannot_link) or None
            Also positional, ``fit(X, constraints)``: the convention of every constrained jaxclust estimator
            (there is no ``y``; an array here raises ``ConstraintError``).
        """
        X, Xc, mean, tol, c, p = self._prepare(X, constraints)
        # rows padded to n, columns by the shared capacity rule: refits with other constraint sets reuse the compile
        partners = c.cannot_partners(capacity=partner_capacity(c.max_degree), n_rows=X.shape[0])
        with common.x64_for(X):
            runs = _cop_restarts(
                prng_key(self.random_state),
                to_device(Xc),
                to_device(c.group_of),
                to_device(partners),
                int(self.n_clusters),
                int(self.n_init),
                int(self.max_iter),
                tol,
            )
            runs = jax.device_get(runs)
        if runs.failed.all():
            g = int(runs.failed_group[0])
            item = int(c.groups[g][0])
            partner_items = sorted(int(c.groups[h][0]) for h in partners[g] if h >= 0)
            raise InfeasibleConstraintsError(
                f"COPKMeans: item {item} (must-link group {g}, {len(c.groups[g])} item(s)) "
                f"has no feasible cluster: "
                f"its cannot-link partners (groups led by items {partner_items}) already occupy all "
                f"{self.n_clusters} clusters, in every one of the {self.n_init} restart(s). "
                "Use more clusters, fewer cannot-links, or PCKMeans (soft constraints)."
            )
        best = int(np.argmin(np.where(runs.failed, np.inf, runs.inertia)))
        self._set_centres(runs.centers[best], mean, p, X.dtype)
        self.labels_ = np.asarray(runs.labels[best], dtype=np.int32)
        self.inertia_ = common.unscale_sq(runs.inertia[best], p, "COPKMeans: the inertia", X)
        self.n_iter_ = int(runs.n_iter[best])
        self.n_failed_restarts_ = int(runs.failed.sum())
        return self


class PCKMeans(_ConstrainedBase):
    """PCKMeans (Basu et al. 2004): k-means plus a cost w per broken must-link, w_bar per broken cannot-link.

    Fit with ``fit(X, constraints)`` (positional or by name, no ``y``: the convention of every constrained
    jaxclust estimator, see ``_ConstrainedBase``).

    Parameters
    ----------
    n_clusters : int, default 8
    w : float, default 1.0
        Cost of a violated must-link (in units of the ½‖x - μ‖² term).
    w_bar : float or None, default None
        Cost of a violated cannot-link; None uses ``w``.
    n_init, max_iter, tol, random_state : as :class:`~jaxclust.kmeans.KMeans`.
    capacity : int, default 1
        Pad the constraint tables to at least this many constrained items and partners per item (rounded up to
        a
        power of two), so that refits with a growing constraint set (active learning) reuse one compilation.

    Attributes
    ----------
    cluster_centers_, labels_, inertia_ (Σ squared distances), objective_ (½·inertia + penalties), n_iter_
    """

    _parameter_constraints = {
        **common.KMEANS_PARAMS,
        "w": Real(0.0),
        "w_bar": Real(0.0, none=True),
        "capacity": Int(1),
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        w=1.0,
        w_bar=None,
        n_init=10,
        max_iter=300,
        tol=1e-4,
        random_state=0,
        capacity=1,
    ):
        self.n_clusters = n_clusters
        self.capacity = capacity
        self.w = w
        self.w_bar = w_bar
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, constraints=None):
        """Fit on X (n, d) with ``constraints``. Returns self.

        Parameters
        ----------
        X : array-like, shape (n, d)
        constraints : Constraints, dict, (must_link, cannot_link) or None
            Also positional, ``fit(X, constraints)``: the convention of every constrained jaxclust estimator
            (there is no ``y``; an array here raises ``ConstraintError``).
        """
        params = validate_params(self, ("w", "w_bar", "capacity"))
        w, capacity = params["w"], params["capacity"]
        w_bar = w if params["w_bar"] is None else params["w_bar"]
        X, Xc, mean, tol, c, p = self._prepare(X, constraints)
        # costs are in units of ½‖x - μ‖²: on data scaled by 2**-p they scale by 4**-p
        w_s, w_bar_s = (math.ldexp(w, -2 * p), math.ldexp(w_bar, -2 * p)) if p else (w, w_bar)
        points, ml, cl = pack_point_constraints(c, X.shape[0], capacity=capacity)
        with common.x64_for(X):
            runs = _pck_restarts(
                prng_key(self.random_state),
                to_device(Xc),
                to_device(points),
                to_device(ml),
                to_device(cl),
                to_device(w_s, Xc.dtype),
                to_device(w_bar_s, Xc.dtype),
                int(self.n_clusters),
                int(self.n_init),
                int(self.max_iter),
                tol,
            )
            runs = jax.device_get(runs)
        best = int(np.argmin(runs.objective))
        self._set_centres(runs.centers[best], mean, p, X.dtype)
        self.labels_ = np.asarray(runs.labels[best], dtype=np.int32)
        self.inertia_ = common.unscale_sq(runs.inertia[best], p, "PCKMeans: the inertia", X)
        self.objective_ = common.unscale_sq(runs.objective[best], p, "PCKMeans: the objective", X)
        self.n_iter_ = int(runs.n_iter[best])
        return self
