"""EM for Gaussian mixtures, in log space, and soft k-means (the probabilistic reading of k-means).

k-means maximises Σ_i max_c log P(x_i, c) with P(x | c) ∝ exp(-‖x - c‖²) and uniform P(c). Replacing the max
over clusters by the posterior expectation gives EM: the E-step computes responsibilities r_ik = P(c = k |
x_i) = softmax_k(log π_k + log N(x_i | μ_k, Σ_k)) with ``logsumexp``; the M-step re-estimates π_k = N_k / n,
μ_k = Σ_i r_ik x_i / N_k and Σ_k (full, diagonal or spherical) plus a covariance floor ``reg_covar`` on the
diagonal. The mean log-likelihood (1/n) Σ_i log Σ_k π_k N(x_i | μ_k, Σ_k) never decreases (up to the floor).

:func:`soft_kmeans` is the isotropic special case of the seed: fixed variance 1/(2β), uniform weights, only
the
centres are estimated; as β → ∞ it becomes k-means.

Functional core::

    params = m_step(X, resp, reg_covar, covariance_type)     # GMMParams(weights, means, covariances)
    fit = em(X, params, tol=1e-3, max_iter=100, reg_covar=1e-6, covariance_type="full")
    fit.params, fit.log_likelihood (trace, NaN after n_iter), fit.n_iter, fit.converged
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin

from jaxclust.errors import InvalidInputError, NumericalError
from jaxclust.kmeans.common import bucket_rows, check_X, x64_for
from jaxclust.kmeans.lloyd_kmeans import kmeans
from jaxclust.transfer import to_device
from jaxclust.validation import (
    Int,
    Options,
    Real,
    check_fitted,
    prng_key,
    reject_constraints_as_y,
    validate_params,
)

__all__ = [
    "GMMParams",
    "EMResult",
    "log_gaussian",
    "e_step",
    "m_step",
    "em",
    "SoftKMeansResult",
    "soft_kmeans",
    "GaussianMixture",
]

_COV_TYPES = ("full", "diag", "spherical")


class GMMParams(NamedTuple):
    """Mixture parameters: weights (k,), means (k, d), covariances (k, d, d) | (k, d) | (k,) by type."""

    weights: jax.Array
    means: jax.Array
    covariances: jax.Array


class EMResult(NamedTuple):
    """EM outcome: final params, mean log-likelihood trace (max_iter,) (NaN past n_iter), n_iter, converged.

    ``log_likelihood[t]`` is the mean log-likelihood under the parameters *before* the (t+1)-th M-step, as
    scikit-learn's ``lower_bounds_``.
    """

    params: GMMParams
    log_likelihood: jax.Array
    n_iter: jax.Array
    converged: jax.Array


def log_gaussian(X, means, covariances, covariance_type: str):
    """log N(x_i | μ_k, Σ_k) for all pairs, (n, k).

    Full covariances go through their Cholesky factors (one triangular solve per component); diagonal and
    spherical ones use the matmul expansion Σ_j (x_j² - 2 x_j μ_j + μ_j²) / σ_j².
    """
    n, d = X.shape
    const = d * math.log(2.0 * math.pi)
    if covariance_type == "full":
        chol = jnp.linalg.cholesky(covariances)  # (k, d, d)

        def one(mu, L):
            y = solve_triangular(L, (X - mu).T, lower=True)  # (d, n)
            return jnp.sum(y * y, axis=0) + 2.0 * jnp.sum(jnp.log(jnp.diagonal(L)))

        maha_logdet = lax.map(lambda a: one(*a), (means, chol))  # (k, n), one component at a time
        return -0.5 * (const + maha_logdet.T)
    if covariance_type == "diag":
        prec = 1.0 / covariances  # (k, d)
        maha = (X * X) @ prec.T - 2.0 * X @ (means * prec).T + jnp.sum(means * means * prec, axis=1)[None, :]
        return -0.5 * (const + maha + jnp.sum(jnp.log(covariances), axis=1)[None, :])
    if covariance_type == "spherical":
        x_sq = jnp.sum(X * X, axis=1)[:, None]
        d2 = x_sq - 2.0 * X @ means.T + jnp.sum(means * means, axis=1)[None, :]
        return -0.5 * (const + d2 / covariances[None, :] + d * jnp.log(covariances)[None, :])
    raise ValueError(f"covariance_type must be one of {_COV_TYPES}, got {covariance_type!r}")


def _mask(X, n_valid):
    return jnp.arange(X.shape[0]) < (X.shape[0] if n_valid is None else n_valid)


def e_step(X, params: GMMParams, covariance_type: str, n_valid=None):
    """Mean log-likelihood () and log responsibilities (n, k); rows past ``n_valid`` are padding."""
    joint = jnp.log(params.weights)[None, :] + log_gaussian(
        X, params.means, params.covariances, covariance_type
    )
    norm = logsumexp(joint, axis=1)
    valid = _mask(X, n_valid)
    return jnp.sum(jnp.where(valid, norm, 0.0)) / jnp.sum(valid), joint - norm[:, None]


def m_step(X, resp, reg_covar, covariance_type: str, n_valid=None) -> GMMParams:
    """Maximum-likelihood weights, means and covariances from responsibilities (n, k), plus ``reg_covar`` on
    the diagonal (the floor that keeps a component from collapsing onto one point); rows past ``n_valid`` are
    ignored."""
    d = X.shape[1]
    valid = _mask(X, n_valid)
    resp = jnp.where(valid[:, None], resp, 0.0)
    n = jnp.sum(valid).astype(X.dtype)
    nk = resp.sum(axis=0) + 10.0 * jnp.finfo(X.dtype).eps
    means = (resp.T @ X) / nk[:, None]
    if covariance_type == "full":

        def one(a):  # centred per component: no E[xx] - mean² cancellation
            r, mu, m = a
            diff = X - mu
            return (r[:, None] * diff).T @ diff / m + reg_covar * jnp.eye(d, dtype=X.dtype)

        cov = lax.map(one, (resp.T, means, nk))
    else:
        # Centred second moment via Σ r (x - μ)² = Σ r x² - N μ² (the float64 path keeps this exact enough).
        avg_x2 = (resp.T @ (X * X)) / nk[:, None]
        cov = jnp.maximum(avg_x2 - means * means, 0.0) + reg_covar
        if covariance_type == "spherical":
            cov = cov.mean(axis=1)
    return GMMParams(nk / n, means, cov)


@functools.partial(jax.jit, static_argnames=("covariance_type", "max_iter"))
def em(
    X,
    params: GMMParams,
    tol=1e-3,
    max_iter: int = 100,
    reg_covar=1e-6,
    covariance_type: str = "full",
    n_valid=None,
):
    """EM iterations from ``params`` until the mean log-likelihood changes by less than ``tol``.

    Parameters
    ----------
    X : (n, d) ; params : GMMParams initial parameters ; tol, reg_covar : scalars (traced)
    max_iter : int (static) ; covariance_type : {"full", "diag", "spherical"} (static)
    n_valid : scalar or None (traced), rows past it are padding.

    Returns
    -------
    EMResult
    """
    dtype = X.dtype
    trace0 = jnp.full((max_iter,), jnp.nan, dtype)

    def cond(s):
        _p, _prev, it, conv, _t = s
        return (it < max_iter) & ~conv

    def body(s):
        p, prev, it, _conv, trace = s
        ll, log_resp = e_step(X, p, covariance_type, n_valid)
        new = m_step(X, jnp.exp(log_resp), reg_covar, covariance_type, n_valid)
        # A collapsed component (reg_covar = 0) gives a singular covariance: keep the last finite parameters,
        # stop.
        ok = jnp.isfinite(ll) & jnp.all(jnp.array([jnp.all(jnp.isfinite(a)) for a in new]))
        new = jax.tree.map(lambda a, b: jnp.where(ok, a, b), new, p)
        return new, ll, it + 1, (jnp.abs(ll - prev) < tol) | ~ok, trace.at[it].set(ll)

    p, _ll, it, conv, trace = lax.while_loop(
        cond, body, (params, jnp.asarray(-jnp.inf, dtype), jnp.int32(0), jnp.bool_(False), trace0)
    )
    return EMResult(p, trace, it, conv)


class SoftKMeansResult(NamedTuple):
    """Soft k-means outcome: centres (k, d), responsibilities (n, k), log-likelihood trace (max_iter,) (NaN
    past
    n_iter) of the seed's model up to a constant, n_iter."""

    centers: jax.Array
    resp: jax.Array
    log_likelihood: jax.Array
    n_iter: jax.Array


