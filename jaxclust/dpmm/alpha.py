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

from jaxclust.dpmm.draws import GAMMA_UNIFORMS, gamma_from_uniforms, uniforms
from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_positive

__all__ = ["escobar_west", "check_alpha_prior"]


def check_alpha_prior(alpha_prior, name: str = "alpha_prior") -> tuple[float, float] | None:
    """``alpha_prior`` as ``(shape, rate)`` of the Gamma prior on a concentration (both > 0), or None (fixed);
    errors name it ``name``."""
    if alpha_prior is None:
        return None
    try:
        shape, rate = alpha_prior
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name}: expected (shape, rate) or None, got {alpha_prior!r}") from exc
    return check_positive(shape, f"{name} shape"), check_positive(rate, f"{name} rate")


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
    # one uniform call and one gamma transform for the whole update (each is a copy in the compiled program):
    # Beta(alpha + 1, N) from two gammas, and both of the mixture's gammas, of which the pick keeps one
    u = uniforms(key, (4 * GAMMA_UNIFORMS + 1,), dtype)
    base = jnp.asarray(shape + n_components - 1.0, dtype)
    shapes = jnp.stack([jnp.asarray(alpha + 1.0, dtype), jnp.asarray(n_items, dtype), base + 1.0, base])
    g = gamma_from_uniforms(shapes, u[:-1].reshape(4, GAMMA_UNIFORMS))
    eta = g[0] / (g[0] + g[1])  # Beta(alpha + 1, N)
    rate_post = rate - jnp.log(eta)
    odds = (shape + n_components - 1.0) / (n_items * rate_post)
    pick_upper = u[-1] < odds / (1.0 + odds)
    return jnp.where(pick_upper, g[2], g[3]) / rate_post
