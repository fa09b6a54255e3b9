"""Conjugate component families for the collapsed DPMM sampler.

Each family is an equinox Module holding its prior (array leaves, so new hyperparameter values do not
re-compile) and implements :class:`Family`, the small interface the samplers use (:mod:`jaxclust.dpmm.gibbs`,
:mod:`jaxclust.dpmm.splitmerge`, :mod:`jaxclust.dpmm.subcluster`). Gaussian families keep *centred* group
statistics (group mean and scatter about it), so nothing cancels in float32.

Slots store *posterior parameters* (kappa_n, m_n, ...) plus a cached scalar, so a Gibbs step costs one
``(K, D)`` pass of logarithms and touches only the two slots that change.

References: docs/algorithms/dpmm.md (a)-(d); Murphy (2007), *Conjugate Bayesian analysis of the Gaussian
distribution*.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Protocol, runtime_checkable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, multigammaln

from jaxclust.dpmm.draws import gamma_draws, normal_draws
from jaxclust.errors import InvalidInputError
from jaxclust.transfer import to_device

__all__ = ["Family", "NormalGamma", "NormalInverseWishart", "DirichletMultinomial", "default_prior"]

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)


def _segsum(x: jax.Array, seg: jax.Array, n: int, axis_name: str | None = None) -> jax.Array:
    """Sum of rows of ``x`` per segment ``seg`` (scatter-add; segment ids outside ``[0, n)`` are dropped); with
    ``axis_name`` (inside ``shard_map``, rows split over that mesh axis) summed over the devices too."""
    out = jax.ops.segment_sum(x, seg, num_segments=n)
    return out if axis_name is None else jax.lax.psum(out, axis_name)


# mantissa bits and exponent bias of the float types :func:`_sum_log` splits
_FLOAT_BITS = {jnp.dtype(jnp.float32): (jnp.int32, 23, 127), jnp.dtype(jnp.float64): (jnp.int64, 52, 1023)}
# XLA's CPU backend rewrites a float reduction longer than this into a padded reduce-window, which the sum of logs
# in a Gibbs step would pay at every step
_REDUCE_WIDTH = 32


def _sum_log(x: jax.Array) -> jax.Array:
    """``sum(log(x), -1)`` of positive finite ``x`` (..., D), with one logarithm per 32 entries instead of one per
    entry (the Normal-Gamma predictive evaluates it for every slot at every Gibbs step).

    Each entry is read as ``2^e m`` from its bit fields, ``m`` in [1, 2): the exponents add up exactly, and the
    mantissas of at most 32 entries multiply to below ``2^32`` before one logarithm, a relative rounding error of
    at most 32 float epsilons. Entries below the smallest normal float count as it.
    """
    x = jnp.asarray(x)
    dtype = jnp.dtype(x.dtype)
    if dtype not in _FLOAT_BITS:
        return jnp.sum(jnp.log(x), -1)
    itype, n_mant, bias = _FLOAT_BITS[dtype]
    bits = jax.lax.bitcast_convert_type(jnp.maximum(x, jnp.finfo(dtype).tiny), itype)
    exponent = (bits >> n_mant) - bias
    one = jax.lax.bitcast_convert_type(jnp.asarray(1.0, dtype), itype)
    mantissa = jax.lax.bitcast_convert_type((bits & ((1 << n_mant) - 1)) | one, dtype)
    total = 0.0
    for i in range(0, x.shape[-1], _REDUCE_WIDTH):
        part = slice(i, i + _REDUCE_WIDTH)
        total = total + jnp.log(jnp.prod(mantissa[..., part], -1))
        total = total + math.log(2.0) * jnp.sum(exponent[..., part], -1).astype(dtype)
    return jnp.asarray(total, dtype)


def _group_sum(values: np.ndarray, group_of: np.ndarray, n_rows: int) -> np.ndarray:
    """Sum of ``values`` (n_items, ...) over the items of each group, (n_rows, ...) float64: O(n) memory
    (singleton groups, the common case, are a copy)."""
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros((n_rows,) + values.shape[1:])
    if len(group_of) == n_rows and np.array_equal(group_of, np.arange(n_rows)):
        out[:] = values
    else:
        np.add.at(out, group_of, values)
    return out


def _centred_group_moments(X: np.ndarray, group_of: np.ndarray, n_rows: int):
    """Per-group size, mean and deviations of each item from its group mean (float64, host)."""
    size = np.bincount(group_of, minlength=n_rows).astype(np.float64)
    mean = _group_sum(X, group_of, n_rows) / np.maximum(size, 1.0)[:, None]
    dev = X - mean[group_of]
    return size, mean, dev


@runtime_checkable
class Family(Protocol):
    """A conjugate component family, as the samplers use it. ``Stats`` and ``Slot`` are each family's
    NamedTuples of arrays (group statistics; a slot's posterior parameters plus a cached scalar); ``K`` slots,
    ``rows`` group rows, ``D`` columns."""

    #: whether the sampler runs on centred, rescaled data (Gaussian families) or on the data as given
    centred: bool

    def check(self, X: np.ndarray) -> Family:
        """This prior checked against the data ``X`` (n, D) (host): a named error for what does not fit."""

    def transformed(self, shift: np.ndarray, scale: np.ndarray) -> Family:
        """The same prior for the data ``(X - shift) / scale``."""

    def astype(self, dtype) -> Family:
        """The prior's arrays in ``dtype``."""

    def group_stats(self, X: np.ndarray, group_of: np.ndarray, n_rows: int) -> Any:
        """(host, NumPy) Statistics of each must-link group, padded to ``n_rows`` rows of size 0."""

    def prior_slot(self) -> Any:
        """The posterior parameters of an empty component (the prior itself)."""

    def add(self, slot: Any, gs: Any) -> Any:
        """One slot's posterior parameters after adding the group ``gs``."""

    def remove(self, slot: Any, gs: Any) -> Any:
        """One slot's posterior parameters after removing the group ``gs``."""

    def count_table(self, n_max: int, D: int) -> jax.Array | None:
        """The terms of :meth:`log_pred` that depend only on item counts up to ``n_max`` (lgamma, log kappa),
        precomputed so that a Gibbs step evaluates no lgamma; ``None`` when there are none."""

    def log_pred(self, slots: Any, gs: Any, counts=None, table=None) -> jax.Array:
        """(K,) ``ln p(X_G | X_k)`` of one group for every slot at once, as a ratio of marginal likelihoods
        (never a product of one-point predictives against the same statistics)."""

    def slots_from_groups(self, z: jax.Array, gs: Any, K: int, axis_name=None) -> Any:
        """All ``K`` slots' posterior parameters recomputed from the assignment ``z`` (rows,): two passes,
        centred; this wipes out the drift of incremental :meth:`add` / :meth:`remove`."""

    def log_marginal(self, slots: Any) -> jax.Array:
        """(K,) ``ln p(X_k)`` of each slot's data (0 for an empty slot)."""

    def segment_stats(self, seg: jax.Array, gs: Any, n_segments: int, axis_name=None) -> Any:
        """Statistics of any grouping of the rows, ``seg`` (rows,) each row's segment in ``[0, n_segments)``
        (rows outside are ignored): scatter-add sums, and the scatter about each segment's mean as a second
        pass. With ``axis_name`` (inside ``shard_map``, the rows split over that mesh axis) every sum is also
        summed over the devices before the second pass, so each device gets the statistics of all rows."""

    def combine_stats(self, a: Any, b: Any) -> Any:
        """Statistics of the union of two segments."""

    def slots_from_stats(self, stats: Any) -> Any:
        """The slots' posterior parameters given their statistics."""

    def split_view(self, gs: Any) -> tuple[jax.Array, jax.Array]:
        """``(feat, within)`` (rows, D'): a feature vector per group and its members' scatter about it, the
        space in which split proposals run 2-means (:mod:`jaxclust.dpmm.splitmerge`)."""

    def draw_params(self, key, slots: Any) -> Any:
        """One draw of each slot's component parameters from its posterior (the sub-cluster sampler)."""

    def loglik_features(self, gs: Any) -> jax.Array:
        """(rows, F) features of each group, computed once per fit, such that :meth:`group_loglik` is one
        matrix product."""

    def group_loglik(self, params: Any, gs: Any, feat: jax.Array) -> jax.Array:
        """(rows, K) every group's log-likelihood under every drawn component."""


# ------------------------------------------------------------------------------------------------------------
# Normal-Gamma (diagonal Gaussian)
# ------------------------------------------------------------------------------------------------------------
class NGStats(NamedTuple):
    """Group statistics: ``size`` (), ``mean`` (D,), ``m2`` (D,) = sum of squared deviations from the mean."""

    size: jax.Array
    mean: jax.Array
    m2: jax.Array


class NGSlot(NamedTuple):
    """Posterior parameters of a slot: ``kappa`` (), ``shape`` (), ``mean`` (D,), ``rate`` (D,), ``cache``
    ()."""

    kappa: jax.Array
    shape: jax.Array
    mean: jax.Array
    rate: jax.Array
    cache: jax.Array  # shape * sum(log rate) + D/2 * log(kappa)


def _as_float_array(value, name: str) -> np.ndarray:
    """A prior parameter as float64, or ``InvalidInputError`` naming it (``prior.<name>``)."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"prior.{name}: expected a number or an array of numbers, got {value!r}"
        ) from None


class NormalGamma(eqx.Module):
    """Diagonal Gaussian components with a Normal-Gamma prior per dimension.

    Per dimension d, the precision is ``lambda_d ~ Gamma(shape, rate_d)`` (shape-rate) and the mean is
    ``mu_d | lambda_d ~ N(mean_d, 1 / (kappa * lambda_d))``. The posterior predictive of one point is a
    product of
    Student-t densities with ``2 shape_n`` degrees of freedom, location ``mean_n`` and squared scale
    ``rate_n (kappa_n + 1) / (shape_n kappa_n)``.

    Parameters
    ----------
    mean : float or array, shape (D,)
        Prior mean of the component means.
    kappa : float
        Prior pseudo-count of the mean (scalar).
    shape : float
        Gamma shape of the precisions (scalar).
    rate : float or array, shape (D,)
        Gamma rate of the precisions; scalars broadcast over dimensions.

    Notes
    -----
    The default used by :class:`jaxclust.DPMM` when ``prior=None`` is :meth:`from_data`.
    """

    mean: jax.Array
    kappa: jax.Array
    shape: jax.Array
    rate: jax.Array

    def __init__(self, mean=0.0, kappa=1.0, shape=1.0, rate=1.0):
        # host float64 until the sampler casts (a prior mean far from 0 must survive the shift exactly)
        self.mean = _as_float_array(mean, "mean")
        self.kappa = _as_float_array(kappa, "kappa")
        self.shape = _as_float_array(shape, "shape")
        self.rate = _as_float_array(rate, "rate")

    centred = True  # the sampler may shift and scale data and prior together (see ``transformed``)

    @classmethod
    def from_data(cls, X, kappa: float = 0.05, shape: float = 2.0, scale: float = 0.5) -> NormalGamma:
        """Data-driven default: ``mean`` = column means, ``kappa = 0.05``, ``shape = 2`` and
        ``rate_d = scale * (shape - 1) * var_d`` with ``scale = 0.5``.

        So a component's expected variance per dimension, ``rate / (shape - 1)``, is half the data's variance,
        and its mean is a priori spread over about ``sqrt(scale / kappa) ~ 3.2`` data standard deviations.
        Constant columns get a tiny positive variance.
        """
        X = np.asarray(X, dtype=np.float64)
        var = X.var(axis=0)
        floor = 1e-6 * max(float(var.max()), 1e-12)
        var = np.maximum(var, floor)
        return cls(mean=X.mean(axis=0), kappa=kappa, shape=shape, rate=scale * (shape - 1.0) * var)

    # -- host-side helpers --------------------------------------------------------------------------------
    def check(self, X: np.ndarray) -> NormalGamma:
        """Validate against data ``X`` (n, D) and return the prior broadcast to D dimensions (float64)."""
        D = X.shape[1]
        for name in ("mean", "rate"):
            if np.shape(getattr(self, name)) not in ((), (D,)):
                raise InvalidInputError(
                    f"prior.{name}: expected a scalar or shape ({D},), got {np.shape(getattr(self, name))}"
                )
        mean = np.broadcast_to(np.asarray(self.mean, np.float64), (D,))
        rate = np.broadcast_to(np.asarray(self.rate, np.float64), (D,))
        for name in ("kappa", "shape"):
            v = np.asarray(getattr(self, name))
            if v.ndim != 0 or not np.isfinite(v) or v <= 0:
                raise InvalidInputError(f"prior.{name}: must be a positive finite scalar, got {v}")
        if not (np.all(np.isfinite(rate)) and np.all(rate > 0)):
            raise InvalidInputError("prior.rate: must be positive and finite")
        if not np.all(np.isfinite(mean)):
            raise InvalidInputError("prior.mean: must be finite")
        return NormalGamma(mean=np.array(mean), kappa=self.kappa, shape=self.shape, rate=np.array(rate))

    def transformed(self, shift: np.ndarray, scale: np.ndarray) -> NormalGamma:
        """The same model for data mapped to ``(x - shift) / scale`` (per dimension): the mean maps like the
        data and the precision rate divides by ``scale**2``; kappa and shape are unchanged."""
        scale = np.asarray(scale, np.float64)
        return NormalGamma(
            (np.asarray(self.mean) - shift) / scale, self.kappa, self.shape, self.rate / scale / scale
        )

    def group_stats(self, X: np.ndarray, group_of: np.ndarray, n_rows: int) -> NGStats:
        size, mean, dev = _centred_group_moments(X, group_of, n_rows)
        return NGStats(size, mean, _group_sum(dev**2, group_of, n_rows))

    def astype(self, dtype) -> NormalGamma:
        return jax.tree.map(lambda a: to_device(a, dtype), self)

    # -- traced algebra -----------------------------------------------------------------------------------
    def _cached(self, kappa, shape, mean, rate) -> NGSlot:
        D = rate.shape[-1]
        cache = shape * _sum_log(rate) + 0.5 * D * jnp.log(kappa)
        return NGSlot(kappa, shape, mean, rate, cache)

    def prior_slot(self) -> NGSlot:
        return self._cached(self.kappa, self.shape, self.mean, self.rate)

    def add(self, slot: NGSlot, gs: NGStats) -> NGSlot:
        kappa = slot.kappa + gs.size
        mean = (slot.kappa * slot.mean + gs.size * gs.mean) / kappa
        rate = slot.rate + 0.5 * gs.m2 + 0.5 * slot.kappa * gs.size / kappa * (gs.mean - slot.mean) ** 2
        return self._cached(kappa, slot.shape + 0.5 * gs.size, mean, rate)

    def remove(self, slot: NGSlot, gs: NGStats) -> NGSlot:
        kappa = slot.kappa - gs.size
        safe = jnp.where(kappa > 0, kappa, 1.0)
        mean = (slot.kappa * slot.mean - gs.size * gs.mean) / safe
        rate = slot.rate - 0.5 * gs.m2 - 0.5 * kappa * gs.size / slot.kappa * (gs.mean - mean) ** 2
        rate = jnp.maximum(rate, 1e-6 * self.rate)  # guard round-off; refreshed exactly every sweep
        return self._cached(safe, slot.shape - 0.5 * gs.size, mean, rate)

    def count_table(self, n_max: int, D: int) -> jax.Array:
        """(2, n_max + 1): ``D lgamma(shape + c/2)`` and ``D/2 log(kappa + c)`` for item counts c =
        0..n_max, so
        a Gibbs step reads these from memory instead of evaluating K lgammas."""
        c = jnp.arange(n_max + 1, dtype=jnp.result_type(self.kappa))
        return jnp.stack([D * gammaln(self.shape + 0.5 * c), 0.5 * D * jnp.log(self.kappa + c)])

    def log_pred(self, slots: NGSlot, gs: NGStats, counts=None, table=None) -> jax.Array:
        """(K,) ``ln p(X_G | X_k)``; ``counts`` (K,) and ``table`` (from :meth:`count_table`) are a fast
        path."""
        D = slots.rate.shape[-1]
        kappa = slots.kappa + gs.size
        shape = slots.shape + 0.5 * gs.size
        coef = 0.5 * slots.kappa * gs.size / kappa
        rate = slots.rate + 0.5 * gs.m2 + coef[:, None] * (gs.mean - slots.mean) ** 2
        if table is None:
            norm = D * (gammaln(shape) - gammaln(slots.shape)) - 0.5 * D * jnp.log(kappa)
        else:
            old = counts.astype(jnp.int32)
            new = old + gs.size.astype(jnp.int32)
            norm = table[0, new] - table[0, old] - table[1, new]
        return slots.cache + norm - shape * _sum_log(rate) - 0.5 * D * gs.size * _LOG_2PI

    def segment_stats(self, seg: jax.Array, gs: NGStats, n_segments: int, axis_name=None) -> NGStats:
        """Statistics of each segment (``n_segments`` leading) of the group rows (``axis_name``: rows split
        over that mesh axis, see :mod:`jaxclust.dpmm.rows`)."""
        # sizes and sums in one scatter (each scatter is a loop of its own in the compiled program)
        m = gs.size[:, None]
        sums = _segsum(jnp.concatenate([m, m * gs.mean], axis=1), seg, n_segments, axis_name)
        n, xbar = sums[:, 0], sums[:, 1:] / jnp.maximum(sums[:, :1], 1.0)
        # scatter about the segment mean = within-group scatter + between-group part (two-pass, centred)
        dev2 = gs.size[:, None] * (gs.mean - xbar[jnp.clip(seg, 0, n_segments - 1)]) ** 2
        return NGStats(n, xbar, _segsum(gs.m2 + dev2, seg, n_segments, axis_name))

    def combine_stats(self, a: NGStats, b: NGStats) -> NGStats:
        """Statistics of the union of two disjoint segments (Chan et al.'s pairwise update)."""
        n = a.size + b.size
        w = jnp.where(n > 0, b.size / jnp.maximum(n, 1e-30), 0.0)[..., None]
        d = b.mean - a.mean
        return NGStats(n, a.mean + w * d, a.m2 + b.m2 + (a.size[..., None] * w) * d**2)

    def slots_from_stats(self, stats: NGStats) -> NGSlot:
        K = stats.size.shape[0]
        prior = jax.tree.map(lambda a: jnp.broadcast_to(a, (K,) + a.shape), self.prior_slot())
        return jax.vmap(self.add)(prior, stats)

    def slots_from_groups(self, z: jax.Array, gs: NGStats, K: int, axis_name=None) -> NGSlot:
        return self.slots_from_stats(self.segment_stats(z, gs, K, axis_name))

    def split_view(self, gs: NGStats):
        return gs.mean, gs.m2

    def draw_params(self, key, slots: NGSlot):
        """Per slot: precisions ``lam`` (K, D) ~ Gamma(shape_n, rate_n), means ``mu`` ~ N(mean_n, 1/(kappa_n lam))."""
        k_lam, k_mu = jax.random.split(key)
        shape = jnp.broadcast_to(slots.shape[:, None], slots.rate.shape)
        lam = gamma_draws(k_lam, shape) / slots.rate
        mu = slots.mean + normal_draws(k_mu, lam.shape, lam.dtype) / jnp.sqrt(slots.kappa[:, None] * lam)
        return lam, mu

    def loglik_features(self, gs: NGStats) -> jax.Array:
        """(rows, 2D): ``[m2 + m x^2, m x]`` per group (``x`` its mean, ``m`` its size)."""
        m = gs.size[:, None]
        return jnp.concatenate([gs.m2 + m * gs.mean**2, m * gs.mean], axis=1)

    def group_loglik(self, params, gs: NGStats, feat: jax.Array) -> jax.Array:
        """(rows, K) ``sum over the group's items of ln N(x | mu_k, 1/lam_k)``:
        ``[m2 + m x^2, m x] . [-lam/2, lam mu] + m c_k``, one matrix product with :meth:`loglik_features`."""
        lam, mu = params
        D = lam.shape[-1]
        c = 0.5 * jnp.sum(jnp.log(lam), -1) - 0.5 * D * _LOG_2PI - 0.5 * jnp.sum(lam * mu**2, -1)
        coef = jnp.concatenate([-0.5 * lam, lam * mu], axis=1)  # (K, 2D)
        return feat @ coef.T + gs.size[:, None] * c[None, :]

    def log_marginal(self, slots: NGSlot) -> jax.Array:
        D = slots.rate.shape[-1]
        n = slots.kappa - self.kappa
        return (
            D * (gammaln(slots.shape) - gammaln(self.shape))
            + self.shape * jnp.sum(jnp.log(self.rate))
            - slots.shape * jnp.sum(jnp.log(slots.rate), -1)
            + 0.5 * D * jnp.log(self.kappa / slots.kappa)
            - 0.5 * n * D * _LOG_2PI
        )


# ------------------------------------------------------------------------------------------------------------
# Normal-Inverse-Wishart (full covariance)
# ------------------------------------------------------------------------------------------------------------
class NIWStats(NamedTuple):
    """Group statistics: ``size`` (), ``mean`` (D,), ``scatter`` (D, D) about the group mean."""

    size: jax.Array
    mean: jax.Array
    scatter: jax.Array


class NIWSlot(NamedTuple):
    """Posterior parameters: ``kappa`` (), ``dof`` (), ``mean`` (D,), ``scale`` (D, D), ``cache`` ()."""

    kappa: jax.Array
    dof: jax.Array
    mean: jax.Array
    scale: jax.Array
    cache: jax.Array  # dof/2 * logdet(scale) + D/2 * log(kappa)


def _logdet_pd(a: jax.Array) -> jax.Array:
    chol = jnp.linalg.cholesky(a)
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), -1)


