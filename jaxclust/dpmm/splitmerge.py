"""Exact split-merge moves for the constrained DPMM, proposed for every component at once.

Local moves (a Gibbs sweep over groups, or the sub-cluster sampler's parallel step) cannot split a component
that holds two well separated clusters: every intermediate state is improbable. This kernel proposes whole
splits and merges (Jain & Neal 2004; Dahl 2003) and accepts each by Metropolis-Hastings against the collapsed
posterior, so it is exact for the DPMM with must-link groups as atomic units and cannot-links as observations
(the prior restricted to feasible partitions). It is one pure jittable function, ``vmap``-able over chains.

One round
---------
1. **Pairing.** The ``K`` occupied slots are placed at random in ``L = 2 V`` labels (``V`` slots), and labels
   ``2p, 2p+1`` form pair ``p``. This is a fresh draw of a uniform placement, an auxiliary variable with target
   ``pi(z) / (L)_K`` (``(L)_K = L! / (L - K)!``), so each pair's move below is a reversible kernel on
   (partition, placement). A pair holding one component proposes its **split**, a pair holding two proposes
   their **merge**; pairs are disjoint, so all proposals are built in parallel from the same state.
2. **Launch (split proposal).** For a split of component C, two distinct seed groups ``i, j`` are drawn
   uniformly (probability ``1 / (m_C (m_C - 1))``, ``m`` = number of groups), then ``n_steps`` 2-means steps
   (weighted by item count, per-dimension scaled by C's variance; ``i`` pinned left, ``j`` right) give two
   centres, and each other group ``g`` goes right with probability ``sigma(l_g)``,
   ``l_g = -1/2 m_g sum_d [(f_gd - c_Rd)^2 - (f_gd - c_Ld)^2] / s_d + ln(n_R / n_L)`` (a shared diagonal
   Gaussian fitted to the 2-means split; ``l_g`` is linear in ``f_g``, so all groups cost one matrix
   product). The 2-means runs on C's groups among a uniform subsample of ``max(SUBSAMPLE,
   SUBSAMPLE_PER_SLOT V)`` groups (all groups when there are fewer) plus the two seeds: the subsample is
   auxiliary randomness drawn independently of the state. The proposal probability is ``q(A, B) =
   prod_g sigma(+-l_g)`` over the non-seed groups, a function of C's data, the seeds and the subsample only,
   so the reverse move evaluates the same ``q``.
3. **Merge proposal.** For components A, B in one pair, a side is drawn with probability 1/2 to keep the
   merged component, one seed is drawn uniformly in each (``1 / (m_A m_B)``), and the launch above is run on
   ``A u B`` with those seeds to give ``q(A, B)``, the probability that the reverse split proposes A, B.
4. **Acceptance**, sequentially over pairs (``K`` = occupied components just before the move)::

       ln a_split = ln alpha + lnG(n_A) + lnG(n_B) - lnG(n_C) + ln f(X_A) + ln f(X_B) - ln f(X_C)
                    + ln(1/2) - ln(m_A m_B) + ln(m_C (m_C - 1)) - ln q(A, B) - ln(L - K)
       ln a_merge = -(the same bracket, A and B the two components, C their union) + ln(L - K + 1)

   with ``n`` item counts, ``f`` the family's marginal likelihood, ``lnG`` = log-gamma. The first line is the
   ratio of collapsed posteriors ``pi(z') / pi(z)`` (CRP over items; the CRP normaliser cancels), the second
   the reverse/forward proposal ratio, the last the placement's target ratio. A merge of two components joined
   by any cannot-link has prior 0 and is rejected; a split of a feasible component is always feasible (groups
   are atomic, and no cannot-link lies inside one component). Soft answers between A and B (error rate eps,
   :class:`jaxclust.Constraints`) add ``-W`` to ``ln a_split`` (and ``+W`` to the merge's), ``W`` the sum of
   their log-weights ``+-ln((1 - eps) / eps)``: the split is what makes those answers' pairs apart.

The kernel changes the partition only; the new component of an accepted split takes any free slot. If a split
is accepted and no slot is free, the round's info says ``overflow`` and the driver grows the slots and redoes the
block (:mod:`jaxclust.dpmm.chains`), as for the Gibbs sweep: never a truncation.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln

from jaxclust.dpmm import rows as _rows
from jaxclust.dpmm import state as _state

__all__ = [
    "split_merge",
    "Pairs",
    "pairing",
    "seeds",
    "launch",
    "proposal",
    "log_ratio",
    "accept",
    "subsample_size",
    "KMEANS_STEPS",
    "SUBSAMPLE",
    "SUBSAMPLE_PER_SLOT",
    "MOVES",
]

#: The counts a round reports (fields of its :class:`jaxclust.dpmm.state.MoveInfo`), in this order.
MOVES = _state.MoveInfo._fields[:4]

# 2-means steps of a split launch: on separated data it converges in 2-3.
KMEANS_STEPS = 4
# Groups the 2-means of every launch sees at most: SUBSAMPLE, or SUBSAMPLE_PER_SLOT per component slot when
# that is more (a uniform subsample beyond that; the final allocation and its probability always cover every
# group). About 64 rows per component place two 2-means centres well; more only costs time (benchmarks/RESULTS.md).
SUBSAMPLE = 2048
SUBSAMPLE_PER_SLOT = 64
# Log-odds of a group's side are clipped so that no proposal probability is 0 (keeps the kernel irreducible).
MAX_LOGIT = 30.0
# Pseudo-groups of the whole sample's variance added to each launch's variance estimates (a pair seen through
# only its two seeds still gets a usable scale).
SHRINK = 2.0


def _segsum(x, seg, n):
    return jax.ops.segment_sum(x, seg, num_segments=n)


def subsample_size(n_pairs: int) -> int:
    """Rows the 2-means of a launch sees at most (static): ``max(SUBSAMPLE, SUBSAMPLE_PER_SLOT n_pairs)``."""
    return max(SUBSAMPLE, SUBSAMPLE_PER_SLOT * n_pairs)


def launch(words, feat, within, size, pair, valid, i_row, j_row, n_pairs, n_steps, rows=None):
    """3. The 2-means launch of every pair at once. Returns the (rows,) log-odds of the right side.

    Metropolis-Hastings term: none of its own. The launch is a function of the union's data, the seeds and the
    subsample only, so the reverse move evaluates the same probabilities, which :func:`proposal` turns into
    ``q(A, B)``.

    ``words``: (:func:`subsample_size`,) random 32-bit words that pick the subsample (any law independent of
    the state keeps the move exact; ``word mod n`` is the one used).

    ``rows``: the rows are split over devices (:mod:`jaxclust.dpmm.rows`). Below the subsample's size each
    device runs the 2-means on its own rows and every sum over rows is reduced (``psum``); above, the subsample
    rows are gathered to every device (exactly) and the 2-means runs on them alike everywhere.
    """
    n_rows = feat.shape[0] if rows is None else rows.n_rows
    dtype = feat.dtype
    if n_rows > subsample_size(n_pairs):
        n_valid = jnp.maximum(_rows.psum(jnp.sum(valid), rows), 1)  # valid rows are a prefix
        sub = jnp.concatenate(
            [
                (words % n_valid.astype(jnp.uint32)).astype(jnp.int32),
                jnp.maximum(i_row, 0),
                jnp.maximum(j_row, 0),
            ]
        )
        take = lambda x: _rows.take(x, sub, rows)  # noqa: E731
        red = lambda x: x  # noqa: E731  (the subsample is on every device: nothing to reduce)
    else:
        sub = _rows.row_ids(feat.shape[0], rows)  # arange(n_rows) on one device
        take = lambda x: x  # noqa: E731  (every row, in place)
        red = lambda x: _rows.psum(x, rows)  # noqa: E731
    f, wt, sp = take(feat), jnp.where(take(valid), take(size), 0.0), take(pair)
    wi = take(within)
    seg = jnp.where(wt > 0, sp, n_pairs)
    pin_i, pin_j = sub == i_row[sp], sub == j_row[sp]
    # whole-sample and per-pair variances (shrunk towards the whole sample's), from sums of weighted squares
    # (sum w (f - m)^2 = sum w f^2 - n m^2: no (rows, D) gather of means; the data are centred and scaled by
    # the caller, and any deterministic proposal is exact, so float32 cancellation only moves a scale a little)
    wf = wt[:, None] * f
    sq_rows = wf * f + wi  # (sub, D') each row's weighted square about 0, its members' scatter included
    tot = jnp.maximum(red(jnp.sum(wt)), 1.0)
    g_mean = red(jnp.sum(wf, 0)) / tot
    g_var = jnp.maximum(red(jnp.sum(sq_rows, 0)) / tot - g_mean**2, 0.0)
    g_var = jnp.maximum(g_var, 1e-6 * jnp.mean(g_var) + 1e-12)
    # one scatter for the three sums (each scatter is a loop of its own in the compiled program); sq (P, D') is
    # shared by the union's and the sides' scatter
    sums = red(_segsum(jnp.concatenate([wt[:, None], wf, sq_rows], axis=1), seg, n_pairs))
    D = f.shape[1]
    s0, s1, sq = sums[:, :1], sums[:, 1 : D + 1], sums[:, D + 1 :]
    mean = s1 / jnp.maximum(s0, 1e-30)
    dev2 = jnp.maximum(sq - s0 * mean**2, 0.0)
    scale = (s0 + SHRINK) / (dev2 + SHRINK * g_var)  # (P, D'): whitening of each union
    seed_feat = (_rows.take(feat, jnp.maximum(i_row, 0), rows), _rows.take(feat, jnp.maximum(j_row, 0), rows))
    centres = jnp.stack(seed_feat, axis=1).astype(dtype)

    def assign(c):
        # the side whose centre is nearer in the pair's scaled distance: d_R - d_L = f . a_p + b_p with
        # a_p = -2 s_p (c_R - c_L), b_p = s_p . (c_R^2 - c_L^2) (the f^2 terms cancel), so one (rows, P) matrix
        # product and a selection (gathers are slow on CPU)
        a = -2.0 * scale * (c[:, 1] - c[:, 0])
        b = jnp.sum(scale * (c[:, 1] ** 2 - c[:, 0] ** 2), -1)
        diff = jnp.take_along_axis(f @ a.T, sp[:, None], axis=1)[:, 0] + b[sp]
        side = (diff < 0).astype(jnp.int32)
        return jnp.where(pin_i, 0, jnp.where(pin_j, 1, side))

    def centroid(side):
        seg2 = jnp.where(wt > 0, 2 * sp + side, 2 * n_pairs)
        sums = red(_segsum(jnp.concatenate([wt[:, None], wf], axis=1), seg2, 2 * n_pairs))
        n = sums[:, 0]
        c = sums[:, 1:] / jnp.maximum(n, 1e-30)[:, None]
        return c.reshape(n_pairs, 2, -1), n.reshape(n_pairs, 2)

    centres = jax.lax.fori_loop(0, n_steps, lambda _, c: centroid(assign(c))[0], centres)
    centres, n_side = centroid(assign(centres))
    # pooled within-side scatter: the union's squares less each side's n c^2
    within_var = jnp.maximum(sq - jnp.sum(n_side[:, :, None] * centres**2, 1), 0.0)
    inv = (s0 + SHRINK) / (within_var + SHRINK * g_var)  # (P, D') pooled within-side precision
    # l_g = m_g (f_g . a_p + b_p) + ln(n_R / n_L): linear in f_g, so one (rows, P) product and a selection
    a = inv * (centres[:, 1] - centres[:, 0])
    b = -0.5 * jnp.sum(inv * (centres[:, 1] ** 2 - centres[:, 0] ** 2), -1)
    n_side = jnp.maximum(n_side, 1e-30)
    prior = jnp.log(n_side[:, 1]) - jnp.log(n_side[:, 0])
    lin = jnp.take_along_axis(feat @ a.T, pair[:, None], axis=1)[:, 0]
    return jnp.clip(size * (lin + b[pair]) + prior[pair], -MAX_LOGIT, MAX_LOGIT)


class Pairs(NamedTuple):
    """Step 1's draw, per pair ``p`` of labels ``2p, 2p+1`` (``P = V`` pairs): the placement of the slots and
    what each pair proposes."""

    label_of_slot: jax.Array  # (V,) int32, each slot's label in [0, 2V)
    is_merge: jax.Array  # (P,) bool, the pair holds two components: it proposes their merge
    is_split: jax.Array  # (P,) bool, the pair holds one component: it proposes its split
    keep: jax.Array  # (P,) int32, the side that keeps its slot (a merge) or holds the first seed (a split)
    keep_slot: jax.Array  # (P,) int32, the slot at the kept side (V: none)
    other_slot: jax.Array  # (P,) int32, the slot at the other side (V: none)


def pairing(bits, occupied) -> Pairs:
    """1. The occupied slots placed at uniformly random labels (a shuffle: sorting ``2V`` random 32-bit words
    ``bits[:2V]``), and a fair coin per merge pair (``bits[2V:3V]``) for the side that keeps its slot.

    Metropolis-Hastings term: the placement is a fresh draw of an auxiliary variable whose target is
    ``pi(z) / (L)_K`` (``L = 2V`` labels, ``K`` occupied slots); one more component costs ``ln(L - K)``, so a
    split's log acceptance has ``- ln(L - K)`` and a merge's ``+ ln(L - K + 1)`` (:func:`accept`)."""
    V = occupied.shape[0]
    n_labels, n_pairs = 2 * V, V
    label_of_slot = jnp.argsort(bits[:n_labels])[:V].astype(jnp.int32)
    slot_at = jnp.full((n_labels,), V, jnp.int32).at[label_of_slot].set(jnp.arange(V, dtype=jnp.int32))
    occ_pair = jnp.concatenate([occupied, jnp.zeros((1,), bool)])[slot_at].reshape(n_pairs, 2)
    is_merge = occ_pair[:, 0] & occ_pair[:, 1]
    is_split = occ_pair[:, 0] ^ occ_pair[:, 1]
    orient = (bits[n_labels : n_labels + n_pairs] >> 31).astype(jnp.int32)  # a fair coin per pair
    keep = jnp.where(is_merge, orient, jnp.where(occ_pair[:, 0], 0, 1))  # side that keeps / seeds left
    pair_slots = slot_at.reshape(n_pairs, 2)
    keep_slot = pair_slots[jnp.arange(n_pairs), keep]
    other_slot = pair_slots[jnp.arange(n_pairs), 1 - keep]
    return Pairs(label_of_slot, is_merge, is_split, keep, keep_slot, other_slot)


def seeds(u, lab, pairs: Pairs, valid, row_id, rows=None):
    """2. The seed groups of every pair, from one uniform per group row ``u`` (rows,) (a uniformly random
    order): a split's ``i, j`` are the first two groups of its component, a merge's the first group of each
    side (``i`` on the kept side). Returns ``(is_i, is_j)`` (rows,) and the seeds' rows ``(i_row, j_row)``
    (P,) (-1: none).

    Metropolis-Hastings term: an ordered pair of distinct seeds of a component of ``m_C`` groups has
    probability ``1 / (m_C (m_C - 1))``; a merge's seeds ``1 / (m_A m_B)``, times ``1/2`` for its coin. In a
    split's log acceptance: ``+ ln(m_C (m_C - 1)) - ln(m_A m_B) + ln(1/2)`` (:func:`log_ratio`)."""
    n_pairs = pairs.is_merge.shape[0]
    n_labels = 2 * n_pairs
    pair, side = lab // 2, lab % 2
    seg_lab = jnp.where(valid, lab, n_labels)
    pseg = jnp.where(valid, pair, n_pairs)
    u = jnp.where(valid, u, 2.0)
    first_u = _rows.segment_min(u, seg_lab, n_labels, rows)
    is_first = valid & (u == first_u[lab])
    second_u = _rows.segment_min(jnp.where(is_first, 2.0, u), seg_lab, n_labels, rows)
    is_second = valid & ~is_first & (u == second_u[lab])
    on_keep = side == pairs.keep[pair]
    is_i = is_first & on_keep
    is_j = jnp.where(pairs.is_split[pair], is_second & on_keep, is_first & ~on_keep)
    ij_row = _rows.segment_max(
        jnp.where(jnp.stack([is_i, is_j], 1), row_id[:, None], -1), pseg, n_pairs, rows
    )
    return (is_i, is_j), (ij_row[:, 0], ij_row[:, 1])


