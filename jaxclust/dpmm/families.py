"""Conjugate component families for the collapsed DPMM sampler.

Each family is an equinox Module holding its prior (array leaves, so new hyperparameter values do not
re-compile) and implements :class:`Family`, the small interface the samplers use (:mod:`jaxclust.dpmm.gibbs`,
:mod:`jaxclust.dpmm.splitmerge`, :mod:`jaxclust.dpmm.subcluster`). Gaussian families keep *centred* group
statistics (group mean and scatter about it), so nothing cancels in float32. This module holds the interface,
the diagonal :class:`NormalGamma` (the default) and the helpers the families share; full covariances are in
:mod:`jaxclust.dpmm.normal_inverse_wishart`, count vectors in :mod:`jaxclust.dpmm.dirichlet_multinomial`.

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
from jax.scipy.special import gammaln

from jaxclust.dpmm.draws import gamma_draws, normal_draws
from jaxclust.errors import InvalidInputError
from jaxclust.transfer import to_device

__all__ = [
    "Family",
    "NormalGamma",
    "default_prior",
    "column_steps",
    "LOG_2PI",
    "LOG_PI",
    "as_float_array",
    "centred_group_moments",
    "combine_moments",
    "group_sum",
    "segsum",
]

LOG_2PI = math.log(2.0 * math.pi)
LOG_PI = math.log(math.pi)


def combine_moments(a, b):
    """``(size, mean, m2)`` of the union of two disjoint sets of items from each set's ``(size, mean, m2)``: sizes
    (...,), means and sums of squared deviations from the mean (..., D) (Chan et al.'s pairwise update)."""
    (na, ma, sa), (nb, mb, sb) = a, b
    n = na + nb
    w = jnp.where(n > 0, nb / jnp.maximum(n, 1e-30), 0.0)[..., None]
    d = mb - ma
    return n, ma + w * d, sa + sb + (na[..., None] * w) * d**2


def segsum(x: jax.Array, seg: jax.Array, n: int, axis_name: str | None = None) -> jax.Array:
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


def group_sum(values: np.ndarray, group_of: np.ndarray, n_rows: int) -> np.ndarray:
    """Sum of ``values`` (n_items, ...) over the items of each group, (n_rows, ...) float64: O(n) memory
    (singleton groups, the common case, are a copy)."""
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros((n_rows,) + values.shape[1:])
    if len(group_of) == n_rows and np.array_equal(group_of, np.arange(n_rows)):
        out[:] = values
    else:
        np.add.at(out, group_of, values)
    return out


def centred_group_moments(X: np.ndarray, group_of: np.ndarray, n_rows: int):
    """Per-group size, mean and deviations of each item from its group mean (float64, host)."""
    size = np.bincount(group_of, minlength=n_rows).astype(np.float64)
    mean = group_sum(X, group_of, n_rows) / np.maximum(size, 1.0)[:, None]
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


def as_float_array(value, name: str) -> np.ndarray:
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
    rounding : float or array, shape (D,)
        ``h²/12`` for values rounded to a step ``h``: each item's likelihood is the geometric mean of its Gaussian
        over ``[x - h/2, x + h/2]``, ``N(x | mu, 1/lambda) exp(-lambda h²/24)``, which adds ``h²/12`` per item to
        a component's scatter (0, the default: the density at ``x``).

    Notes
    -----
    The default used by :class:`jaxclust.DPMM` when ``prior=None`` is :meth:`from_data`.
    """

    mean: jax.Array
    kappa: jax.Array
    shape: jax.Array
    rate: jax.Array
    rounding: jax.Array

    def __init__(self, mean=0.0, kappa=1.0, shape=1.0, rate=1.0, rounding=0.0):
        # host float64 until the sampler casts (a prior mean far from 0 must survive the shift exactly)
        self.mean = as_float_array(mean, "mean")
        self.kappa = as_float_array(kappa, "kappa")
        self.shape = as_float_array(shape, "shape")
        self.rate = as_float_array(rate, "rate")
        self.rounding = as_float_array(rounding, "rounding")

    centred = True  # the sampler may shift and scale data and prior together (see ``transformed``)

    @classmethod
    def from_data(cls, X, kappa: float = 0.05, shape: float = 2.0, scale: float = 0.5) -> NormalGamma:
        """Data-driven default: ``mean`` = column means, ``kappa = 0.05``, ``shape = 2`` and
        ``rate_d = scale * (shape - 1) * var_d`` with ``scale = 0.5``.

        So a component's expected variance per dimension, ``rate / (shape - 1)``, is half the data's variance,
        and its mean is a priori spread over about ``sqrt(scale / kappa) ~ 3.2`` data standard deviations.
        Constant columns get a tiny positive variance. ``rounding`` is ``h²/12`` with ``h`` each column's step
        (:func:`column_steps`): a column of few values (a flag, a count) taken as exact would make any component
        whose items share one value a Gaussian of no spread, whose marginal grows without bound with its items.
        """
        X = np.asarray(X, dtype=np.float64)
        var = X.var(axis=0)
        floor = 1e-6 * max(float(var.max()), 1e-12)
        var = np.maximum(var, floor)
        rate = scale * (shape - 1.0) * var
        return cls(X.mean(axis=0), kappa, shape, rate, column_steps(X) ** 2 / 12.0)

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
        if np.shape(self.rounding) not in ((), (D,)):
            raise InvalidInputError(
                f"prior.rounding: expected a scalar or shape ({D},), got {np.shape(self.rounding)}"
            )
        rounding = np.broadcast_to(np.asarray(self.rounding, np.float64), (D,))
        if not (np.all(np.isfinite(rounding)) and np.all(rounding >= 0)):
            raise InvalidInputError("prior.rounding: must be finite and >= 0")
        return NormalGamma(np.array(mean), self.kappa, self.shape, np.array(rate), np.array(rounding))

    def transformed(self, shift: np.ndarray, scale: np.ndarray) -> NormalGamma:
        """The same model for data mapped to ``(x - shift) / scale`` (per dimension): the mean maps like the
        data, the precision rate and the rounding divide by ``scale**2``; kappa and shape are unchanged."""
        scale = np.asarray(scale, np.float64)
        return NormalGamma(
            (np.asarray(self.mean) - shift) / scale,
            self.kappa,
            self.shape,
            self.rate / scale / scale,
            self.rounding / scale / scale,
        )

    def group_stats(self, X: np.ndarray, group_of: np.ndarray, n_rows: int) -> NGStats:
        """Each group's size, mean and scatter, its rounding counted in the scatter (``h²/12`` per item)."""
        size, mean, dev = centred_group_moments(X, group_of, n_rows)
        m2 = group_sum(dev**2, group_of, n_rows) + size[:, None] * np.asarray(self.rounding, dev.dtype)
        return NGStats(size, mean, m2)

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
        return slots.cache + norm - shape * _sum_log(rate) - 0.5 * D * gs.size * LOG_2PI

    def segment_stats(self, seg: jax.Array, gs: NGStats, n_segments: int, axis_name=None) -> NGStats:
        """Statistics of each segment (``n_segments`` leading) of the group rows (``axis_name``: rows split
        over that mesh axis, see :mod:`jaxclust.dpmm.rows`)."""
        # sizes and sums in one scatter (each scatter is a loop of its own in the compiled program)
        m = gs.size[:, None]
        sums = segsum(jnp.concatenate([m, m * gs.mean], axis=1), seg, n_segments, axis_name)
        n, xbar = sums[:, 0], sums[:, 1:] / jnp.maximum(sums[:, :1], 1.0)
        # scatter about the segment mean = within-group scatter + between-group part (two-pass, centred)
        dev2 = gs.size[:, None] * (gs.mean - xbar[jnp.clip(seg, 0, n_segments - 1)]) ** 2
        return NGStats(n, xbar, segsum(gs.m2 + dev2, seg, n_segments, axis_name))

    def combine_stats(self, a: NGStats, b: NGStats) -> NGStats:
        """Statistics of the union of two disjoint segments (:func:`combine_moments`)."""
        return NGStats(*combine_moments(a, b))

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
        c = 0.5 * jnp.sum(jnp.log(lam), -1) - 0.5 * D * LOG_2PI - 0.5 * jnp.sum(lam * mu**2, -1)
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
            - 0.5 * n * D * LOG_2PI
        )


def column_steps(X: np.ndarray) -> np.ndarray:
    """Each column's step (D,): the median gap between its consecutive distinct values (0 for a column of one
    value). The step of a column of counts or of values rounded to two decimals is its rounding; that of a
    continuous column is a sliver of its spread."""
    X = np.asarray(X)
    steps = np.zeros(X.shape[1])
    for d in range(X.shape[1]):
        gaps = np.diff(np.unique(X[:, d]))
        if len(gaps):
            steps[d] = np.median(gaps)
    return steps


def default_prior(X: np.ndarray) -> NormalGamma:
    """The prior used when ``prior=None``: :meth:`NormalGamma.from_data`."""
    return NormalGamma.from_data(X)
