"""Full-covariance Gaussian components: a Normal-Inverse-Wishart prior (a :class:`~jaxclust.dpmm.families.Family`).

Group statistics are centred (the group mean and the scatter about it); a slot holds the posterior parameters and
``dof/2 * logdet(scale) + D/2 * log(kappa)``, so the predictive costs one Cholesky per slot.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import multigammaln

from jaxclust.dpmm.draws import gamma_draws, normal_draws
from jaxclust.dpmm.families import LOG_2PI, LOG_PI, as_float_array, centred_group_moments, group_sum, segsum
from jaxclust.errors import InvalidInputError
from jaxclust.transfer import to_device

__all__ = ["NIWSlot", "NIWStats", "NormalInverseWishart"]


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
        self.mean = as_float_array(mean, "mean")
        self.kappa = as_float_array(kappa, "kappa")
        self.dof = as_float_array(np.nan if dof is None else dof, "dof")  # None -> D + 2 in check()
        self.scale = as_float_array(scale, "scale")

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
        size, mean, dev = centred_group_moments(X, group_of, n_rows)
        return NIWStats(size, mean, group_sum(dev[:, :, None] * dev[:, None, :], group_of, n_rows))

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
        return slots.cache + norm - 0.5 * dof * _logdet_pd(scale) - 0.5 * D * gs.size * LOG_PI

    def segment_stats(self, seg: jax.Array, gs: NIWStats, n_segments: int, axis_name=None) -> NIWStats:
        # sizes and sums in one scatter (each scatter is a loop of its own in the compiled program)
        m = gs.size[:, None]
        sums = segsum(jnp.concatenate([m, m * gs.mean], axis=1), seg, n_segments, axis_name)
        n, xbar = sums[:, 0], sums[:, 1:] / jnp.maximum(sums[:, :1], 1.0)
        dev = gs.mean - xbar[jnp.clip(seg, 0, n_segments - 1)]  # (rows, D)
        per_group = gs.scatter + gs.size[:, None, None] * dev[:, :, None] * dev[:, None, :]
        return NIWStats(n, xbar, segsum(per_group, seg, n_segments, axis_name))

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
        c = 0.5 * logdet - 0.5 * D * LOG_2PI - 0.5 * jnp.sum(mu * lam_mu, -1)
        return feat @ coef.T + gs.size[:, None] * c[None, :]

    def log_marginal(self, slots: NIWSlot) -> jax.Array:
        D = slots.scale.shape[-1]
        n = slots.kappa - self.kappa
        return (
            -0.5 * n * D * LOG_PI
            + multigammaln(0.5 * slots.dof, D)
            - multigammaln(0.5 * self.dof, D)
            + 0.5 * self.dof * _logdet_pd(self.scale)
            - 0.5 * slots.dof * _logdet_pd(slots.scale)
            + 0.5 * D * jnp.log(self.kappa / slots.kappa)
        )