class NormalInverseWishart(eqx.Module):
    """Full-covariance Gaussian components: ``Sigma ~ IW(dof, scale)``, ``mu | Sigma ~ N(mean, Sigma /
    kappa)``.

    The predictive of one point is a multivariate t with ``dof_n - D + 1`` degrees of freedom, location
    ``mean_n`` and shape ``scale_n (kappa_n + 1) / (kappa_n (dof_n - D + 1))``. Group predictives use a
    Cholesky log-determinant of the updated scale for every slot (O(K D^3) per step: meant for small D).

    Parameters
    ----------
    mean : float or array, shape (D,)
    kappa : float
    dof : float
        Must exceed ``D - 1``.
    scale : float or array, shape (D,) or (D, D)
        A scalar or vector is taken as a diagonal matrix.
    """

    mean: jax.Array
    kappa: jax.Array
    dof: jax.Array
    scale: jax.Array

    def __init__(self, mean=0.0, kappa=1.0, dof=None, scale=1.0):
        self.mean = _as_float_array(mean, "mean")
        self.kappa = _as_float_array(kappa, "kappa")
        self.dof = _as_float_array(np.nan if dof is None else dof, "dof")  # None -> D + 2 in check()
        self.scale = _as_float_array(scale, "scale")

    centred = True

    @classmethod
    def from_data(cls, X, kappa: float = 0.05, scale: float = 0.5) -> NormalInverseWishart:
        """Data-driven prior: mean = column means, ``kappa = 0.05``, ``dof = D + 2`` and
        ``scale = 0.5 * diag(var)`` (so E[Sigma] = scale / (dof - D - 1) is half the data's variance)."""
        X = np.asarray(X, dtype=np.float64)
        var = X.var(axis=0)
        var = np.maximum(var, 1e-6 * max(float(var.max()), 1e-12))
        return cls(mean=X.mean(0), kappa=kappa, dof=X.shape[1] + 2.0, scale=np.diag(scale * var))

    def check(self, X: np.ndarray) -> NormalInverseWishart:
        D = X.shape[1]
        if np.shape(self.mean) not in ((), (D,)):
            raise InvalidInputError(
                f"prior.mean: expected a scalar or shape ({D},), got {np.shape(self.mean)}"
            )
        mean = np.broadcast_to(np.asarray(self.mean, np.float64), (D,))
        s = np.asarray(self.scale, np.float64)
        if s.ndim == 0 or s.shape == (D,):
            s = np.diag(np.broadcast_to(s, (D,)))
        if s.shape != (D, D):
            raise InvalidInputError(f"prior.scale: expected a scalar, ({D},) or ({D}, {D}), got {s.shape}")
        if not np.allclose(s, s.T) or np.any(np.linalg.eigvalsh(s) <= 0):
            raise InvalidInputError("prior.scale: must be symmetric positive definite")
        dof = float(self.dof)
        dof = D + 2.0 if np.isnan(dof) else dof
        if dof <= D - 1:
            raise InvalidInputError(f"prior.dof: must exceed D - 1 = {D - 1}, got {dof}")
        if float(self.kappa) <= 0:
            raise InvalidInputError(f"prior.kappa: must be positive, got {float(self.kappa)}")
        return NormalInverseWishart(np.array(mean), self.kappa, dof, s)

    def transformed(self, shift: np.ndarray, scale: np.ndarray) -> NormalInverseWishart:
        """The same model for data mapped to ``S^-1 (x - shift)``, ``S = diag(scale)``: the scale matrix maps
        to ``S^-1 Psi S^-1``; kappa and dof are unchanged."""
        inv = 1.0 / np.asarray(scale, np.float64)
        psi = np.asarray(self.scale) * inv[:, None] * inv[None, :]
        return NormalInverseWishart((np.asarray(self.mean) - shift) * inv, self.kappa, self.dof, psi)

    def group_stats(self, X: np.ndarray, group_of: np.ndarray, n_rows: int) -> NIWStats:
        size, mean, dev = _centred_group_moments(X, group_of, n_rows)
        return NIWStats(size, mean, _group_sum(dev[:, :, None] * dev[:, None, :], group_of, n_rows))

    def astype(self, dtype) -> NormalInverseWishart:
        return jax.tree.map(lambda a: to_device(a, dtype), self)

    def _cached(self, kappa, dof, mean, scale) -> NIWSlot:
        D = scale.shape[-1]
        cache = 0.5 * dof * _logdet_pd(scale) + 0.5 * D * jnp.log(kappa)
        return NIWSlot(kappa, dof, mean, scale, cache)

    def prior_slot(self) -> NIWSlot:
        return self._cached(self.kappa, self.dof, self.mean, self.scale)

    def add(self, slot: NIWSlot, gs: NIWStats) -> NIWSlot:
        kappa = slot.kappa + gs.size
        mean = (slot.kappa * slot.mean + gs.size * gs.mean) / kappa
        d = gs.mean - slot.mean
        scale = slot.scale + gs.scatter + (slot.kappa * gs.size / kappa) * jnp.outer(d, d)
        return self._cached(kappa, slot.dof + gs.size, mean, scale)

    def remove(self, slot: NIWSlot, gs: NIWStats) -> NIWSlot:
        kappa = slot.kappa - gs.size
        safe = jnp.where(kappa > 0, kappa, 1.0)
        mean = (slot.kappa * slot.mean - gs.size * gs.mean) / safe
        d = gs.mean - mean
        scale = slot.scale - gs.scatter - (kappa * gs.size / slot.kappa) * jnp.outer(d, d)
        scale = jnp.where(kappa > 0, scale, self.scale)
        return self._cached(safe, slot.dof - gs.size, mean, scale)

    def count_table(self, n_max: int, D: int) -> jax.Array:
        """(2, n_max + 1): ``lmvgamma_D((dof + c)/2)`` and ``D/2 log(kappa + c)`` for counts c = 0..n_max."""
        c = jnp.arange(n_max + 1, dtype=jnp.result_type(self.kappa))
        return jnp.stack([multigammaln(0.5 * (self.dof + c), D), 0.5 * D * jnp.log(self.kappa + c)])

    def log_pred(self, slots: NIWSlot, gs: NIWStats, counts=None, table=None) -> jax.Array:
        """(K,) ``ln p(X_G | X_k)``; ``counts`` and ``table`` (from :meth:`count_table`) are a fast path."""
        D = slots.scale.shape[-1]
        kappa = slots.kappa + gs.size
        dof = slots.dof + gs.size
        d = gs.mean - slots.mean  # (K, D)
        coef = slots.kappa * gs.size / kappa
        scale = slots.scale + gs.scatter + coef[:, None, None] * d[:, :, None] * d[:, None, :]
        if table is None:
            norm = multigammaln(0.5 * dof, D) - multigammaln(0.5 * slots.dof, D) - 0.5 * D * jnp.log(kappa)
        else:
            old = counts.astype(jnp.int32)
            new = old + gs.size.astype(jnp.int32)
            norm = table[0, new] - table[0, old] - table[1, new]
        return slots.cache + norm - 0.5 * dof * _logdet_pd(scale) - 0.5 * D * gs.size * _LOG_PI

    def segment_stats(self, seg: jax.Array, gs: NIWStats, n_segments: int, axis_name=None) -> NIWStats:
        # sizes and sums in one scatter (each scatter is a loop of its own in the compiled program)
        m = gs.size[:, None]
        sums = _segsum(jnp.concatenate([m, m * gs.mean], axis=1), seg, n_segments, axis_name)
        n, xbar = sums[:, 0], sums[:, 1:] / jnp.maximum(sums[:, :1], 1.0)
        dev = gs.mean - xbar[jnp.clip(seg, 0, n_segments - 1)]  # (rows, D)
        per_group = gs.scatter + gs.size[:, None, None] * dev[:, :, None] * dev[:, None, :]
        return NIWStats(n, xbar, _segsum(per_group, seg, n_segments, axis_name))

    def combine_stats(self, a: NIWStats, b: NIWStats) -> NIWStats:
        n = a.size + b.size
        w = jnp.where(n > 0, b.size / jnp.maximum(n, 1e-30), 0.0)[..., None]
        d = b.mean - a.mean
        outer = d[..., :, None] * d[..., None, :]
        return NIWStats(n, a.mean + w * d, a.scatter + b.scatter + (a.size[..., None] * w)[..., None] * outer)

    def slots_from_stats(self, stats: NIWStats) -> NIWSlot:
        K = stats.size.shape[0]
        prior = jax.tree.map(lambda a: jnp.broadcast_to(a, (K,) + a.shape), self.prior_slot())
        return jax.vmap(self.add)(prior, stats)

    def slots_from_groups(self, z: jax.Array, gs: NIWStats, K: int, axis_name=None) -> NIWSlot:
        return self.slots_from_stats(self.segment_stats(z, gs, K, axis_name))

    def split_view(self, gs: NIWStats):
        return gs.mean, jnp.diagonal(gs.scatter, axis1=-2, axis2=-1)

    def draw_params(self, key, slots: NIWSlot):
        """Per slot: precision ``Lam`` ~ Wishart(dof_n, scale_n^-1) by the Bartlett decomposition and mean
        ``mu`` ~ N(mean_n, (kappa_n Lam)^-1). Returns ``(Lam (K, D, D), mu (K, D), logdet Lam (K,))``."""
        K, D = slots.mean.shape
        k_chi, k_off, k_mu = jax.random.split(key, 3)
        dtype = slots.mean.dtype
        # Bartlett: A lower triangular, A_ii^2 ~ chi2(dof - i), A_ij ~ N(0, 1) below the diagonal
        dof_i = slots.dof[:, None] - jnp.arange(D, dtype=dtype)[None, :]
        diag = jnp.sqrt(2.0 * gamma_draws(k_chi, 0.5 * dof_i))
        A = jnp.tril(normal_draws(k_off, (K, D, D), dtype), -1) + jax.vmap(jnp.diag)(diag)
        L = jnp.linalg.cholesky(slots.scale)  # scale = L L^T; Lam = M M^T with M = L^-T A
        M = jax.scipy.linalg.solve_triangular(jnp.swapaxes(L, -1, -2), A, lower=False)
        lam = M @ jnp.swapaxes(M, -1, -2)
        # mu = mean + M^-T eps / sqrt(kappa), M^-T = L A^-T
        eps = normal_draws(k_mu, (K, D, 1), dtype)
        v = jax.scipy.linalg.solve_triangular(jnp.swapaxes(A, -1, -2), eps, lower=False)
        mu = slots.mean + (L @ v)[..., 0] / jnp.sqrt(slots.kappa)[:, None]
        logdet = 2.0 * jnp.sum(jnp.log(diag), -1) - 2.0 * jnp.sum(
            jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)), -1
        )
        return lam, mu, logdet

    def loglik_features(self, gs: NIWStats) -> jax.Array:
        """(rows, D^2 + D): ``[vec(S + m x x^T), m x]`` per group (meant for moderate D)."""
        m = gs.size
        D = gs.mean.shape[-1]
        outer = gs.scatter + m[:, None, None] * gs.mean[:, :, None] * gs.mean[:, None, :]
        return jnp.concatenate([outer.reshape(-1, D * D), m[:, None] * gs.mean], axis=1)

    def group_loglik(self, params, gs: NIWStats, feat: jax.Array) -> jax.Array:
        """(rows, K): ``m/2 ln|Lam| - mD/2 ln 2pi - 1/2 tr(Lam (S + m x x^T)) + m x^T Lam mu - m/2 mu^T Lam mu``,
        one matrix product with :meth:`loglik_features`."""
        lam, mu, logdet = params
        K, D = mu.shape
        lam_mu = jnp.einsum("kde,ke->kd", lam, mu)
        coef = jnp.concatenate([-0.5 * lam.reshape(K, D * D), lam_mu], axis=1)
        c = 0.5 * logdet - 0.5 * D * _LOG_2PI - 0.5 * jnp.sum(mu * lam_mu, -1)
        return feat @ coef.T + gs.size[:, None] * c[None, :]

    def log_marginal(self, slots: NIWSlot) -> jax.Array:
        D = slots.scale.shape[-1]
        n = slots.kappa - self.kappa
        return (
            -0.5 * n * D * _LOG_PI
            + multigammaln(0.5 * slots.dof, D)
            - multigammaln(0.5 * self.dof, D)
            + 0.5 * self.dof * _logdet_pd(self.scale)
            - 0.5 * slots.dof * _logdet_pd(slots.scale)
            + 0.5 * D * jnp.log(self.kappa / slots.kappa)
        )