@functools.partial(jax.jit, static_argnames=("max_iter",))
def soft_kmeans(X, centers, beta=1.0, tol=1e-8, max_iter: int = 100) -> SoftKMeansResult:
    """Soft k-means: EM for P(x | c) ∝ exp(-β‖x - c‖²) with uniform P(c) (the seed's model), centres only.

    The E-step gives r_ik = softmax_k(-β‖x_i - c_k‖²); the M-step moves each centre to its r-weighted mean.
    ``log_likelihood[t]`` = (1/n) Σ_i logsumexp_k(-β‖x_i - c_k‖²) - log k under the centres before step t+1
    (the Gaussian normaliser, a constant, is left out); it never decreases.

    Parameters
    ----------
    X : (n, d) float array
    centers : (k, d) initial centres.
    beta : stiffness (traced).
    tol : stop when the trace changes by less than ``tol``.
    max_iter : int (static)
    """
    k = centers.shape[0]
    beta = jnp.asarray(beta, X.dtype)
    x_sq = jnp.sum(X * X, axis=1)[:, None]

    def estep(c):
        d2 = jnp.maximum(x_sq - 2.0 * X @ c.T + jnp.sum(c * c, axis=1)[None, :], 0.0)
        logits = -beta * d2
        norm = logsumexp(logits, axis=1)
        return jnp.mean(norm) - math.log(k), jnp.exp(logits - norm[:, None])

    def cond(s):
        return (s[2] < max_iter) & ~s[3]

    def body(s):
        c, prev, it, _conv, trace = s
        ll, r = estep(c)
        nk = r.sum(0)
        new = jnp.where((nk > 0)[:, None], (r.T @ X) / jnp.maximum(nk, 1e-300)[:, None], c)
        return new, ll, it + 1, jnp.abs(ll - prev) < tol, trace.at[it].set(ll)

    s0 = (
        centers.astype(X.dtype),
        jnp.asarray(-jnp.inf, X.dtype),
        jnp.int32(0),
        jnp.bool_(False),
        jnp.full((max_iter,), jnp.nan, X.dtype),
    )
    c, _ll, it, _conv, trace = lax.while_loop(cond, body, s0)
    _, r = estep(c)
    return SoftKMeansResult(c, r, trace, it)


