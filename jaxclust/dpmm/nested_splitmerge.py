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


def _component_split_merge_step(_, carry, data: N.NestedData, prior: N.NestedPrior, alpha, gamma, C: int):
    """One sequentially allocated split-merge proposal of components inside a class (Dahl 2003)."""
    state, key, accepted, proposed, overflow = carry
    key, k_i, k_j, k_order, k_alloc, k_accept = jax.random.split(key, 6)
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
    c = cls[i]
    k_free, any_k = N.first_free(state.count > 0)
    k_b = jnp.where(do_split, k_free.astype(jnp.int32), zj)  # side B's slot: a free one, or j's component
    members = ((state.z == zi) | (state.z == zj)) & (do_split | do_merge)
    # the two components' items first, in a uniformly random order (so is the reverse move's): the loop below
    # visits those alone, not all n items
    order = jnp.argsort(jnp.where(members, jax.random.uniform(k_order, (n,)), 2.0))
    coins = jax.random.uniform(k_alloc, (n,))
    lp = N.component_log_predictive
    d = X.shape[1]
    zero = (jnp.zeros((), state.count.dtype), jnp.zeros(d, X.dtype), jnp.zeros(d, X.dtype))
    side_a, side_b = N.welford_add(*zero, X[i]), N.welford_add(*zero, X[j])

    def allocate(t, acc):
        a, b, log_q, z_new = acc
        item = order[t]
        x = X[item]
        move = (item != i) & (item != j)
        la = lp(*a, x, prior) + jnp.log(a[0].astype(X.dtype))
        lb = lp(*b, x, prior) + jnp.log(b[0].astype(X.dtype))
        p_a = jax.nn.sigmoid(la - lb)
        # split: draw the side; merge: the side the item is on now (the reverse split's probability)
        to_a = jnp.where(do_split, coins[t] < p_a, state.z[item] == zi)
        log_q = log_q + jnp.where(move, jnp.where(to_a, jnp.log(p_a), jnp.log1p(-p_a)), 0.0)
        a = jax.tree.map(lambda new, old: jnp.where(move & to_a, new, old), N.welford_add(*a, x), a)
        b = jax.tree.map(lambda new, old: jnp.where(move & ~to_a, new, old), N.welford_add(*b, x), b)
        z_new = z_new.at[item].set(jnp.where(move, jnp.where(to_a, zi, k_b), z_new[item]))
        return a, b, log_q, z_new

    z_split = state.z.at[j].set(jnp.where(do_split, k_b, state.z[j]))
    first = (side_a, side_b, jnp.zeros((), X.dtype), z_split)
    side_a, side_b, log_q_split, z_split = jax.lax.fori_loop(0, jnp.sum(members), allocate, first)
    # the proposal's statistics from the two sides (split) or the two components' (merge), not from all n items
    both = [(state.count[k], state.mean[k], state.scatter[k]) for k in (zi, zj)]
    new_a = jax.tree.map(lambda s, m: jnp.where(do_split, s, m), side_a, combine_moments(*both))
    stats = [
        jnp.where(do_split, field.at[k_b].set(sb), field.at[zj].set(jnp.zeros_like(sb))).at[zi].set(sa)
        for field, sa, sb in zip((state.count, state.mean, state.scatter), new_a, side_b, strict=True)
    ]
    u = jnp.where(do_split, state.u.at[k_b].set(c), state.u.at[zj].set(-1))
    z = jnp.where(do_split, z_split, jnp.where(state.z == zj, zi, state.z))
    proposal = N.NestedState(z, u, *stats)
    # split: q(merge back) / q(split) = 1 / prod(allocation); merge: q(split back) / 1
    log_q = jnp.where(do_split, -log_q_split, log_q_split)
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
    """Metropolis-Hastings split-merge of components inside a class, by sequential allocation (Dahl 2003): a random
    item and another of its class; in one component, propose cutting it in two, each other item going to the side
    it fits given the items placed so far; in two components, propose uniting them. Lets a component that spans
    two shapes split (and two halves of one shape merge) in one step. Returns ``(state, info)``, the proposals
    counted as splits."""
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
    n_class, _ = N.class_counts(base.u, base.count, C)
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
