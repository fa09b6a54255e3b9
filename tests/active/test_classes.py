"""Classes as unions of components: one answer moves whole components (``jaxclust.active.classes``)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from jaxclust import DPMM, Constraints, NestedDPMM
from jaxclust.active import ActiveLearner, GoldOracle
from jaxclust.active.classes import (
    answer_groups,
    class_map,
    class_samples,
    component_questions,
    component_statistics,
    joined_answer_groups,
    natural_components,
)
from jaxclust.active.selection import Round, pick
from jaxclust.errors import InvalidInputError

RNG = np.random.default_rng(0)
# four separated blobs of 8 points; classes are unions of two blobs each: {0, 1} and {2, 3}
CENTRES = np.array([[-6.0, 0.0], [-6.0, 6.0], [6.0, 0.0], [6.0, 6.0]])
X = np.concatenate([c + RNG.normal(0.0, 0.3, size=(8, 2)) for c in CENTRES])
BLOB = np.repeat(np.arange(4), 8)
CLASS = BLOB // 2


def test_natural_component_is_the_nearest_blob_weighted_by_size():
    """Item 0 of blob 0, moved by a must-link into blob 1's component: its natural component is blob 0."""
    z = BLOB.copy()
    z[0] = 1
    use = np.ones(32, bool)
    use[0] = False
    stats = component_statistics(X, z, 4, use)
    assert natural_components(X, np.array([0, 9]), stats).tolist() == [0, 1]
    # the statistics leave the moved item out: blob 1's mean is that of its own 8 points
    np.testing.assert_allclose(stats[1][1], X[8:16].mean(axis=0))


def test_a_must_link_across_two_components_joins_their_classes():
    """Sample: the four blobs as components, the must-linked pair (0, 8) held together in blob 1's component
    (as the DPMM does: one item moves). The classes join blobs 0 and 1 whole, not only the two items."""
    z = BLOB.copy()
    z[0] = 1
    c = Constraints(32, must_link=[(0, 8)])
    m = class_map(X, z, c)
    assert adjusted_rand_score(np.where(BLOB <= 1, 0, BLOB - 1), m.labels) == 1.0  # {0,1}, {2}, {3}
    assert m.components[0] == 0 and m.apart == set()  # item 0 is back in its own blob
    # without the answer every blob is its own class
    assert len(np.unique(class_samples(X, BLOB[None], None)[0])) == 4


def test_a_join_that_would_unite_a_cannot_linked_pair_is_refused_and_constraints_hold():
    """cannot(0, 8) then must(1, 9): the group {1, 9} joins blob 0 (item 1's natural component), and joining
    blob 1 too would put 0 and 8 in one class: refused. The group keeps one class, blobs 0 and 1 stay apart.
    A cannot-link between blobs 0 and 2 alone is a tested pair of classes."""
    z = BLOB.copy()
    z[1] = 1  # the must-link group {1, 9} sits in blob 1
    m = class_map(X, z, Constraints(32, must_link=[(1, 9)], cannot_link=[(0, 8)]))
    assert m.labels[0] != m.labels[8] and m.labels[1] == m.labels[9] == m.labels[0]
    assert adjusted_rand_score(BLOB, m.labels) < 1.0 and len(np.unique(m.labels)) == 4
    assert (min(m.labels[0], m.labels[8]), max(m.labels[0], m.labels[8])) in m.apart
    m = class_map(X, BLOB, Constraints(32, cannot_link=[(0, 16)]))
    assert (min(m.labels[0], m.labels[16]), max(m.labels[0], m.labels[16])) in m.apart and len(m.apart) == 1


def test_soft_answers_join_by_majority_and_a_wrong_one_is_outvoted():
    """Error rate 0.1: one must between blobs 0 and 1 joins them; adding two cannots between them undoes it."""
    one = Constraints.from_answers(32, [(0, 8, "must", 0.1)])
    labels = class_samples(X, BLOB[None], one)[0]
    assert labels[0] == labels[8] and len(np.unique(labels)) == 3
    outvoted = Constraints.from_answers(
        32, [(0, 8, "must", 0.1), (1, 9, "cannot", 0.1), (2, 10, "cannot", 0.1)]
    )
    labels = class_samples(X, BLOB[None], outvoted)[0]
    assert len(np.unique(labels)) == 4