@functools.partial(jax.jit, static_argnames=("n_components", "n_init", "max_iter", "covariance_type", "init"))
def _gmm_restarts(key, X, n_components, n_init, max_iter, tol, reg_covar, covariance_type, init, n_valid):
    """``n_init`` EM runs under vmap, each from one k-means++/Lloyd run (or random responsibilities)."""

    def one(k):
        if init == "kmeans":
            labels = kmeans(k, X, n_components, n_init=1, max_iter=300, tol=0.0, n_valid=n_valid).labels
            resp = jax.nn.one_hot(labels, n_components, dtype=X.dtype)
        else:
            r = jax.random.uniform(k, (X.shape[0], n_components), X.dtype)
            resp = r / r.sum(1, keepdims=True)
        return em(
            X,
            m_step(X, resp, reg_covar, covariance_type, n_valid),
            tol=tol,
            max_iter=max_iter,
            reg_covar=reg_covar,
            covariance_type=covariance_type,
            n_valid=n_valid,
        )

    return jax.vmap(one)(jax.random.split(key, n_init))


class GaussianMixture(ClusterMixin, DensityMixin, BaseEstimator):
    """Gaussian mixture fitted by EM in log space (scikit-learn's contract and defaults).

    Parameters
    ----------
    n_components : int, default 1
    covariance_type : {"full", "diag", "spherical"}, default "full"
    tol : float, default 1e-3, on the change of the mean log-likelihood.
    reg_covar : float, default 1e-6, added to covariance diagonals (floor).
    max_iter : int, default 100
    n_init : int, default 1, EM restarts under vmap; the highest final log-likelihood is kept.
    init_params : {"kmeans", "random"}, default "kmeans"
    weights_init, means_init : arrays or None; when both ``means_init`` and ``precisions_init`` are given the
        run starts from them (scikit-learn's precisions convention: inverse covariances). Giving only some of the
        three raises ``InvalidInputError`` (they are never silently ignored).
    precisions_init : array or None
        Symmetric positive definite (full), positive (diag, spherical).
    random_state : int, None or PRNG key, default 0

    Notes
    -----
    No internal rescaling: ``reg_covar`` is absolute, and covariances scale with the square of X. When X's
    magnitude makes them overflow, or a component's covariance is singular (``reg_covar=0`` on duplicate points),
    ``fit`` raises :class:`~jaxclust.errors.NumericalError` saying which and what to change, as scikit-learn
    raises its ``ValueError``; ``predict``, ``predict_proba`` and ``score_samples`` raise it for a row whose
    log-likelihood is not finite. No NaN or -inf is ever returned.

    Attributes
    ----------
    weights_ (k,), means_ (k, d), covariances_, precisions_, labels_ (n,), converged_ (bool), n_iter_ (int),
    lower_bound_ (float, mean log-likelihood at the last iteration), lower_bounds_ (list, the trace).
    """

    _parameter_constraints = {
        "n_components": Int(1),
        "covariance_type": Options(_COV_TYPES),
        "tol": Real(0.0),
        "reg_covar": Real(0.0),
        "max_iter": Int(1),
        "n_init": Int(1),
        "init_params": Options(("kmeans", "random")),
    }

    def __init__(
        self,
        n_components=1,
        *,
        covariance_type="full",
        tol=1e-3,
        reg_covar=1e-6,
        max_iter=100,
        n_init=1,
        init_params="kmeans",
        weights_init=None,
        means_init=None,
        precisions_init=None,
        random_state=0,
    ):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.weights_init = weights_init
        self.means_init = means_init
        self.precisions_init = precisions_init
        self.random_state = random_state

    def _validate_params_gmm(self, n):
        k = validate_params(self)["n_components"]
        given = [
            name
            for name in ("weights_init", "means_init", "precisions_init")
            if getattr(self, name) is not None
        ]
        if given and not {"means_init", "precisions_init"} <= set(given):
            missing = [m for m in ("means_init", "precisions_init") if m not in given]
            raise InvalidInputError(
                f"GaussianMixture: {', '.join(given)} given without {' and '.join(missing)}; a run starts from "
                "user parameters only when both means_init and precisions_init are given (weights_init optional)"
            )
        if n < k:
            raise InvalidInputError(f"GaussianMixture: n_samples={n} should be >= n_components={k}")

    def _user_init(self, X):
        k, d = self.n_components, X.shape[1]
        means = _init_array(self.means_init, "means_init", X.dtype)
        prec = _init_array(self.precisions_init, "precisions_init", np.float64)
        shapes = {"full": (k, d, d), "diag": (k, d), "spherical": (k,)}
        if means.shape != (k, d):
            raise InvalidInputError(f"GaussianMixture: means_init has shape {means.shape}, expected {(k, d)}")
        if prec.shape != shapes[self.covariance_type]:
            raise InvalidInputError(
                f"GaussianMixture: precisions_init has shape {prec.shape}, "
                f"expected {shapes[self.covariance_type]}"
            )
        if self.covariance_type == "full":
            for c in range(k):
                P = prec[c]
                if not np.allclose(P, P.T) or np.linalg.eigvalsh(0.5 * (P + P.T)).min() <= 0:
                    raise InvalidInputError(
                        f"GaussianMixture: precisions_init[{c}] must be symmetric positive definite"
                    )
            cov = np.linalg.inv(prec)
        else:
            if (prec <= 0).any():
                c = int(np.argwhere(prec <= 0)[0][0])
                raise InvalidInputError(f"GaussianMixture: precisions_init[{c}] must be positive")
            cov = 1.0 / prec
        w = (
            np.full(k, 1.0 / k)
            if self.weights_init is None
            else _init_array(self.weights_init, "weights_init", X.dtype)
        )
        if w.shape != (k,) or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
            raise InvalidInputError(
                "GaussianMixture: weights_init must be (n_components,) non-negative, summing to 1"
            )
        return GMMParams(jnp.asarray(w, X.dtype), jnp.asarray(means), jnp.asarray(cov, X.dtype))

    def fit(self, X, y=None):
        """Estimate the mixture on X (n_samples, n_features) by EM. Returns self.

        ``y`` is ignored (scikit-learn's convention); constraints passed there raise
        :class:`~jaxclust.errors.ConstraintError` instead of being dropped.
        """
        reject_constraints_as_y(
            y, "GaussianMixture.fit", "GaussianMixture uses no constraints: use COPKMeans, PCKMeans or DPMM"
        )
        X = check_X(self, X, reset=True)
        self._validate_params_gmm(X.shape[0])
        ct = self.covariance_type
        n = X.shape[0]
        with x64_for(X):
            Xj = to_device(bucket_rows(X))
            if self.means_init is not None and self.precisions_init is not None:
                res = em(
                    Xj,
                    self._user_init(X),
                    tol=self.tol,
                    max_iter=int(self.max_iter),
                    reg_covar=self.reg_covar,
                    covariance_type=ct,
                    n_valid=n,
                )
                res = jax.tree.map(lambda a: a[None], res)
            else:
                res = _gmm_restarts(
                    prng_key(self.random_state),
                    Xj,
                    int(self.n_components),
                    int(self.n_init),
                    int(self.max_iter),
                    self.tol,
                    self.reg_covar,
                    ct,
                    self.init_params,
                    n,
                )
            res = jax.device_get(res)
        n_iter = np.asarray(res.n_iter)
        final_ll = np.array([res.log_likelihood[r, n_iter[r] - 1] for r in range(len(n_iter))])
        usable = np.isfinite(final_ll) & np.array(
            [
                _usable(jax.tree.map(lambda a, r=r: np.asarray(a[r]), res.params), ct)
                for r in range(len(n_iter))
            ]
        )
        if not usable.any():
            raise _fit_failure(X, self.reg_covar)
        best = int(np.argmax(np.where(usable, final_ll, -np.inf)))
        self.weights_ = np.asarray(res.params.weights[best], dtype=X.dtype)
        self.means_ = np.asarray(res.params.means[best], dtype=X.dtype)
        self.covariances_ = np.asarray(res.params.covariances[best], dtype=X.dtype)
        self.precisions_ = np.linalg.inv(self.covariances_) if ct == "full" else 1.0 / self.covariances_
        self.n_iter_ = int(n_iter[best])
        self.converged_ = bool(res.converged[best])
        self.lower_bounds_ = [float(v) for v in res.log_likelihood[best, : self.n_iter_]]
        self.lower_bound_ = self.lower_bounds_[-1]
        self.labels_ = self.predict(X)
        return self

    def _params(self, dtype):
        return GMMParams(
            to_device(self.weights_, dtype),
            to_device(self.means_, dtype),
            to_device(self.covariances_, dtype),
        )

    def _log_resp(self, X, method):
        check_fitted(self, "means_", method)
        X = check_X(self, X, reset=False)
        with x64_for(X):
            joint = np.asarray(_joint(to_device(bucket_rows(X)), self._params(X.dtype), self.covariance_type))
        joint = joint[: X.shape[0]]
        best = joint.max(axis=1)
        if not np.isfinite(best).all():
            r = int(np.flatnonzero(~np.isfinite(best))[0])
            raise NumericalError(
                f"GaussianMixture.{method}: X row {r} has a non-finite log-likelihood under every component "
                f"(max |x| in the row = {float(np.max(np.abs(X[r]))):.3g}: too large for {X.dtype} arithmetic); "
                "rescale X as the training data was"
            )
        return joint

    def predict(self, X):
        """Most probable component of each row, (n,) int."""
        return np.argmax(self._log_resp(X, "predict"), axis=1).astype(np.int32)

    def predict_proba(self, X):
        """Responsibilities (n, k)."""
        j = self._log_resp(X, "predict_proba")
        return np.exp(j - _np_logsumexp(j)[:, None])

    def score_samples(self, X):
        """log p(x) of each row, (n,)."""
        return _np_logsumexp(self._log_resp(X, "score_samples"))

    def score(self, X, y=None):
        """Mean log-likelihood of X."""
        del y
        return float(np.mean(self.score_samples(X)))

    def fit_predict(self, X, y=None):
        return self.fit(X, y).labels_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


