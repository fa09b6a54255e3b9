"""One collapsed Gibbs sweep of the constrained DPMM, as a pure jittable function.

The unit of sampling is the must-link *group* (singletons are groups of one). For a group G of m items and
slot k holding n_k items (Neal 2000, Alg. 3, extended to blocks; docs/algorithms/dpmm.md (d), (f))::

    P(z_G = k)   ∝ Γ(n_k + m) / Γ(n_k) · p(X_G | X_k)        (k occupied, no cannot-link partner of G in k)
    P(z_G = new) ∝ α · Γ(m) · p(X_G)                           (the first empty slot)

Cannot-links are a mask over slots gathered from the padded partner lists, so the sweep is the same code with
or without constraints and runs under ``vmap`` over chains. The lists have a fixed width; a group with more
partners continues its list in spill rows (:class:`jaxclust.partner_tables.PartnerRows`), read only when that group
is drawn, so answers that pile up on one group do not change the compiled shapes. Soft answers (answers wrong
with probability eps, :class:`jaxclust.Constraints`) ride in the same table as log-weights: slot k's log weight gains
``sum over the group's answered partners in k of w``, ``w = +-ln((1 - eps) / eps)`` (+ must, - cannot); the
partners outside k contribute the same factor to every option and drop out, and "new" gains 0. Group arrays
are padded to ``n`` rows (padded rows have size 0 and never move), so adding constraints between rounds keeps
every shape.

Capacity: ``K`` slots per state. If a group needs a new component and every slot is occupied the new option is
unavailable, and the sweep's info says ``overflow``: the driver (:func:`jaxclust.dpmm.chains.run_chains`) then
grows K and redoes the block, so no draw is ever silently truncated.

Usage (the state and data: :mod:`jaxclust.dpmm.state`)::

    data = prepare(X, constraints, family)          # host: group statistics, partner lists
    state = init(z_groups, data, family, alpha, K)
    state, info = sweep(key, state, data, family, alpha_prior)   # alpha_prior=None keeps alpha fixed
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln

from jaxclust.dpmm.draws import categorical
from jaxclust.dpmm.state import GibbsState, GroupData, MoveInfo, finish, no_moves, partner_terms

__all__ = ["sweep", "visiting_order", "crp_log_weights", "hub_visits", "spill_terms"]


def _dim(stats) -> int:
    """Feature dimension D of group statistics (the trailing axis of the group means / counts)."""
    return stats[1].shape[-1]


def visiting_order(key, valid: jax.Array) -> jax.Array:
    """A random order (n,) int32 of the rows, the ``valid`` (n,) ones first.

    One sort of 32-bit words, each row's index in the low bits under random bits: a single-operand sort, cheaper
    on XLA's CPU backend than a float key sorted with the indices as a second operand. Rows whose random bits tie
    keep their index order, so the order is not exactly uniform over permutations; a sweep does not need it to be: any
    order drawn without looking at the state makes each step a Gibbs update of the same posterior.
    """
    n = valid.shape[0]
    n_bits = max(1, (n - 1).bit_length())
    if n_bits > 23:  # fewer than 8 random bits would be left: sort a float key with the indices instead
        return jnp.argsort(jax.random.uniform(key, (n,)) + 2.0 * (~valid)).astype(jnp.int32)
    word = (jax.random.bits(key, (n,), jnp.uint32) >> (n_bits + 1)) << n_bits
    word = word | jnp.arange(n, dtype=jnp.uint32) | jnp.where(valid, jnp.uint32(0), jnp.uint32(1 << 31))
    return (jnp.sort(word) & jnp.uint32((1 << n_bits) - 1)).astype(jnp.int32)


def crp_log_weights(counts, m, crp_table, log_alpha):
    """The CRP part of a group's log-weights over the slots ``(K,)``: ``log Gamma(c + m) - log Gamma(c)`` for an
    occupied slot of count ``c`` (``m``: the group's size), ``log alpha + log Gamma(m)`` for the first empty slot
    (the "new" component), -inf for the other empty ones; and whether there was an empty slot. ``crp_table``:
    ``log Gamma`` of the counts, tabulated."""
    occupied = counts > 0
    first_empty = jnp.argmax(~occupied)
    has_empty = ~occupied[first_empty]
    is_new = (jnp.arange(counts.shape[0]) == first_empty) & has_empty
    c_int = counts.astype(jnp.int32)
    m_int = jnp.maximum(m, 1.0).astype(jnp.int32)
    log_w = jnp.where(
        occupied,
        crp_table[c_int + m_int] - crp_table[c_int],
        jnp.where(is_new, log_alpha + crp_table[m_int], jnp.asarray(-jnp.inf, crp_table.dtype)),
    )
    return log_w, has_empty


def hub_visits(key, data: GroupData, dtype):
    """The hubs (groups with spill rows) in a random order, then -1 padding ``(n_spill_rows,)``, their uniforms,
    and their number (the data's, the same for every chain)."""
    n_spill_rows = data.spill.shape[0]
    owner = data.spill_owner
    first = (owner >= 0) & (data.spill_span[jnp.maximum(owner, 0), 0] == jnp.arange(n_spill_rows))
    k_order, k_u = jax.random.split(key)
    hubs = jnp.where(first, owner, -1)[
        jnp.argsort(jax.random.uniform(k_order, (n_spill_rows,)) + 2.0 * ~first)
    ]
    return hubs, jax.random.uniform(k_u, (n_spill_rows,), dtype=dtype), jnp.sum(first)


def spill_terms(data: GroupData, g, z, hub_pass, forbidden, soft):
    """``forbidden`` (K,) and ``soft`` (K,) with the partners on group ``g``'s spill rows added, in a loop over
    those rows that has no iteration unless ``hub_pass`` (traced) is true."""
    slot_ids = jnp.arange(forbidden.shape[0])
    first, n_spill = data.spill_span[g, 0], jnp.where(hub_pass, data.spill_span[g, 1], 0)

    def more(i, acc):
        q = data.spill[first + i]
        f, w = partner_terms(jnp.where(q >= 0, z[jnp.maximum(q, 0)], -1), data.spill_w[first + i], slot_ids)
        return acc[0] | f, acc[1] + w

    return jax.lax.fori_loop(0, n_spill, more, (forbidden, soft))


def sweep(key, state: GibbsState, data: GroupData, family, alpha_prior=None) -> tuple[GibbsState, MoveInfo]:
    """One sweep, a move ``(state, info)``: every group once in a random order, an exact refresh, then
    (optionally) alpha. ``info.overflow``: a group's "new" option was missing (every slot occupied).

    Groups with spill rows (hubs) are visited after the others, in a random order of their own; only their steps
    read spill rows (the other steps' loop over them has no iteration). One loop runs both passes, so the step is
    compiled once. The order depends on the constraints, never on the state, so each step stays a Gibbs update of
    the same posterior.

    Parameters
    ----------
    key : PRNG key
    state : GibbsState (one chain; ``vmap`` for many)
    data : GroupData
    family : prepared family (NormalGamma, NormalInverseWishart or DirichletMultinomial)
    alpha_prior : tuple (shape, rate) or (shape, rate, infer) of arrays, or None to keep alpha fixed; with
        ``infer`` (a traced bool) one compiled sweep serves both fixed and inferred alpha
    """
    K = state.counts.shape[0]
    n_rows = state.z.shape[0]
    dtype = state.counts.dtype
    k_perm, k_u, k_alpha = jax.random.split(key, 3)
    order = visiting_order(k_perm, data.valid)  # padded rows last (they are no-ops anyway)
    us = jax.random.uniform(k_u, (n_rows,), dtype=dtype)
    prior = family.prior_slot()
    slot_ids = jnp.arange(K)
    # count-indexed tables: lgamma(c) for the CRP and the family's count-only terms (no lgamma inside the
    # scan)
    n_max = n_rows + 1
    crp_table = gammaln(jnp.maximum(jnp.arange(n_max + 1, dtype=dtype), 1.0))
    table = family.count_table(n_max, _dim(data.stats))
    log_alpha = jnp.log(state.alpha)
    neg_inf = jnp.asarray(-jnp.inf, dtype)

    n_spill_rows = data.spill.shape[0]
    # rows each pass moves: the first leaves hubs to the second (one gather per step, as without spill rows)
    movable = data.valid & (data.spill_span[:, 1] == 0) if n_spill_rows else data.valid
    movable_hub = data.valid & (data.spill_span[:, 1] > 0)

    def step(carry, xs, hub_pass):
        # hub_pass: False without spill rows (no hub code at all), else a traced flag: the step is in the hubs' pass
        z, counts, slots, overflow = carry
        g, u = xs
        g = jnp.maximum(g, 0)  # the hub list's padding (-1) is a no-op step
        gs = jax.tree.map(lambda a: a[g], data.stats)
        m = gs.size
        valid = (
            movable[g]
            if hub_pass is False
            else jnp.where(hub_pass, movable_hub[g] & (xs[0] >= 0), movable[g])
        )
        k_old = z[g]
        # remove the group from its slot (an emptied slot is reset to the prior exactly)
        c_old = counts[k_old] - m
        removed = family.remove(jax.tree.map(lambda a: a[k_old], slots), gs)
        removed = jax.tree.map(lambda p, r: jnp.where(c_old > 0, r, p), prior, removed)
        slots = jax.tree.map(lambda a, r: a.at[k_old].set(r), slots, removed)
        counts = counts.at[k_old].set(c_old)
        log_w, has_empty = crp_log_weights(counts, m, crp_table, log_alpha)
        # cannot-links forbid the slots of the group's partners; soft answers weigh them
        partners = data.partners[g]
        partner_slot = jnp.where(partners >= 0, z[jnp.maximum(partners, 0)], -1)
        forbidden, soft = partner_terms(partner_slot, data.partner_w[g], slot_ids)
        if hub_pass is not False:  # a hub's further partners (no iteration outside the hubs' pass)
            forbidden, soft = spill_terms(data, g, z, hub_pass, forbidden, soft)
        logits = jnp.where(forbidden, neg_inf, log_w + family.log_pred(slots, gs, counts, table) + soft)
        logits = jnp.where(valid, logits, jnp.where(slot_ids == k_old, 0.0, neg_inf))
        overflow = overflow | (valid & ~has_empty)
        k_new = categorical(logits, u)
        k_new = jnp.where(k_new >= 0, k_new, k_old)  # -1: only a rounding accident (see categorical)
        added = family.add(jax.tree.map(lambda a: a[k_new], slots), gs)
        slots = jax.tree.map(lambda a, r: a.at[k_new].set(r), slots, added)
        counts = counts.at[k_new].add(m)
        z = z.at[g].set(k_new)
        return (z, counts, slots, overflow), None

    carry = (state.z, state.counts, state.slots, jnp.asarray(False))
    if not n_spill_rows:
        carry, _ = jax.lax.scan(lambda c, x: step(c, x, False), carry, (order, us))
    else:
        # the hubs: each is the owner of the first of its spill rows, in a random order, then -1 padding; they
        # are visited after all other groups, by the same loop (one compiled step), which runs exactly the
        # hubs' steps after the others' (their count is the data's, the same for every chain)
        hubs, u_hubs, n_hubs = hub_visits(jax.random.fold_in(k_u, 1), data, dtype)
        groups, uniforms = jnp.concatenate([order, hubs]), jnp.concatenate([us, u_hubs])
        carry = jax.lax.fori_loop(
            0,
            n_rows + n_hubs,
            lambda i, c: step(c, (groups[i], uniforms[i]), i >= n_rows)[0],
            carry,
        )
    z, _, _, overflow = carry
    return finish(k_alpha, z, state, data, family, alpha_prior), no_moves(overflow)
