"""Metropolis-Hastings moves of the two-level mixture (:mod:`jaxclust.dpmm.nested`): splits and merges of whole
classes, of components inside a class, and moves of whole must-linked groups between classes. Each is
``(key, state, data, prior, alpha, gamma, C, n_proposals) -> (state, info)`` and leaves the posterior exact; they
carry the chains across labellings that one item at a time cannot reach.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxclust.dpmm import nested as N
from jaxclust.dpmm.families import combine_moments
from jaxclust.dpmm.state import no_moves

__all__ = ["class_split_merge", "component_split_merge", "group_sweep"]


def _propose(step, n_proposals: int, key, state, data, prior, alpha, gamma, C: int):
    """``n_proposals`` Metropolis-Hastings proposals of ``step``: ``(state, accepted, proposed, overflow)``."""
    zero = jnp.zeros((), jnp.int32)
    state, _, acc, prop, overflow = jax.lax.fori_loop(
        0,
        n_proposals,
        lambda s, c: step(s, c, data, prior, alpha, gamma, C),
        (state, key, zero, zero, jnp.zeros((), bool)),
    )
    return state, acc, prop, overflow


def _split_merge_step(_, carry, data: N.NestedData, prior: N.NestedPrior, alpha, gamma, C: int):
    state, key, accepted, proposed, overflow = carry
    key, k_pair, k_sides, k_accept = jax.random.split(key, 4)
    n = data.X.shape[0]
    i, j = jax.random.choice(k_pair, n, (2,), replace=False)
    cls = N.class_labels(state)
    ci, cj = cls[i], cls[j]
    live = state.count > 0
    in_class = live & (state.u == ci)
    m = jnp.sum(in_class)  # components of i's class (before a split) or of the merged class (after a merge)
    m_merged = m + jnp.sum(live & (state.u == cj))
    # merge: j's class joins i's; split: i's class is cut in two, j's component and a random half going to a new
    # class (the reverse of a merge that had picked the same two items)
    merged = state._replace(u=jnp.where(state.u == cj, ci, state.u))
    n_class = jax.ops.segment_sum(state.count, jnp.where(state.u >= 0, state.u, C), num_segments=C + 1)[:C]
    c_free, any_c = N.first_free(n_class > 0)
    zi, zj = state.z[i], state.z[j]
    coin = jax.random.bernoulli(k_sides, 0.5, state.u.shape)
    to_new = in_class & ((jnp.arange(state.u.shape[0]) == zj) | (coin & (jnp.arange(state.u.shape[0]) != zi)))
    split = state._replace(u=jnp.where(to_new, c_free.astype(state.u.dtype), state.u))
    do_merge = ci != cj
    do_split = (ci == cj) & (zi != zj)  # i and j in one component: no split separates them
    proposal = jax.tree.map(lambda a, b: jnp.where(do_merge, a, b), merged, split)
    log_q = jnp.where(do_merge, -(m_merged - 2), m - 2).astype(data.X.dtype) * jnp.log(2.0)
    before = N.log_joint(state, data, prior, alpha, gamma, C)
    after = N.log_joint(proposal, data, prior, alpha, gamma, C)
    log_ratio = after - before + log_q
    ok = (do_merge | (do_split & any_c)) & (jnp.log(jax.random.uniform(k_accept)) < log_ratio)
    state = jax.tree.map(lambda a, b: jnp.where(ok, a, b), proposal, state)
    counts = (accepted + ok.astype(jnp.int32), proposed + (do_merge | do_split).astype(jnp.int32))
    return state, key, *counts, overflow | (do_split & ~any_c)


def class_split_merge(
    key,
    state: N.NestedState,
    data: N.NestedData,
    prior: N.NestedPrior,
    alpha,
    gamma,
    C: int,
    n_proposals: int = 8,
):
    """Metropolis-Hastings split-merge of classes (Jain and Neal 2004, components as the units): two random items;
    in two classes, propose uniting them (every component keeps its items); in one class but two components,
    propose cutting the class in two, each other component going to either side with probability 1/2. Must-linked
    components follow through the hard answers (a cut between them has probability 0). Returns ``(state, info)``
    with the merges and splits proposed and accepted counted together as merges."""
    state, acc, prop, overflow = _propose(
        _split_merge_step, n_proposals, key, state, data, prior, alpha, gamma, C
    )
    return state, no_moves()._replace(proposed_merges=prop, accepted_merges=acc, overflow=overflow)


# the deterministic two-means passes that place a proposal's two sides before its items are drawn
_LAUNCH_PASSES = 3
# the launched odds are divided by this before the items are drawn: at full strength the draws are nearly the
# two-means cut itself, so a merge, whose reverse is the draw of the two components as they are, is refused
# wherever they differ from that cut at a few items
_LAUNCH_TEMPER = 4.0
# items of the two components read at once: each pass over them is a loop over blocks of this many rows
_CHUNK = 64


def _over(idx, m, fn, carry):
    """``fn(ok, ids, carry) -> carry`` over the ``m`` item indices first in ``idx`` (whole blocks, padded with
    ``n``), a block of :data:`_CHUNK` at a time: ``ids`` (B,) the block's items, ``ok`` (B,) which are real. The
    work is ``O(m D)``, not ``O(n D)``: a proposal about two components of a few hundred items reads those alone."""

    def body(c, carry):
        ids = jax.lax.dynamic_slice(idx, (c * _CHUNK,), (_CHUNK,))
        ok = (c * _CHUNK + jnp.arange(_CHUNK)) < m
        return fn(ok, ids, carry)

    return jax.lax.fori_loop(0, (m + _CHUNK - 1) // _CHUNK, body, carry)


def _launch(X, idx, m, i, j, w):
    """A deterministic cut of the ``m`` items ``idx[:m]`` of ``X`` (n, D) into a side A about item ``i`` and a
    side B about item ``j``: each to the nearer anchor (in units of ``w`` (D,)), then ``_LAUNCH_PASSES`` passes
    of two-means with diagonal Gaussians (variances shrunk towards ``w`` with the weight of one item). Returns the
    last pass's ``(coef, const)``: an item's log odds of side A are ``[x, x²] @ coef + const``. It reads the items
    and the anchors alone, so a split and the merge that undoes it see the same odds."""
    D = X.shape[1]
    zero = jnp.zeros((), X.dtype)
    dt = X.dtype

    def rows_of(ids):
        x = jnp.take(X, ids, axis=0, mode="fill", fill_value=0.0)
        return jnp.concatenate([x, x * x], -1)

    # nearest anchor: ||x - xj||² - ||x - xi||² > 0, linear in [x, x²]
    xi, xj = X[i], X[j]
    coef = jnp.concatenate([2.0 * (xi - xj) / w, jnp.zeros(D, dt)])
    const = jnp.sum((xj * xj - xi * xi) / w)

    def side_sums(coef, const):
        def add(ok, ids, acc):
            r = rows_of(ids)
            on_a = ((r @ coef + const > 0) | (ids == i)) & (ids != j) & ok
            wa, wu = on_a.astype(dt), ok.astype(dt)
            return acc[0] + jnp.sum(wa), acc[1] + wa @ r, acc[2] + jnp.sum(wu), acc[3] + wu @ r

        return _over(idx, m, add, (zero, jnp.zeros(2 * D, dt), zero, jnp.zeros(2 * D, dt)))

    def gaussian(size, sums):
        mean = sums[:D] / jnp.maximum(size, 1.0)
        var = (jnp.maximum(sums[D:] - size * mean * mean, 0.0) + w) / (size + 1.0)
        return size, mean, var

    def odds_of(a, b):
        # ln N(x | mean_a, var_a) - ln N(x | mean_b, var_b) + ln size_a - ln size_b as [x, x²] @ coef + const
        (na, ma, va), (nb, mb, vb) = a, b
        coef = jnp.concatenate([ma / va - mb / vb, -0.5 / va + 0.5 / vb])
        const = jnp.sum(-0.5 * (ma * ma / va + jnp.log(va)) + 0.5 * (mb * mb / vb + jnp.log(vb)))
        return coef, const + jnp.log(jnp.maximum(na, 1.0)) - jnp.log(jnp.maximum(nb, 1.0))

    def one_pass(_, params):
        n_a, s_a, n_u, s_u = side_sums(*params)
        return odds_of(gaussian(n_a, s_a), gaussian(n_u - n_a, s_u - s_a))

    coef, const = jax.lax.fori_loop(0, _LAUNCH_PASSES, one_pass, (coef, const))
    return (coef / _LAUNCH_TEMPER, const / _LAUNCH_TEMPER), rows_of


def _sides(X, idx, m, side_of, k_a, k_b, state: N.NestedState) -> N.NestedState:
    """``state`` with the ``m`` items ``idx[:m]`` in slot ``k_a`` where ``side_of(ok, ids)`` (B,) is true, else in
    ``k_b``, and the two slots' statistics computed from their items (two passes: means, then scatters)."""
    D = X.shape[1]
    dt = X.dtype
    z = state.z

    def count_sum(ok, ids, acc):
        x = jnp.take(X, ids, axis=0, mode="fill", fill_value=0.0)
        on_a = side_of(ok, ids) & ok
        wa, wb = on_a.astype(dt), (ok & ~on_a).astype(dt)
        zz = acc[4].at[ids].set(jnp.where(on_a, k_a, k_b).astype(acc[4].dtype), mode="drop")
        return acc[0] + jnp.sum(wa), acc[1] + wa @ x, acc[2] + jnp.sum(wb), acc[3] + wb @ x, zz

    zero = jnp.zeros((), dt)
    n_a, s_a, n_b, s_b, z = _over(idx, m, count_sum, (zero, jnp.zeros(D, dt), zero, jnp.zeros(D, dt), z))
    mean_a, mean_b = s_a / jnp.maximum(n_a, 1.0), s_b / jnp.maximum(n_b, 1.0)

    def scatter(ok, ids, acc):
        x = jnp.take(X, ids, axis=0, mode="fill", fill_value=0.0)
        on_a = (z[jnp.minimum(ids, z.shape[0] - 1)] == k_a) & ok
        on_b = ok & ~on_a
        return acc[0] + on_a.astype(dt) @ (x - mean_a) ** 2, acc[1] + on_b.astype(dt) @ (x - mean_b) ** 2

    q_a, q_b = _over(idx, m, scatter, (jnp.zeros(D, dt), jnp.zeros(D, dt)))
    count = state.count.at[k_b].set(n_b.astype(state.count.dtype)).at[k_a].set(n_a.astype(state.count.dtype))
    mean = state.mean.at[k_b].set(mean_b).at[k_a].set(mean_a)
    scat = state.scatter.at[k_b].set(q_b).at[k_a].set(q_a)
    return N.NestedState(z, state.u, count, mean, scat)


