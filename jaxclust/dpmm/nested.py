"""Classes inside the model: a two-level Dirichlet process mixture, items -> components -> classes.

The model (diagonal Gaussian, every dimension ``d`` independent):

* components are a CRP(``alpha``) partition of the items, and classes a CRP(``gamma``) partition of the
  components, so the prior of a labelling is
  ``p(z, u) = Γ(α)/Γ(α+N) α^K Π_k Γ(n_k) · Γ(γ)/Γ(γ+K) γ^{#classes} Π_c Γ(m_c)`` (``K`` components, ``m_c`` of
  them in class ``c``): without answers the components are exactly those of a DP mixture;
* each component ``k`` has a precision ``λ_kd ~ Gamma(shape, rate_d)`` and a mean ``μ_kd ~ N(mean_d, 1/(kappa
  λ_kd))``; each of its items is ``x_id ~ N(μ_kd, 1/λ_kd)``, a value rounded to a step ``h_d`` weighing the
  geometric mean of that density over its interval, ``N(x_id | μ_kd, 1/λ_kd) exp(-λ_kd h_d²/24)``
  (``NestedPrior.rounding`` ``h_d²/12``; 0: the density itself).

Nothing but the answers ties components into classes: the data say which items share a Gaussian shape, the
answers which shapes share a class. Unlike the infinite mixture of infinite Gaussian mixtures of Yerebakan, Rajwa
and Dundar (NIPS 2014), whose classes share a precision and a mean, the classes here have no likelihood of their
own, so closeness alone never joins two shapes. Every parameter integrates out in closed form
(:func:`component_log_marginal`).

A tempered likelihood (``NestedPrior.temper`` τ < 1, each item's Gaussian raised to τ) flattens the posterior over
labellings; :class:`~jaxclust.NestedDPMM` uses it only to start its chains (see there), and every sample it keeps is
drawn at τ = 1.

Answers are observations about classes: a hard must-link says ``c_i = c_j`` (the two items may sit in different
components of the class), a hard cannot-link ``c_i != c_j``, and an answer wrong with probability ``eps`` multiplies
the joint by ``1 - eps`` where it agrees with the classes and by ``eps`` where it does not.

Moves (each ``(key, state, data) -> (state, info)``, exact, vectorized over chains with ``jax.vmap``):

* :func:`item_sweep`: each item in turn draws its (class, component): any component of an allowed class, a new
  component in an allowed class, or a new class (Neal 2000, Algorithm 3, at both levels), the parameters
  integrated out; :mod:`jaxclust.dpmm.nested_params` has the same move given sampled component parameters,
  which :class:`~jaxclust.NestedDPMM` runs on four sweeps in five;
* :func:`component_sweep`: each component in turn draws its class, its items moving together;
* in :mod:`jaxclust.dpmm.nested_splitmerge`, three Metropolis-Hastings moves: merges and splits of whole
  classes (their components kept), splits and merges of components inside a class, and moves of a whole
  must-linked group to another class, its items placed among that class's components (no item move can carry such
  a group across classes).

Slots: ``K`` component slots and ``C`` class slots per chain; a move that needs a new one when all are taken leaves
that option out and reports ``overflow``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from jaxclust.constraints import Constraints
from jaxclust.dpmm.draws import gumbels
from jaxclust.dpmm.state import no_moves
from jaxclust.errors import InvalidInputError
from jaxclust.transfer import to_device

__all__ = [
    "NestedPrior",
    "NestedData",
    "NestedState",
    "component_log_marginal",
    "component_log_predictive",
    "prepare",
    "pad_answers",
    "init",
    "log_joint",
    "item_sweep",
    "component_sweep",
    "item_options",
    "chosen_slot",
    "item_conditional",
    "place_item",
    "component_conditional",
    "place_component",
    "init_from",
    "partner_classes",
    "item_partners",
    "class_counts",
    "welford_add",
    "welford_remove",
    "first_free",
    "class_labels",
]

_LOG_2PI = math.log(2.0 * math.pi)


class NestedPrior(NamedTuple):
    """Each component's Normal-Gamma prior: ``mean`` (D,), ``kappa`` (the precision of a component's mean, in
    units of its own precision), ``shape`` and ``rate`` (D,) of its precision; ``temper`` τ in (0, 1], the power
    of the likelihood (each item's Gaussian raised to τ, so an item weighs τ of one in its component's marginal;
    1 is the model); ``rounding`` (D,) or scalar, the variance ``h²/12`` of a value rounded to a step ``h``:
    each item's likelihood is the geometric mean of its Gaussian over ``[x - h/2, x + h/2]``, ``N(x | μ, 1/λ)
    exp(-λ h²/24)`` (0: the density at ``x``)."""

    mean: jax.Array
    kappa: jax.Array
    shape: jax.Array
    rate: jax.Array
    temper: jax.Array | float = 1.0
    rounding: jax.Array | float = 0.0


class NestedData(NamedTuple):
    """Per-fit constants: ``X`` (n, D); the answers as pairs ``i``, ``j`` (P,) with ``must`` (P,) bool, ``hard``
    (P,) bool and ``weight`` (P,), the log odds a soft answer adds where it agrees with the classes
    (``ln((1 - eps) / eps)``; unused for hard answers); the groups of two or more items that hard must-links hold
    together: ``group_items`` (n,) their items, group after group (then -1), ``group_start`` (n + 1,) where each
    group begins (``group_start[g + 1]`` where it ends) and ``n_groups`` () how many there are; ``item_rows``
    (n, W) the rows of each item's answers (then -1), so that an item's move reads its own answers, not all
    ``P``, and ``hub`` (n,) bool the items with more than ``W`` answers, whose move reads all ``P`` instead (a
    question's representative asked about many others). ``W`` is set by the caller, not by the answers (see
    :func:`prepare`): the shapes depend on ``n``, the padded ``P`` and ``W`` only, so fits with other answers
    share a compiled program however the answers fall on the items."""

    X: jax.Array
    i: jax.Array
    j: jax.Array
    must: jax.Array
    hard: jax.Array
    weight: jax.Array
    group_items: jax.Array
    group_start: jax.Array
    n_groups: jax.Array
    item_rows: jax.Array
    hub: jax.Array


class NestedState(NamedTuple):
    """One chain: ``z`` (n,) each item's component slot; ``u`` (K,) each component slot's class slot (-1 when
    empty); ``count`` (K,), ``mean`` (K, D) and ``scatter`` (K, D) each component's items (centred statistics)."""

    z: jax.Array
    u: jax.Array
    count: jax.Array
    mean: jax.Array
    scatter: jax.Array