# ------------------------------------------------------------------------------------------------------------
# Dirichlet-multinomial (count vectors)
# ------------------------------------------------------------------------------------------------------------
class DMStats(NamedTuple):
    """Group statistics: ``size`` (), ``counts`` (V,) summed over members, ``total`` (), ``coef`` () = sum
    over
    members of the log multinomial coefficient ``ln T! - sum_v ln x_v!``."""

    size: jax.Array
    counts: jax.Array
    total: jax.Array
    coef: jax.Array


class DMSlot(NamedTuple):
    """Posterior parameters: ``conc`` (V,) = prior + counts, ``cache`` () = lgamma(sum conc) - sum
    lgamma(conc)."""

    conc: jax.Array
    cache: jax.Array


class DirichletMultinomial(eqx.Module):
    """Count-vector components: ``theta_k ~ Dirichlet(concentration)``, ``x_i ~ Multinomial(T_i, theta_k)``.

    Parameters
    ----------
    concentration : float or array, shape (V,)
        Dirichlet concentration; a scalar broadcasts over the V categories.

    Notes
    -----
    The predictive is computed densely over V (O(K V) lgamma per step); the multinomial coefficients enter the
    marginal likelihood and the log joint but cancel in the Gibbs weights.
    """

    concentration: jax.Array

    def __init__(self, concentration=1.0):
        self.concentration = _as_float_array(concentration, "concentration")

    centred = False

    @classmethod
    def from_data(cls, X) -> DirichletMultinomial:
        """Default: a flat Dirichlet(1, ..., 1)."""
        return cls(np.ones(np.asarray(X).shape[1]))

    def check(self, X: np.ndarray) -> DirichletMultinomial:
        V = X.shape[1]
        if np.any(X < 0) or not np.all(X == np.round(X)):
            bad = np.argwhere((X < 0) | (X != np.round(X)))[0]
            raise InvalidInputError(
                f"X: row {bad[0]} column {bad[1]} is not a non-negative integer count "
                f"(got {X[tuple(bad)]}); DirichletMultinomial needs count vectors"
            )
        if np.shape(self.concentration) not in ((), (V,)):
            raise InvalidInputError(
                f"prior.concentration: expected a scalar or shape ({V},), got {np.shape(self.concentration)}"
            )
        c = np.broadcast_to(np.asarray(self.concentration, np.float64), (V,))
        if np.any(c <= 0) or not np.all(np.isfinite(c)):
            raise InvalidInputError("prior.concentration: must be positive and finite")
        return DirichletMultinomial(np.array(c))

    def transformed(self, shift, scale) -> DirichletMultinomial:
        return self

    def group_stats(self, X: np.ndarray, group_of: np.ndarray, n_rows: int) -> DMStats:
        from scipy.special import gammaln as np_gammaln

        T = X.sum(1)
        coef = np_gammaln(T + 1) - np_gammaln(X + 1).sum(1)
        counts = _group_sum(X, group_of, n_rows)
        size = np.bincount(group_of, minlength=n_rows).astype(np.float64)
        return DMStats(size, counts, counts.sum(1), _group_sum(coef, group_of, n_rows))

    def astype(self, dtype) -> DirichletMultinomial:
        return jax.tree.map(lambda a: to_device(a, dtype), self)

    def _cached(self, conc) -> DMSlot:
        return DMSlot(conc, gammaln(jnp.sum(conc, -1)) - jnp.sum(gammaln(conc), -1))

    def prior_slot(self) -> DMSlot:
        return self._cached(self.concentration)

    def add(self, slot: DMSlot, gs: DMStats) -> DMSlot:
        return self._cached(slot.conc + gs.counts)

    def remove(self, slot: DMSlot, gs: DMStats) -> DMSlot:
        return self._cached(slot.conc - gs.counts)

    def count_table(self, n_max: int, D: int) -> None:
        """No count-only terms: the DM predictive depends on the category counts."""
        return None

    def log_pred(self, slots: DMSlot, gs: DMStats, counts=None, table=None) -> jax.Array:
        """(K,) ``ln p(X_G | X_k)`` including the members' multinomial coefficients."""
        new = slots.conc + gs.counts
        return slots.cache - gammaln(jnp.sum(new, -1)) + jnp.sum(gammaln(new), -1) + gs.coef

    def segment_stats(self, seg: jax.Array, gs: DMStats, n_segments: int, axis_name=None) -> DMStats:
        counts = _segsum(gs.counts, seg, n_segments, axis_name)
        return DMStats(
            _segsum(gs.size, seg, n_segments, axis_name),
            counts,
            counts.sum(-1),
            _segsum(gs.coef, seg, n_segments, axis_name),
        )

    def combine_stats(self, a: DMStats, b: DMStats) -> DMStats:
        return DMStats(a.size + b.size, a.counts + b.counts, a.total + b.total, a.coef + b.coef)

    def slots_from_stats(self, stats: DMStats) -> DMSlot:
        return self._cached(self.concentration + stats.counts)

    def slots_from_groups(self, z: jax.Array, gs: DMStats, K: int, axis_name=None) -> DMSlot:
        return self._cached(self.concentration + _segsum(gs.counts, z, K, axis_name))

    def split_view(self, gs: DMStats):
        # category proportions of each group's pooled counts (the members' spread is not tracked)
        feat = gs.counts / jnp.maximum(gs.total, 1.0)[:, None]
        return feat, jnp.zeros_like(feat)

    def draw_params(self, key, slots: DMSlot):
        """Per slot ``ln theta`` (K, V), theta ~ Dirichlet(conc_n) (normalised Gamma draws, in log space)."""
        g = gamma_draws(key, slots.conc, log=True)
        return (g - jax.scipy.special.logsumexp(g, axis=-1, keepdims=True),)

    def loglik_features(self, gs: DMStats) -> jax.Array:
        """(rows, V): the group's pooled counts."""
        return gs.counts

    def group_loglik(self, params, gs: DMStats, feat: jax.Array) -> jax.Array:
        """(rows, K) ``counts . ln theta_k`` plus the members' multinomial coefficients."""
        (log_theta,) = params
        return feat @ log_theta.T + gs.coef[:, None]

    def log_marginal(self, slots: DMSlot) -> jax.Array:
        # multinomial coefficients are added once for the whole data set by the sampler (constant in z)
        return self.prior_slot().cache - slots.cache


def default_prior(X: np.ndarray) -> NormalGamma:
    """The prior used when ``prior=None``: :meth:`NormalGamma.from_data`."""
    return NormalGamma.from_data(X)