def proposal(logit, u, pairs: Pairs, lab, seeded, valid, rows=None):
    """4. Each group's part (rows,) int32 (1: the side that moves) and ``ln q(A, B)`` (P,): a split pair draws
    every non-seed group's side with the launch's probability ``sigma(logit)`` (uniforms ``u``); a merge pair
    keeps its current sides, whose probability under the reverse split's launch is ``q(A, B)``.

    Metropolis-Hastings term: ``- ln q(A, B)`` in a split's log acceptance (:func:`log_ratio`)."""
    is_i, is_j = seeded
    n_pairs = pairs.is_merge.shape[0]
    pair, side = lab // 2, lab % 2
    on_keep = side == pairs.keep[pair]
    drawn = u < jax.nn.sigmoid(logit)
    part = jnp.where(pairs.is_split[pair], drawn, ~on_keep)
    part = jnp.where(is_i, False, jnp.where(is_j, True, part)).astype(jnp.int32)
    log_q_row = jnp.where(part == 1, jax.nn.log_sigmoid(logit), jax.nn.log_sigmoid(-logit))
    pseg = jnp.where(valid, pair, n_pairs)
    log_q = _rows.segment_sum(jnp.where(valid & ~(is_i | is_j), log_q_row, 0.0), pseg, n_pairs, rows)
    return part, log_q