# --- the marginal likelihood ----------------------------------------------------------------------------------------
def component_log_marginal(count, mean, scatter, prior: NestedPrior) -> jax.Array:
    """``ln p(x of a component)`` (...,) from its ``count`` (...,), ``mean`` and centred ``scatter`` (..., D), the
    mean and precision integrated out (the Normal-Gamma marginal, each item's Gaussian raised to τ, its rounding
    adding ``h²/12`` to the scatter per item). An empty component gives 0."""
    m0, k0, a0, b0, tau, h2 = (jnp.asarray(p, mean.dtype) for p in prior)  # in the data's precision
    v = tau * count.astype(mean.dtype)[..., None]
    k_n = k0 + v
    a_n = a0 + 0.5 * v
    y = mean - m0
    b_n = b0 + 0.5 * (tau * scatter + v * h2 + k0 * v * y * y / k_n)
    per_dim = (
        -0.5 * v * _LOG_2PI
        + a0 * jnp.log(b0)
        - a_n * jnp.log(b_n)
        + gammaln(a_n)
        - gammaln(a0)
        + 0.5 * jnp.log(k0 / k_n)
    )
    return jnp.sum(per_dim, -1)


def component_log_predictive(count, mean, scatter, x, prior: NestedPrior) -> jax.Array:
    """``ln p(x | a component's items)`` (...,) for one item ``x`` (D,): the component's marginal with ``x`` less
    its marginal without (:func:`component_log_marginal`), in one pass (the Student-t predictive; an empty
    component gives the prior predictive). The terms of the count alone are computed once per component, not per
    dimension, when ``shape`` and ``kappa`` are scalars: this is the inner loop of every move that places items."""
    m0, k0, a0, b0, tau, h2 = (jnp.asarray(p, mean.dtype) for p in prior)
    v = tau * count.astype(mean.dtype)[..., None]
    k_n = k0 + v
    a_n = a0 + 0.5 * v
    y = mean - m0
    b_n = b0 + 0.5 * (tau * scatter + v * h2 + k0 * v * y * y / k_n)
    r = x - (m0 + v * y / k_n)  # from the posterior mean of the component's mean
    k_1 = k_n + tau
    b_1 = b_n + 0.5 * tau * (k_n * r * r / k_1 + h2)
    of_count = gammaln(a_n + 0.5 * tau) - gammaln(a_n) + 0.5 * jnp.log(k_n / k_1) - 0.5 * tau * _LOG_2PI
    per_dim = jnp.sum(a_n * jnp.log(b_n) - (a_n + 0.5 * tau) * jnp.log(b_1), -1)
    return per_dim + jnp.sum(of_count, -1) * (mean.shape[-1] if of_count.shape[-1] == 1 else 1)