def _init_array(value, name: str, dtype) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"GaussianMixture: {name} must be a numeric array, got {value!r}") from exc
    if not np.isfinite(arr).all():
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise InvalidInputError(f"GaussianMixture: {name} has a non-finite value at index {where}")
    return arr


def _usable(params: GMMParams, covariance_type: str) -> bool:
    """Finite parameters whose covariances are positive definite (so precisions and log-densities exist)."""
    if not all(np.isfinite(a).all() for a in params):
        return False
    cov = np.asarray(params.covariances, np.float64)
    if covariance_type != "full":
        return bool((cov > 0).all())
    try:
        np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return False
    return True


def _fit_failure(X: np.ndarray, reg_covar) -> NumericalError:
    """The error ``fit`` raises when no EM run ends with finite, positive definite parameters: X's magnitude
    (squared deviations overflow) or a singular covariance (collapsed samples, ``reg_covar`` too small)."""
    m = float(np.max(np.abs(X)))
    limit = np.sqrt(np.finfo(X.dtype).max / max(X.shape[0] * X.shape[1], 1))
    if m > limit:
        return NumericalError(
            f"GaussianMixture: X has values up to {m:.3g}, too large for {X.dtype} arithmetic (squared deviations "
            f"overflow, covariances are not finite); rescale X, e.g. with sklearn.preprocessing.StandardScaler"
        )
    return NumericalError(
        "GaussianMixture: fitting failed because some components have ill-defined empirical covariance (for "
        f"instance caused by singleton or collapsed samples); increase reg_covar (got {reg_covar!r}), decrease "
        "n_components, or rescale X"
    )


@functools.partial(jax.jit, static_argnames=("covariance_type",))
def _joint(X, params, covariance_type):
    return jnp.log(params.weights)[None, :] + log_gaussian(
        X, params.means, params.covariances, covariance_type
    )


def _np_logsumexp(a):
    m = a.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=1, keepdims=True)))[:, 0]
