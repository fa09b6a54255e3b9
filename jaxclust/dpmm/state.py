"""The DPMM sampler's state and data, and what every move shares: ``init``, the log joint, the exact refresh.

Every sampler (:mod:`jaxclust.dpmm.gibbs`, :mod:`jaxclust.dpmm.splitmerge`, :mod:`jaxclust.dpmm.subcluster`)
moves a :class:`GibbsState` (one chain: each group's slot, the slots' counts and posterior parameters, alpha and the
log joint) given :class:`GroupData` (per-fit constants: group statistics, the partner table
of cannot-links and soft answers, the colouring). The unit of sampling is the must-link *group*; group arrays are
padded to ``n`` rows (padded rows have size 0 and never move), so adding constraints between rounds keeps every
shape. Cannot-links and soft answers are read from a fixed-width partner table; a group with more partners
continues its list in spill rows (:class:`jaxclust.partner_tables.PartnerRows`).

Every move is ``(key, state, data) -> (state, info)``: ``info`` is a :class:`MoveInfo` (what it proposed and
accepted, and whether it needed a slot it did not have), so nothing about a move's bookkeeping lives in the state.

Usage::

    data = prepare(X, constraints, family)          # host: group statistics, partner lists
    state = init(z_groups, data, family, alpha, K)   # K slots
    state = finish(key, z_new, state, data, family, alpha_prior)   # end of an iteration: refresh, alpha, log joint
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from jaxclust.constraints import Constraints
from jaxclust.dpmm import rows as _rows
from jaxclust.dpmm.alpha import escobar_west
from jaxclust.partner_tables import MIN_PARTNER_CAPACITY
from jaxclust.partner_tables import partner_capacity as capacity_for
from jaxclust.transfer import to_device

__all__ = [
    "GroupData",
    "GibbsState",
    "MoveInfo",
    "no_moves",
    "combine",
    "prepare",
    "layout",
    "init",
    "refresh",
    "finish",
    "refreshed",
    "alpha_move",
    "alpha_prior_arrays",
    "log_joint",
    "answer_log_likelihood",
    "partner_terms",
    "spill_terms",
    "pad_capacity",
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
    log_joint : () ln p(X, z | alpha) of the current state
    """

    z: jax.Array
    counts: jax.Array
    slots: Any
    alpha: jax.Array
    log_joint: jax.Array


class MoveInfo(NamedTuple):
    """What one move (or one iteration of composed moves) did to one chain; every field () and summed over
    the moves, ``overflow`` or-ed.

    proposed_splits, accepted_splits : int32, split proposals (components of at least two groups paired with
        an empty label) and how many were accepted
    proposed_merges, accepted_merges : int32, merge proposals (pairs of components, those a cannot-link
        blocks included) and how many were accepted
    overflow : bool, a move needed a new component while every slot was occupied; it left the state as if
        the option did not exist, so the driver grows the slots and redoes the draws
        (:func:`jaxclust.dpmm.chains.run_chains`): no retained sample comes from a truncated sampler
    """

    proposed_splits: jax.Array
    accepted_splits: jax.Array
    proposed_merges: jax.Array
    accepted_merges: jax.Array
    overflow: jax.Array


def no_moves(overflow=False) -> MoveInfo:
    """A :class:`MoveInfo` of a move that proposes no split or merge."""
    zero = jnp.zeros((), jnp.int32)
    return MoveInfo(zero, zero, zero, zero, jnp.asarray(overflow, bool))


def combine(a: MoveInfo, b: MoveInfo) -> MoveInfo:
    """The info of ``a`` then ``b``: counts added, overflow or-ed."""
    return MoveInfo(*(x + y for x, y in zip(a[:4], b[:4], strict=True)), a.overflow | b.overflow)


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
    stats = jax.tree.map(lambda a: to_device(a, dtype), stats)
    # one compiled function rather than an eager op (a compile each) per step of the formula
    feat = (
        jax.jit(type(family).loglik_features)(family, stats)
        if features
        else to_device(np.zeros((n, 0)), dtype)
    )
    return GroupData(
        stats=stats,
        valid=to_device(np.arange(n) < n_groups),
        partners=to_device(table.partners),
        partner_w=to_device(table.weights, dtype),
        spill=to_device(table.spill),
        spill_w=to_device(table.spill_weights, dtype),
        spill_owner=to_device(table.spill_owner),
        spill_span=to_device(table.spill_span),
        group_of=to_device(group_of),
        n_items=to_device(n, dtype),
        log_const=to_device(log_const, dtype),
        colour=to_device(colour),
        n_colours=to_device(n_colours, np.int32),
        feat=feat,
    )


