"""Escobar & West (1995) auxiliary-variable update of the DP concentration alpha.

Prior ``alpha ~ Gamma(shape, rate)``. Given K occupied components among N items::

    eta   ~ Beta(alpha + 1, N)
    odds  = (shape + K - 1) / (N (rate - log eta))
    alpha ~ pi Gamma(shape + K, rate - log eta) + (1 - pi) Gamma(shape + K - 1, rate - log eta),  pi =
    odds/(1+odds)

jaxclust treats constraints as *observations* (likelihood ``1[z satisfies C]``), so the conditional of
alpha given
the partition is the unconstrained one and this update is exact (with N the number of items, not groups).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["escobar_west", "gamma_draw", "gamma_draws"]

_N_TRY = 8


def gamma_draw(key: jax.Array, shape: jax.Array, dtype=None) -> jax.Array:
    """One Gamma(shape, 1) draw by Marsaglia & Tsang (2000) with a fixed budget of proposals.

    Straight-line code (no while loop), so it compiles in a fraction of ``jax.random.gamma``'s time. The
    proposal runs at ``shape + 1 >= 1``, where each try is accepted with probability > 0.95, and the result is
    boosted by ``U**(1/shape)`` (exact for any shape > 0). With 8 tries the chance that all are rejected is
    below
    1e-10; then the last proposal is returned (a negligible, documented bias).
    """
    dtype = dtype or jnp.result_type(shape, float)
    k_x, k_u, k_boost = jax.random.split(key, 3)
    d = shape + 1.0 - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    x = jax.random.normal(k_x, (_N_TRY,), dtype)
    v = (1.0 + c * x) ** 3
    u = jax.random.uniform(k_u, (_N_TRY,), dtype)
    log_v = jnp.log(jnp.where(v > 0, v, 1.0))
    ok = (v > 0) & (jnp.log(u) < 0.5 * x**2 + d - d * v + d * log_v)
    idx = jnp.where(jnp.any(ok), jnp.argmax(ok), _N_TRY - 1)
    g = d * jnp.maximum(v[idx], jnp.finfo(dtype).tiny)
    return g * jnp.exp(jnp.log(jax.random.uniform(k_boost, (), dtype, minval=jnp.finfo(dtype).tiny)) / shape)


def gamma_draws(key: jax.Array, shape: jax.Array, log: bool = False) -> jax.Array:
    """Independent Gamma(shape, 1) draws for an array of shapes (elementwise :func:`gamma_draw`).

    ``log=True`` returns ``ln g`` computed in log space, which stays finite for tiny shapes (where ``g``
    itself underflows, e.g. Dirichlet draws with concentration << 1).
    """
    shape = jnp.asarray(shape)
    dtype = jnp.result_type(shape, float)
    k_x, k_u, k_boost = jax.random.split(key, 3)
    d = (shape + 1.0 - 1.0 / 3.0)[..., None]
    c = 1.0 / jnp.sqrt(9.0 * d)
    x = jax.random.normal(k_x, shape.shape + (_N_TRY,), dtype)
    v = (1.0 + c * x) ** 3
    u = jax.random.uniform(k_u, shape.shape + (_N_TRY,), dtype)
    log_v = jnp.log(jnp.where(v > 0, v, 1.0))
    ok = (v > 0) & (jnp.log(u) < 0.5 * x**2 + d - d * v + d * log_v)
    idx = jnp.where(jnp.any(ok, -1), jnp.argmax(ok, -1), _N_TRY - 1)
    v_acc = jnp.maximum(jnp.take_along_axis(v, idx[..., None], -1)[..., 0], jnp.finfo(dtype).tiny)
    log_g = (
        jnp.log(d[..., 0] * v_acc)
        + jnp.log(jax.random.uniform(k_boost, shape.shape, dtype, minval=jnp.finfo(dtype).tiny)) / shape
    )
    return log_g if log else jnp.exp(log_g)


def escobar_west(
    key: jax.Array,
    alpha: jax.Array,
    n_components: jax.Array,
    n_items: jax.Array,
    shape: jax.Array,
    rate: jax.Array,
) -> jax.Array:
    """One Escobar-West draw of alpha | K, N (all arguments scalars; pure, jittable, vmappable)."""
    k_eta1, k_eta2, k_mix, k_gamma = jax.random.split(key, 4)
    dtype = jnp.result_type(alpha)
    g1 = gamma_draw(k_eta1, alpha + 1.0, dtype)
    g2 = gamma_draw(k_eta2, n_items, dtype)
    eta = g1 / (g1 + g2)  # Beta(alpha + 1, N)
    rate_post = rate - jnp.log(eta)
    odds = (shape + n_components - 1.0) / (n_items * rate_post)
    pick_upper = jax.random.uniform(k_mix, dtype=dtype) < odds / (1.0 + odds)
    shape_post = shape + n_components - jnp.where(pick_upper, 0.0, 1.0)
    return gamma_draw(k_gamma, shape_post, dtype) / rate_post
