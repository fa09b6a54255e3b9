"""k-means: the classify/estimate alternation (Lloyd's algorithm), in jitted JAX.

Lloyd's algorithm alternates a *classify* step (each point to its closest centre) and an *estimate* step (each
centre to the mean of its points). Read probabilistically, with P(x | c) ∝ exp(-‖x - c‖²) and a uniform P(c), it
maximises the joint likelihood of the data and the hard assignments of a naive-Bayes-like model; EM with soft
assignments is in :mod:`jaxclust.kmeans.mixture`.

Functional core (pure, jittable, no scikit-learn)::

    centers = kmeans_plusplus(key, X, n_clusters)           # greedy k-means++ (scikit-learn's variant)
    result = lloyd(X, centers, tol=tol_abs, max_iter=300)    # KMeansResult(centers, labels, inertia, n_iter)
    result = kmeans(key, X, n_clusters, n_init=10)           # restarts under vmap, best inertia kept

Distances use the expansion ‖x‖² - 2 x·c + ‖c‖² as one matmul per chunk of points, and the classify and estimate
steps are fused in a single ``lax.scan`` over chunks, so peak memory is O(chunk · k) rather than O(n · k)
(1e6 × 128 fits). Empty clusters are re-seeded from the points farthest from their centres, as scikit-learn
does; centres are never NaN.

The estimator :class:`KMeans` follows scikit-learn's contract. k-means is scale-equivariant, so data whose
magnitudes would overflow or underflow squared distances (beyond 2**±32 in float32, 2**±256 in float64) is
scaled by a power of two (exact) before fitting and the centres and inertia scaled back: the labels are those
of the data as given. An inertia beyond the float64 range raises :class:`~jaxclust.errors.NumericalError`
rather than returning inf. The constrained baselines :class:`~jaxclust.kmeans.COPKMeans` and
:class:`~jaxclust.kmeans.PCKMeans` are in :mod:`jaxclust.kmeans.constrained`.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin

from jaxclust.errors import InvalidInputError, NumericalError
from jaxclust.kmeans.common import (
    KMEANS_PARAMS,
    bucket_rows,
    check_params,
    check_X,
    estimate_centers,
    relocate_empty,
    row_weights,
    scale_exponent,
    scaled_centres,
    unscale_sq,
    x64_for,
)
from jaxclust.kmeans.host_devices import can_split, lloyd_mesh, sharded
from jaxclust.kmeans.seeding import kmeans_plusplus
from jaxclust.transfer import to_device
from jaxclust.validation import check_fitted, check_sample_weight, prng_key, reject_constraints_as_y

__all__ = [
    "KMeansResult",
    "lloyd",
    "kmeans",
    "assign",
    "chunk_size",
    "KMeans",
]

# Distance-block sizing (per restart), measured on XLA:CPU (benchmarks/RESULTS.md, k-means). From k = 32 on, blocks
# of ~128 KiB (256 float32 rows at k = 100) stay in L2 cache between the matmul and the two reductions that read
# them: 3x less CPU time per Lloyd iteration than 2**21-entry blocks. Below k = 32, jnp.argmin over a (b, k)
# block of up to 2**21 entries is cheaper still (the variadic reduce is short; few long blocks, little loop cost).
_SMALL_K = 32
_CHUNK_BYTES = 1 << 17
_CHUNK_ENTRIES_SMALL_K = 1 << 21


class KMeansResult(NamedTuple):
    """Outcome of one (or the best of several) Lloyd runs.

    Attributes
    ----------
    centers : (k, d) array
    labels : (n,) int32 array, index of the closest centre of ``centers``.
    inertia : () array, sum of squared distances of points to their centre.
    n_iter : () int32 array, Lloyd iterations run.
    """

    centers: jax.Array
    labels: jax.Array
    inertia: jax.Array
    n_iter: jax.Array


class _LloydState(NamedTuple):
    centers: jax.Array  # (k, d)
    labels: jax.Array  # (n_chunks, chunk) labels of the last classify step
    n_iter: jax.Array  # () int32
    strict: jax.Array  # () bool: labels unchanged in the last iteration
    done: jax.Array  # () bool


def chunk_size(n: int, k: int, itemsize: int = 4) -> int:
    """Static chunk length (rows per distance block) for n points, k centres and ``itemsize``-byte floats.

    k >= 32: the largest power of two within max(64, 2**17 / (k · itemsize)) rows (256 at k = 100, float32);
    k < 32: n split evenly into blocks of at most 2**21 / k rows (a multiple of 8). All rows when they fit.
    """
    if k < _SMALL_K:
        cap = _CHUNK_ENTRIES_SMALL_K // max(k, 1)
        if n <= cap:
            return int(n)
        n_chunks = -(-n // cap)
        c = -(-n // n_chunks)
        return int(-(-c // 8) * 8)
    cap = max(64, _CHUNK_BYTES // (k * itemsize))
    if n <= cap:
        return int(n)
    return 1 << (cap.bit_length() - 1)


def _pad_chunks(X: jax.Array, chunk: int, n_valid=None, n_dev: int = 1):
    """Pad rows to a multiple of ``chunk``; return (n_chunks, chunk, d) data and a (n_chunks, chunk) mask.

    Rows at or past ``n_valid`` (traced; default all rows) are padding: they never count. ``n_chunks`` is
    rounded up to a multiple of ``n_dev`` so the chunks split evenly over devices.
    """
    n, d = X.shape
    n_chunks = -(-n // chunk)
    n_chunks = -(-n_chunks // n_dev) * n_dev
    pad = n_chunks * chunk - n
    Xp = jnp.pad(X, ((0, pad), (0, 0))).reshape(n_chunks, chunk, d)
    valid = (jnp.arange(n_chunks * chunk) < (n if n_valid is None else n_valid)).reshape(n_chunks, chunk)
    return Xp, valid


def _classify(xc, centers, c_sq):
    """Closest centre of each row of ``xc`` (b, d): labels (b,) and ‖c‖² - 2x·c at the minimum (b,).

    Exactly ``argmin`` for finite distances, ties to the lowest index (as NumPy and scikit-learn). From k = 32 on,
    it is built from two single-operand reductions (the min, then the first index holding it) over a (k, b)
    block, vectorised across the points: XLA:CPU's variadic (value, index) reduce behind ``jnp.argmin`` costs
    several times the matmul there. Below k = 32 the plain ``jnp.argmin`` is the faster one.
    """
    k = centers.shape[0]
    if k < _SMALL_K:
        partial = c_sq[None, :] - 2.0 * (xc @ centers.T)  # ‖x‖² omitted: it does not change the argmin
        labels = jnp.argmin(partial, axis=1).astype(jnp.int32)
        return labels, jnp.take_along_axis(partial, labels[:, None], axis=1)[:, 0]
    partial = c_sq[:, None] - 2.0 * (centers @ xc.T)  # (k, b)
    best = jnp.min(partial, axis=0)
    first = jnp.min(jnp.where(partial == best[None, :], jnp.arange(k, dtype=jnp.int32)[:, None], k), axis=0)
    return jnp.minimum(first, k - 1), best  # the clamp only matters for NaN rows (no entry equals the min)


def _cluster_sums(xc, labels, w, k):
    """Per-cluster weighted sums (k, d) and weights (k,).

    On CPU a segment sum is deterministic and O(b·d); elsewhere (GPU scatter order can vary) use a one-hot
    matmul.
    """
    if jax.default_backend() == "cpu":
        sums = jax.ops.segment_sum(xc * w[:, None], labels, num_segments=k)
        counts = jax.ops.segment_sum(w, labels, num_segments=k)
    else:
        oh = jax.nn.one_hot(labels, k, dtype=xc.dtype) * w[:, None]
        sums, counts = oh.T @ xc, oh.sum(0)
    return sums, counts


def _fused_step(Xp, x_sq, valid, wts, centers):
    """One classify + estimate pass over the chunks: labels, squared distances, weighted cluster sums and
    weights (``wts``: each row's sample weight, 0 on padding)."""
    k = centers.shape[0]
    c_sq = jnp.sum(centers * centers, axis=1)

    def body(carry, xs):
        sums, counts = carry
        xc, xsq, ok, w = xs
        labels, part = _classify(xc, centers, c_sq)
        s, c = _cluster_sums(xc, labels, w, k)
        dist = jnp.where(ok, jnp.maximum(part + xsq, 0.0), -1.0)  # padding never counts as "far"
        return (sums + s, counts + c), (labels, dist)

    init = (jnp.zeros_like(centers), jnp.zeros((k,), centers.dtype))
    (sums, counts), (labels, dist) = lax.scan(body, init, (Xp, x_sq, valid, wts))
    return labels, dist, sums, counts


def lloyd(X, centers, tol=0.0, max_iter=300, chunk=None, n_valid=None, sample_weight=None) -> KMeansResult:
    """Lloyd iterations from given centres until labels stop changing or the centre shift is within ``tol``.

    Parameters
    ----------
    X : (n, d) float array
    centers : (k, d) float array, initial centres.
    tol : scalar, absolute tolerance on Σ_k ‖c_k^new - c_k^old‖² (scikit-learn scales its ``tol`` by the mean
        feature variance before passing it here; :class:`KMeans` does the same).
    max_iter : int (static)
    chunk : int or None (static), rows per distance block; default from :func:`chunk_size`.
    n_valid : scalar or None (traced), only the first ``n_valid`` rows are data (the rest is padding that lets
        one compilation serve several sizes); default all.
    sample_weight : (n,) non-negative float array or None (traced), each row's weight in the centre means and
        the inertia (scikit-learn's meaning: weight w counts as w copies of the row); default 1 for every row.

    Returns
    -------
    KMeansResult
        Final labels are those of the final centres (a last classify step is run unless the labels were
        stable), and ``inertia`` is recomputed exactly as Σ w_i ‖x_i - c_{l_i}‖², as scikit-learn does.

    Notes
    -----
    With several CPU host devices the chunks of points are split over them (see
    :func:`~jaxclust.kmeans.host_devices.lloyd_mesh`); the clustering is the same, centres and inertia may differ
    from one device's in the last bits.
    """
    split = can_split(X.shape[0] * X.shape[1] * centers.shape[0], X, centers, tol, n_valid, sample_weight)
    return _lloyd(
        X,
        centers,
        tol,
        max_iter=max_iter,
        chunk=chunk,
        n_valid=n_valid,
        sample_weight=sample_weight,
        split=split,
    )


@functools.partial(jax.jit, static_argnames=("max_iter", "chunk", "split"))
def _lloyd(X, centers, tol=0.0, max_iter=300, chunk=None, n_valid=None, sample_weight=None, split=False):
    n, d = X.shape
    k = centers.shape[0]
    chunk = chunk or chunk_size(n, k, X.dtype.itemsize)
    centers = centers.astype(X.dtype)
    tol = jnp.asarray(tol, X.dtype)
    mesh = lloyd_mesh() if split else None
    n_dev = 1 if mesh is None else mesh.size
    Xp, valid = _pad_chunks(X, chunk, n_valid, n_dev)
    wts = jnp.pad(row_weights(n, X.dtype, n_valid, sample_weight), (0, valid.size - n)).reshape(valid.shape)
    x_sq = jnp.sum(Xp * Xp, axis=2)
    Xflat = Xp.reshape(-1, d)
    # Several devices: each runs the fused scan over its share of the chunks; (sums, counts) are all-reduced.
    # The cluster sums are then added in a different order, so centres may differ from one device's in the last
    # bits. One device: the plain scan, unchanged.
    fused = _fused_step if mesh is None else sharded(_fused_step, mesh, 2, 2)

    def cond(s: _LloydState):
        return (s.n_iter < max_iter) & ~s.done

    def body(s: _LloydState):
        labels, dist, sums, counts = fused(Xp, x_sq, valid, wts, s.centers)
        sums, counts = lax.cond(
            jnp.any(counts == 0),
            relocate_empty,
            lambda _x, _l, _d, s_, c_, _w: (s_, c_),
            Xflat,
            labels.reshape(-1),
            dist.reshape(-1),
            sums,
            counts,
            wts.reshape(-1),
        )
        new = estimate_centers(s.centers, sums, counts)
        shift = jnp.sum((new - s.centers) ** 2)
        strict = jnp.all((labels == s.labels) | ~valid)
        return _LloydState(new, labels, s.n_iter + 1, strict, strict | (shift <= tol))

    s0 = _LloydState(
        centers,
        jnp.full(valid.shape, -1, jnp.int32),
        jnp.int32(0),
        jnp.bool_(False),
        jnp.bool_(max_iter <= 0),
    )
    s = lax.while_loop(cond, body, s0)

    # Final classify with the final centres (kept only without strict convergence), then exact inertia.
    def final_pass(Xp, old_labels, valid, wts, centers, strict):
        c_sq = jnp.sum(centers * centers, axis=1)

        def final(_, xs):
            xc, old, ok, w = xs
            new, _part = _classify(xc, centers, c_sq)
            lab = jnp.where(strict, old, new)
            diff = xc - centers[lab]
            return None, (lab, jnp.where(ok, w * jnp.sum(diff * diff, axis=1), 0.0))

        _, (labels, dist) = lax.scan(final, None, (Xp, old_labels, valid, wts))
        return labels, dist

    final_fn = final_pass if mesh is None else sharded(final_pass, mesh, 2, 0)
    labels, dist = final_fn(Xp, s.labels, valid, wts, s.centers, s.strict)
    return KMeansResult(s.centers, labels.reshape(-1)[:n], jnp.sum(dist), s.n_iter)


def assign(X, centers, chunk=None):
    """Closest centre of each row (the classify step): labels (n,) int32 and squared distances (n,)."""
    k = centers.shape[0]
    return _assign(
        X, jnp.asarray(centers, X.dtype), chunk=chunk or chunk_size(X.shape[0], k, X.dtype.itemsize)
    )


@functools.partial(jax.jit, static_argnames=("chunk",))
def _assign(X, centers, chunk):
    n = X.shape[0]
    Xp, _ = _pad_chunks(X, chunk)
    c_sq = jnp.sum(centers * centers, axis=1)

    def one(xc):
        lab, part = _classify(xc, centers, c_sq)
        return lab, jnp.maximum(part + jnp.sum(xc * xc, axis=1), 0.0)

    labels, dist = lax.map(one, Xp)
    return labels.reshape(-1)[:n], dist.reshape(-1)[:n]


def kmeans(
    key,
    X,
    n_clusters: int,
    n_init: int = 10,
    max_iter: int = 300,
    tol=0.0,
    chunk=None,
    n_valid=None,
    sample_weight=None,
) -> KMeansResult:
    """k-means++ then Lloyd, ``n_init`` restarts run together under ``vmap``; the lowest inertia is kept.

    ``tol`` is absolute, ``n_valid`` marks padding and ``sample_weight`` weighs the rows (see :func:`lloyd`).
    Returns a :class:`KMeansResult` whose ``n_iter`` is the best run's.
    """
    split = can_split(X.shape[0] * X.shape[1] * n_clusters * n_init, key, X, tol, n_valid, sample_weight)
    return _kmeans(key, X, n_clusters, n_init, max_iter, tol, chunk, n_valid, sample_weight, split)


@functools.partial(jax.jit, static_argnames=("n_clusters", "n_init", "max_iter", "chunk", "split"))
def _kmeans(key, X, n_clusters, n_init, max_iter, tol, chunk, n_valid, sample_weight, split) -> KMeansResult:
    keys = jax.random.split(key, n_init)

    def one(k):
        c0 = kmeans_plusplus(k, X, n_clusters, n_valid=n_valid, sample_weight=sample_weight)
        return _lloyd(
            X,
            c0,
            tol,
            max_iter=max_iter,
            chunk=chunk,
            n_valid=n_valid,
            sample_weight=sample_weight,
            split=split,
        )

    runs = jax.vmap(one)(keys)
    best = jnp.argmin(runs.inertia)
    return jax.tree.map(lambda a: a[best], runs)


# ------------------------------------------------------------------------------------------------------------
# ----
# Estimator shell
# ------------------------------------------------------------------------------------------------------------
# ----


class KMeans(ClusterMixin, TransformerMixin, BaseEstimator):
    """k-means clustering (Lloyd) with greedy k-means++ seeding, restarts run together under ``vmap``.

    Parameters
    ----------
    n_clusters : int, default 8
    init : {"k-means++", "random"} or (n_clusters, n_features) array, default "k-means++"
        An array gives the initial centres (then one run, whatever ``n_init``).
    n_init : int, default 10
        Restarts; the run with the lowest inertia is kept.
    max_iter : int, default 300
    tol : float, default 1e-4
        Relative tolerance: Lloyd stops when Σ_k ‖Δc_k‖² ≤ tol · mean feature variance (scikit-learn's rule),
        or when no label changes.
    random_state : int, None or PRNG key, default 0

    Attributes
    ----------
    cluster_centers_ : (n_clusters, n_features) ndarray
    labels_ : (n_samples,) int ndarray
    inertia_ : float
    n_iter_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    >>> round(KMeans(n_clusters=2, random_state=0).fit(X).inertia_, 6)
    0.01
    """

    _parameter_constraints = KMEANS_PARAMS

    def __init__(self, n_clusters=8, *, init="k-means++", n_init=10, max_iter=300, tol=1e-4, random_state=0):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y=None, sample_weight=None):
        """Compute k-means clustering of X (n_samples, n_features). Returns self.

        ``sample_weight`` (n_samples,) or a number, default 1 per row: a row of weight w counts as w copies of it
        in the centre means, the inertia and the k-means++ (or "random") draws; weights must be >= 0, and at
        least ``n_clusters`` rows must weigh unless ``init`` is an array.

        ``y`` is ignored (scikit-learn's convention), but constraints passed there raise
        :class:`~jaxclust.errors.ConstraintError` instead of being dropped: use :class:`COPKMeans` or
        :class:`PCKMeans`, whose ``fit(X, constraints)`` takes them.
        """
        reject_constraints_as_y(
            y, "KMeans.fit", "KMeans uses no constraints: use COPKMeans or PCKMeans, fit(X, constraints)"
        )
        X_in = X = check_X(self, X, reset=True)
        n = X.shape[0]
        k = check_params(self, n)["n_clusters"]
        init = self._check_init(X, k)
        weighted = sample_weight is not None
        w = check_sample_weight(sample_weight, n, np.float64)
        # k-means is invariant to scaling every weight by one constant: fit with the largest weight in [0.5, 1)
        # (a power of two, exact) so weighted sums cannot overflow, and scale the inertia back.
        q = int(np.frexp(w.max())[1]) if weighted else 0
        given = np.count_nonzero(w)
        w = np.ldexp(w, -q).astype(X.dtype)
        if init is None and np.count_nonzero(w) < k:
            lost = given - np.count_nonzero(
                w
            )  # positive, but too small beside the largest to count in X's dtype
            big = int(np.argmax(w))
            raise InvalidInputError(
                f"sample_weight: only {np.count_nonzero(w)} rows weigh, fewer than n_clusters={k}"
                + (
                    f" ({lost} positive weights are too small to count beside the largest, index {big}, in "
                    f"{X.dtype.name}: the weights span more than its range; bring them closer together)"
                    if lost
                    else ""
                )
            )
        p = scale_exponent(X.dtype, X)  # magnitudes whose squares overflow/underflow: fit on X / 2**p
        if p:
            X = np.ldexp(X, -p).astype(X.dtype)
            init = None if init is None else np.ldexp(init, -p).astype(X.dtype)
        mean = X.mean(axis=0)
        Xc = X - mean  # centring keeps the ‖x‖² - 2x·c + ‖c‖² expansion accurate
        tol = float(np.mean(np.var(X, axis=0)) * self.tol) if self.tol else 0.0
        key = prng_key(self.random_state)
        with x64_for(X):
            Xj = to_device(bucket_rows(Xc))
            wj = to_device(np.pad(w, (0, Xj.shape[0] - n))) if weighted else None
            if init is None:
                run = {"n_init": int(self.n_init), "max_iter": int(self.max_iter), "tol": tol, "n_valid": n}
                if self.init == "k-means++":
                    res = kmeans(key, Xj, k, **run, sample_weight=wj)
                else:
                    split = can_split(Xj.shape[0] * Xj.shape[1] * k * int(self.n_init), key)
                    res = _kmeans_random(key, Xj, k, **run, sample_weight=wj, split=split)
            else:
                res = lloyd(
                    Xj,
                    to_device(init - mean),
                    tol=tol,
                    max_iter=int(self.max_iter),
                    n_valid=n,
                    sample_weight=wj,
                )
            centers, labels, inertia, n_iter = jax.device_get(tuple(res))
        centers = np.asarray(centers, dtype=X.dtype) + mean
        self.cluster_centers_ = np.ldexp(centers, p).astype(X.dtype) if p else centers
        self.labels_ = np.asarray(labels[:n], dtype=np.int32)
        self.inertia_ = unscale_sq(inertia, p, "KMeans: the inertia", X_in)
        if q:
            try:
                self.inertia_ = math.ldexp(self.inertia_, q)
            except OverflowError:
                raise NumericalError(
                    "KMeans: the weighted inertia is beyond the float64 range; divide sample_weight by a constant "
                    "(the labels do not change)"
                ) from None
        self.n_iter_ = int(n_iter)
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        """``fit`` then ``labels_`` (``y`` and ``sample_weight`` as in :meth:`fit`)."""
        return self.fit(X, y, sample_weight=sample_weight).labels_

    def _check_init(self, X, k):
        """None for "k-means++"/"random", else the initial centres as an array of X's dtype."""
        init = self.init
        if isinstance(init, str):
            if init in ("k-means++", "random"):
                return None
            raise InvalidInputError(
                f"init: expected 'k-means++', 'random' or an (n_clusters, n_features) array, got {init!r}"
            )
        try:
            arr = np.asarray(init, dtype=X.dtype)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"init: expected 'k-means++', 'random' or an (n_clusters, n_features) array, got {init!r}"
            ) from exc
        if arr.shape != (k, X.shape[1]):
            raise InvalidInputError(f"init: array has shape {arr.shape}, expected {(k, X.shape[1])}")
        if not np.isfinite(arr).all():
            r, col = np.argwhere(~np.isfinite(arr))[0]
            raise InvalidInputError(f"init: row {r} has a non-finite value in column {col}")
        return arr

    def predict(self, X):
        """Index of the closest centre for each row of X (n_samples, n_features)."""
        check_fitted(self, "cluster_centers_", "predict")
        X = check_X(self, X, reset=False)
        Xs, C, _ = scaled_centres(X, self.cluster_centers_)
        with x64_for(X):
            labels, _ = assign(to_device(bucket_rows(Xs)), to_device(C))
            return np.asarray(labels[: X.shape[0]], dtype=np.int32)

    def _scaled_sq_distances(self, X, method):
        check_fitted(self, "cluster_centers_", method)
        X = check_X(self, X, reset=False)
        Xs, C, p = scaled_centres(X, self.cluster_centers_)
        d2 = (Xs * Xs).sum(1)[:, None] - 2.0 * Xs @ C.T + (C * C).sum(1)[None, :]
        return X, np.maximum(d2, 0.0), p

    def transform(self, X):
        """Euclidean distances (n_samples, n_clusters) to every centre."""
        X, d2, p = self._scaled_sq_distances(X, "transform")
        if not p:
            return np.sqrt(d2)
        with np.errstate(over="ignore"):
            D = np.ldexp(np.sqrt(d2), p).astype(X.dtype)
        if not np.isfinite(D).all():
            raise NumericalError(
                f"KMeans.transform: distances of X (max |x| = {float(np.max(np.abs(X))):.3g}) to the centres "
                f"exceed the {X.dtype} range; divide X by a constant"
            )
        return D

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the (weighted, as in :meth:`fit`) inertia of X with respect to the fitted centres."""
        del y
        X, d2, p = self._scaled_sq_distances(X, "score")
        w = check_sample_weight(sample_weight, X.shape[0], np.float64)
        return -unscale_sq(np.dot(w, d2.min(axis=1).astype(np.float64)), p, "KMeans.score: the inertia", X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


@functools.partial(jax.jit, static_argnames=("n_clusters", "n_init", "max_iter", "split"))
def _kmeans_random(key, X, n_clusters, n_init, max_iter, tol, n_valid, sample_weight, split):
    """Restarts from ``n_clusters`` distinct rows drawn without replacement, with probability proportional to
    their weights (uniformly by default)."""
    keys = jax.random.split(key, n_init)
    log_w = jnp.log(row_weights(X.shape[0], X.dtype, n_valid, sample_weight))

    def one(k):
        # Gumbel top-k: the same law as successive draws without replacement in proportion to the weights.
        idx = lax.top_k(log_w + jax.random.gumbel(k, log_w.shape, X.dtype), n_clusters)[1]
        return _lloyd(
            X, X[idx], tol, max_iter=max_iter, n_valid=n_valid, sample_weight=sample_weight, split=split
        )

    runs = jax.vmap(one)(keys)
    best = jnp.argmin(runs.inertia)
    return jax.tree.map(lambda a: a[best], runs)