def layout(constraints, n: int, partner_capacity: int | None = None, spill: bool = True):
    """Host-side group layout of ``n`` items: ``(group_of (n,), n_groups, table, colour (n,), n_colours)``,
    ``table`` a :class:`jaxclust.partner_tables.PartnerRows` (see :class:`GroupData` and :func:`prepare`).
    ``spill=False``: no spill rows; the width grows to the largest degree (a power of two) instead."""
    cap = MIN_PARTNER_CAPACITY if partner_capacity is None else partner_capacity
    if constraints is None:
        constraints = Constraints(n)
    if not spill:
        cap = max(cap, capacity_for(constraints.max_partner_degree))
    table = constraints.partner_rows(cap, n_rows=n, spill_rows=None if spill else 0)
    colour, n_colours = constraints.colouring(n)
    return constraints.group_of.astype(np.int32), constraints.n_groups, table, colour, n_colours


def refresh(z, data: GroupData, family, K: int, rows=None):
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
    counts, slots = refresh(z, data, family, capacity, rows)
    return GibbsState(z, counts, slots, alpha, log_joint(counts, slots, alpha, data, family, z, rows))


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
    return state._replace(counts=counts, slots=slots)


def refreshed(z, state: GibbsState, data: GroupData, family, rows=None) -> GibbsState:
    """The state with assignment ``z`` (n_rows,): counts and slots recomputed from it (:func:`refresh`), alpha
    kept, and its log joint."""
    counts, slots = refresh(z, data, family, state.counts.shape[0], rows)
    return GibbsState(
        z, counts, slots, state.alpha, log_joint(counts, slots, state.alpha, data, family, z, rows)
    )


def alpha_prior_arrays(alpha_prior, dtype):
    """``(shape, rate, infer)`` on the device, ``infer`` a bool array: fixed and inferred alpha share one
    compiled kernel (:func:`alpha_move`). ``alpha_prior``: (shape, rate) or None."""
    infer = alpha_prior is not None
    a, b = alpha_prior if infer else (1.0, 1.0)
    return to_device(a, dtype), to_device(b, dtype), to_device(infer)


def alpha_move(key, state: GibbsState, data: GroupData, family, alpha_prior=None, rows=None):
    """The move alpha | K (Escobar-West) when ``alpha_prior`` is given, as ``(state, info)``.

    ``alpha_prior``: ``(shape, rate)`` or ``(shape, rate, infer)`` of arrays, ``infer`` a traced bool (one
    compiled move serves fixed and inferred alpha), or None to keep alpha fixed. ``state``'s counts and slots
    must match its ``z``; the log joint is recomputed with the new alpha."""
    if alpha_prior is None:
        return state, no_moves()
    n_comp = jnp.sum(state.counts > 0).astype(state.counts.dtype)
    drawn = escobar_west(key, state.alpha, n_comp, data.n_items, alpha_prior[0], alpha_prior[1])
    alpha = jnp.where(alpha_prior[2], drawn, state.alpha) if len(alpha_prior) == 3 else drawn
    lj = log_joint(state.counts, state.slots, alpha, data, family, state.z, rows)
    return state._replace(alpha=alpha, log_joint=lj), no_moves()


def finish(key, z, state: GibbsState, data: GroupData, family, alpha_prior=None, rows=None) -> GibbsState:
    """End of an iteration: counts and slots recomputed from ``z`` (exact: no drift accumulated by a move's
    incremental updates), then :func:`alpha_move`. ``rows``: the rows are split over devices
    (:mod:`jaxclust.dpmm.rows`); counts, slots, alpha and the log joint are then the same on every device."""
    return alpha_move(key, refreshed(z, state, data, family, rows), data, family, alpha_prior, rows)[0]
