"""Information-theoretic metric learning (ITML; Davis, Kulis, Jain, Sra & Dhillon, ICML 2007).

Learns a Mahalanobis matrix ``A`` close (in LogDet divergence) to a prior ``A0`` such that similar pairs have
squared distance ``(x_i - x_j)^T A (x_i - x_j) <= u`` and dissimilar pairs ``>= l``, with slack. The solver is
the cyclic Bregman projection of the authors' released code (``ItmlAlg.m``), one constraint at a time::

    p = v^T A v,  alpha = min(lambda_c, delta_c * gamma' * (1/p - 1/xi_c))
    beta = delta_c alpha / (1 - delta_c alpha p)
    xi_c <- 1 / (1/xi_c + delta_c alpha / gamma),  lambda_c <- lambda_c - alpha,  A <- A + beta (A v)(A v)^T

with ``gamma' = gamma / (gamma + 1)``. A sweep is a ``lax.fori_loop`` over the constraints (8 per iteration,
stopping after the last real one). Each projection keeps only its ``p``: ``alpha``, ``lambda`` and ``xi`` depend
on nothing else, so they are updated for all constraints at once after the pass. Sweeps run in a
``lax.while_loop`` until ``||lambda - lambda_old||_1 / (||lambda||_2 + ||lambda_old||_2) < tol``.
Everything runs in float64 (``1/p - 1/xi`` cancels in float32).

Example
-------
>>> import numpy as np
>>> from jaxclust.icc import ITML
>>> X = np.random.default_rng(0).normal(size=(20, 3))
>>> itml = ITML(gamma=1.0).fit(X, [[0, 1], [2, 3]], [1, -1])
>>> itml.get_mahalanobis_matrix().shape
(3, 3)
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator

from jaxclust.constraints import as_constraints
from jaxclust.errors import ConstraintError, InvalidInputError, NotFittedError
from jaxclust.shapes import next_pow2
from jaxclust.validation import (
    Int,
    Options,
    Real,
    check_array,
    looks_like_constraints,
    validate_params,
)

__all__ = [
    "ITML",
    "ITMLState",
    "itml_init",
    "itml_sweep",
    "itml_solve",
    "default_bounds",
    "pairwise_sq_mahalanobis",
]

# projections per loop iteration (fewer loop-control steps and slices; 8 measured best of 2, 4, 8, 16)
_UNROLL = 8


class ITMLState(NamedTuple):
    """Solver state (everything float64).

    Attributes
    ----------
    A : (d, d) current Mahalanobis matrix.
    lam : (m,) dual variables, one per (padded) constraint.
    lam_old : (m,) duals at the end of the previous sweep.
    xi : (m,) current slack targets (start at the bounds).
    n_sweeps : () int32 number of completed sweeps.
    conv : () convergence measure of the last sweep (inf before the first).
    done : () bool, True once converged (or all constraints satisfied).
    """

    A: jax.Array
    lam: jax.Array
    lam_old: jax.Array
    xi: jax.Array
    n_sweeps: jax.Array
    conv: jax.Array
    done: jax.Array


def itml_init(A0: jax.Array, bounds: jax.Array) -> ITMLState:
    """Initial state: ``A = A0``, duals 0, slacks at their bounds. ``bounds`` is (m,) per-constraint bound."""
    m = bounds.shape[0]
    zeros = jnp.zeros((m,), A0.dtype)
    return ITMLState(
        A0,
        zeros,
        zeros,
        bounds.astype(A0.dtype),
        jnp.int32(0),
        jnp.asarray(jnp.inf, A0.dtype),
        jnp.asarray(False),
    )


def _vdot(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a . b`` for (d,) vectors, summed in rows of at most 32 entries: XLA:CPU splits a longer reduction into
    a reduce-window and a reduce, two more kernels per projection (3-4 % of a sweep at d = 50)."""
    d = a.shape[0]
    rows = -(-d // 32)
    width = -(-d // rows)
    r = jnp.sum(jnp.pad(a * b, (0, rows * width - d)).reshape(rows, width), axis=1)
    out = r[0]
    for i in range(1, rows):  # scalar adds fuse into the consumer; a second reduce would be its own kernel
        out = out + r[i]
    return out


def itml_sweep(
    state: ITMLState, V: jax.Array, delta: jax.Array, mask: jax.Array, gamma: jax.Array
) -> ITMLState:
    """One cyclic pass of Bregman projections over all constraints, in order.

    Parameters
    ----------
    state : ITMLState
    V : (m, d) pair differences ``x_i - x_j`` (padding rows arbitrary).
    delta : (m,) +1 for similar, -1 for dissimilar pairs.
    mask : (m,) bool, False for padding (those constraints are never touched).
    gamma : () slack trade-off; ``inf`` gives hard constraints.
    """
    gamma_proj = jnp.where(jnp.isinf(gamma), 1.0, gamma / (gamma + 1.0))
    inv_gamma = jnp.where(jnp.isinf(gamma), 0.0, 1.0 / gamma)
    m, d = V.shape
    mu = -(-m // _UNROLL) * _UNROLL
    mq = jnp.pad(mask, (0, mu - m))
    # masked and padding rows become a unit vector with zero coefficients: alpha = min(0, 0) = 0, so their
    # projection leaves A exactly as it is, and the loop body needs no select
    unit = jnp.zeros((d,), V.dtype).at[0].set(1.0)
    Vq = jnp.where(mq[:, None], jnp.pad(V, ((0, mu - m), (0, 0))), unit)
    dq = jnp.where(mq, jnp.pad(delta, (0, mu - m)), 0.0)
    cq = dq * gamma_proj
    lq = jnp.where(mq, jnp.pad(state.lam, (0, mu - m)), 0.0)
    ixq = jnp.where(mq, 1.0 / jnp.pad(state.xi, (0, mu - m), constant_values=1.0), 0.0)
    S = jnp.stack([dq, cq, ixq, lq], axis=1)  # (mu, 4): one slice per block for all the scalars
    # the loop stops after the last real constraint: padding at the end of V costs nothing
    n_blocks = (jnp.max(jnp.where(mq, jnp.arange(mu) + 1, 0)) + _UNROLL - 1) // _UNROLL

    def block(b, carry):
        A, ps = carry
        Vb = jax.lax.dynamic_slice_in_dim(Vq, b * _UNROLL, _UNROLL)
        Sb = jax.lax.dynamic_slice_in_dim(S, b * _UNROLL, _UNROLL)
        pb = []
        for u in range(_UNROLL):  # unrolled by hand: a dynamic trip count rules out scan's unroll
            v, dlt, c, ix, lam_c = Vb[u], Sb[u, 0], Sb[u, 1], Sb[u, 2], Sb[u, 3]
            Av = A @ v
            p = _vdot(v, Av)
            alpha = jnp.minimum(lam_c, c * (1.0 / p - ix))
            beta = dlt * alpha / (1.0 - dlt * alpha * p)
            A = A + beta * jnp.outer(Av, Av)
            pb.append(p)
        return A, jax.lax.dynamic_update_slice_in_dim(ps, jnp.stack(pb), b * _UNROLL, 0)

    A, ps = jax.lax.fori_loop(0, n_blocks, block, (state.A, jnp.ones((mu,), V.dtype)))
    # alpha_c depends only on p_c and the duals and slacks from before the pass: recomputed here for all
    # constraints at once (the same expression, so the same bits), and lambda_c, xi_c updated with it
    alphas = jnp.minimum(lq, cq * (1.0 / ps - ixq))[:m]
    lam = state.lam - alphas
    xi = 1.0 / (1.0 / state.xi + delta * alphas * inv_gamma)
    A = 0.5 * (A + A.T)  # keep exact symmetry against rounding drift
    normsum = jnp.linalg.norm(lam) + jnp.linalg.norm(state.lam_old)
    conv = jnp.where(
        normsum == 0, jnp.inf, jnp.sum(jnp.abs(state.lam_old - lam)) / jnp.where(normsum == 0, 1.0, normsum)
    )
    return ITMLState(A, lam, lam, xi, state.n_sweeps + 1, conv, normsum == 0)


@functools.partial(jax.jit, static_argnames=("max_iter",))
def itml_solve(A0, V, delta, mask, bounds, gamma, tol, *, max_iter: int) -> ITMLState:
    """Run sweeps until convergence (``conv < tol``), all duals zero, or ``max_iter`` sweeps.

    Parameters
    ----------
    A0 : (d, d) prior, symmetric positive definite.
    V : (m, d) pair differences; delta : (m,) +-1; mask : (m,) bool.
    bounds : (m,) squared-distance bound per pair.
    gamma, tol : () traced scalars.
    max_iter : static maximum number of sweeps.
    """

    def cond(s):
        return (s.n_sweeps < max_iter) & ~s.done

    def body(s):
        s2 = itml_sweep(s, V, delta, mask, gamma)
        return s2._replace(done=s2.done | (s2.conv < tol))

    return jax.lax.while_loop(cond, body, itml_init(A0, bounds))


@functools.partial(jax.jit, static_argnames=("max_iter",))
def _fit_packed(A0, Xp, yp, params, *, max_iter: int) -> jax.Array:
    """What :meth:`ITML.fit` runs on the device: pair differences, then :func:`itml_solve`, then the factor.

    Parameters
    ----------
    A0 : (d, d) prior, or None for the identity.
    Xp : (2 mp, d) the two rows of each pair, interleaved; padding rows are any finite rows.
    yp : (mp,) +1 similar, -1 dissimilar, 0 padding.
    params : (4,) ``[gamma, tol, u, l]``.

    Pairs of identical points (``|x_i - x_j|^2 <= (1e-12 max(1, max |x|))^2``, the maximum over the paired
    rows) are masked out, which leaves the others' projections exactly as if they had been removed.
    Returns one flat array ``[A, L, lambda, keep, n_sweeps]`` (``A = L^T L``, ``L`` NaN where ``A`` is not
    numerically positive definite): one transfer back instead of five.
    """
    d = Xp.shape[1]
    real = yp != 0
    Xr = Xp.reshape(-1, 2, d)
    V = Xr[:, 0] - Xr[:, 1]
    scale = jnp.maximum(1.0, jnp.max(jnp.where(real[:, None, None], jnp.abs(Xr), 0.0)))
    keep = real & (jnp.sum(V * V, axis=1) > (1e-12 * scale) ** 2)
    A0 = jnp.eye(d, dtype=Xp.dtype) if A0 is None else A0
    bounds = jnp.where(yp > 0, params[2], params[3])
    st = itml_solve(A0, V, yp, keep, bounds, params[0], params[1], max_iter=max_iter)
    L = jnp.linalg.cholesky(st.A).T
    return jnp.concatenate(
        [st.A.ravel(), L.ravel(), st.lam, keep.astype(Xp.dtype), st.n_sweeps[None].astype(Xp.dtype)]
    )


@jax.jit
def pairwise_sq_mahalanobis(X: jax.Array, A: jax.Array) -> jax.Array:
    """(n, n) squared distances ``(x_i - x_j)^T A (x_i - x_j)``, clipped at 0, from a centred Gram matrix."""
    Xc = X - X.mean(axis=0)
    G = Xc @ A @ Xc.T
    g = jnp.diag(G)
    D = g[:, None] + g[None, :] - 2.0 * G
    D = jnp.maximum(D, 0.0)
    return D * (1.0 - jnp.eye(X.shape[0], dtype=D.dtype))


def default_bounds(
    X: np.ndarray, A0: np.ndarray, percentiles=(5.0, 95.0), max_points: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Bounds ``(u, l)``: percentiles of *squared* distances under the prior metric ``A0``.

    metric-learn takes percentiles of plain Euclidean distances and compares them to squared Mahalanobis
    distances; the released MATLAB code (and this function) uses squared distances under the prior. Uses at
    most ``max_points`` rows (a fixed random subset) so the cost stays O(max_points^2 d).
    """
    n = X.shape[0]
    if n > max_points:
        X = X[np.sort(np.random.default_rng(seed).choice(n, max_points, replace=False))]
    Xc = X - X.mean(axis=0)
    G = Xc @ A0 @ Xc.T
    g = np.diag(G)
    iu = np.triu_indices(X.shape[0], k=1)
    d2 = np.maximum(g[iu[0]] + g[iu[1]] - 2.0 * G[iu], 0.0)
    d2 = d2[d2 > 0]
    if d2.size == 0:
        raise InvalidInputError("X: all rows are identical, cannot derive ITML bounds")
    upper, lower = np.percentile(d2, percentiles)
    return float(upper), float(lower)


def _bucket(m: int, scheme: str = "fine") -> int:
    """Padded constraint count. "fine": 8 sizes per power of two (<= 12.5% padding); "pow2": the next power of
    two (fewest distinct compiles when the constraint set keeps growing)."""
    if m <= 16:
        return 16
    if scheme == "pow2":
        return next_pow2(m)
    step = 1 << (int(m - 1).bit_length() - 3)
    return -(-m // step) * step


def _components(A: np.ndarray, L: np.ndarray) -> np.ndarray:
    """``L`` with ``A = L^T L``: the solver's Cholesky factor, or, where that failed (NaN on its diagonal: ``A``
    numerically semi-definite), one from the eigendecomposition."""
    if np.isfinite(np.diagonal(L)).all():
        return L
    w, U = np.linalg.eigh(A)
    return (U * np.sqrt(np.clip(w, 0.0, None))).T


def _prior_matrix(prior, X: np.ndarray) -> np.ndarray:
    d = X.shape[1]
    if isinstance(prior, str):
        if prior == "identity":
            return np.eye(d)
        if prior == "covariance":
            cov = np.atleast_2d(np.cov(X, rowvar=False)) + 1e-10 * np.eye(d)
            return np.linalg.inv(cov)
        raise InvalidInputError(f"prior: expected 'identity', 'covariance' or a (d, d) matrix, got {prior!r}")
    A0 = np.asarray(prior, dtype=np.float64)
    if A0.shape != (d, d):
        raise InvalidInputError(f"prior: expected shape ({d}, {d}), got {A0.shape}")
    if not np.allclose(A0, A0.T) or np.linalg.eigvalsh(0.5 * (A0 + A0.T)).min() <= 0:
        raise InvalidInputError("prior: matrix must be symmetric positive definite")
    return 0.5 * (A0 + A0.T)


def _pairs_from_input(pairs, y, n: int):
    """Turn (pairs, y) or constraints into (m, 2) int indices and (m,) +-1 labels.

    Constraints are what :func:`jaxclust.constraints.as_constraints` accepts (a Constraints, a dict with
    ``must_link``/``cannot_link``, a pair of pair lists), given as ``pairs`` with ``y`` omitted.
    """

    if looks_like_constraints(y):
        raise ConstraintError(
            "y: ITML.fit got constraints as y; pass them as fit(X, constraints) (pairs and y are the other form)"
        )
    if looks_like_constraints(pairs):
        if y is not None:
            raise InvalidInputError(
                f"y: ITML.fit got constraints as pairs and also y ({type(y).__name__}); with constraints, omit y"
            )
        c = as_constraints(pairs, n, where="ITML.fit", soft=False)
        ml = np.asarray(c.must_link, dtype=np.int64).reshape(-1, 2)
        cl = np.asarray(c.cannot_link, dtype=np.int64).reshape(-1, 2)
        return np.vstack([ml, cl]), np.concatenate([np.ones(len(ml)), -np.ones(len(cl))]).astype(np.int64)
    if y is None:
        raise InvalidInputError(
            "y: required (+1 similar / -1 dissimilar) unless pairs is a Constraints object"
        )
    try:
        P = np.asarray(pairs)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"pairs: expected an (m, 2) integer array of row indices ({exc})") from exc
    if P.ndim != 2 or P.shape[1] != 2 or (P.size and not np.issubdtype(P.dtype, np.integer)):
        raise InvalidInputError(
            f"pairs: expected an (m, 2) integer array of row indices, got shape {P.shape} and dtype {P.dtype}"
        )
    yy = np.asarray(y).ravel()
    if yy.shape[0] != P.shape[0]:
        raise InvalidInputError(f"y: length {yy.shape[0]} does not match {P.shape[0]} pairs")
    bad = (yy != 1) & (yy != -1)  # not np.isin: ~10x slower on small arrays
    if bad.any():
        raise InvalidInputError(
            f"y: entry {int(np.flatnonzero(bad)[0])} is {_py(yy[bad][0])!r}, expected +1 or -1"
        )
    if P.size and (P.min() < 0 or P.max() >= n):  # two reductions; the culprit is looked up only on error
        r = int(np.flatnonzero(((P < 0) | (P >= n)).any(axis=1))[0])
        raise InvalidInputError(f"pairs: pair {r} = {tuple(P[r].tolist())} has an index outside [0, {n})")
    return P.astype(np.int64, copy=False), yy.astype(np.int64, copy=False)


def _py(v):
    """A NumPy scalar as the Python value it holds (for messages); anything else as is."""
    return v.item() if isinstance(v, np.generic) else v


class ITML(BaseEstimator):
    """Information-theoretic metric learning (Davis et al. 2007) with the released code's slack update.

    Parameters
    ----------
    gamma : float
        Slack trade-off (``np.inf``: hard constraints).
    max_iter : int
        Maximum number of sweeps over the constraints.
    tol : float
        Convergence threshold on the relative change of the duals per sweep.
    prior : {"identity", "covariance"} or (d, d) array
        Prior matrix ``A0`` ("covariance" = inverse sample covariance).
    bounds : None or (u, l)
        Squared-distance bounds for similar / dissimilar pairs. ``None``: 5th / 95th percentiles of squared
        distances under the prior (see :func:`default_bounds`).
    padding : {"fine", "pow2"}
        How the constraint count is padded for the jitted solver (one compile per padded size): "fine"
        wastes at most 12.5 % of a sweep; "pow2" compiles least when fitting again and again with a growing
        constraint set (ICC does).

    Attributes
    ----------
    mahalanobis_ : (d, d) ndarray, learned ``A``.
    components_ : (d, d) ndarray ``L`` with ``A = L^T L`` (``transform(X) = X L^T``).
    bounds_ : (2,) ndarray, bounds used.
    n_iter_ : int, sweeps run.
    n_pairs_used_ : int, constraints kept (identical-point pairs are dropped).
    """

    _parameter_constraints = {
        "padding": Options(("fine", "pow2")),
        "max_iter": Int(1),
        "gamma": Real(0.0, strict=True, allow_inf=True),
        "tol": Real(0.0),
    }

    def __init__(self, gamma=1.0, max_iter=1000, tol=1e-3, prior="identity", bounds=None, padding="fine"):
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.prior = prior
        self.bounds = bounds
        self.padding = padding

    def fit(self, X, pairs, y=None):
        """Learn ``A`` from index pairs into ``X``.

        Parameters
        ----------
        X : (n, d) array-like.
        pairs : (m, 2) int array of row indices, or constraints (must-link = similar): a
            ``jaxclust.Constraints``, a dict with ``must_link``/``cannot_link`` or a pair (must_link,
            cannot_link), as every constrained jaxclust estimator takes them.
        y : (m,) array of +1 (similar) / -1 (dissimilar); omitted with constraints.

        Notes
        -----
        Similar pairs are projected before dissimilar ones in each sweep (stable order otherwise), as
        metric-learn does.
        """

        X = check_array(X, name="X", min_rows=2)
        params = validate_params(self)
        gamma, tol = params["gamma"], params["tol"]
        P, yy = _pairs_from_input(pairs, y, X.shape[0])
        identity = isinstance(self.prior, str) and self.prior == "identity"
        A0 = None if identity else _prior_matrix(self.prior, X)  # None: the device builds the identity
        if self.bounds is None:
            upper, lower = default_bounds(X, np.eye(X.shape[1]) if identity else A0)
        else:
            try:
                upper, lower = (float(b) for b in self.bounds)
            except (TypeError, ValueError):
                upper = lower = np.nan
            if not (np.isfinite(upper) and np.isfinite(lower) and upper >= 0 and lower >= 0):
                raise InvalidInputError(
                    f"bounds: expected two finite non-negative numbers (u, l), got {self.bounds!r}"
                )
        upper, lower = max(upper, 1e-9), max(lower, 1e-9)
        # similar pairs first (stable), as metric-learn; the device gets the paired rows in one gather
        order = np.argsort(-yy, kind="stable")
        m, d = len(yy), X.shape[1]
        mp = _bucket(m, self.padding)
        idx = np.zeros((mp, 2), np.int64)
        idx[:m] = P[order]
        yp = np.zeros(mp)
        yp[:m] = yy[order]
        Xp = X[idx.reshape(-1)]
        params = np.array([gamma, tol, upper, lower], dtype=np.float64)
        with jax.enable_x64(True):
            out = np.asarray(_fit_packed(A0, Xp, yp, params, max_iter=int(self.max_iter)))
        A = out[: d * d].reshape(d, d)
        L = out[d * d : 2 * d * d].reshape(d, d)
        keep = out[2 * d * d + mp : 2 * d * d + 2 * mp][:m] > 0
        self.lambda_ = out[2 * d * d : 2 * d * d + m][keep]
        self.n_iter_ = int(out[-1])
        self.mahalanobis_ = A
        self.components_ = _components(A, L)
        self.bounds_ = np.array([upper, lower])
        self.n_pairs_used_ = int(keep.sum())
        self.n_features_in_ = d
        return self

    def _check_fitted(self):
        if not hasattr(self, "mahalanobis_"):
            raise NotFittedError("ITML: call fit before using the learned metric")

    def _check_X_fitted(self, X, method: str) -> np.ndarray:

        self._check_fitted()
        X = check_array(X, name="X", min_rows=1)
        if X.shape[1] != self.n_features_in_:
            raise InvalidInputError(
                f"X: has {X.shape[1]} features, ITML was fitted with {self.n_features_in_} ({method})"
            )
        return X

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """(d, d) learned Mahalanobis matrix ``A``."""
        self._check_fitted()
        return self.mahalanobis_.copy()

    def transform(self, X) -> np.ndarray:
        """(n, d) ``X L^T``: Euclidean distances of the output are Mahalanobis distances under ``A``."""
        X = self._check_X_fitted(X, "transform")
        return X @ self.components_.T

    def pairwise_distances(self, X) -> np.ndarray:
        """(n, n) learned distances ``sqrt((x_i - x_j)^T A (x_i - x_j))`` (float64)."""
        X = self._check_X_fitted(X, "pairwise_distances")
        with jax.enable_x64(True):
            D2 = np.asarray(pairwise_sq_mahalanobis(jnp.asarray(X), jnp.asarray(self.mahalanobis_)))
        return np.sqrt(D2)
