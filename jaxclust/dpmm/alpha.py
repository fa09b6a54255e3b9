"""Escobar & West (1995) auxiliary-variable update of the DP concentration alpha.

Prior ``alpha ~ Gamma(shape, rate)``. Given K occupied components among N items::

    eta   ~ Beta(alpha + 1, N)
    odds  = (shape + K - 1) / (N (rate - log eta))
    alpha ~ pi Gamma(shape + K, rate - log eta) + (1 - pi) Gamma(shape + K - 1, rate - log eta),
    pi    = odds / (1 + odds)

jaxclust treats constraints as *observations* (likelihood ``1[z satisfies C]``), so the conditional of alpha
given the partition is the unconstrained one and this update is exact (with N the number of items, not groups).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_positive

__all__ = ["escobar_west", "gamma_draw", "gamma_draws"]


def check_alpha_prior(alpha_prior) -> tuple[float, float] | None:
    """``alpha_prior`` as ``(shape, rate)`` of the Gamma prior on alpha (both > 0), or None (alpha fixed)."""
    if alpha_prior is None:
        return None
    try:
        shape, rate = alpha_prior
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"alpha_prior: expected (shape, rate) or None, got {alpha_prior!r}") from exc
    return check_positive(shape, "alpha_prior shape"), check_positive(rate, "alpha_prior rate")


_N_TRY = 8


def _standard_normal(u: jax.Array) -> jax.Array:
    """Standard normals from uniforms on (0, 1) (the inverse CDF, as ``jax.random.normal`` computes them)."""
    return jnp.sqrt(2.0) * jax.scipy.special.erfinv(2.0 * u - 1.0)


def _uniforms(key: jax.Array, shape: tuple, dtype) -> jax.Array:
    """Uniforms on (0, 1) (``tiny`` at the least, so logs and inverse CDFs stay finite)."""
    return jax.random.uniform(key, shape, dtype, minval=jnp.finfo(dtype).tiny)


def _marsaglia_tsang(shape: jax.Array, u: jax.Array, log: bool) -> jax.Array:
    """Gamma(shape, 1) (or its log) from uniforms ``u`` (..., 2 _N_TRY + 1): the tries' normals, their
    acceptance uniforms and the boost's uniform. One uniform draw feeds every try: each random-number call
    site is a separate copy of the generator in the compiled program, which costs compile time."""
    dtype = u.dtype
    d = (shape + 1.0 - 1.0 / 3.0)[..., None]
    c = 1.0 / jnp.sqrt(9.0 * d)
    x = _standard_normal(u[..., :_N_TRY])
    v = (1.0 + c * x) ** 3
    log_v = jnp.log(jnp.where(v > 0, v, 1.0))
    ok = (v > 0) & (jnp.log(u[..., _N_TRY : 2 * _N_TRY]) < 0.5 * x**2 + d - d * v + d * log_v)
    idx = jnp.where(jnp.any(ok, -1), jnp.argmax(ok, -1), _N_TRY - 1)
    v_acc = jnp.maximum(jnp.take_along_axis(v, idx[..., None], -1)[..., 0], jnp.finfo(dtype).tiny)
    log_g = jnp.log(d[..., 0] * v_acc) + jnp.log(u[..., 2 * _N_TRY]) / shape
    return log_g if log else jnp.exp(log_g)


def gamma_draw(key: jax.Array, shape: jax.Array, dtype=None) -> jax.Array:
    """One Gamma(shape, 1) draw by Marsaglia & Tsang (2000) with a fixed budget of proposals.

    Straight-line code (no while loop), so it compiles in a fraction of ``jax.random.gamma``'s time. The
    proposal runs at ``shape + 1 >= 1``, where each try is accepted with probability > 0.95, and the result is
    boosted by ``U**(1/shape)`` (exact for any shape > 0). With 8 tries the chance that all are rejected is
    below 1e-10; then the last proposal is returned (a negligible, documented bias).
    """
    dtype = dtype or jnp.result_type(shape, float)
    shape = jnp.asarray(shape, dtype)
    return _marsaglia_tsang(shape, _uniforms(key, (2 * _N_TRY + 1,), dtype), log=False)


def gamma_draws(key: jax.Array, shape: jax.Array, log: bool = False) -> jax.Array:
    """Independent Gamma(shape, 1) draws for an array of shapes (elementwise :func:`gamma_draw`).

    ``log=True`` returns ``ln g`` computed in log space, which stays finite for tiny shapes (where ``g``
    itself underflows, e.g. Dirichlet draws with concentration << 1).
    """
    shape = jnp.asarray(shape)
    dtype = jnp.result_type(shape, float)
    return _marsaglia_tsang(shape, _uniforms(key, shape.shape + (2 * _N_TRY + 1,), dtype), log)


def escobar_west(
    key: jax.Array,
    alpha: jax.Array,
    n_components: jax.Array,
    n_items: jax.Array,
    shape: jax.Array,
    rate: jax.Array,
) -> jax.Array:
    """One Escobar-West draw of alpha | K, N (all arguments scalars; pure, jittable, vmappable)."""
    dtype = jnp.result_type(alpha)
    # every uniform of the update from one call (see _marsaglia_tsang): three gamma draws and the mixture's pick
    u = _uniforms(key, (3 * (2 * _N_TRY + 1) + 1,), dtype)
    tries = u[:-1].reshape(3, 2 * _N_TRY + 1)
    g1 = _marsaglia_tsang(jnp.asarray(alpha + 1.0, dtype), tries[0], log=False)
    g2 = _marsaglia_tsang(jnp.asarray(n_items, dtype), tries[1], log=False)
    eta = g1 / (g1 + g2)  # Beta(alpha + 1, N)
    rate_post = rate - jnp.log(eta)
    odds = (shape + n_components - 1.0) / (n_items * rate_post)
    pick_upper = u[-1] < odds / (1.0 + odds)
    shape_post = shape + n_components - jnp.where(pick_upper, 0.0, 1.0)
    return _marsaglia_tsang(jnp.asarray(shape_post, dtype), tries[2], log=False) / rate_post