def log_ratio(
    state: _state.GibbsState, data: _state.GroupData, family, pairs: Pairs, lab, part, log_q, rows=None
):
    """5. Every pair's ``ln a_split`` (the module docstring; a merge's is its negative plus the placement
    term): the collapsed posterior of the two parts against their union, the seeds' and the launch's proposal
    terms (:func:`seeds`, :func:`proposal`) and the soft answers between the parts (a split makes them
    "apart": ``- W``, ``W`` their summed log-weights). Returns ``(log_ratio (P,), blocked (P,) bool, m_union
    (P,) groups per union, sizes, slots)``: ``sizes`` the item counts and ``slots`` the posterior parameters of
    (part0, part1, union), each with P rows; ``blocked``: a cannot-link joins the two components of a merge
    pair (prior 0)."""
    z, valid, dtype = state.z, data.valid, state.counts.dtype
    n_pairs = pairs.is_merge.shape[0]
    n_labels = 2 * n_pairs
    pair = lab // 2
    pseg = jnp.where(valid, pair, n_pairs)
    seg_part = jnp.where(valid, 2 * pair + part, n_labels)
    parts = family.segment_stats(seg_part, data.stats, n_labels, _rows.axis_name(rows))
    safe = lambda x: jnp.maximum(x, 1.0)  # noqa: E731  (unused pairs: finite junk, never accepted)
    union = family.combine_stats(*(jax.tree.map(lambda a, k=k: a[k::2], parts) for k in (0, 1)))
    # the parts (2P rows) and the unions (P) through one slot update, one log-marginal and one log-gamma: each
    # call site is a copy of the special functions' expansions in the compiled program
    both = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), parts, union)
    slots = family.slots_from_stats(both)
    lm, lg = family.log_marginal(slots), gammaln(safe(both.size))

    def split(tree):  # rows of ``both`` -> (part0, part1, union)
        rows_of = (slice(0, n_labels, 2), slice(1, n_labels, 2), slice(n_labels, None))
        return tuple(jax.tree.map(lambda a, r=r: a[r], tree) for r in rows_of)

    sizes, lm, lg, slots = split(both.size), split(lm), split(lg), split(slots)
    m_part = _rows.segment_sum(valid.astype(dtype), seg_part, n_labels, rows).reshape(n_pairs, 2)
    m_union = m_part.sum(-1)
    ratio = (
        jnp.log(state.alpha)
        + lg[0]
        + lg[1]
        - lg[2]
        + lm[0]
        + lm[1]
        - lm[2]
        + jnp.log(0.5)
        - jnp.log(safe(m_part)).sum(-1)
        + jnp.log(safe(m_union))
        + jnp.log(safe(m_union - 1.0))
        - log_q
    )

    # (rows split over devices without any partner: nothing to gather, nothing blocked, no weight)
    if rows is not None and not rows.partners:
        return ratio, jnp.zeros((n_pairs,), bool), m_union, sizes, slots
    partners, weights = data.partners, data.partner_w
    has = (partners >= 0) & valid[:, None]
    p_lab = jnp.where(has, pairs.label_of_slot[_rows.gather(z, rows)][jnp.maximum(partners, 0)], -1)
    hard = jnp.isneginf(weights)
    across = has & hard & (p_lab // 2 == pair[:, None]) & (p_lab != lab[:, None])
    blocked = _rows.segment_max(jnp.any(across, -1), pseg, n_pairs, rows) > 0
    p_part = _rows.gather(part, rows)[jnp.maximum(partners, 0)]
    cross = has & ~hard & (p_lab // 2 == pair[:, None]) & (p_part != part[:, None])
    w_cross = 0.5 * _rows.segment_sum(jnp.sum(jnp.where(cross, weights, 0.0), -1), pseg, n_pairs, rows)
    if data.spill.shape[0]:  # hubs' further partners (one device only: _state.spill_terms)
        q, owner = data.spill, jnp.maximum(data.spill_owner, 0)
        has = (q >= 0) & ((data.spill_owner >= 0) & valid[owner])[:, None]
        q_lab = jnp.where(has, lab[jnp.maximum(q, 0)], -1)
        hard = jnp.isneginf(data.spill_w)
        at_pair = has & (q_lab // 2 == pair[owner][:, None])
        across = at_pair & hard & (q_lab != lab[owner][:, None])
        cross = at_pair & ~hard & (part[jnp.maximum(q, 0)] != part[owner][:, None])
        seg = jnp.where(data.spill_owner >= 0, pseg[owner], n_pairs)  # unused rows: no pair
        blocked = blocked | (_rows.segment_max(jnp.any(across, -1), seg, n_pairs, None) > 0)
        w_spill = jnp.sum(jnp.where(cross, data.spill_w, 0.0), -1)
        w_cross = w_cross + 0.5 * _rows.segment_sum(w_spill, seg, n_pairs, None)
    return ratio - w_cross, blocked, m_union, sizes, slots


def accept(can_split, can_merge, ratio, log_u, pairs: Pairs, occupied, overflow):
    """6. Acceptance, sequentially over pairs (``K`` = occupied components just before each move): a split
    with ``log_u < ratio - ln(L - K)`` takes the first free slot (none free: ``overflow``, not applied), a
    merge with ``log_u < -ratio + ln(L - K + 1)`` frees the other side's slot. Returns ``(did_split (P,),
    did_merge (P,), new_slot (P,), overflow)``."""
    V = occupied.shape[0]
    n_labels = 2 * V
    dtype = ratio.dtype

    def step(carry, x):
        K, free, overflow = carry
        split_ok, merge_ok, r, lu, other = x
        want_split = split_ok & (lu < r - jnp.log(n_labels - K))
        has_free = jnp.any(free)
        new_slot = jnp.argmax(free).astype(jnp.int32)
        do_split = want_split & has_free
        do_merge = merge_ok & (lu < -r + jnp.log(n_labels - K + 1.0))
        free = free.at[new_slot].set(free[new_slot] & ~do_split)
        free = free.at[jnp.minimum(other, V - 1)].set(free[jnp.minimum(other, V - 1)] | do_merge)
        K = K + do_split.astype(dtype) - do_merge.astype(dtype)
        return (K, free, overflow | (want_split & ~has_free)), (do_split, do_merge, new_slot)

    (_, _, overflow), (did_split, did_merge, new_slot) = jax.lax.scan(
        step,
        (jnp.sum(occupied).astype(dtype), ~occupied, overflow),
        (can_split, can_merge, ratio, log_u, pairs.other_slot),
    )
    return did_split, did_merge, new_slot, overflow


def split_merge(
    key, state: _state.GibbsState, data: _state.GroupData, family, *, n_steps: int = KMEANS_STEPS, rows=None
):
    """One round of split-merge proposals over all components (see the module docstring), in the stages
    :func:`pairing`, :func:`seeds`, :func:`launch`, :func:`proposal`, :func:`log_ratio`, :func:`accept`.

    Parameters
    ----------
    key : PRNG key
    state : GibbsState of one chain (``vmap`` for many); its counts and slots must match ``z``
    data : GroupData
    family : prepared family
    n_steps : int, static
        2-means steps of each launch.
    rows : RowAxis, static, optional
        The rows are split over devices (:mod:`jaxclust.dpmm.rows`): seeds are a ``pmin``/``pmax`` over
        devices, part statistics a ``psum``, partners' labels an ``all_gather``; the pairing and the acceptance
        scan are computed from the reduced quantities with the same keys on every device.

    Returns
    -------
    state : GibbsState with the new assignment, the changed slots' counts and parameters recomputed from their
        groups, and ``log_joint`` updated.
    info : MoveInfo, the round's splits proposed (components of at least two groups paired with an empty
        label) and accepted, merges proposed (pairs of components, those a cannot-link blocks included) and
        accepted; ``overflow`` if an accepted split found no free slot (that split is not applied).
    """
    z = state.z
    V = state.counts.shape[0]
    n_labels, n_pairs = 2 * V, V
    dtype = state.counts.dtype
    valid = data.valid
    # few random-number call sites (each is a copy of the generator in the compiled program): the per-pair
    # draws from one call of 32-bit words, the per-row ones from another
    k_pairs, k_rows = jax.random.split(key)
    n_words = n_labels + 2 * n_pairs
    n_rows = z.shape[0] if rows is None else rows.n_rows
    n_sub = subsample_size(n_pairs) if n_rows > subsample_size(n_pairs) else 0  # words the launch uses
    bits = jax.random.bits(k_pairs, (n_words + n_sub,), jnp.uint32)
    u_rows = _rows.uniform(k_rows, z.shape + (2,), dtype, rows)  # (rows, 2): seed order, proposed side

    occupied = state.counts > 0
    pairs = pairing(bits, occupied)
    lab = pairs.label_of_slot[z]
    pair = lab // 2
    seeded, (i_row, j_row) = seeds(u_rows[:, 0], lab, pairs, valid, _rows.row_ids(z.shape[0], rows), rows)
    # the launch on every pair's union: the proposed split (split pairs) or the current one (merge pairs)
    feat, within = family.split_view(data.stats)
    logit = launch(
        bits[n_words:], feat, within, data.stats.size, pair, valid, i_row, j_row, n_pairs, n_steps, rows
    )
    part, log_q = proposal(logit, u_rows[:, 1], pairs, lab, seeded, valid, rows)
    ratio, blocked, m_union, sizes, (slot0, slot1, slot_union) = log_ratio(
        state, data, family, pairs, lab, part, log_q, rows
    )
    can_split = pairs.is_split & (m_union >= 2)
    can_merge = pairs.is_merge & ~blocked
    log_u = jnp.log((bits[n_labels + n_pairs : n_words] >> 8).astype(dtype) * 2.0**-24)  # uniform on [0, 1)
    did_split, did_merge, new_slot, overflow = accept(
        can_split, can_merge, ratio, log_u, pairs, occupied, jnp.asarray(False)
    )

    # 7. apply: the moved groups, and the changed slots from the statistics above. Each slot takes one source:
    # a new slot the moved part of its split, a kept slot the part that stays (a split) or the union (a merge),
    # a merged-away slot nothing (unless a later split reuses it), any other slot itself. Sources are chosen
    # by comparing slot ids and read by one gather per field: scatters would each be a loop of their own.
    moved = valid & (part == 1)
    z_new = jnp.where(moved & did_split[pair], new_slot[pair], z)
    z_new = jnp.where(moved & did_merge[pair], pairs.keep_slot[pair], z_new).astype(jnp.int32)

    slot_ids = jnp.arange(V, dtype=jnp.int32)

    def pair_at(idx):  # (V,) the pair whose ``idx`` (P,) names each slot, -1 for none
        hit = idx[None, :] == slot_ids[:, None]
        return jnp.where(jnp.any(hit, 1), jnp.argmax(hit, 1), -1)

    p_new = pair_at(jnp.where(did_split, new_slot, V))
    p_kept = pair_at(jnp.where(did_split | did_merge, pairs.keep_slot, V))
    cleared = pair_at(jnp.where(did_merge, pairs.other_slot, V)) >= 0
    # table rows: the V current slots, one empty slot, the P kept sides, the P moved parts
    src = jnp.where(cleared, V, slot_ids)
    src = jnp.where(p_kept >= 0, V + 1 + p_kept, src)
    src = jnp.where(p_new >= 0, V + 1 + n_pairs + p_new, src)
    at_keep = jax.tree.map(lambda p0, un: jnp.where(_expand(did_split, p0), p0, un), slot0, slot_union)
    empty = jax.tree.map(lambda a: a[None], family.prior_slot())
    table = jax.tree.map(
        lambda a, *new: jnp.concatenate([a, *(b.astype(a.dtype) for b in new)]),
        state.slots,
        empty,
        at_keep,
        slot1,
    )
    slots = jax.tree.map(lambda a: a[src], table)
    n_keep = jnp.where(did_split, sizes[0], sizes[2])
    counts = jnp.concatenate([state.counts, jnp.zeros((1,), dtype), n_keep, sizes[1]])[src]
    info = _state.MoveInfo(
        *(jnp.sum(v.astype(jnp.int32)) for v in (can_split, did_split, pairs.is_merge, did_merge)), overflow
    )
    lj = _state.log_joint(counts, slots, state.alpha, data, family, z_new, rows)
    return _state.GibbsState(z_new, counts, slots, state.alpha, lj), info


def _expand(mask, like):
    return mask.reshape(mask.shape + (1,) * (like.ndim - 1))
