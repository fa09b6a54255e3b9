"""Count-vector components: a Dirichlet prior, multinomial counts (a :class:`~jaxclust.dpmm.families.Family`).

A slot holds the Dirichlet's posterior concentration and ``lgamma(sum conc) - sum lgamma(conc)``; the multinomial
coefficients are constant in the labels and added once for the data set.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from jaxclust.dpmm.draws import gamma_draws
from jaxclust.dpmm.families import as_float_array, group_sum, segsum
from jaxclust.errors import InvalidInputError
from jaxclust.transfer import to_device

__all__ = ["DMSlot", "DMStats", "DirichletMultinomial"]


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
        self.concentration = as_float_array(concentration, "concentration")

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
        counts = group_sum(X, group_of, n_rows)
        size = np.bincount(group_of, minlength=n_rows).astype(np.float64)
        return DMStats(size, counts, counts.sum(1), group_sum(coef, group_of, n_rows))

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
        counts = segsum(gs.counts, seg, n_segments, axis_name)
        return DMStats(
            segsum(gs.size, seg, n_segments, axis_name),
            counts,
            counts.sum(-1),
            segsum(gs.coef, seg, n_segments, axis_name),
        )

    def combine_stats(self, a: DMStats, b: DMStats) -> DMStats:
        return DMStats(a.size + b.size, a.counts + b.counts, a.total + b.total, a.coef + b.coef)

    def slots_from_stats(self, stats: DMStats) -> DMSlot:
        return self._cached(self.concentration + stats.counts)

    def slots_from_groups(self, z: jax.Array, gs: DMStats, K: int, axis_name=None) -> DMSlot:
        return self._cached(self.concentration + segsum(gs.counts, z, K, axis_name))

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