def test_component_questions_ask_nearest_untested_class_pairs_once_then_test_each_component():
    """Blobs 0-1 and 2-3 are 6 apart, 0-2 and 1-3 are 12 apart: the nearest pairs are asked first, through the
    most central member of each blob; a tested pair of classes (a cannot-link) is not asked again, and joined
    classes are not asked about. Then each blob (8 items, the smallest asked about) is asked whether it is one
    class: the central items of its two 2-means halves."""
    qs = component_questions(X, BLOB, None, 20)
    assert len(qs) == 6 + 4
    between, within = qs[:6], qs[6:]
    assert {tuple(sorted((BLOB[i], BLOB[j]))) for i, j in between} == {
        (a, b) for a in range(4) for b in range(a + 1, 4)
    }
    assert {tuple(sorted((BLOB[i], BLOB[j]))) for i, j in between[:2]} == {(0, 1), (2, 3)}
    assert [BLOB[i] == BLOB[j] for i, j in within] == [True] * 4
    _, mean, var = component_statistics(X, BLOB, 4)
    for i, j in between:
        for a in (i, j):
            b = BLOB[a]
            score = (((X[BLOB == b] - mean[b]) ** 2) / var[b]).sum(axis=1)
            assert np.argmin(score) + 8 * b == a
    c = Constraints(32, cannot_link=[qs[0]])
    left = component_questions(X, BLOB, c, 20)
    assert len(left) == 9 and qs[0] not in left
    # a must-link across blob 0's halves says blob 0 is one class: its split question is not asked
    c = Constraints(32, must_link=[within[[BLOB[i] for i, _ in within].index(0)]])
    assert [BLOB[i] for i, j in component_questions(X, BLOB, c, 20)[6:]] == [1, 2, 3]
    # ... and so does a chain of must-links through another blob (the halves share one must-link group)
    a, b = within[[BLOB[i] for i, _ in within].index(0)]
    chained = component_questions(X, BLOB, Constraints(32, must_link=[(a, 20), (20, b)]), 20)
    assert not any(BLOB[i] == BLOB[j] == 0 for i, j in chained)
    assert component_questions(X, BLOB, None, 20, min_split=9) == between
    z = BLOB.copy()
    z[0] = 1
    joined = component_questions(X, z, Constraints(32, must_link=[(0, 8)]), 3)
    assert len(joined) == 3  # classes {0,1}, {2}, {3}: three pairs of classes
    assert {tuple(sorted((BLOB[i] // 2 * 2 if BLOB[i] < 2 else BLOB[i], BLOB[j]))) for i, j in joined} == {
        (0, 2),
        (0, 3),
        (2, 3),
    }


def test_a_join_no_question_tested_is_asked_about_through_representatives():
    """must(0, 8) joins blobs 0 and 1 through two items that are not their blobs' representatives: after the
    three pairs of classes, the next question is blob 1's representative against blob 0's (the largest unit of
    the class, first of equals); a must-link between the representatives settles it, and the previous layer
    (whole components, ``split=False``) does not ask it."""
    z = BLOB.copy()
    z[0] = 1
    _, mean, var = component_statistics(X, BLOB, 4)
    rep = [int(np.argmin((((X[BLOB == b] - mean[b]) ** 2) / var[b]).sum(axis=1))) + 8 * b for b in range(4)]
    assert 0 not in rep and 8 not in rep
    qs = component_questions(X, z, Constraints(32, must_link=[(0, 8)]), 4)
    assert qs[3] == (rep[0], rep[1])
    settled = component_questions(X, z, Constraints(32, must_link=[(0, 8), (rep[0], rep[1])]), 4)
    assert (rep[0], rep[1]) not in settled and all(BLOB[i] != BLOB[j] for i, j in settled[:3])
    whole = component_questions(X, z, Constraints(32, must_link=[(0, 8)]), 4, split=False)
    assert whole[:3] == qs[:3] and BLOB[whole[3][0]] == BLOB[whole[3][1]]  # straight to a split question


def test_explore_never_confident_while_beliefs_are_untested():
    samples = np.tile(BLOB, (5, 1))  # every sample agrees: link entropy 0 everywhere
    r = Round(samples, Constraints(32), set(), X=X, components=BLOB, need_entropy=True)
    pairs, h = pick("explore", r, 1)
    assert len(pairs) == 1 and h is None
    pairs, h = pick("entropy", r, 1)
    assert h == pytest.approx(0.0)
    with pytest.raises(InvalidInputError, match="strategy"):
        pick("nope", r, 1)


SMALL = dict(n_chains=2, n_burnin=20, n_samples=5, thin=2, random_state=0)


def test_one_answer_across_two_sub_type_components_merges_the_class_in_a_session():
    """The DPMM finds the 4 blobs; the default session asks about the nearest blobs first, and each "same"
    answer joins two whole blobs: two answers about the four blobs give the 2 classes exactly. With answers
    on pairs only (the previous behaviour) the blobs stay apart."""
    rng = np.random.default_rng(1)
    Xb = np.concatenate([c + rng.normal(0.0, 0.5, size=(30, 2)) for c in CENTRES])
    blob = np.repeat(np.arange(4), 30)
    learner = ActiveLearner(DPMM(**SMALL), GoldOracle(blob // 2), progress=False)
    learner.run(Xb, 4, eval_labels=blob // 2)
    assert adjusted_rand_score(blob // 2, learner.labels_) == 1.0
    asked = [(a["i"], a["j"], a["answer"]) for a in learner.answers_]
    across = {
        tuple(sorted((blob[i], blob[j]))) for i, j, kind in asked if kind == "must" and blob[i] != blob[j]
    }
    assert across == {(0, 1), (2, 3)}
    # the blobs are pure components: keeping components whole (the previous layer) asks and answers the same
    whole = ActiveLearner(DPMM(**SMALL), GoldOracle(blob // 2), progress=False, propagation="components")
    whole.run(Xb, 4, eval_labels=blob // 2)
    assert [(a["i"], a["j"]) for a in whole.answers_] == [(a["i"], a["j"]) for a in learner.answers_]
    np.testing.assert_array_equal(whole.labels_, learner.labels_)
    pairs = ActiveLearner(DPMM(**SMALL), GoldOracle(blob // 2), progress=False, propagation="pairs")
    pairs.run(Xb, 4, eval_labels=blob // 2)
    assert len(np.unique(pairs.labels_)) >= 4 and adjusted_rand_score(blob // 2, pairs.labels_) < 0.7
    # over the retained samples too (scores of the session's samples, class level vs component level)
    assert learner.history_[-1]["v_beta"] > pairs.history_[-1]["v_beta"] + 0.2


def test_propagation_is_checked_by_name():
    with pytest.raises(InvalidInputError, match="propagation"):
        ActiveLearner(DPMM(**SMALL), GoldOracle(CLASS), propagation="everything").run(X, 1)


# one component holding two classes side by side: items 0-15 at x < 0 (class 0), 16-31 at x > 0 (class 1)
WIDE = np.concatenate([np.linspace(-4.0, -0.5, 16), np.linspace(0.5, 4.0, 16)])[:, None] * np.array(
    [[1.0, 0.0]]
)
WIDE = WIDE + RNG.normal(0.0, 0.05, size=WIDE.shape)
HALF = (np.arange(32) >= 16).astype(np.int64)


def test_a_cannot_link_inside_a_component_splits_it_by_the_nearest_answered_item():
    """The sample keeps one component for both classes; a "different" answer about items 3 and 28 (the sampler
    has moved 28 to a component of its own) splits the component: every other item takes the class of the
    nearer answered item, exactly the two classes here. Before the split rule (``split=False``, the previous
    layer) only the moved item left."""
    z = np.zeros(32, np.int64)
    z[28] = 1
    c = Constraints(32, cannot_link=[(3, 28)])
    m = class_map(WIDE, z, c)
    assert adjusted_rand_score(HALF, m.labels) == 1.0
    assert len(m.class_of) == 2 and m.class_of[m.components[3]] != m.class_of[m.components[28]]
    # the answered items sit in their natural component's share, wherever the sample moved them
    assert m.components[28] == m.components[20] != m.components[3]
    old = class_map(WIDE, z, c, split=False)
    assert sorted(np.bincount(old.labels).tolist()) == [1, 31]
    # a must-link from item 28 to a far blob's group carries the whole right half into that blob's class
    z2 = np.concatenate([z, np.full(4, 2)])
    Xf = np.concatenate([WIDE, np.array([[20.0, 0.0]]) + RNG.normal(0, 0.1, (4, 2))])
    m = class_map(Xf, z2, Constraints(36, cannot_link=[(3, 28)], must_link=[(28, 33)]))
    assert adjusted_rand_score(np.concatenate([HALF, [1] * 4]), m.labels) == 1.0


def test_split_components_keep_every_hard_answer_and_merge_nothing_no_answer_links():
    """Random answers from the two-class truth on one component: every hard answer holds in the labels, each
    item's class is its unit's class, and two answered items share a class only when must-links connect
    them (an impure component is not a bridge between the classes of its seeds)."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        pairs = rng.choice(32, size=(6, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        must = [(int(a), int(b)) for a, b in pairs if HALF[a] == HALF[b]]
        cannot = [(int(a), int(b)) for a, b in pairs if HALF[a] != HALF[b]]
        if not cannot:
            continue
        c = Constraints(32, must_link=must, cannot_link=cannot)
        z = np.zeros(32, np.int64)
        for a, b in cannot:  # the sampler separates cannot-linked items
            if z[a] == z[b]:
                z[b] = z.max() + 1
        m = class_map(WIDE, z, c)
        assert all(m.labels[a] == m.labels[b] for a, b in must)
        assert all(m.labels[a] != m.labels[b] for a, b in cannot)
        assert all(m.class_of[m.components[i]] == m.labels[i] for i in range(32))
        answered = sorted({i for p in must + cannot for i in p})
        for a in answered:
            for b in answered:
                assert (m.labels[a] == m.labels[b]) == (c.group_of[a] == c.group_of[b])


def test_a_component_whose_join_is_refused_is_split_between_its_seeds():
    """Groups {1, 18} (blobs 0, 2), {17, 26} (blobs 2, 3) and {24, 25} (blob 3), and "different" for (1, 24).
    The first two groups join blobs 0, 2 and 3 into one class; the third group's join to blob 3 is then refused
    (its class is kept apart from the first group's), so blob 3 holds seeds of two classes that no single
    cannot-link names. It is split: each other item of blob 3 takes the class of its nearest seed, where keeping
    it whole would hand all of blob 3 to the first class."""
    c = Constraints(32, must_link=[(1, 18), (17, 26), (24, 25)], cannot_link=[(1, 24)])
    m = class_map(X, BLOB, c)
    assert m.labels[1] == m.labels[18] == m.labels[17] == m.labels[26] != m.labels[24] == m.labels[25]
    assert np.all(m.labels[np.isin(BLOB, [0, 2])] == m.labels[1])
    seeds = np.array([24, 25, 26])
    free = np.setdiff1d(np.flatnonzero(BLOB == 3), seeds)
    _, _, var = component_statistics(X, BLOB, 4, ~np.isin(np.arange(32), [1, 17, 18, 24, 25, 26]))
    nearest = seeds[np.argmin((((X[free, None] - X[seeds][None]) ** 2) / var[3]).sum(axis=2), axis=1)]
    np.testing.assert_array_equal(m.labels[free], m.labels[nearest])
    assert len(set(m.labels[free])) == 2


def test_the_clustering_shown_is_the_retained_sample_the_others_agree_with():
    """labels_ is the row of the session's class samples with the least summed Binder loss to the others (here
    not the model's own best sample, which a noisy stand-in sampler takes to be its first)."""
    import sys
    from pathlib import Path

    from jaxclust.coclustering import least_squares_sample, relabel

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _standin import StandInSampler, blobs

    Xb, y = blobs(n_per=10)
    learner = ActiveLearner(StandInSampler(n_samples=8), GoldOracle(y), progress=False)
    learner.run(Xb, 3)
    samples = class_samples(Xb, learner.model_.samples_, learner.constraints_)
    assert np.array_equal(learner.labels_, samples[least_squares_sample(samples)])
    assert not np.array_equal(relabel(learner.labels_), relabel(samples[0]))


def test_a_model_that_samples_classes_is_read_as_it_is_unless_told_otherwise():
    """``propagation=None`` (default): no class layer over a model whose samples are classes (NestedDPMM), the
    class layer over a model of components (DPMM); a propagation the user gives is kept."""

    def resolved(model, **kw):
        return ActiveLearner(model, GoldOracle(CLASS), progress=False, **kw).session_settings().propagation

    assert resolved(NestedDPMM()) == "pairs"
    assert resolved(DPMM(**SMALL)) == "classes"
    assert resolved(NestedDPMM(), propagation="classes") == "classes"
    assert resolved(DPMM(**SMALL), propagation="pairs") == "pairs"


def test_questions_about_a_sample_of_classes_read_its_classes_not_the_answers():
    """A model that samples classes of components (classes {0, 1} and {2, 3} of the four blobs, held together by
    no answer): the classes come from the sample. Blobs of one class are not asked about as a pair of classes,
    but as a join no answer tested (each against the largest component of its class); a cannot-link across
    the two classes tests that pair, so it is not asked again."""
    qs = component_questions(X, BLOB, None, 4, min_split=9, classes=CLASS)
    assert len(qs) == 3
    assert CLASS[qs[0][0]] != CLASS[qs[0][1]]  # the one pair of classes, through its nearest components
    assert {tuple(sorted((BLOB[i], BLOB[j]))) for i, j in qs[1:]} == {(0, 1), (2, 3)}  # the untested joins
    _, mean, var = component_statistics(X, BLOB, 4)
    for a in np.ravel(qs):  # each asked through its component's most central item
        b = BLOB[a]
        assert np.argmin((((X[BLOB == b] - mean[b]) ** 2) / var[b]).sum(axis=1)) + 8 * b == a
    tested = component_questions(
        X, BLOB, Constraints(32, cannot_link=[(0, 31)]), 4, min_split=9, classes=CLASS
    )
    assert tested == qs[1:]
    # through the session's Round: the model's classes reach the questions
    r = Round(np.stack([CLASS, CLASS]), None, (), X=X, components=BLOB, classes=CLASS)
    assert pick("explore", r, 4)[0][:3] == qs  # then a component's unity (the smallest blob asked about)


def test_answer_groups_join_what_same_answers_link_and_relate_what_different_answers_do():
    """Hard and soft "same" answers link items transitively into groups; "different" answers, hard or soft,
    relate groups (each pair once, smaller group first)."""
    c = Constraints.from_answers(
        12,
        [
            (0, 1, "must"),
            (1, 2, "must"),
            (3, 4, "must"),
            (5, 6, "cannot"),
            (0, 5, "cannot"),
            (2, 6, "cannot"),
            (7, 8, "must", 0.1),
            (8, 9, "cannot", 0.1),
        ],
    )
    items, group, apart = answer_groups(c)
    assert items.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]  # 10 and 11: no answer
    assert group.tolist() == [0, 0, 0, 1, 1, 2, 3, 4, 4, 5]
    assert apart.tolist() == [[0, 2], [0, 3], [2, 3], [4, 5]]
    none = answer_groups(Constraints(5))
    assert len(none[0]) == 0 and none[2].shape == (0, 2)


def test_joined_answer_groups_ask_about_joins_of_answered_groups_that_no_answer_tested():
    """A sample of classes that joins everything (one class over the four blobs): the must-linked group of
    three in blob 0 and that in blob 2 are one class on no evidence, and so is the lone item of blob 3
    that a cannot-link holds; the largest groups' join is asked first, each group through its most central
    member, and a pair that an answer relates is never asked."""
    one = np.zeros(32, np.int64)
    c = Constraints(32, must_link=[(0, 1), (1, 2), (16, 17), (17, 18)], cannot_link=[(16, 24)])
    qs = joined_answer_groups(X, one, c)
    central = {
        g: m[np.argmin((((X[m] - X[m].mean(0)) / X.std(0)) ** 2).sum(1))]
        for g, m in {"a": np.array([0, 1, 2]), "b": np.array([16, 17, 18])}.items()
    }
    assert qs == [
        (central["a"], central["b"]),
        (central["a"], 24),
    ]  # group b and 24: a cannot-link relates them
    # classes the sample keeps apart are not asked about: blobs {0, 1} and {2, 3} in two classes
    assert joined_answer_groups(X, CLASS, c) == []
    # a soft "different" answer relates the two groups as a hard one does
    soft = Constraints.from_answers(32, [(0, 1, "must", 0.1), (16, 17, "must", 0.1), (0, 16, "cannot", 0.1)])
    assert joined_answer_groups(X, one, soft) == []
    # through component_questions: these come before the questions about the sample's components
    assert component_questions(X, BLOB, c, 2, classes=one) == qs
    assert component_questions(X, BLOB, c, 2, classes=None)[0] != qs[0]