def class_counts(u: jax.Array, count: jax.Array, C: int) -> tuple[jax.Array, jax.Array]:
    """Per class slot (C,): its items and its occupied components, from each component slot's class ``u`` (K,)
    and items ``count`` (K,) (a state's ``u`` and ``count``)."""
    # (K, C): a compare and a sum, cheaper than a scatter at these sizes
    hot = u[:, None] == jnp.arange(C)
    items = jnp.sum(jnp.where(hot, count[:, None], 0), 0)
    comps = jnp.sum(hot & (count > 0)[:, None], 0, dtype=jnp.int32)
    return items, comps


# --- building a state --------------------------------------------------------------------------------------------
def prepare(X, answers=(), dtype=jnp.float32, row_width: int = 8) -> NestedData:
    """The data of a fit: ``X`` (n, D) and the answers, a :class:`~jaxclust.Constraints` or what
    :meth:`~jaxclust.Constraints.from_answers` reads: ``(i, j, "must" | "cannot")`` (hard) or ``(i, j, "must" |
    "cannot", eps)`` (wrong with probability ``eps`` in (0, 1/2]). Bad items, kinds, rates and contradicting hard
    answers get the named errors of :class:`~jaxclust.Constraints`. ``row_width``: the answers an item's row
    of ``item_rows`` holds (a compiled shape; an item with more is a ``hub``). The draws are the same for any
    width."""
    n = int(np.shape(X)[0])
    cons = answers if isinstance(answers, Constraints) else Constraints.from_answers(n, list(answers))
    if cons.n != n:
        raise InvalidInputError(f"answers: built for {cons.n} items, X has {n} rows")
    rows = [(a, b, kind == "must", True, 0.25) for a, b, kind in cons.pairs]
    rows += [(a, b, kind == "must", False, float(eps)) for a, b, kind, eps in cons.answers]
    i = np.array([r[0] for r in rows], np.int32)
    j = np.array([r[1] for r in rows], np.int32)
    must = np.array([r[2] for r in rows], bool)
    hard = np.array([r[3] for r in rows], bool)
    eps = np.array([r[4] for r in rows], np.float64)  # a hard answer's rate is unused
    weight = np.log((1.0 - eps) / eps) * np.where(must, 1.0, -1.0)
    # to_device: jnp.asarray of host arrays compiles a copy for every new shape, i.e. at every answer
    return NestedData(
        to_device(X, dtype),
        to_device(i),
        to_device(j),
        to_device(must),
        to_device(hard),
        to_device(weight, dtype),
        *(to_device(a) for a in _group_layout(cons.group_of)),
        *(to_device(a) for a in _item_rows(n, i, j, int(row_width))),
    )


