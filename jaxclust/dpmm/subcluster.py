"""The parallel sampler for large n: every group moves at once given component weights and parameters.

In the spirit of Chang & Fisher (2013) and DPMMSubClusters, one iteration is

1. **split-merge** (:func:`jaxclust.dpmm.splitmerge.split_merge`): split proposals launched from two
   sub-clusters of every component (a few 2-means steps from two random members) and merge proposals, with
   exact Metropolis-Hastings ratios against the collapsed posterior;
2. **weights and parameters given the partition**, exact conjugate draws for the occupied components::

       (pi_1, ..., pi_K, pi_rest) ~ Dirichlet(n_1, ..., n_K, alpha),    theta_k ~ p(theta | X_k)

3. **a restricted step, parallel over groups**: ``P(z_G = k) ∝ pi_k^m prod_{x in G} f(x | theta_k)`` over the
   occupied components, one ``(rows, K)`` log-likelihood matrix from matrix products
   (:meth:`family.group_loglik` on features computed once per fit), one uniform per group;
4. alpha by Escobar-West, statistics refreshed, log joint.

Why step 3 is exact. Given (pi, theta) and K labelled components, the augmented posterior of the labels is
``prod_i pi_{z_i} f(x_i | theta_{z_i})`` *restricted to assignments that leave every component non-empty*
(the Dirichlet's parameters are the counts, so an emptied component has no density). Groups are therefore
not independent: the last member of a component may not leave. Each iteration draws a uniformly random
priority per group; the member of lowest priority in each component is its *anchor* and stays, and any
other group may join component k only if its priority exceeds k's anchor's. The set of states with these
anchors is preserved by the move, and within it the conditional *is* the product over groups, so the
parallel draw is an exact Gibbs update (restricted to that set). Components never die here; they die by
merges.

Cannot-links and soft answers (log-weights on partners' components, as in the collapsed sweep) couple groups
too: two cannot-linked groups updated at once could land together. The host colours the group-level graph of
cannot-links and answers greedily (:meth:`jaxclust.Constraints.colouring`);
step 3 runs once per colour class, each class in parallel and conditioned on the current components of its
partners (a mask, as in the collapsed sweep). Groups without cannot-links are all in class 0, so a few
hundred answers cost a few extra masked passes, not a re-computation of the likelihoods.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxclust.dpmm import rows as _rows
from jaxclust.dpmm import state as _state
from jaxclust.dpmm.draws import categorical, gamma_draws

# categorical is defined in jaxclust.dpmm.draws and kept importable here
__all__ = ["restricted_move", "restricted_step", "categorical"]


def _log_weights(key, counts, alpha):
    """ln pi of each slot: Dirichlet(n_1..n_K, alpha) over occupied slots and the rest; -inf for empty."""
    occupied = counts > 0
    shape = jnp.concatenate([jnp.where(occupied, counts, 1.0), alpha[None]])
    log_g = gamma_draws(key, shape, log=True)
    present = jnp.concatenate([occupied, jnp.ones((1,), bool)])
    log_pi = log_g[:-1] - jax.scipy.special.logsumexp(jnp.where(present, log_g, -jnp.inf))
    return jnp.where(occupied, log_pi, -jnp.inf)


def restricted_move(
    key, state: _state.GibbsState, data: _state.GroupData, family, constrained: bool = True, rows=None
):
    """Step 3 of the module docstring as a move ``(state, info)``: the new assignment, counts and slots recomputed
    from it, alpha kept (the sampler's iteration ends with :func:`jaxclust.dpmm.state.alpha_move`). Arguments as
    in :func:`restricted_step`; the step never needs a new slot (``info`` reports no overflow)."""
    z = restricted_step(key, state, data, family, constrained, rows)
    return _state.refreshed(z, state, data, family, rows), _state.no_moves()


def restricted_step(
    key, state: _state.GibbsState, data: _state.GroupData, family, constrained: bool = True, rows=None
):
    """Step 3 of the module docstring: new slots ``z`` (n_rows,) for every movable group (the labels alone:
    :func:`restricted_move` is the move).

    ``constrained`` (static) may be False when there are no cannot-links: the colour loop and partner masks
    are then skipped. Counts and slots of ``state`` must match ``state.z``; they are *not* refreshed here.
    ``rows`` (static): the rows are split over devices (:mod:`jaxclust.dpmm.rows`): weights and parameters are
    drawn alike on every device, anchors are a ``pmin``, partners' slots an ``all_gather``, and each row's
    uniforms are those it gets on one device.
    """
    z = state.z
    V = state.counts.shape[0]
    dtype = state.counts.dtype
    valid = data.valid
    slot_ids = jnp.arange(V)
    k_pi, k_theta, k_prio, k_u = jax.random.split(key, 4)
    log_pi = _log_weights(k_pi, state.counts, state.alpha)
    params = family.draw_params(k_theta, state.slots)
    logits = family.group_loglik(params, data.stats, data.feat) + data.stats.size[:, None] * log_pi[None, :]

    # anchors: the lowest-priority group of each component stays; others may join k only above k's anchor
    u_rows = _rows.uniform(k_prio, z.shape + (2,), dtype, rows)  # one call: priorities, unconstrained draws
    prio = jnp.where(valid, u_rows[:, 0], 2.0)
    anchor = _rows.segment_min(prio, jnp.where(valid, z, V), V, rows)
    allowed = (prio[:, None] > anchor[None, :]) | (slot_ids[None, :] == z[:, None])
    logits = jnp.where(allowed, logits, -jnp.inf)
    movable = valid & (prio > anchor[z])

    if not constrained:
        new = categorical(logits, u_rows[:, 1])
        return jnp.where(movable & (new >= 0), new, z)

    partners, weights = data.partners, data.partner_w
    hard = jnp.isneginf(weights)

    def body(c, z):
        p_slot = jnp.where(partners >= 0, _rows.gather(z, rows)[jnp.maximum(partners, 0)], -1)
        forbidden = jnp.zeros(logits.shape, bool)
        soft = jnp.zeros(logits.shape, logits.dtype)
        for col in range(partners.shape[1]):  # static width: (rows, V) per partner column, no (rows, cap, V)
            hit = p_slot[:, col : col + 1] == slot_ids[None, :]
            forbidden = forbidden | (hit & hard[:, col : col + 1])
            soft = soft + jnp.where(hit & ~hard[:, col : col + 1], weights[:, col : col + 1], 0.0)
        if data.spill.shape[0]:
            f_spill, s_spill = _state.spill_terms(z, data, slot_ids)
            forbidden, soft = forbidden | f_spill, soft + s_spill
        u = _rows.uniform(jax.random.fold_in(k_u, c), z.shape, dtype, rows)
        new = categorical(jnp.where(forbidden, -jnp.inf, logits + soft), u)
        return jnp.where(movable & (data.colour == c) & (new >= 0), new, z)

    return jax.lax.fori_loop(0, data.n_colours, body, z)
