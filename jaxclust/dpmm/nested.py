"""Classes inside the model: a two-level Dirichlet process mixture, items -> components -> classes.

The model (diagonal Gaussian, every dimension ``d`` independent):

* classes are a CRP(``gamma``) partition of the items, and inside each class the components are a CRP(``alpha``)
  partition of its items, so the prior of a labelling is
  ``p(c, z) = Γ(γ)/Γ(γ+N) γ^{#classes} Π_c Γ(N_c) · Π_c [Γ(α)/Γ(α+N_c) α^{#components of c} Π_{k in c} Γ(n_k)]``;
* each class ``c`` has a precision ``λ_cd ~ Gamma(shape, rate_d)`` and a mean ``m_cd ~ N(mean_d, 1/(kappa_class
  λ_cd))``; each of its components a mean ``μ_kd ~ N(m_cd, 1/(kappa_component λ_cd))``; each item of component
  ``k`` is ``x_id ~ N(μ_kd, 1/λ_cd)``.

The components of a class share its precision and scatter around its mean, so the class level has a likelihood:
nearby components of one spread form a class, and without answers the classes are not random unions of
components. This is the infinite mixture of infinite Gaussian mixtures of Yerebakan, Rajwa and Dundar (NIPS 2014),
with a diagonal Normal-Gamma class prior in place of their Normal-Inverse-Wishart, so that everything but the
labels integrates out in closed form (:func:`class_log_marginal`).

A tempered likelihood (``NestedPrior.temper`` τ < 1, each item's Gaussian raised to τ) flattens the posterior over
labellings; :class:`~jaxclust.NestedDPMM` uses it only to start its chains (see there), and every sample it keeps is
drawn at τ = 1.

Answers are observations about classes: a hard must-link says ``c_i = c_j`` (the two items may sit in different
components of the class), a hard cannot-link ``c_i != c_j``, and an answer wrong with probability ``eps`` multiplies
the joint by ``1 - eps`` where it agrees with the classes and by ``eps`` where it does not.

Moves (each ``(key, state, data) -> (state, info)``, exact Gibbs, vectorized over chains with ``jax.vmap``):

* :func:`item_sweep`: each item in turn draws its (class, component): any component of an allowed class, a new
  component in an allowed class, or a new class (Neal 2000, Algorithm 3, at both levels);
* :func:`component_sweep`: each component in turn draws its class, its items moving together;
* :func:`class_split_merge`: Metropolis-Hastings merges and splits of whole classes (their components kept), so
  that classes held together by must-links across components can merge and part.

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
from jaxclust.dpmm.state import no_moves
from jaxclust.errors import InvalidInputError

__all__ = [
    "NestedPrior",
    "NestedData",
    "NestedState",
    "class_log_marginal",
    "prepare",
    "pad_answers",
    "init",
    "log_joint",
    "item_sweep",
    "component_sweep",
    "item_conditional",
    "place_item",
    "component_conditional",
    "place_component",
    "class_labels",
]

_LOG_2PI = math.log(2.0 * math.pi)


class NestedPrior(NamedTuple):
    """The class-level Normal-Gamma prior: ``mean`` (D,), ``kappa_class`` (class means' precision, in units of
    the class precision), ``kappa_component`` (components' means around their class mean, the same units),
    ``shape`` and ``rate`` (D,) of the class precision; ``temper`` τ in (0, 1], the power of the likelihood
    (each item's Gaussian raised to τ, so an item weighs τ of one in its class's marginal; 1 is the model)."""

    mean: jax.Array
    kappa_class: jax.Array
    kappa_component: jax.Array
    shape: jax.Array
    rate: jax.Array
    temper: jax.Array | float = 1.0


class NestedData(NamedTuple):
    """Per-fit constants: ``X`` (n, D); the answers as pairs ``i``, ``j`` (P,) with ``must`` (P,) bool, ``hard``
    (P,) bool and ``weight`` (P,), the log odds a soft answer adds where it agrees with the classes
    (``ln((1 - eps) / eps)``; unused for hard answers)."""

    X: jax.Array
    i: jax.Array
    j: jax.Array
    must: jax.Array
    hard: jax.Array
    weight: jax.Array


class NestedState(NamedTuple):
    """One chain: ``z`` (n,) each item's component slot; ``u`` (K,) each component slot's class slot (-1 when
    empty); ``count`` (K,), ``mean`` (K, D) and ``scatter`` (K, D) each component's items (centred statistics)."""

    z: jax.Array
    u: jax.Array
    count: jax.Array
    mean: jax.Array
    scatter: jax.Array


# --- the class marginal ------------------------------------------------------------------------------------------
class _Terms(NamedTuple):
    """What a component adds to its class's marginal (additive over the components of a class): ``n`` items (the
    CRPs count them), ``v = τ n`` their weight in the likelihood (``τ`` the prior's ``temper``), the weight
    ``w = κ1 v / (κ1 + v)`` of its mean, ``a1 = w (mean - m0)`` and ``a2 = w (mean - m0)²`` (D,), ``s`` its
    scatter times τ (D,), and ``h = ½ ln(κ1 / (κ1 + v))``, counted once per dimension."""

    n: jax.Array
    v: jax.Array
    w: jax.Array
    a1: jax.Array
    a2: jax.Array
    s: jax.Array
    h: jax.Array


def _terms(count, mean, scatter, prior: NestedPrior) -> _Terms:
    n = count.astype(mean.dtype)
    v = prior.temper * n
    k1 = prior.kappa_component
    w = k1 * v / (k1 + v)
    y = mean - prior.mean
    wc = w[..., None]
    return _Terms(n, v, w, wc * y, wc * y * y, prior.temper * scatter, 0.5 * jnp.log(k1 / (k1 + v)))


def _add_terms(a: _Terms, b: _Terms) -> _Terms:
    return _Terms(*(x + y for x, y in zip(a, b, strict=True)))


def _sub_terms(a: _Terms, b: _Terms) -> _Terms:
    return _Terms(*(x - y for x, y in zip(a, b, strict=True)))


def class_log_marginal(t: _Terms, prior: NestedPrior) -> jax.Array:
    """``ln p(x of a class)``, every parameter integrated out, from the sums of its components' terms.

    Given the precision λ, each component's mean integrates out to a factor ``sqrt(κ1/(κ1+n_k))`` and a Gaussian
    in its sample mean with precision ``w_k λ``; the class mean then integrates out to ``sqrt(κ0/(κ0 + Σw_k))``
    and the residual ``R = Σ w_k (x̄_k - m0)² - (Σ w_k (x̄_k - m0))² / (κ0 + Σ w_k)``; the precision last, a Gamma
    integral over ``S = Σ scatter + R``. An empty class gives 0. ``R`` is a difference of sums: in float32 it
    needs data near ``m0`` on the scale of a column (``NestedDPMM`` standardises the columns)."""
    n = t.v[..., None]
    total_w = prior.kappa_class + t.w[..., None]
    resid = t.a2 - t.a1 * t.a1 / total_w
    s = jnp.maximum(t.s + resid, 0.0)
    a_n = prior.shape + 0.5 * n
    per_dim = (
        -0.5 * n * _LOG_2PI
        + prior.shape * jnp.log(prior.rate)
        - a_n * jnp.log(prior.rate + 0.5 * s)
        + gammaln(a_n)
        - gammaln(prior.shape)
        + 0.5 * jnp.log(prior.kappa_class / total_w)
    )
    return jnp.sum(per_dim + t.h[..., None], -1)


def _class_sums(t: _Terms, u: jax.Array, C: int) -> _Terms:
    """The terms of the components (K, ...) summed per class slot (C, ...); components with ``u < 0`` count
    nowhere."""
    seg = jnp.where(u >= 0, u, C)
    return _Terms(*(jax.ops.segment_sum(x, seg, num_segments=C) for x in t))


# --- building a state --------------------------------------------------------------------------------------------
def prepare(X, answers=(), dtype=jnp.float32) -> NestedData:
    """The data of a fit: ``X`` (n, D) and the answers, a :class:`~jaxclust.Constraints` or what
    :meth:`~jaxclust.Constraints.from_answers` reads: ``(i, j, "must" | "cannot")`` (hard) or ``(i, j, "must" |
    "cannot", eps)`` (wrong with probability ``eps`` in (0, 1/2]). Bad items, kinds, rates and contradicting hard
    answers get the named errors of :class:`~jaxclust.Constraints`."""
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
    return NestedData(
        jnp.asarray(X, dtype),
        jnp.asarray(i),
        jnp.asarray(j),
        jnp.asarray(must),
        jnp.asarray(hard),
        jnp.asarray(weight, dtype),
    )


def pad_answers(data: NestedData, rows: int) -> NestedData:
    """``data`` with its answers padded to ``rows`` by inert ones (item 0 hard must-linked to itself: it holds in
    every labelling, crosses no set of items and adds nothing to the joint), so that fits with different numbers
    of answers can share one compiled program."""
    extra = rows - data.i.shape[0]
    if extra < 0:
        raise InvalidInputError(f"pad_answers: {data.i.shape[0]} answers do not fit in rows={rows}")

    def grow(a, fill):
        return jnp.concatenate([a, jnp.full((extra,), fill, a.dtype)])

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
    """``ln p(X, classes, components, answers)``: the two CRPs, the class marginals and the answers' factors
    (``-inf`` when a hard answer is broken)."""
    n_items = data.X.shape[0]
    t = _terms(state.count, state.mean, state.scatter, prior)
    sums = _class_sums(t, state.u, C)
    occupied = state.count > 0
    comps_per_class = jax.ops.segment_sum(occupied.astype(jnp.int32), jnp.where(state.u >= 0, state.u, C), C)
    n_class = sums.n
    live = n_class > 0
    lik = jnp.sum(jnp.where(live, class_log_marginal(sums, prior), 0.0))
    prior_classes = (
        gammaln(gamma)
        - gammaln(gamma + n_items)
        + jnp.sum(jnp.where(live, jnp.log(gamma) + gammaln(n_class), 0.0))
    )
    prior_components = jnp.sum(
        jnp.where(live, gammaln(alpha) - gammaln(alpha + n_class) + comps_per_class * jnp.log(alpha), 0.0)
    ) + jnp.sum(jnp.where(occupied, gammaln(state.count.astype(data.X.dtype)), 0.0))
    soft, ok = _answer_terms(data, class_labels(state))
    return jnp.where(ok, lik + prior_classes + prior_components + soft, -jnp.inf)


# --- moves -------------------------------------------------------------------------------------------------------
def _partner_classes(data: NestedData, cls: jax.Array, inside: jax.Array, C: int):
    """For the answers with exactly one item in ``inside`` (n,) bool: per class slot (C,), the hard must-links
    whose other item is there, the hard cannot-links, and the soft answers' log odds; and the number of hard
    must-links out of ``inside``."""
    a, b = inside[data.i], inside[data.j]
    crossing = a != b
    other = jnp.where(a, data.j, data.i)
    oc = cls[other]
    hard_must = crossing & data.hard & data.must
    hard_cannot = crossing & data.hard & ~data.must
    soft = jnp.where(crossing & ~data.hard, data.weight, 0.0)
    to = jnp.where(crossing, oc, C)
    must_in = jax.ops.segment_sum(hard_must.astype(jnp.int32), to, num_segments=C + 1)[:C]
    cannot_in = jax.ops.segment_sum(hard_cannot.astype(jnp.int32), to, num_segments=C + 1)[:C]
    soft_in = jax.ops.segment_sum(soft, to, num_segments=C + 1)[:C]
    return must_in, cannot_in, soft_in, jnp.sum(hard_must.astype(jnp.int32))


def _welford_add(n, mean, scatter, x):
    n1 = n + 1
    delta = x - mean
    m1 = mean + delta / n1.astype(mean.dtype)[..., None]
    return n1, m1, scatter + delta * (x - m1)


def _welford_remove(n, mean, scatter, x):
    n1 = n - 1
    keep = (n1 > 0)[..., None]
    m1 = jnp.where(keep, (mean * n[..., None] - x) / jnp.maximum(n1, 1)[..., None], 0.0)
    s1 = jnp.where(keep, jnp.maximum(scatter - (x - mean) * (x - m1), 0.0), 0.0)
    return n1, m1, s1


def _first_free(occupied: jax.Array) -> tuple[jax.Array, jax.Array]:
    free = ~occupied
    return jnp.argmax(free), jnp.any(free)


def item_conditional(i, state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    """Item ``i``'s full conditional: ``(without, scores, need_slot)``: the state without it, and the log weights
    (K + C + 1,) of joining component k, a new component in class c, or a new class (-inf where not allowed)."""
    x = data.X[i]
    k_old = state.z[i]
    n1, m1, s1 = _welford_remove(state.count[k_old], state.mean[k_old], state.scatter[k_old], x)
    count = state.count.at[k_old].set(n1)
    mean = state.mean.at[k_old].set(m1)
    scatter = state.scatter.at[k_old].set(s1)
    u = jnp.where(count > 0, state.u, -1)
    without = NestedState(state.z, u, count, mean, scatter)
    base = _terms(count, mean, scatter, prior)
    plus_n, plus_m, plus_s = _welford_add(count, mean, scatter, x[None, :])
    plus = _terms(plus_n, plus_m, plus_s, prior)
    single = _terms(jnp.ones((), count.dtype), x, jnp.zeros_like(x), prior)
    sums = _class_sums(base, u, C)
    l_base = class_log_marginal(sums, prior)
    n_class = sums.n
    # an existing component k of class u[k]
    uk = jnp.maximum(u, 0)
    joined = _add_terms(jax.tree.map(lambda s: s[uk], sums), _sub_terms(plus, base))
    comp_score = (
        class_log_marginal(joined, prior)
        - l_base[uk]
        + jnp.log(n_class[uk])
        + jnp.log(count.astype(x.dtype))
        - jnp.log(n_class[uk] + alpha)
    )
    # a new component in class c, and a new class
    with_single = _add_terms(sums, jax.tree.map(lambda s: jnp.broadcast_to(s, (C,) + jnp.shape(s)), single))
    newcomp_score = class_log_marginal(with_single, prior) - l_base + jnp.log(n_class) + jnp.log(alpha)
    newcomp_score = newcomp_score - jnp.log(n_class + alpha)
    newclass_score = class_log_marginal(single, prior) + jnp.log(gamma)
    # answers: the other items' classes
    is_i = jnp.arange(data.X.shape[0]) == i
    cls = jnp.where(is_i, -1, u[state.z])
    must_in, cannot_in, soft_in, n_must = _partner_classes(data, cls, is_i, C)
    class_ok = (must_in == n_must) & (cannot_in == 0) & (n_class > 0)
    _, any_k = _first_free(count > 0)
    _, any_c = _first_free(n_class > 0)
    comp_ok = (count > 0) & class_ok[uk]
    scores = jnp.concatenate(
        [
            jnp.where(comp_ok, comp_score + soft_in[uk], -jnp.inf),
            jnp.where(class_ok & any_k, newcomp_score + soft_in, -jnp.inf),
            jnp.where((n_must == 0) & any_k & any_c, newclass_score, -jnp.inf)[None],
        ]
    )
    need_slot = (~any_k & jnp.any(class_ok)) | ((~any_k | ~any_c) & (n_must == 0))
    return without, scores, need_slot


def place_item(i, without: NestedState, choice, data: NestedData, C: int) -> NestedState:
    """Item ``i`` put back into ``without`` (:func:`item_conditional`) at option ``choice``."""
    x = data.X[i]
    count, u = without.count, without.u
    K = count.shape[0]
    n_class = jax.ops.segment_sum(count, jnp.where(u >= 0, u, C), num_segments=C + 1)[:C]
    k_free, _ = _first_free(count > 0)
    c_free, _ = _first_free(n_class > 0)
    choice = jnp.asarray(choice, jnp.int32)
    is_comp = choice < K
    is_newcomp = (choice >= K) & (choice < K + C)
    k_new = jnp.where(is_comp, choice, k_free.astype(jnp.int32))
    c_new = jnp.where(
        is_comp, u[jnp.minimum(choice, K - 1)], jnp.where(is_newcomp, choice - K, c_free.astype(jnp.int32))
    )
    n2, m2, s2 = _welford_add(count[k_new], without.mean[k_new], without.scatter[k_new], x)
    return NestedState(
        without.z.at[i].set(k_new),
        u.at[k_new].set(c_new),
        count.at[k_new].set(n2),
        without.mean.at[k_new].set(m2),
        without.scatter.at[k_new].set(s2),
    )


def _item_move(i, carry, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    state, key, overflow = carry
    key, sub = jax.random.split(key)
    without, scores, need_slot = item_conditional(i, state, data, prior, alpha, gamma, C)
    choice = jax.random.categorical(sub, scores)
    return place_item(i, without, choice, data, C), key, overflow | need_slot


def item_sweep(key, state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    """Each item in turn draws its (class, component) from its full conditional; returns ``(state, info)``."""
    n = data.X.shape[0]
    state, _, overflow = jax.lax.fori_loop(
        0, n, lambda i, c: _item_move(i, c, data, prior, alpha, gamma, C), (state, key, jnp.zeros((), bool))
    )
    return state, no_moves()._replace(overflow=overflow)


def component_conditional(k, state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    """Component ``k``'s class, full conditional: ``(scores, need_slot)``, the log weights (C + 1,) of joining
    class c or a new class (-inf where not allowed)."""
    t_all = _terms(state.count, state.mean, state.scatter, prior)
    u_wo = state.u.at[k].set(-1)
    sums = _class_sums(t_all, u_wo, C)
    l_base = class_log_marginal(sums, prior)
    n_class = sums.n
    t_k = jax.tree.map(lambda s: s[k], t_all)
    joined = _add_terms(sums, jax.tree.map(lambda s: jnp.broadcast_to(s, (C,) + jnp.shape(s)), t_k))
    n = t_k.n
    join_score = (
        class_log_marginal(joined, prior)
        - l_base
        + gammaln(n_class + n)
        - gammaln(jnp.maximum(n_class, 1.0))
        + gammaln(alpha + n_class)
        - gammaln(alpha + n_class + n)
    )
    new_score = (
        class_log_marginal(t_k, prior) + jnp.log(gamma) + gammaln(n) + gammaln(alpha) - gammaln(alpha + n)
    )
    inside = state.z == k
    cls = jnp.where(inside, -1, u_wo[state.z])
    must_in, cannot_in, soft_in, n_must = _partner_classes(data, cls, inside, C)
    class_ok = (must_in == n_must) & (cannot_in == 0) & (n_class > 0)
    _, any_c = _first_free(n_class > 0)
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
    c_free, _ = _first_free(n_class > 0)
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


def _split_merge_step(_, carry, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    state, key, accepted, proposed, overflow = carry
    key, k_pair, k_sides, k_accept = jax.random.split(key, 4)
    n = data.X.shape[0]
    i, j = jax.random.choice(k_pair, n, (2,), replace=False)
    cls = class_labels(state)
    ci, cj = cls[i], cls[j]
    live = state.count > 0
    in_class = live & (state.u == ci)
    m = jnp.sum(in_class)  # components of i's class (before a split) or of the merged class (after a merge)
    m_merged = m + jnp.sum(live & (state.u == cj))
    # merge: j's class joins i's; split: i's class is cut in two, j's component and a random half going to a new
    # class (the reverse of a merge that had picked the same two items)
    merged = state._replace(u=jnp.where(state.u == cj, ci, state.u))
    n_class = jax.ops.segment_sum(state.count, jnp.where(state.u >= 0, state.u, C), num_segments=C + 1)[:C]
    c_free, any_c = _first_free(n_class > 0)
    zi, zj = state.z[i], state.z[j]
    coin = jax.random.bernoulli(k_sides, 0.5, state.u.shape)
    to_new = in_class & ((jnp.arange(state.u.shape[0]) == zj) | (coin & (jnp.arange(state.u.shape[0]) != zi)))
    split = state._replace(u=jnp.where(to_new, c_free.astype(state.u.dtype), state.u))
    do_merge = ci != cj
    do_split = (ci == cj) & (zi != zj)  # i and j in one component: no split separates them
    proposal = jax.tree.map(lambda a, b: jnp.where(do_merge, a, b), merged, split)
    log_q = jnp.where(do_merge, -(m_merged - 2), m - 2).astype(data.X.dtype) * jnp.log(2.0)
    before = log_joint(state, data, prior, alpha, gamma, C)
    after = log_joint(proposal, data, prior, alpha, gamma, C)
    log_ratio = after - before + log_q
    ok = (do_merge | (do_split & any_c)) & (jnp.log(jax.random.uniform(k_accept)) < log_ratio)
    state = jax.tree.map(lambda a, b: jnp.where(ok, a, b), proposal, state)
    counts = (accepted + ok.astype(jnp.int32), proposed + (do_merge | do_split).astype(jnp.int32))
    return state, key, *counts, overflow | (do_split & ~any_c)


def class_split_merge(
    key, state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int, n_proposals: int = 8
):
    """Metropolis-Hastings split-merge of classes (Jain and Neal 2004, components as the units): two random items;
    in two classes, propose uniting them (every component keeps its items); in one class but two components,
    propose cutting the class in two, each other component going to either side with probability 1/2. Must-linked
    components follow through the hard answers (a cut between them has probability 0). Returns ``(state, info)``
    with the merges and splits proposed and accepted counted together as merges."""
    state, _, acc, prop, overflow = jax.lax.fori_loop(
        0,
        n_proposals,
        lambda s, c: _split_merge_step(s, c, data, prior, alpha, gamma, C),
        (state, key, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32), jnp.zeros((), bool)),
    )
    return state, no_moves()._replace(proposed_merges=prop, accepted_merges=acc, overflow=overflow)


def _component_split_merge_step(_, carry, data: NestedData, prior: NestedPrior, alpha, gamma, C: int):
    """One sequentially allocated split-merge proposal of components inside a class (Dahl 2003)."""
    state, key, accepted, proposed, overflow = carry
    key, k_pair, k_order, k_alloc, k_accept = jax.random.split(key, 5)
    X = data.X
    n = X.shape[0]
    i, j = jax.random.choice(k_pair, n, (2,), replace=False)
    zi, zj = state.z[i], state.z[j]
    cls = class_labels(state)
    same_class = cls[i] == cls[j]
    do_split = same_class & (zi == zj)
    do_merge = same_class & (zi != zj)
    c = cls[i]
    K = state.count.shape[0]
    k_free, any_k = _first_free(state.count > 0)
    k_b = jnp.where(do_split, k_free.astype(jnp.int32), zj)  # side B's slot: a free one, or j's component
    # the class without the component(s) being re-cut
    t_all = _terms(state.count, state.mean, state.scatter, prior)
    cut = (jnp.arange(K) == zi) | (jnp.arange(K) == zj)
    rest = _class_sums(t_all, jnp.where(cut, -1, state.u), C)
    rest_c = jax.tree.map(lambda s: s[c], rest)
    members = (state.z == zi) | (state.z == zj)
    order = jax.random.permutation(k_order, n)
    d = X.shape[1]
    zero = (jnp.zeros((), state.count.dtype), jnp.zeros(d, X.dtype), jnp.zeros(d, X.dtype))
    side_a = _welford_add(*zero, X[i])
    side_b = _welford_add(*zero, X[j])

    def allocate(t, acc):
        a, b, log_q, z_new, key = acc
        item = order[t]
        x = X[item]
        move = members[item] & (item != i) & (item != j)
        key, sub = jax.random.split(key)
        plus_a, plus_b = _welford_add(*a, x), _welford_add(*b, x)

        def cls_lm(sa, sb):
            both = _add_terms(_add_terms(rest_c, _terms(*sa, prior)), _terms(*sb, prior))
            return class_log_marginal(both, prior)

        base = cls_lm(a, b)
        la = cls_lm(plus_a, b) - base + jnp.log(a[0].astype(X.dtype))
        lb = cls_lm(a, plus_b) - base + jnp.log(b[0].astype(X.dtype))
        p_a = jax.nn.sigmoid(la - lb)
        # split: draw the side; merge: the side the item is on now (the reverse split's probability)
        to_a = jnp.where(do_split, jax.random.uniform(sub) < p_a, state.z[item] == zi)
        log_q = log_q + jnp.where(move, jnp.where(to_a, jnp.log(p_a), jnp.log1p(-p_a)), 0.0)
        a = jax.tree.map(lambda new, old: jnp.where(move & to_a, new, old), plus_a, a)
        b = jax.tree.map(lambda new, old: jnp.where(move & ~to_a, new, old), plus_b, b)
        z_new = z_new.at[item].set(jnp.where(move, jnp.where(to_a, zi, k_b), z_new[item]))
        return a, b, log_q, z_new, key

    z_split = state.z.at[j].set(jnp.where(do_split, k_b, state.z[j]))
    side_a, side_b, log_q_split, z_split, _ = jax.lax.fori_loop(
        0, n, allocate, (side_a, side_b, jnp.zeros((), X.dtype), z_split, k_alloc)
    )
    split = init_from(z_split, state.u.at[k_b].set(c), data, K)
    merged = init_from(jnp.where(state.z == zj, zi, state.z), state.u.at[zj].set(-1), data, K)
    proposal = jax.tree.map(lambda a, b: jnp.where(do_split, a, b), split, merged)
    # split: q(merge back) / q(split) = 1 / prod(allocation); merge: q(split back) / 1
    log_q = jnp.where(do_split, -log_q_split, log_q_split)
    log_ratio = log_joint(proposal, data, prior, alpha, gamma, C) - log_joint(
        state, data, prior, alpha, gamma, C
    )
    ok = (do_merge | (do_split & any_k)) & (jnp.log(jax.random.uniform(k_accept)) < log_ratio + log_q)
    state = jax.tree.map(lambda a, b: jnp.where(ok, a, b), proposal, state)
    counts = (accepted + ok.astype(jnp.int32), proposed + (do_merge | do_split).astype(jnp.int32))
    return state, key, *counts, overflow | (do_split & ~any_k)


def init_from(z, u, data: NestedData, K: int) -> NestedState:
    """A state from component slots ``z`` (n,) and each slot's class ``u`` (K,) (statistics recomputed)."""
    X = data.X
    count = jax.ops.segment_sum(jnp.ones(X.shape[0], jnp.int32), z, num_segments=K)
    mean = jax.ops.segment_sum(X, z, num_segments=K) / jnp.maximum(count, 1)[:, None]
    scatter = jax.ops.segment_sum((X - mean[z]) ** 2, z, num_segments=K)
    return NestedState(z, jnp.where(count > 0, u, -1), count, mean, scatter)


def component_split_merge(
    key, state: NestedState, data: NestedData, prior: NestedPrior, alpha, gamma, C: int, n_proposals: int = 8
):
    """Metropolis-Hastings split-merge of components inside a class, by sequential allocation (Dahl 2003): two
    random items of one class; in one component, propose cutting it in two, each other item going to the side
    it fits given the items placed so far; in two components, propose uniting them. Lets a component that spans
    two shapes split (and two halves of one shape merge) in one step. Returns ``(state, info)``, the proposals
    counted as splits."""
    state, _, acc, prop, overflow = jax.lax.fori_loop(
        0,
        n_proposals,
        lambda s, c: _component_split_merge_step(s, c, data, prior, alpha, gamma, C),
        (state, key, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32), jnp.zeros((), bool)),
    )
    return state, no_moves()._replace(proposed_splits=prop, accepted_splits=acc, overflow=overflow)
