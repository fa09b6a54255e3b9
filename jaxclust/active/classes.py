"""Classes as unions of mixture components: how one answer moves whole components.

A Dirichlet-process mixture describes the *shape* of the data; a class a person has in mind is often a union of
several such shapes (a verb class made of sub-senses, a topic made of sub-topics). A must-link between items of
two components is satisfied inside the mixture by moving one item, and the two components stay apart. This
module reads every retained sample at two levels (the layer is deterministic, applied to each exact sample):

1. the sample's components ``z`` (the DPMM's partition under every answer, exact MCMC);
2. a partition of those components into *classes*: the components that the answers link are joined.

For an item that an answer holds, its *natural component* is the one it would join alone: the component of
highest ``log n_k + log N(x_i | mean_k, diag var_k)``, with each component's mean and variance taken from its
items that no answer moved (a shrunk variance for small components). A must-link group joins the classes of its
members' natural components, and its members take that class (a component that only held moved items
disappears); an item that only cannot-links hold does the same alone. A cannot-link (hard) separates the classes
of its two items, and a join that would unite a separated pair is refused (the group then stays a class of its
own), so every hard answer is satisfied in every sample, wherever the sampler moved the answered items.

A component is not always one class: the mixture may cover two classes with one Gaussian where the data is not
separated. When a cannot-link separates two of the items answers place in one component (its *seeds*), or a
seed's join to the component is refused, the component is *split*: it joins nobody's class (the joins are made
again without it), and each of its other items takes the class of its nearest seed (in units of the component's
standard deviations). The shares become units (*atoms*) that later questions compare and join like components,
so an answer inside a component refines it, as COBRAS refines a super-instance (Van Craenendonck et al. 2018).
``split=False`` keeps components whole (``propagation="components"``).

Answers that may be wrong (error rate ``eps``) add ``+-ln((1 - eps) / eps)`` to the score of joining their
natural components' classes; class pairs of positive score are joined greedily, best first, so a wrong answer
is outvoted by later ones.

The class labels of each sample are then the partition the user sees (``ActiveLearner.labels_``), the samples
from which link entropy is computed, and the structure :func:`component_questions` reads to ask about classes
that no answer has tested yet (Van Craenendonck et al. 2018 ask about super-instances in the same spirit).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from jaxclust.coclustering import relabel
from jaxclust.constraints import Constraints

__all__ = [
    "ClassMap",
    "component_statistics",
    "natural_components",
    "class_map",
    "class_samples",
    "component_questions",
    "answer_groups",
    "joined_answer_groups",
]

MIN_SPLIT = 8  # smallest component whose unity is asked about
_PRIOR_WEIGHT = 2.0  # pseudo-items of the pooled within-component variance in each component's variance


def _relabel(z: np.ndarray) -> tuple[np.ndarray, int]:
    """``z`` as 0..K-1 in order of first appearance, and K."""
    out = relabel(z)
    return out, int(out.max()) + 1 if out.size else 0


def component_statistics(X: np.ndarray, z: np.ndarray, K: int, use: np.ndarray | None = None):
    """Counts (K,), means (K, D) and shrunk diagonal variances (K, D) of the components of ``z`` (0..K-1).

    ``use`` (n,) bool restricts the statistics to some items (a component with none of them falls back to all
    of its items). Each variance is shrunk towards the pooled within-component variance with a weight of two
    items, so that a component of one item has the scale of a typical component.
    """
    X = np.asarray(X, np.float64)
    use = np.ones(len(z), bool) if use is None else use

    def stats(mask):
        zm, Xm = z[mask], X[mask]
        cnt = np.bincount(zm, minlength=K).astype(np.float64)
        # sums by component as a sparse (K, m) product: a tenth of np.add.at's time, the same sums
        member = sp.csr_matrix((np.ones(len(zm)), (zm, np.arange(len(zm)))), shape=(K, len(zm)))
        return cnt, member @ Xm, member @ (Xm * Xm)

    cnt, s1, s2 = stats(use)
    if not use.all():
        empty = cnt == 0
        if empty.any():
            c_all, s1_all, s2_all = stats(np.ones(len(z), bool))
            cnt[empty], s1[empty], s2[empty] = c_all[empty], s1_all[empty], s2_all[empty]
    safe = np.maximum(cnt, 1.0)[:, None]
    mean = s1 / safe
    ss = np.maximum(s2 - s1 * mean, 0.0)
    pooled = ss.sum(axis=0) / max(cnt.sum() - np.count_nonzero(cnt), 1.0)
    pooled = np.where(pooled > 0, pooled, np.maximum(X.var(axis=0), 1e-12))
    var = (ss + _PRIOR_WEIGHT * pooled) / (cnt[:, None] + _PRIOR_WEIGHT)
    return cnt, mean, var


def natural_components(X: np.ndarray, items: np.ndarray, stats) -> np.ndarray:
    """For each of ``items`` (m,), the component it would join alone, given the components' ``stats`` from
    :func:`component_statistics` (see the module docstring)."""
    cnt, mean, var = stats
    if len(items) == 0:
        return np.zeros(0, np.int64)
    x = np.asarray(X, np.float64)[items]  # (m, D)
    ll = (
        np.log(np.maximum(cnt, 1.0))[None, :]
        - 0.5 * np.log(var).sum(axis=1)[None, :]
        - 0.5 * (((x[:, None, :] - mean[None]) ** 2) / var[None]).sum(axis=2)
    )
    ll[:, cnt == 0] = -np.inf
    return np.argmax(ll, axis=1)


class _Classes:
    """Union-find over components with separated pairs (hard cannot-links) that a join may not unite."""

    def __init__(self, K: int):
        self.parent = list(range(K))
        self.apart: list[set[int]] = [set() for _ in range(K)]

    def find(self, a: int) -> int:
        p = self.parent
        while p[a] != a:
            p[a] = p[p[a]]
            a = p[a]
        return a

    def separate(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.apart[ra].add(rb)
            self.apart[rb].add(ra)

    def join(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        if rb in self.apart[ra]:
            return False
        self.parent[rb] = ra
        for c in self.apart[rb]:
            self.apart[c].discard(rb)
            self.apart[c].add(ra)
        self.apart[ra] |= self.apart[rb]
        self.apart[rb] = set()
        return True


def _anchored(constraints: Constraints, cannot: bool = True) -> np.ndarray:
    """Items whose component an answer may have moved: members of must-link groups and of soft answers, and
    (``cannot``) of cannot-links."""
    n = constraints.n
    mask = constraints.group_sizes[constraints.group_of] >= 2
    for i, j in constraints.cannot_link if cannot else ():
        mask[i] = mask[j] = True
    for i, j, _, _ in constraints.answers:
        mask[i] = mask[j] = True
    return np.flatnonzero(mask) if n else np.zeros(0, np.int64)


class ClassMap(NamedTuple):
    """The two levels of one sample.

    ``labels`` (n,) the class of each item (0..C-1); ``components`` (n,) each item's unit (0..K-1): its
    natural component (the sample's component, or for an item a hard answer holds the one it would join
    alone), or its class's share of a split component; ``class_of`` (K,) the class of each unit; ``apart`` the
    class pairs ``(a, b)``, a < b, that an answer keeps apart (a hard cannot-link, or soft answers whose net
    verdict is "different").
    """

    labels: np.ndarray
    components: np.ndarray
    class_of: np.ndarray
    apart: set


def _impure(constraints: Constraints, node, nat, own) -> set[int]:
    """The components a hard answer shows to hold two classes: two of its *seeds* (the items answers place
    there: ``own`` items whose natural component ``nat`` it is) belong to two nodes a cannot-link separates."""
    comps_of: dict[int, set[int]] = {}
    for i in np.flatnonzero(own):
        comps_of.setdefault(int(node[i]), set()).add(int(nat[i]))
    out: set[int] = set()
    for a, b in constraints.cannot_link:
        out |= comps_of.get(int(node[a]), set()) & comps_of.get(int(node[b]), set())
    return out


def _split_impure(X, where, impure, own, nat, labels, var, atom_class):
    """The ``impure`` components, split among the classes of their seeds.

    ``where`` (n,) each item's component (0..K-1), ``own`` (n,) the items placed by answers, ``nat`` (n,) their
    natural components, ``labels`` (n,) the classes so far, ``var`` (K, D) the components' variances,
    ``atom_class`` (K,) each component's class. Each other item of an impure component takes the class of its
    nearest seed (in units of the component's standard deviations), and each class's share of the component
    becomes a unit of its own (an *atom*: a new id after the K components). Seeds keep their classes, so
    every hard answer still holds. Returns the new ``where``, ``labels`` and ``atom_class``.
    """
    X = np.asarray(X, np.float64)
    where, labels, atom_class = where.copy(), labels.copy(), list(atom_class)
    for c in sorted(impure):
        seeds = np.flatnonzero(own & (nat == c))
        free = np.flatnonzero((where == c) & ~own)
        if len(free):
            d = (((X[free, None, :] - X[seeds][None]) ** 2) / var[c]).sum(axis=2)
            labels[free] = labels[seeds][np.argmin(d, axis=1)]
        for k in np.unique(labels[seeds]):
            atom = len(atom_class)
            atom_class.append(int(k))
            where[free[labels[free] == k]] = atom
            where[seeds[labels[seeds] == k]] = atom
    return where, labels, np.asarray(atom_class, np.int64)


def class_map(X: np.ndarray, z, constraints: Constraints | None, split: bool = True) -> ClassMap:
    """The classes of one sample ``z`` (n,) of components under ``constraints`` (see the module docstring).

    Every must-link group is a node of its own, joined to its members' natural components unless a cannot-link
    forbids it, so the labels satisfy every hard constraint whatever the components hold.
    """
    comp, K = _relabel(np.asarray(z))
    if constraints is None or len(constraints) == 0:
        return ClassMap(comp, comp, np.arange(K), set())
    items = _anchored(constraints, split)
    nat = comp.copy()
    stats = None
    if len(items):
        use = np.ones(len(comp), bool)
        use[items] = False
        stats = component_statistics(X, comp, K, use)
        nat[items] = natural_components(X, items, stats)
    sizes = constraints.group_sizes
    grouped = sizes[constraints.group_of] >= 2
    big = np.flatnonzero(sizes >= 2)
    group_node = np.full(len(sizes), -1, np.int64)
    group_node[big] = K + np.arange(len(big))
    node = np.where(grouped, group_node[constraints.group_of], comp)
    own = grouped.copy()  # items placed by their natural component, not by where the sample moved them
    solo = np.zeros(0, np.int64)
    if split:  # an item a cannot-link holds, in no must-link group, is a node of its own too
        for a, b in constraints.cannot_link:
            own[a] = own[b] = True
        solo = np.flatnonzero(own & ~grouped)
        node[solo] = K + len(big) + np.arange(len(solo))
    impure = _impure(constraints, node, nat, own) if split else set()
    # seeds join their natural components; a component whose seeds cannot all be one class (a join refused)
    # is split instead, and the joins are made again without it, until no join is refused
    links = [(int(group_node[g]), int(nat[i])) for g in big for i in constraints.groups[g]]
    links += [(int(node[i]), int(nat[i])) for i in solo]
    while True:
        cls = _Classes(K + len(big) + len(solo))
        for a, b in constraints.cannot_link:
            cls.separate(int(node[a]), int(node[b]))
        refused = {c for u, c in links if c not in impure and not cls.join(u, c)}
        if not split or not refused:
            break
        impure |= refused
    soft = constraints.answers
    if soft:
        where_soft = np.where(grouped, node, nat)
        score: dict[tuple[int, int], float] = {}
        for i, j, kind, eps in soft:
            a, b = int(where_soft[i]), int(where_soft[j])
            if a == b:
                continue
            w = np.log1p(-eps) - np.log(eps)
            key = (min(a, b), max(a, b))
            score[key] = score.get(key, 0.0) + (w if kind == "must" else -w)
        while True:  # join the class pair of highest positive score, then re-sum
            total: dict[tuple[int, int], float] = {}
            for (a, b), w in score.items():
                ra, rb = cls.find(a), cls.find(b)
                if ra != rb:
                    key = (min(ra, rb), max(ra, rb))
                    total[key] = total.get(key, 0.0) + w
            joinable = [(w, k) for k, w in total.items() if w > 0 and k[1] not in cls.apart[k[0]]]
            if not joinable:
                break
            _, (ra, rb) = max(joinable)
            cls.join(ra, rb)
        for (a, b), w in score.items():  # a net "different" verdict tests the belief as a cannot-link does
            ra, rb = cls.find(a), cls.find(b)
            if ra != rb and w < 0:
                cls.separate(ra, rb)
    n_nodes = K + len(big) + len(solo)
    roots = np.array([cls.find(v) for v in range(n_nodes)])
    of_node, _ = _relabel(roots)
    labels = of_node[node]
    where_old = np.where(own, nat, comp)
    atom_class = of_node[:K]
    if impure:
        where_old, labels, atom_class = _split_impure(
            X, where_old, impure, own, nat, labels, stats[2], atom_class
        )
    where, K2 = _relabel(where_old)
    class_of = np.empty(K2, np.int64)
    class_of[where] = atom_class[where_old]
    apart = set()
    for r in range(n_nodes):
        if cls.parent[r] == r:
            for q in cls.apart[r]:
                a, b = int(of_node[r]), int(of_node[q])
                apart.add((min(a, b), max(a, b)))
    return ClassMap(labels, where, class_of, apart)


def class_samples(X: np.ndarray, samples, constraints: Constraints | None, split: bool = True) -> np.ndarray:
    """Each sample's class labels (S, n): :func:`class_map` applied to every row of ``samples`` (S, n)."""
    samples = np.atleast_2d(np.asarray(samples))
    if constraints is None or len(constraints) == 0:
        return samples.astype(np.int64, copy=True)
    out = np.empty(samples.shape, np.int64)
    for s, z in enumerate(samples):
        out[s] = class_map(X, z, constraints, split).labels
    return out


def _two_means(x: np.ndarray, n_iter: int = 10) -> np.ndarray:
    """A deterministic 2-means split (m,) of the rows of ``x`` (m, D): seeded by the row farthest from the mean
    and the row farthest from that one."""
    a = int(np.argmax(((x - x.mean(axis=0)) ** 2).sum(axis=1)))
    b = int(np.argmax(((x - x[a]) ** 2).sum(axis=1)))
    centres = x[[a, b]]
    half = np.zeros(len(x), np.int64)
    for _ in range(n_iter):
        half = np.argmin(((x[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
        if half.min() == half.max():
            break
        centres = np.stack([x[half == h].mean(axis=0) for h in (0, 1)])
    return half


def _central(x: np.ndarray, idx: np.ndarray, mean: np.ndarray, var: np.ndarray) -> int:
    """The item of ``idx`` nearest ``mean`` in units of the standard deviations ``sqrt(var)``."""
    return int(idx[np.argmin((((x[idx] - mean) ** 2) / var).sum(axis=1))])


def _sampled_classes(z, classes, constraints: Constraints | None) -> tuple[np.ndarray, np.ndarray, set]:
    """``(components, class_of, apart)`` as :func:`class_map` gives them, for a sample whose classes the model
    drew: each component's class from ``classes`` (n,), and the class pairs a hard cannot-link keeps apart."""
    comp, K = _relabel(np.asarray(z))
    cls, _ = _relabel(np.asarray(classes))
    of = np.zeros(K, np.int64)
    of[comp] = cls
    apart: set = set()
    if constraints is not None:
        for a, b in constraints.cannot_link:
            ca, cb = int(cls[a]), int(cls[b])
            apart.add((min(ca, cb), max(ca, cb)))
    return comp, of, apart


def component_questions(
    X: np.ndarray,
    z,
    constraints: Constraints | None,
    k: int,
    exclude=(),
    min_split: int = MIN_SPLIT,
    split: bool = True,
    classes=None,
) -> list:
    """Up to ``k`` questions ``(i, j)`` that test beliefs no answer has tested yet, best first.

    1. *Are two components one class?* In the sample ``z`` (n,), two components in different classes that no
       cannot-link keeps apart hold the untested belief "these are different classes". Each is asked once,
       through representatives (the item of each component nearest its mean, in units of the component's
       standard deviations), nearest components first (mean distance in units of the average
       within-component spread), at most one question per pair of classes.
    2. *Was a component joined to its class rightly?* A must-link group joins its members' natural
       components, and a member may lie across a border from its class. With ``split``, each component of a
       class of several, largest first, is asked about against the largest component of its class (their
       representatives), unless an answer already relates the two; a "different" answer then splits what the
       join had merged.
    3. *Is a component one class?* Each component of at least ``min_split`` items, largest first, is split in
       two by a deterministic 2-means, and the representatives of the halves are asked about, unless an
       answer already links the halves (one must-link group with members in both, or a soft "same" answer
       across them; a cannot-link would have split the component).

    The components here are :func:`class_map`'s units: a component split by an answer is asked about share by
    share. With ``classes`` (n,), the classes of the sample ``z`` as a model of classes of components sampled
    them, the components are the sample's own and their classes those of ``classes``, and the first questions
    are those of :func:`joined_answer_groups`: the answered groups the sample joins with no answer between
    them. Empty when every belief has been tested: the caller falls back to link entropy.
    """
    X = np.asarray(X, np.float64)
    if classes is None:
        comp, of, apart = class_map(X, z, constraints, split)[1:]
    else:
        comp, of, apart = _sampled_classes(z, classes, constraints)
    K = len(of)
    cnt, mean, var = component_statistics(X, comp, K)
    excluded = {(min(p), max(p)) for p in exclude}
    out: list[tuple[int, int]] = []

    def ask(i: int, j: int) -> bool:
        pair = (min(i, j), max(i, j))
        if i == j or pair in excluded or pair in out:
            return False
        if constraints is not None and constraints.status(i, j) is not None:
            return False
        out.append(pair)
        return True

    if classes is not None and constraints is not None:
        for i, j in joined_answer_groups(X, classes, constraints):
            if ask(i, j) and len(out) == k:
                return out
    members = [np.flatnonzero(comp == c) for c in range(K)]
    rep = np.array([_central(X, members[c], mean[c], var[c]) for c in range(K)])
    if K >= 2:
        within = (cnt[:, None] * var).sum(axis=0) / cnt.sum()
        dist = (((mean[:, None, :] - mean[None]) ** 2) / within).sum(axis=2)
        a, b = np.triu_indices(K, k=1)
        keep = of[a] != of[b]
        a, b = a[keep], b[keep]
        asked: set[tuple[int, int]] = set(apart)
        for t in np.argsort(dist[a, b], kind="stable"):
            ca, cb = int(of[a[t]]), int(of[b[t]])
            key = (min(ca, cb), max(ca, cb))
            if key not in asked and ask(int(rep[a[t]]), int(rep[b[t]])):
                asked.add(key)
                if len(out) == k:
                    return out
    # joins that no question tested (a must-link group joins its members' natural components, and a member
    # may lie on the wrong side of a border): each unit against the largest unit of its class, largest first
    if split:
        by_size = np.argsort(-cnt, kind="stable")
        largest: dict[int, int] = {}
        for u in by_size:
            largest.setdefault(int(of[u]), int(u))
        for u in by_size:
            anchor = largest[int(of[u])]
            if anchor != u and ask(int(rep[u]), int(rep[anchor])) and len(out) == k:
                return out
    # what answers say is together tests a split: a must-link group (transitively) or a soft "same" answer
    group = np.arange(len(comp)) if constraints is None else np.asarray(constraints.group_of)
    soft_same = (
        [] if constraints is None else [(i, j) for i, j, kind, _ in constraints.answers if kind == "must"]
    )
    for c in np.argsort(-cnt, kind="stable"):
        idx = members[c]
        if len(idx) < min_split:
            break
        half = np.full(len(comp), -1)
        half[idx] = _two_means(X[idx] / np.sqrt(var[c]))
        if half[idx].min() == half[idx].max():
            continue
        sides = [idx[half[idx] == h] for h in (0, 1)]
        if set(group[sides[0]]) & set(group[sides[1]]) or any(
            comp[i] == c == comp[j] and half[i] != half[j] for i, j in soft_same
        ):
            continue
        i, j = (_central(X, s, X[s].mean(axis=0), var[c]) for s in sides)
        if ask(i, j) and len(out) == k:
            return out
    return out


def answer_groups(constraints: Constraints) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The answered items grouped by what the answers say is together: ``(items, group, apart)``, the answered
    items (m,) in increasing order, each one's group (m,) (0..G-1: the items that "same" answers, hard or soft,
    link, transitively) and the group pairs (A, 2), ``a < b``, that a "different" answer, hard or soft,
    relates."""
    must = [(i, j) for i, j in constraints.must_link]
    must += [(i, j) for i, j, kind, _ in constraints.answers if kind == "must"]
    cannot = [(i, j) for i, j in constraints.cannot_link]
    cannot += [(i, j) for i, j, kind, _ in constraints.answers if kind != "must"]
    ends = np.asarray(must + cannot, np.int64).reshape(-1, 2)
    items = np.unique(ends)
    if len(items) == 0:
        return items, np.zeros(0, np.int64), np.zeros((0, 2), np.int64)
    at = np.searchsorted(items, ends)
    m = np.asarray(at[: len(must)]).reshape(-1, 2)
    graph = sp.coo_matrix((np.ones(len(m)), (m[:, 0], m[:, 1])), shape=(len(items), len(items)))
    _, group = connected_components(graph, directed=False)
    group = relabel(group)
    c = group[np.asarray(at[len(must) :]).reshape(-1, 2)]
    apart = np.unique(np.sort(c, axis=1), axis=0)
    return items, group, apart


def joined_answer_groups(X: np.ndarray, classes, constraints: Constraints) -> list[tuple[int, int]]:
    """Questions ``(i, j)`` about the joins a sample of classes makes that no answer has tested, largest first.

    Under a model whose classes are sampled (:class:`~jaxclust.NestedDPMM`), two groups of answered items
    (:func:`answer_groups`) that the sample ``classes`` (n,) puts in one class, with no answer between them,
    hold the belief "these are one class" on no evidence: the class prior joins what nothing keeps apart, and
    every later answer about their items is read through that join. Each such pair of groups is asked once,
    through each group's most central member (nearest the group's mean, in units of the columns' standard
    deviations), the pairs of the most answered items first. A "different" answer keeps the two groups, and the
    components that hold them, apart from then on; a "same" answer joins them.
    """
    items, group, apart = answer_groups(constraints)
    G = int(group.max()) + 1 if len(group) else 0
    if G < 2:
        return []
    X = np.asarray(X, np.float64)
    scale = X.std(axis=0)
    Z = X[items] / np.where(scale > 0, scale, 1.0)
    size = np.bincount(group, minlength=G)
    centre = np.zeros((G, Z.shape[1]))
    np.add.at(centre, group, Z)
    centre /= size[:, None]
    spread = ((Z - centre[group]) ** 2).sum(axis=1)
    order = np.lexsort((spread, group))  # by group, then nearest its mean first
    first = np.ones(len(order), bool)
    first[1:] = group[order][1:] != group[order][:-1]
    rep = np.empty(G, np.int64)
    rep[group[order][first]] = items[order][first]
    cls = np.asarray(classes)[rep]
    a, b = np.triu_indices(G, k=1)
    keep = cls[a] == cls[b]
    if len(apart):
        keep &= ~np.isin(a * G + b, apart[:, 0] * G + apart[:, 1])
    a, b = a[keep], b[keep]
    by = np.lexsort((b, a, -(size[a] + size[b])))
    return [(int(rep[a[t]]), int(rep[b[t]])) for t in by]