def _component_split_merge_step(_, carry, data: N.NestedData, prior: N.NestedPrior, alpha, gamma, C: int):
    """One split-merge proposal of components inside a class, every item of the two sides drawn at once."""
    state, key, accepted, proposed, overflow = carry
    key, k_i, k_j, k_alloc, k_accept = jax.random.split(key, 5)
    X = data.X
    n = X.shape[0]
    at = jnp.arange(n)
    cls = N.class_labels(state)
    # i uniform, j uniform among the other items of i's class: a split or merge of components leaves every
    # class's items as they are, so the reverse move picks the same pair with the same probability, and no
    # proposal is spent on two classes
    i = jax.random.randint(k_i, (), 0, n)
    mates = (cls == cls[i]) & (at != i)
    n_mates = jnp.sum(mates)
    j = jnp.argmax(jnp.cumsum(mates) > jax.random.randint(k_j, (), 0, jnp.maximum(n_mates, 1)))
    zi, zj = state.z[i], state.z[j]
    do_split = (n_mates > 0) & (zi == zj)
    do_merge = (n_mates > 0) & (zi != zj)
    k_free, any_k = N.first_free(state.count > 0)
    k_b = jnp.where(do_split, k_free.astype(jnp.int32), zj)  # side B's slot: a free one, or j's component
    union = ((state.z == zi) | (state.z == zj)) & (do_split | do_merge)
    m = jnp.sum(union)
    # the two components' items first, padded (with n) to whole blocks for :func:`_over`
    idx = jnp.nonzero(union, size=-(-n // _CHUNK) * _CHUNK, fill_value=n)[0]
    # the prior's expected variance of a component: the unit of the anchors' distances and the sides' shrinkage
    w = jnp.broadcast_to(jnp.asarray(prior.rate, X.dtype) / jnp.asarray(prior.shape, X.dtype), X.shape[1:])
    (coef, const), rows_of = _launch(X, idx, m, i, j, w)
    # split: each item's side drawn from its odds; merge: the side it is on (the reverse split's draw)
    coins = jax.random.uniform(k_alloc, (n,))
    now_a = state.z == zi

    def side_of(ok, ids):
        odds = rows_of(ids) @ coef + const
        drawn = coins[jnp.minimum(ids, n - 1)] < jax.nn.sigmoid(odds)
        return jnp.where(do_split, drawn, now_a[jnp.minimum(ids, n - 1)]) & (ids != j) | (ids == i)

    def log_alloc(ok, ids, acc):
        odds = rows_of(ids) @ coef + const
        to_a = side_of(ok, ids)
        lp = jnp.where(to_a, jax.nn.log_sigmoid(odds), jax.nn.log_sigmoid(-odds))
        return acc + jnp.sum(jnp.where(ok & (ids != i) & (ids != j), lp, 0.0))

    log_q_alloc = _over(idx, m, log_alloc, jnp.zeros((), X.dtype))
    u = jnp.where(do_split, state.u.at[k_b].set(cls[i]), state.u)
    proposal = _sides(X, idx, m, side_of, zi, k_b, state._replace(u=u))
    # a merge: every item to zi (the draw is the reverse split's), j's slot emptied
    merged = state._replace(
        z=jnp.where(union, zi, state.z),
        u=state.u.at[zj].set(-1),
        count=state.count.at[zi].add(state.count[zj]).at[zj].set(0),
    )
    both = [(state.count[k], state.mean[k], state.scatter[k]) for k in (zi, zj)]
    _, mean_m, scat_m = combine_moments(*both)
    merged = merged._replace(
        mean=merged.mean.at[zi].set(mean_m).at[zj].set(0.0),
        scatter=merged.scatter.at[zi].set(scat_m).at[zj].set(0.0),
    )
    proposal = jax.tree.map(lambda a, b: jnp.where(do_split, a, b), proposal, merged)
    # split: q(merge back) / q(split) = 1 / prod(allocation); merge: q(split back) / 1
    log_q = jnp.where(do_split, -log_q_alloc, log_q_alloc)
    log_ratio = N.log_joint(proposal, data, prior, alpha, gamma, C) - N.log_joint(
        state, data, prior, alpha, gamma, C
    )
    ok = (do_merge | (do_split & any_k)) & (jnp.log(jax.random.uniform(k_accept)) < log_ratio + log_q)
    state = jax.tree.map(lambda a, b: jnp.where(ok, a, b), proposal, state)
    counts = (accepted + ok.astype(jnp.int32), proposed + (do_merge | do_split).astype(jnp.int32))
    return state, key, *counts, overflow | (do_split & ~any_k)


def component_split_merge(
    key,
    state: N.NestedState,
    data: N.NestedData,
    prior: N.NestedPrior,
    alpha,
    gamma,
    C: int,
    n_proposals: int = 8,
):
    """Metropolis-Hastings split-merge of components inside a class: a random item ``i`` and another ``j`` of its
    class; in one component, propose cutting it in two, in two components, propose uniting them. A split's sides
    are launched deterministically from the two components' items and the anchors ``i`` and ``j`` alone (each
    item to the nearer anchor, then a few passes of two-means with diagonal Gaussians, as the restricted scans of
    Jain and Neal 2004 launch theirs, but without random scans), and every other item is drawn to a side at once
    with its odds under the launched sides (divided by ``_LAUNCH_TEMPER``); the merge's reverse probability is
    the same product. The items are placed in blocks, not one after another (as in Dahl 2003's sequential
    allocation), so a proposal costs ``O(m D)`` array work for the ``m`` items of the two components. Lets a
    component that spans two shapes split (and two halves of one shape merge) in one step. Returns ``(state,
    info)``, the proposals counted as splits."""
    state, acc, prop, overflow = _propose(
        _component_split_merge_step, n_proposals, key, state, data, prior, alpha, gamma, C
    )
    return state, no_moves()._replace(proposed_splits=prop, accepted_splits=acc, overflow=overflow)


# --- whole groups ----------------------------------------------------------------------------------------------------
def _allocate(key, state: N.NestedState, lo, size, target, z_forced, data: N.NestedData, prior, alpha):
    """The ``size`` items ``data.group_items[lo:lo + size]`` placed one by one into the components of class slot
    ``target``: an occupied one (weight: its size times the item's predictive) or a new one (``alpha`` times the
    prior predictive). With ``z_forced`` (n,), each item goes to its slot there (a slot empty at that moment is a
    new component, in that slot). Returns ``(state, log probability of the choices, whether a new component found
    no slot)``."""
    lp = N.component_log_predictive
    K = state.count.shape[0]

    def place(t, carry):
        st, log_q, short = carry
        m = data.group_items[lo + t]
        x = data.X[m]
        here = (st.count > 0) & (st.u == target)
        join = lp(st.count, st.mean, st.scatter, x, prior) + jnp.log(st.count.astype(x.dtype))
        k_free, any_k = N.first_free(st.count > 0)
        new = jnp.log(alpha) + lp(
            jnp.zeros((), st.count.dtype), jnp.zeros_like(x), jnp.zeros_like(x), x, prior
        )
        logits = jnp.concatenate([jnp.where(here, join, -jnp.inf), jnp.where(any_k, new, -jnp.inf)[None]])
        if z_forced is None:
            choice = jax.random.categorical(jax.random.fold_in(key, t), logits)
            slot = jnp.where(choice < K, choice, k_free)
        else:
            slot = z_forced[m]
            choice = jnp.where(st.count[slot] > 0, slot, K)
        n1, m1, s1 = N.welford_add(st.count[slot], st.mean[slot], st.scatter[slot], x)
        st = N.NestedState(
            st.z.at[m].set(slot.astype(st.z.dtype)),
            st.u.at[slot].set(jnp.asarray(target, st.u.dtype)),
            st.count.at[slot].set(n1),
            st.mean.at[slot].set(m1),
            st.scatter.at[slot].set(s1),
        )
        return st, log_q + jax.nn.log_softmax(logits)[choice], short | ((choice == K) & ~any_k)

    return jax.lax.fori_loop(0, size, place, (state, jnp.zeros((), data.X.dtype), jnp.zeros((), bool)))


def _without(state: N.NestedState, lo, size, data: N.NestedData) -> N.NestedState:
    """``state`` with the items ``data.group_items[lo:lo + size]`` taken out of their components (their ``z``
    kept)."""

    def remove(t, st):
        m = data.group_items[lo + t]
        k = st.z[m]
        n1, m1, s1 = N.welford_remove(st.count[k], st.mean[k], st.scatter[k], data.X[m])
        return st._replace(
            count=st.count.at[k].set(n1), mean=st.mean.at[k].set(m1), scatter=st.scatter.at[k].set(s1)
        )

    st = jax.lax.fori_loop(0, size, remove, state)
    return st._replace(u=jnp.where(st.count > 0, st.u, -1))


def _group_step(_, carry, data: N.NestedData, prior: N.NestedPrior, alpha, gamma, C: int):
    """One Metropolis-Hastings move of a whole must-linked group to another class (or a new one, or its own,
    re-placed), its items re-placed among that class's components by sequential allocation."""
    state, key, accepted, proposed, overflow = carry
    key, k_g, k_c, k_a, k_u = jax.random.split(key, 5)
    n = data.X.shape[0]
    active = data.n_groups > 0
    g = jax.random.randint(k_g, (), 0, jnp.maximum(data.n_groups, 1))
    lo = data.group_start[g]
    size = jnp.where(active, data.group_start[g + 1] - lo, 0)  # no group: the loops do nothing
    c0 = state.u[state.z[jnp.maximum(data.group_items[lo], 0)]]
    base = _without(state, lo, size, data)
    n_class, _ = N.class_counts(base, C)
    at = jnp.arange(n)
    members = jnp.where((at >= lo) & (at < lo + size), data.group_items, n)
    inside = jnp.zeros(n, bool).at[members].set(True, mode="drop")
    cls = jnp.where(inside, -1, N.class_labels(base))
    _, cannot_in, soft_in, _ = N.partner_classes(data, cls, inside, C)
    c_free, any_c = N.first_free(n_class > 0)
    # which class: one in proportion to its items (and the soft answers), or a new one weighing one item
    allowed = (cannot_in == 0) & (n_class > 0)
    logits = jnp.concatenate(
        [
            jnp.where(allowed, jnp.log(n_class.astype(data.X.dtype)) + soft_in, -jnp.inf),
            jnp.where(any_c, 0.0, -jnp.inf)[None],
        ]
    )
    log_pc = jax.nn.log_softmax(logits)
    pick = jax.random.categorical(k_c, logits)
    back = jnp.where(n_class[c0] > 0, c0, C)  # where the reverse move picks the group's class
    target = jnp.where(pick < C, pick, c_free)
    proposal, log_fwd, short = _allocate(k_a, base, lo, size, target, None, data, prior, alpha)
    _, log_rev, _ = _allocate(k_a, base, lo, size, c0, state.z, data, prior, alpha)
    log_ratio = (
        N.log_joint(proposal, data, prior, alpha, gamma, C)
        - N.log_joint(state, data, prior, alpha, gamma, C)
        + log_pc[back]
        + log_rev
        - log_pc[pick]
        - log_fwd
    )
    ok = active & ~short & (jnp.log(jax.random.uniform(k_u)) < log_ratio)
    state = jax.tree.map(lambda a, b: jnp.where(ok, a, b), proposal, state)
    counts = (accepted + ok.astype(jnp.int32), proposed + active.astype(jnp.int32))
    return state, key, *counts, overflow | (active & short)


def group_sweep(
    key,
    state: N.NestedState,
    data: N.NestedData,
    prior: N.NestedPrior,
    alpha,
    gamma,
    C: int,
    n_proposals: int = 8,
):
    """Metropolis-Hastings moves of whole must-linked groups (``data.group_items``), ``n_proposals`` random groups:
    the group leaves its components, a class is drawn for it (an allowed one in proportion to its items times
    the soft answers' odds, or a new class) and its items are placed one by one among that class's components.
    Item moves cannot carry a group across classes (each of its items is held by the others), so without this
    move the classes of answered items mix only through whole-class merges. Returns ``(state, info)`` with the
    moves counted as merges."""
    state, acc, prop, overflow = _propose(_group_step, n_proposals, key, state, data, prior, alpha, gamma, C)
    return state, no_moves()._replace(proposed_merges=prop, accepted_merges=acc, overflow=overflow)