def _item_rows(n: int, i: np.ndarray, j: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``item_rows`` (n, width) and ``hub`` (n,) of :class:`NestedData`: each item's answer rows in order, then
    -1; a hub's row is left empty (its move reads every answer)."""
    if width < 1:
        raise InvalidInputError(f"row_width: expected an integer >= 1, got {width}")
    ends = np.concatenate([i, j]).astype(np.int64)
    rows = np.tile(np.arange(len(i), dtype=np.int32), 2)
    degree = np.bincount(ends, minlength=n)
    order = np.argsort(ends, kind="stable")
    start = np.concatenate([[0], np.cumsum(degree)])
    slot = np.arange(len(ends)) - start[ends[order]]
    hub = degree > width
    keep = ~hub[ends[order]]
    table = np.full((n, width), -1, np.int32)
    table[ends[order][keep], slot[keep]] = rows[order][keep]
    return table, hub


def _group_layout(group_of: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(group_items, group_start, n_groups)`` of :class:`NestedData` from each item's group (n,)."""
    n = len(group_of)
    sizes = np.bincount(group_of, minlength=1)
    big = np.flatnonzero(sizes > 1)
    items = np.full(n, -1, np.int32)
    start = np.zeros(n + 1, np.int32)
    at = 0
    for g, members in enumerate(np.flatnonzero(group_of == b) for b in big):
        start[g] = at
        items[at : at + len(members)] = members
        at += len(members)
    start[len(big) :] = at
    return items, start, np.int32(len(big))


def pad_answers(data: NestedData, rows: int) -> NestedData:
    """``data`` with its answers padded to ``rows`` by inert ones (item 0 hard must-linked to itself: it holds in
    every labelling, crosses no set of items and adds nothing to the joint), so that fits with different numbers
    of answers can share one compiled program."""
    extra = rows - data.i.shape[0]
    if extra < 0:
        raise InvalidInputError(f"pad_answers: {data.i.shape[0]} answers do not fit in rows={rows}")

    def grow(a, fill):  # on the host: a jnp.concatenate would compile anew for every number of answers
        a = np.asarray(a)
        return to_device(np.concatenate([a, np.full((extra,), fill, a.dtype)]))

    return data._replace(
        i=grow(data.i, 0),
        j=grow(data.j, 0),
        must=grow(data.must, True),
        hard=grow(data.hard, True),
        weight=grow(data.weight, 0.0),
    )


def init(z, classes, data: NestedData, K: int | None = None) -> NestedState:
    """A state from component labels ``z`` (n,) and the class ``classes[k]`` of each component label ``k``
    (labels are used as slots; ``K`` slots, default ``n``)."""
    X = data.X
    n = X.shape[0]
    K = n if K is None else K
    z = jnp.asarray(z, jnp.int32)
    count = jax.ops.segment_sum(jnp.ones(n, jnp.int32), z, num_segments=K)
    total = jax.ops.segment_sum(X, z, num_segments=K)
    mean = total / jnp.maximum(count, 1)[:, None]
    scatter = jax.ops.segment_sum((X - mean[z]) ** 2, z, num_segments=K)
    cls = jnp.full(K, -1, jnp.int32).at[: len(classes)].set(jnp.asarray(classes, jnp.int32))
    u = jnp.where(count > 0, cls, -1)
    return NestedState(z, u, count, mean, scatter)


def init_from(z, u, data: NestedData, K: int) -> NestedState:
    """A state from component slots ``z`` (n,) and each slot's class ``u`` (K,) (statistics recomputed)."""
    X = data.X
    count = jax.ops.segment_sum(jnp.ones(X.shape[0], jnp.int32), z, num_segments=K)
    mean = jax.ops.segment_sum(X, z, num_segments=K) / jnp.maximum(count, 1)[:, None]
    scatter = jax.ops.segment_sum((X - mean[z]) ** 2, z, num_segments=K)
    return NestedState(z, jnp.where(count > 0, u, -1), count, mean, scatter)


def class_labels(state: NestedState) -> jax.Array:
    """Each item's class slot (n,)."""
    return state.u[state.z]


# --- the log joint -----------------------------------------------------------------------------------------------
def _answer_terms(data: NestedData, cls: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(log factor of the soft answers, whether every hard answer holds)`` under the item classes ``cls``."""
    same = cls[data.i] == cls[data.j]
    agree = same == data.must
    soft = jnp.sum(jnp.where(data.hard | ~agree, 0.0, jnp.abs(data.weight)))
    soft = soft - jnp.sum(jnp.where(data.hard, 0.0, jnp.logaddexp(0.0, jnp.abs(data.weight))))
    return soft, jnp.all(agree | ~data.hard)


def log_joint(state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int) -> jax.Array:
    """``ln p(X, classes, components, answers)``: the two CRPs (items into components, components into classes),
    the components' marginals and the answers' factors (``-inf`` when a hard answer is broken)."""
    n_items = data.X.shape[0]
    dt = data.X.dtype
    occupied = state.count > 0
    n_comps = jnp.sum(occupied)
    _, comps_per_class = class_counts(state.u, state.count, C)
    lik = jnp.sum(component_log_marginal(state.count, state.mean, state.scatter, prior))
    crp_items = (
        gammaln(alpha)
        - gammaln(alpha + n_items)
        + n_comps * jnp.log(alpha)
        + jnp.sum(jnp.where(occupied, gammaln(state.count.astype(dt)), 0.0))
    )
    live = comps_per_class > 0
    crp_components = (
        gammaln(gamma)
        - gammaln(gamma + n_comps)
        + jnp.sum(live) * jnp.log(gamma)
        + jnp.sum(jnp.where(live, gammaln(comps_per_class.astype(dt)), 0.0))
    )
    soft, ok = _answer_terms(data, class_labels(state))
    return jnp.where(ok, lik + crp_items + crp_components + soft, -jnp.inf)


# --- moves -------------------------------------------------------------------------------------------------------
def partner_classes(data: NestedData, cls: jax.Array, inside: jax.Array, C: int):
    """For the answers with exactly one item in ``inside`` (n,) bool: per class slot (C,), the hard must-links
    whose other item is there, the hard cannot-links, and the soft answers' log odds; and the number of hard
    must-links out of ``inside``."""
    a, b = inside[data.i], inside[data.j]
    return _partners(data, a, b, cls[jnp.where(a, data.j, data.i)], C)


def _partners(data: NestedData, a: jax.Array, b: jax.Array, oc: jax.Array, C: int):
    """:func:`partner_classes` from, per answer (P,), whether its items are inside (``a``, ``b``) and the class
    ``oc`` of its other item (read only where exactly one is)."""
    crossing = a != b
    hard_must = crossing & data.hard & data.must
    hard_cannot = crossing & data.hard & ~data.must
    soft = jnp.where(crossing & ~data.hard, data.weight, 0.0)
    to = jnp.where(crossing, oc, C)
    must_in = jax.ops.segment_sum(hard_must.astype(jnp.int32), to, num_segments=C + 1)[:C]
    cannot_in = jax.ops.segment_sum(hard_cannot.astype(jnp.int32), to, num_segments=C + 1)[:C]
    soft_in = jax.ops.segment_sum(soft, to, num_segments=C + 1)[:C]
    return must_in, cannot_in, soft_in, jnp.sum(hard_must.astype(jnp.int32))


def item_partners(i, data: NestedData, u: jax.Array, z: jax.Array, C: int):
    """:func:`partner_classes` of item ``i`` alone, the classes ``u`` (K,) of the components ``z`` (n,): from its
    own answer rows (``data.item_rows``, ``O(W C)``, not ``O(P)``), or from all of them for a hub."""
    if data.i.shape[0] == 0:  # no answers (a static shape)
        none = jnp.zeros(C, jnp.int32)
        return none, none, jnp.zeros(C, data.weight.dtype), jnp.zeros((), jnp.int32)

    # ``i`` and ``data`` are the same in every chain, so under vmap this stays a branch, not both computed
    def typed(out):  # the two branches' values alike, whatever jnp.sum's integer is
        must_in, cannot_in, soft_in, n_must = out
        i32 = jnp.int32
        return (
            must_in.astype(i32),
            cannot_in.astype(i32),
            soft_in.astype(data.weight.dtype),
            n_must.astype(i32),
        )

    return jax.lax.cond(
        data.hub[i],
        lambda: typed(partner_classes(data, u[z], jnp.arange(z.shape[0]) == i, C)),
        lambda: typed(_own_partners(i, data, u, z, C)),
    )


def _own_partners(i, data: NestedData, u: jax.Array, z: jax.Array, C: int):
    """:func:`item_partners` from the item's row of ``data.item_rows``."""
    r = data.item_rows[i]
    valid = r >= 0
    r = jnp.maximum(r, 0)
    other = jnp.where(data.i[r] == i, data.j[r], data.i[r])
    hot = (u[z[other]][:, None] == jnp.arange(C)) & valid[:, None]  # (W, C): small, so no scatter
    hard, must = data.hard[r][:, None], data.must[r][:, None]
    must_in = jnp.sum(hot & hard & must, 0)
    cannot_in = jnp.sum(hot & hard & ~must, 0)
    soft_in = jnp.sum(jnp.where(hot & ~hard, data.weight[r][:, None], 0.0), 0)
    return must_in, cannot_in, soft_in, jnp.sum(valid & data.hard[r] & data.must[r])


def welford_add(n, mean, scatter, x):
    n1 = n + 1
    delta = x - mean
    m1 = mean + delta / n1.astype(mean.dtype)[..., None]
    return n1, m1, scatter + delta * (x - m1)


def welford_remove(n, mean, scatter, x):
    n1 = n - 1
    keep = (n1 > 0)[..., None]
    m1 = jnp.where(keep, (mean * n[..., None] - x) / jnp.maximum(n1, 1)[..., None], 0.0)
    s1 = jnp.where(keep, jnp.maximum(scatter - (x - mean) * (x - m1), 0.0), 0.0)
    return n1, m1, s1


def first_free(occupied: jax.Array) -> tuple[jax.Array, jax.Array]:
    free = ~occupied
    return jnp.argmax(free), jnp.any(free)


def item_options(i, u, count, z, join, new, data: NestedData, alpha, gamma, C: int):
    """The log weights (K + C + 1,) of item ``i``'s options, out of its component (``u``, ``count`` (K,) without
    it; ``z`` (n,)): joining occupied component k, a new component in class c, or a new class (-inf where not
    allowed), from the item's log likelihood ``join`` (K,) in each component and ``new`` () in a new one (the
    prior predictive, or a sampled empty slot's); ``need_slot``, whether an allowed option lacked a slot; and
    the class slot a new class takes (for :func:`chosen_slot`). The collapsed sweep and the sweep given
    parameters differ only in ``join`` and ``new``."""
    dt = join.dtype
    occupied = count > 0
    n_class, comps_per_class = class_counts(u, count, C)
    log_new = jnp.log(alpha) - jnp.log(jnp.sum(occupied) + gamma)  # a new component, seated among the others
    uk = jnp.maximum(u, 0)
    must_in, cannot_in, soft_in, n_must = item_partners(i, data, u, z, C)
    class_ok = (must_in == n_must) & (cannot_in == 0) & (n_class > 0)
    _, any_k = first_free(occupied)
    c_free, any_c = first_free(n_class > 0)
    comp_ok = occupied & class_ok[uk]
    scores = jnp.concatenate(
        [
            jnp.where(comp_ok, join + jnp.log(count.astype(dt)) + soft_in[uk], -jnp.inf),
            jnp.where(
                class_ok & any_k, new + log_new + jnp.log(comps_per_class.astype(dt)) + soft_in, -jnp.inf
            ),
            jnp.where((n_must == 0) & any_k & any_c, new + log_new + jnp.log(gamma), -jnp.inf)[None],
        ]
    )
    need_slot = (~any_k & jnp.any(class_ok)) | ((~any_k | ~any_c) & (n_must == 0))
    return scores, need_slot, c_free


def chosen_slot(choice, u, k_new, c_free, C: int) -> tuple[jax.Array, jax.Array]:
    """The component slot and class slot of option ``choice`` (:func:`item_options`), given the classes ``u``
    (K,) without the item, ``k_new``, the slot a new component takes, and ``c_free``, the class slot a new class
    takes: ``(k, c)``."""
    K = u.shape[0]
    choice = jnp.asarray(choice, jnp.int32)
    is_comp = choice < K
    k = jnp.where(is_comp, choice, jnp.asarray(k_new, jnp.int32))
    c = jnp.where(
        is_comp,
        u[jnp.minimum(choice, K - 1)],
        jnp.where(choice < K + C, choice - K, c_free.astype(jnp.int32)),
    )
    return k, c


def item_conditional(i, state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    """Item ``i``'s full conditional: ``(without, scores, need_slot)``: the state without it, and the log weights
    (K + C + 1,) of joining component k, a new component in class c, or a new class (-inf where not allowed)."""
    x = data.X[i]
    k_old = state.z[i]
    n1, m1, s1 = welford_remove(state.count[k_old], state.mean[k_old], state.scatter[k_old], x)
    count = state.count.at[k_old].set(n1)
    mean = state.mean.at[k_old].set(m1)
    scatter = state.scatter.at[k_old].set(s1)
    u = jnp.where(count > 0, state.u, -1)
    lp = component_log_predictive
    join = lp(count, mean, scatter, x, prior)
    new = lp(jnp.zeros((), count.dtype), jnp.zeros_like(x), jnp.zeros_like(x), x, prior)
    scores, need_slot, _ = item_options(i, u, count, state.z, join, new, data, alpha, gamma, C)
    return NestedState(state.z, u, count, mean, scatter), scores, need_slot


def place_item(i, without: NestedState, choice, data: NestedData, C: int) -> NestedState:
    """Item ``i`` put back into ``without`` (:func:`item_conditional`) at option ``choice``."""
    x = data.X[i]
    n_class, _ = class_counts(without.u, without.count, C)
    k_free, _ = first_free(without.count > 0)
    c_free, _ = first_free(n_class > 0)
    k_new, c_new = chosen_slot(choice, without.u, k_free, c_free, C)
    n2, m2, s2 = welford_add(without.count[k_new], without.mean[k_new], without.scatter[k_new], x)
    return NestedState(
        without.z.at[i].set(k_new),
        without.u.at[k_new].set(c_new),
        without.count.at[k_new].set(n2),
        without.mean.at[k_new].set(m2),
        without.scatter.at[k_new].set(s2),
    )


def item_sweep(key, state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    """Each item in turn draws its (class, component) from its full conditional; returns ``(state, info)``. Each
    draw is the argmax of the log weights plus Gumbel noise, drawn for the whole sweep at once."""
    n, K = data.X.shape[0], state.count.shape[0]
    # one random call per sweep, not a key split and a draw per item (most of an item's cost at small D)
    noise = gumbels(key, (n, K + C + 1), data.X.dtype)

    def move(i, carry):
        st, overflow = carry
        without, scores, need_slot = item_conditional(i, st, data, prior, alpha, gamma, C)
        return place_item(i, without, jnp.argmax(scores + noise[i]), data, C), overflow | need_slot

    state, overflow = jax.lax.fori_loop(0, n, move, (state, jnp.zeros((), bool)))
    return state, no_moves()._replace(overflow=overflow)


def component_conditional(k, state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    """Component ``k``'s class, full conditional: ``(scores, need_slot)``, the log weights (C + 1,) of joining
    class c or a new class (-inf where not allowed)."""
    u_wo = state.u.at[k].set(-1)
    n_class, comps_per_class = class_counts(u_wo, state.count, C)
    # the components' marginals do not depend on their classes: only the CRP over components and the answers
    join_score = jnp.log(comps_per_class.astype(data.X.dtype))
    new_score = jnp.log(gamma)
    inside = state.z == k
    cls = jnp.where(inside, -1, u_wo[state.z])
    must_in, cannot_in, soft_in, n_must = partner_classes(data, cls, inside, C)
    class_ok = (must_in == n_must) & (cannot_in == 0) & (n_class > 0)
    _, any_c = first_free(n_class > 0)
    scores = jnp.concatenate(
        [
            jnp.where(class_ok, join_score + soft_in, -jnp.inf),
            jnp.where((n_must == 0) & any_c, new_score, -jnp.inf)[None],
        ]
    )
    return scores, ~any_c & (n_must == 0)


def place_component(k, state: NestedState, choice, C: int) -> NestedState:
    """Component ``k`` moved to option ``choice`` of :func:`component_conditional` (an empty slot stays put)."""
    u_wo = state.u.at[k].set(-1)
    n_class = jax.ops.segment_sum(state.count, jnp.where(u_wo >= 0, u_wo, C), num_segments=C + 1)[:C]
    c_free, _ = first_free(n_class > 0)
    choice = jnp.asarray(choice, jnp.int32)
    c_new = jnp.where(choice < C, choice, c_free.astype(jnp.int32))
    return state._replace(u=jnp.where(state.count[k] > 0, state.u.at[k].set(c_new), state.u))


def _component_move(k, carry, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    state, key, overflow = carry
    key, sub = jax.random.split(key)
    scores, need_slot = component_conditional(k, state, data, prior, alpha, gamma, C)
    choice = jax.random.categorical(sub, scores)
    return place_component(k, state, choice, C), key, overflow | ((state.count[k] > 0) & need_slot)


def component_sweep(key, state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    """Each component in turn draws its class (its items move together); returns ``(state, info)``."""
    K = state.count.shape[0]
    state, _, overflow = jax.lax.fori_loop(
        0,
        K,
        lambda k, c: _component_move(k, c, data, prior, alpha, gamma, C),
        (state, key, jnp.zeros((), bool)),
    )
    return state, no_moves()._replace(overflow=overflow)
