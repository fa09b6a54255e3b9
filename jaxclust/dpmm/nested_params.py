"""The item sweep of the two-level mixture (:mod:`jaxclust.dpmm.nested`) given sampled component parameters.

The collapsed sweep (:func:`jaxclust.dpmm.nested.item_sweep`) scores every item against every component by its
Student-t predictive, two logarithms per component and column, updated as each item moves. This one draws each
component slot's mean and precision first and keeps them for the sweep, so an item's score against a slot is one
Gaussian log density (multiply-adds, a logarithm per slot and column once per sweep), and the sequential pass
keeps counts only, not each component's statistics.

It is exact for the same posterior. Give each of the ``K`` slots a parameter ``θ_k``, drawn from the prior
``G0`` when the slot is empty; with slots as labels, the prior of the components is the CRP's over the
partition times ``(K - K₊)! / K!`` (the ways to seat ``K₊`` components in ``K`` slots). Integrated over ``θ``,
that joint is the collapsed model restricted to ``K₊ <= K``; a sweep is a Gibbs scan of it:

1. every ``θ_k`` from its conditional: its Normal-Gamma posterior given the slot's items (the prior if none);
2. each item in turn: an occupied slot ``k`` with weight ``n_k f(x | θ_k)``, or an empty slot ``e`` with weight
   ``α f(x | θ_e) / (K - K₊)`` (``K₊`` without the item), its class drawn as a new component's is (Neal 2000,
   algorithm 8, with the empty slots as the auxiliary components and their parameters kept for the sweep);
3. the parameters are dropped, and the statistics of the new components recomputed.

An item that leaves a slot of its own leaves its ``θ`` behind, and may come back to it. New components are
rarer than under the collapsed sweep (a parameter drawn from the prior seldom fits an item as well as the prior
predictive does, more so in many dimensions): :class:`~jaxclust.NestedDPMM` runs the collapsed sweep every
fifth sweep, and the split-merge of components proposes them too.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxclust.dpmm import nested as N
from jaxclust.dpmm.draws import gamma_draws, gumbels, normal_draws
from jaxclust.dpmm.state import no_moves

__all__ = ["component_params", "log_density", "item_sweep_given_params"]

_LOG_2PI = math.log(2.0 * math.pi)


def component_params(key, state: N.NestedState, prior: N.NestedPrior) -> tuple[jax.Array, jax.Array]:
    """Each slot's precision and mean ``(lam, mu)`` (K, D), drawn from its Normal-Gamma posterior given its items
    (each item weighing τ, its rounding adding ``h²/12`` to the scatter; an empty slot: the prior)."""
    m0, k0, a0, b0, tau, h2 = (jnp.asarray(p, state.mean.dtype) for p in prior)
    v = tau * state.count.astype(state.mean.dtype)[:, None]
    k_n = k0 + v
    y = state.mean - m0
    a_n = jnp.broadcast_to(a0 + 0.5 * v, state.mean.shape)
    b_n = b0 + 0.5 * (tau * state.scatter + v * h2 + k0 * v * y * y / k_n)
    k_lam, k_mu = jax.random.split(key)
    lam = gamma_draws(k_lam, a_n) / b_n
    mu = m0 + v * y / k_n + normal_draws(k_mu, state.mean.shape, state.mean.dtype) / jnp.sqrt(k_n * lam)
    return lam, mu


def log_density(x, lam, mu, prior: N.NestedPrior) -> jax.Array:
    """``ln f(x | θ_k)`` (K,) of one item ``x`` (D,) under each slot's parameters: its Gaussian raised to τ,
    with its rounding's factor ``exp(-λ h²/24)``."""
    return _log_density(lam, mu, prior)(x)


def _log_density(lam, mu, prior: N.NestedPrior):
    """:func:`log_density` as a function of ``x``, the slots' constant terms computed once. The squared
    distances are taken directly, not as ``x² - 2xμ + μ²`` in one matrix product for all items: that form's
    float32 cancellation grows with a slot's precision."""
    tau, h2 = (jnp.asarray(p, mu.dtype) for p in prior[4:])
    per_slot = 0.5 * jnp.sum(jnp.log(lam) - _LOG_2PI - lam * h2, -1)
    return lambda x: tau * (per_slot - 0.5 * jnp.sum(lam * (x - mu) ** 2, -1))


def item_sweep_given_params(
    key, state: N.NestedState, data: N.NestedData, prior: N.NestedPrior, alpha, gamma, C: int
):
    """Each item in turn draws its (class, component) given every slot's sampled parameters; returns ``(state,
    info)``, its statistics recomputed. ``info.overflow``: some item found no empty slot where a new component
    was allowed."""
    n, K = data.X.shape[0], state.count.shape[0]
    k_theta, k_noise, k_slot = jax.random.split(key, 3)
    lam, mu = component_params(k_theta, state, prior)
    ll = _log_density(lam, mu, prior)
    dt = data.X.dtype
    noise = gumbels(k_noise, (n, K + C + 1), dt)
    slot_noise = gumbels(k_slot, (n, K), dt)

    def move(i, carry):
        z, u, count, overflow = carry
        count = count.at[z[i]].add(-1)
        u = jnp.where(count > 0, u, -1)
        lli = ll(data.X[i])
        empty_ll = jnp.where(count > 0, -jnp.inf, lli)
        # a new component: any empty slot, each with probability 1 / (K - K+) and its own parameter
        new = jax.nn.logsumexp(empty_ll) - jnp.log(jnp.maximum(jnp.sum(count == 0), 1).astype(dt))
        scores, need_slot, c_free = N.item_options(i, u, count, z, lli, new, data, alpha, gamma, C)
        choice = jnp.argmax(scores + noise[i])
        k_new, c_new = N.chosen_slot(choice, u, jnp.argmax(empty_ll + slot_noise[i]), c_free, C)
        return z.at[i].set(k_new), u.at[k_new].set(c_new), count.at[k_new].add(1), overflow | need_slot

    first = (state.z, state.u, state.count, jnp.zeros((), bool))
    z, u, _, overflow = jax.lax.fori_loop(0, n, move, first)
    return N.init_from(z, u, data, K), no_moves()._replace(overflow=overflow)
