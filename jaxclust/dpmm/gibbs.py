"""One collapsed Gibbs sweep of the constrained DPMM, as a pure jittable function.

The unit of sampling is the must-link *group* (singletons are groups of one). For a group G of m items and
slot k holding n_k items (Neal 2000, Alg. 3, extended to blocks; docs/algorithms/dpmm.md (d), (f))::

    P(z_G = k)   ∝ Γ(n_k + m) / Γ(n_k) · p(X_G | X_k)        (k occupied, no cannot-link partner of G in k)
    P(z_G = new) ∝ α · Γ(m) · p(X_G)                           (the first empty slot)

Cannot-links are a mask over slots gathered from the padded partner lists, so the sweep is the same code with
or without constraints and runs under ``vmap`` over chains. The lists have a fixed width; a group with more
partners continues its list in spill rows (:class:`jaxclust.constraints.PartnerRows`), read only when that group
is drawn, so answers that pile up on one group do not change the compiled shapes. Soft answers (answers wrong
with probability eps, :class:`jaxclust.Constraints`) ride in the same table as log-weights: slot k's log weight gains
``sum over the group's answered partners in k of w``, ``w = +-ln((1 - eps) / eps)`` (+ must, - cannot); the
partners outside k contribute the same factor to every option and drop out, and "new" gains 0. Group arrays
are padded to ``n`` rows (padded rows have size 0 and never move), so adding constraints between rounds keeps
every shape.

Capacity: ``K`` slots per state. If a group needs a new component and every slot is occupied the new option is
unavailable, and ``overflow`` is set: the caller (:func:`jaxclust.dpmm.chains.run_chains`) then grows K and
redoes the block, so no draw is ever silently truncated.

Usage::

    data = prepare(X, constraints, family)          # host: group statistics, partner lists
    state = init(z_groups, data, family, alpha, K)
    state = sweep(key, state, data, family, alpha_prior)   # alpha_prior=None keeps alpha fixed
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from jaxclust.constraints import MIN_PARTNER_CAPACITY, Constraints
from jaxclust.constraints import partner_capacity as capacity_for
from jaxclust.dpmm import rows as _rows
from jaxclust.dpmm.alpha import escobar_west

__all__ = [
    "partner_terms",
    "spill_terms",
    "answer_log_likelihood",
    "GroupData",
    "GibbsState",
    "prepare",
    "init",
    "sweep",
    "finish",
    "build_kernel",
    "log_joint",
    "pad_capacity",
    "layout",
]


class GroupData(NamedTuple):
    """Per-fit constants (no chain axis).

    stats : family statistics, leading axis n_rows (rows >= n_groups have size 0)
    valid : (n_rows,) bool, True for real groups
    partners : (n_rows, cap) int32 group-level partners (cannot-links and soft answers), -1 padded
    partner_w : (n_rows, cap) float log-weight of each partner: -inf for a cannot-link, the answers' net
        ``ln((1 - eps) / eps)`` (+ for must, - for cannot) for soft answers (:class:`jaxclust.Constraints`)
    spill : (S, cap) int32 the partners of groups with more than ``cap``, continued (-1 padded; S may be 0)
    spill_w : (S, cap) float their log-weights
    spill_owner : (S,) int32 the group of each spill row (-1: unused)
    spill_span : (n_rows, 2) int32 each group's first spill row and number of spill rows
    group_of : (n_items,) int32 group of each item
    n_items : () float, N (for the CRP normaliser and the alpha update)
    log_const : () float, a z-independent constant of the log joint (multinomial coefficients)
    colour : (n_rows,) int32 colour class of each group in the cannot-link graph (the parallel sampler)
    n_colours : () int32 number of colour classes
    feat : (n_rows, F) the family's log-likelihood features of each group (the parallel sampler; F = 0 when
        not prepared)
    """

    stats: Any
    valid: jax.Array
    partners: jax.Array
    partner_w: jax.Array
    spill: jax.Array
    spill_w: jax.Array
    spill_owner: jax.Array
    spill_span: jax.Array
    group_of: jax.Array
    n_items: jax.Array
    log_const: jax.Array
    colour: jax.Array
    n_colours: jax.Array
    feat: jax.Array


class GibbsState(NamedTuple):
    """Sampler state of one chain.

    z : (n_rows,) int32 slot of each group
    counts : (K,) float number of items per slot
    slots : family posterior parameters per slot, leading axis K
    alpha : () concentration
    overflow : () bool, a new component was needed while all K slots were occupied
    log_joint : () ln p(X, z | alpha) of the current state
    """

    z: jax.Array
    counts: jax.Array
    slots: Any
    alpha: jax.Array
    overflow: jax.Array
    log_joint: jax.Array


def prepare(
    X: np.ndarray,
    constraints,
    family,
    dtype=jnp.float32,
    partner_capacity: int | None = None,
    log_jacobian: float = 0.0,
    features: bool = False,
) -> GroupData:
    """Host-side packing of data and constraints (NumPy in, device arrays out).

    Parameters
    ----------
    X : np.ndarray, shape (n, D)
        Data as the family expects it (already centred if the caller centres).
    constraints : jaxclust.Constraints or None
    family : a prepared family (``family.check(X)`` already applied)
    dtype : float dtype of the statistics
    partner_capacity : int, optional
        Width of the partner table (default ``MIN_PARTNER_CAPACITY``); groups with more partners continue in
        spill rows, whose number (a power of two, at least ``MIN_SPILL_ROWS``) is the only shape that grows
        with the constraints.
    log_jacobian : float
        Added to the log joint, e.g. to report it in the user's units when ``X`` was rescaled
        (:func:`jaxclust.dpmm.model.prepare_data`).
    features : bool
        Also compute the log-likelihood features of the parallel sampler (``family.loglik_features``).
    """
    n = X.shape[0]
    group_of, n_groups, table, colour, n_colours = layout(constraints, n, partner_capacity)
    stats = family.group_stats(X, group_of, n)
    log_const = float(np.sum(stats.coef)) if hasattr(stats, "coef") else 0.0
    log_const += float(log_jacobian) + (0.0 if constraints is None else constraints.log_answer_constant)
    stats = jax.tree.map(lambda a: jnp.asarray(a, dtype), stats)
    # one compiled function rather than an eager op (a compile each) per step of the formula
    feat = jax.jit(type(family).loglik_features)(family, stats) if features else jnp.zeros((n, 0), dtype)
    return GroupData(
        stats=stats,
        valid=jnp.asarray(np.arange(n) < n_groups),
        partners=jnp.asarray(table.partners),
        partner_w=jnp.asarray(table.weights, dtype),
        spill=jnp.asarray(table.spill),
        spill_w=jnp.asarray(table.spill_weights, dtype),
        spill_owner=jnp.asarray(table.spill_owner),
        spill_span=jnp.asarray(table.spill_span),
        group_of=jnp.asarray(group_of),
        n_items=jnp.asarray(n, dtype),
        log_const=jnp.asarray(log_const, dtype),
        colour=jnp.asarray(colour),
        n_colours=jnp.asarray(n_colours, jnp.int32),
        feat=feat,
    )


def layout(constraints, n: int, partner_capacity: int | None = None, spill: bool = True):
    """Host-side group layout of ``n`` items: ``(group_of (n,), n_groups, table, colour (n,), n_colours)``,
    ``table`` a :class:`jaxclust.constraints.PartnerRows` (see :class:`GroupData` and :func:`prepare`).
    ``spill=False``: no spill rows; the width grows to the largest degree (a power of two) instead."""
    cap = MIN_PARTNER_CAPACITY if partner_capacity is None else partner_capacity
    if constraints is None:
        constraints = Constraints(n)
    if not spill:
        cap = max(cap, capacity_for(constraints.max_partner_degree))
    table = constraints.partner_rows(cap, n_rows=n, spill_rows=None if spill else 0)
    colour, n_colours = constraints.colouring(n)
    return constraints.group_of.astype(np.int32), constraints.n_groups, table, colour, n_colours


def _dim(stats) -> int:
    """Feature dimension D of group statistics (the trailing axis of the group means / counts)."""
    return stats[1].shape[-1]


def _refresh(z, data: GroupData, family, K: int, rows=None):
    """Counts and slot parameters recomputed from the assignment (exact, centred; no accumulated drift).
    ``rows``: the rows are split over devices (:mod:`jaxclust.dpmm.rows`); the sums are then reduced."""
    counts = _rows.segment_sum(data.stats.size, z, K, rows)  # padded rows have size 0
    return counts, family.slots_from_groups(z, data.stats, K, _rows.axis_name(rows))


def partner_terms(partner_slot, partner_w, slot_ids):
    """For one group: ``(forbidden (K,), soft (K,))`` from its partners' slots (cap,) and weights (cap,): the
    slots of cannot-linked partners, and per slot the summed log-weights of the soft answers with partners
    in it (0 where none, so hard-only constraints give exactly the mask)."""
    hit = partner_slot[:, None] == slot_ids[None, :]  # (cap, K)
    hard = jnp.isneginf(partner_w)[:, None]
    forbidden = jnp.any(hit & hard, axis=0)
    soft = jnp.sum(jnp.where(hit & ~hard, partner_w[:, None], 0.0), axis=0)
    return forbidden, soft


def spill_terms(z, data: GroupData, slot_ids):
    """:func:`partner_terms` of every spill row added onto its group's row: ``(forbidden (n_rows, K), soft
    (n_rows, K))``, from all groups' slots ``z`` (n_rows,). Only for rows on one device (spill rows are not
    split over devices: :func:`layout` with ``spill=False`` gives none)."""
    n_rows, K = z.shape[0], slot_ids.shape[0]
    q = data.spill
    slot = jnp.where(q >= 0, z[jnp.maximum(q, 0)], -1)
    forbidden, soft = jax.vmap(partner_terms, (0, 0, None))(slot, data.spill_w, slot_ids)  # (S, K)
    owner = jnp.where(data.spill_owner >= 0, data.spill_owner, n_rows)  # unused rows drop out
    return (
        jnp.zeros((n_rows, K), bool).at[owner].max(forbidden, mode="drop"),
        jnp.zeros((n_rows, K), soft.dtype).at[owner].add(soft, mode="drop"),
    )


def answer_log_likelihood(z, data: GroupData, rows=None) -> jax.Array:
    """The ``z``-dependent part of ``ln p(answers | z)``: the soft weights of partner pairs sharing a slot
    (each pair seen from both ends, so halved). Cannot-links (``-inf``) are satisfied in every valid state.
    ``rows``: the rows are split over devices (partners' labels are all-gathered, the sum reduced)."""
    if rows is not None and not rows.partners:
        return jnp.zeros((), data.partner_w.dtype)
    p, z_all = data.partners, _rows.gather(z, rows)
    same = (p >= 0) & (z_all[jnp.maximum(p, 0)] == z[:, None]) & data.valid[:, None]
    total = 0.5 * jnp.sum(jnp.where(same & ~jnp.isneginf(data.partner_w), data.partner_w, 0.0))
    if data.spill.shape[0]:  # one device only (see spill_terms)
        q, owner = data.spill, data.spill_owner
        same = (q >= 0) & (owner[:, None] >= 0) & (z[jnp.maximum(q, 0)] == z[jnp.maximum(owner, 0)][:, None])
        total = total + 0.5 * jnp.sum(jnp.where(same & ~jnp.isneginf(data.spill_w), data.spill_w, 0.0))
    return _rows.psum(total, rows)


def log_joint(counts, slots, alpha, data: GroupData, family, z=None, rows=None) -> jax.Array:
    """``ln p(X, A, z | alpha)``: CRP partition prior, each occupied slot's log marginal likelihood and (with
    ``z``) the soft answers' likelihood (``rows``: see :func:`answer_log_likelihood`)."""
    occupied = counts > 0
    n_comp = occupied.sum()
    crp = (
        n_comp * jnp.log(alpha)
        + gammaln(alpha)
        - gammaln(alpha + data.n_items)
        + jnp.sum(jnp.where(occupied, gammaln(jnp.where(occupied, counts, 1.0)), 0.0))
    )
    lml = jnp.sum(jnp.where(occupied, family.log_marginal(slots), 0.0))
    answers = 0.0 if z is None else answer_log_likelihood(z, data, rows)
    return crp + lml + answers + data.log_const


def init(z, data: GroupData, family, alpha, capacity: int, rows=None) -> GibbsState:
    """A state from group assignments ``z`` (n_rows,) with slots ``< capacity`` (satisfying the
    constraints); ``rows``: the rows are split over devices (:mod:`jaxclust.dpmm.rows`)."""
    z = jnp.asarray(z, jnp.int32)
    alpha = jnp.asarray(alpha, data.n_items.dtype)
    counts, slots = _refresh(z, data, family, capacity, rows)
    return GibbsState(
        z, counts, slots, alpha, jnp.asarray(False), log_joint(counts, slots, alpha, data, family, z, rows)
    )


def pad_capacity(state: GibbsState, family, capacity: int) -> GibbsState:
    """The same state with ``capacity`` slots (new slots empty); works on batched (chain-leading) states
    too."""
    K = state.counts.shape[-1]
    extra = capacity - K
    batch = state.counts.shape[:-1]
    prior = family.prior_slot()
    pad = jax.tree.map(lambda p: jnp.broadcast_to(p, batch + (extra,) + p.shape), prior)
    slots = jax.tree.map(
        lambda a, p: jnp.concatenate([a, p.astype(a.dtype)], axis=len(batch)), state.slots, pad
    )
    counts = jnp.concatenate([state.counts, jnp.zeros(batch + (extra,), state.counts.dtype)], axis=-1)
    return state._replace(counts=counts, slots=slots, overflow=jnp.zeros_like(state.overflow))


def sweep(key, state: GibbsState, data: GroupData, family, alpha_prior=None) -> GibbsState:
    """One sweep: every group once in a random order, then (optionally) alpha, then an exact refresh.

    Groups with spill rows (hubs) are visited after the others, in a random order of their own: a loop over
    exactly the hubs whose steps read spill rows, so the steps of all other groups carry no loop over them. The order
    depends on the constraints, never on the state, so each step stays a Gibbs update of the same posterior.

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
    # random visiting order, padded rows last (they are no-ops anyway)
    order = jnp.argsort(jax.random.uniform(k_perm, (n_rows,)) + 2.0 * (~data.valid))
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
    # rows each scan moves: the first leaves hubs to the second (one gather per step, as without spill rows)
    movable = data.valid & (data.spill_span[:, 1] == 0) if n_spill_rows else data.valid
    movable_hub = data.valid & (data.spill_span[:, 1] > 0)

    def step(carry, xs, hubs: bool):
        z, counts, slots, overflow = carry
        g, u = xs
        g = jnp.maximum(g, 0)  # the hub list's padding (-1) is a no-op step
        gs = jax.tree.map(lambda a: a[g], data.stats)
        m = gs.size
        valid = movable_hub[g] & (xs[0] >= 0) if hubs else movable[g]
        k_old = z[g]
        # remove the group from its slot (an emptied slot is reset to the prior exactly)
        c_old = counts[k_old] - m
        removed = family.remove(jax.tree.map(lambda a: a[k_old], slots), gs)
        removed = jax.tree.map(lambda p, r: jnp.where(c_old > 0, r, p), prior, removed)
        slots = jax.tree.map(lambda a, r: a.at[k_old].set(r), slots, removed)
        counts = counts.at[k_old].set(c_old)
        # CRP part of the weights: occupied slots, and the first empty slot as "new"
        occupied = counts > 0
        first_empty = jnp.argmax(~occupied)
        has_empty = ~occupied[first_empty]
        is_new = (slot_ids == first_empty) & has_empty
        c_int = counts.astype(jnp.int32)
        m_int = jnp.maximum(m, 1.0).astype(jnp.int32)
        log_w = jnp.where(
            occupied,
            crp_table[c_int + m_int] - crp_table[c_int],
            jnp.where(is_new, log_alpha + crp_table[m_int], neg_inf),
        )
        # cannot-links forbid the slots of the group's partners; soft answers weigh them
        partners = data.partners[g]
        partner_slot = jnp.where(partners >= 0, z[jnp.maximum(partners, 0)], -1)
        forbidden, soft = partner_terms(partner_slot, data.partner_w[g], slot_ids)
        if hubs:  # a hub's further partners: a loop over its spill rows
            first, n_spill = data.spill_span[g, 0], data.spill_span[g, 1]

            def more(i, acc):
                q = data.spill[first + i]
                f, w = partner_terms(
                    jnp.where(q >= 0, z[jnp.maximum(q, 0)], -1), data.spill_w[first + i], slot_ids
                )
                return acc[0] | f, acc[1] + w

            forbidden, soft = jax.lax.fori_loop(0, n_spill, more, (forbidden, soft))
        logits = jnp.where(forbidden, neg_inf, log_w + family.log_pred(slots, gs, counts, table) + soft)
        logits = jnp.where(valid, logits, jnp.where(slot_ids == k_old, 0.0, neg_inf))
        overflow = overflow | (valid & ~has_empty)
        # inverse-CDF draw: one uniform, first index whose cumulative weight exceeds it
        cdf = jnp.cumsum(jnp.exp(logits - jnp.max(logits)))
        k_new = jnp.argmax(cdf > u * cdf[-1]).astype(jnp.int32)
        added = family.add(jax.tree.map(lambda a: a[k_new], slots), gs)
        slots = jax.tree.map(lambda a, r: a.at[k_new].set(r), slots, added)
        counts = counts.at[k_new].add(m)
        z = z.at[g].set(k_new)
        return (z, counts, slots, overflow), None

    carry = (state.z, state.counts, state.slots, state.overflow)
    carry, _ = jax.lax.scan(lambda c, x: step(c, x, False), carry, (order, us))
    if n_spill_rows:
        # the hubs: each is the owner of the first of its spill rows, in a random order, then -1 padding; a
        # loop over exactly the hubs (their count is the data's, the same for every chain), none without hubs
        rows = jnp.arange(n_spill_rows)
        owner = data.spill_owner
        first = (owner >= 0) & (data.spill_span[jnp.maximum(owner, 0), 0] == rows)
        k_hub_order, k_hub_u = jax.random.split(jax.random.fold_in(k_u, 1))
        hubs = jnp.where(first, owner, -1)[
            jnp.argsort(jax.random.uniform(k_hub_order, (n_spill_rows,)) + 2.0 * ~first)
        ]
        u_hubs = jax.random.uniform(k_hub_u, (n_spill_rows,), dtype=dtype)
        carry = jax.lax.fori_loop(
            0, jnp.sum(first), lambda i, c: step(c, (hubs[i], u_hubs[i]), True)[0], carry
        )
    z, _, _, overflow = carry
    return finish(k_alpha, z, state._replace(overflow=overflow), data, family, alpha_prior)


def finish(key, z, state: GibbsState, data: GroupData, family, alpha_prior=None, rows=None) -> GibbsState:
    """End of an iteration: counts and slots recomputed from ``z`` (exact), alpha | K (Escobar-West) when
    ``alpha_prior`` is given (see :func:`sweep`), and the log joint. ``rows``: the rows are split over devices
    (:mod:`jaxclust.dpmm.rows`); counts, slots, alpha and the log joint are then the same on every device."""
    K = state.counts.shape[0]
    counts, slots = _refresh(z, data, family, K, rows)
    alpha = state.alpha
    if alpha_prior is not None:
        n_comp = jnp.sum(counts > 0).astype(counts.dtype)
        drawn = escobar_west(key, alpha, n_comp, data.n_items, alpha_prior[0], alpha_prior[1])
        alpha = jnp.where(alpha_prior[2], drawn, alpha) if len(alpha_prior) == 3 else drawn
    return GibbsState(
        z, counts, slots, alpha, state.overflow, log_joint(counts, slots, alpha, data, family, z, rows)
    )


def build_kernel(family, alpha_prior=None):
    """Blackjax-style kernel ``kernel(key, state, data) -> state`` closing over the family and alpha prior."""

    def kernel(key, state: GibbsState, data: GroupData) -> GibbsState:
        return sweep(key, state, data, family, alpha_prior)

    return kernel
