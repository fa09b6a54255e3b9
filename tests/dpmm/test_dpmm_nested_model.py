"""NestedDPMM: the two-level mixture as an estimator. Known answers on separated data, hard answers kept in every
sample, a class of two shapes, reproducibility and named errors."""

from __future__ import annotations

import numpy as np
import pytest

from jaxclust import Constraints, NestedDPMM
from jaxclust.errors import ConstraintError, InvalidInputError
from jaxclust.metrics.partition import adjusted_rand_index

CENTRES = np.array([[0.0, 0.0], [12.0, 0.0], [0.0, 12.0]])
Y = np.repeat(np.arange(3), 6)
X = CENTRES[Y] + np.random.default_rng(0).normal(scale=0.5, size=(18, 2))
# the blobs' spread is 1/12 of the gap between them: a prior that expects components of that size (the default
# expects half a column's variance, which a class of 6 items cannot overrule)
SMALL = {"n_chains": 2, "n_burnin": 40, "n_samples": 5, "thin": 2, "random_state": 0, "scale": 0.01}


def test_separated_blobs_are_found_from_the_default_start():
    model = NestedDPMM(**SMALL).fit(X)
    assert adjusted_rand_index(Y, model.labels_) == 1.0
    assert model.samples_.shape == (10, 18) and model.final_labels_.shape == (2, 18)


def test_a_cold_start_takes_the_fewest_slots_not_one_per_item():
    """600 items in three blobs: the chains start from k-means parts (12 at most), so the first fit runs in the
    fewest slots (16), where a start of one component per item needs 600, and still finds the blobs and keeps the
    answers."""
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(3), 200)
    x = CENTRES[y] + rng.normal(scale=0.5, size=(600, 2))
    cons = Constraints(600, must_link=[(0, 199), (200, 399)], cannot_link=[(0, 400), (199, 200)])
    model = NestedDPMM(n_chains=2, n_burnin=20, n_samples=2, thin=1, scale=0.01, random_state=0)
    model.fit(x, constraints=cons)
    assert model.n_slots_ == 16
    for cls in model.samples_:
        assert not cons.check_assignment(cls)
    assert adjusted_rand_index(y, model.labels_) == 1.0


def test_a_must_link_across_two_blobs_makes_one_class_of_two_components():
    cons = Constraints(18, must_link=[(0, 6)], cannot_link=[(0, 12)])
    model = NestedDPMM(**SMALL).fit(X, constraints=cons)
    for cls in model.samples_:
        assert not cons.check_assignment(cls)  # every sample keeps every hard answer
    # blobs 0 and 1 form one class, yet keep their own components: the answer moved no item
    assert adjusted_rand_index(np.r_[np.zeros(12), np.ones(6)], model.labels_) == 1.0
    best = int(np.flatnonzero((model.samples_ == model.labels_).all(1))[0])
    assert set(model.components_[best][:6]).isdisjoint(model.components_[best][6:12])


def test_same_seed_same_samples_and_a_bad_warm_start_is_repaired():
    cons = Constraints(18, cannot_link=[(0, 1)])
    a = NestedDPMM(**SMALL).fit(X, constraints=cons)
    b = NestedDPMM(**SMALL).fit(X, constraints=cons)
    np.testing.assert_array_equal(a.samples_, b.samples_)
    c = NestedDPMM(**SMALL).fit(X, constraints=cons, init_labels=np.zeros((2, 18), int))  # breaks (0, 1)
    assert all(s[0] != s[1] for s in c.samples_)


def test_thin_given_to_fit_is_the_constructors_thin():
    a = NestedDPMM(**SMALL).fit(X, n_burnin=10, thin=1)
    b = NestedDPMM(**{**SMALL, "n_burnin": 10, "thin": 1}).fit(X)
    np.testing.assert_array_equal(a.samples_, b.samples_)
    with pytest.raises(InvalidInputError, match="thin"):
        NestedDPMM(**SMALL).fit(X, thin=0)


def test_n_split_merge_given_to_fit_is_the_constructors():
    # no structure: many labellings are likely, so the number of proposals changes the draws
    Z = np.random.default_rng(1).normal(size=(18, 2))
    kw = {**SMALL, "scale": 0.5, "n_burnin": 10}
    cons = Constraints(18, must_link=[(0, 6)])
    a = NestedDPMM(**kw).fit(Z, constraints=cons, n_split_merge=2)
    b = NestedDPMM(**{**kw, "n_split_merge": 2}).fit(Z, constraints=cons)
    c = NestedDPMM(**kw).fit(Z, constraints=cons)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert not np.array_equal(a.components_, c.components_)  # the override is used, not dropped
    with pytest.raises(InvalidInputError, match="n_split_merge"):
        NestedDPMM(**SMALL).fit(X, n_split_merge=-1)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"alpha": 0}, r"NestedDPMM\(alpha=0\): expected a finite number > 0.0"),
        ({"n_chains": 0}, "n_chains=0"),
        ({"resolution": -0.1}, r"resolution=-0.1\): expected None or a finite number >= 0.0, or a 1-d array"),
        ({"resolution": [0.1, "a"]}, r"resolution=\[0.1, 'a'\]"),
        (
            {"resolution": [0.1, 0.1, 0.1]},
            r"resolution=\[0.1, 0.1, 0.1\]\): expected a number or 2 of them, one per column of X; got 3",
        ),
    ],
)
def test_bad_parameters_are_named(params, match):
    with pytest.raises(InvalidInputError, match=match):
        NestedDPMM(**params).fit(X)


def test_columns_of_few_values_do_not_glue_blobs_together():
    """Three blobs in two continuous columns and two flag columns (2 % of items flagged, at random). Taken as
    exact values, a flag column's items of one value fit a Gaussian of no spread, whose marginal grows without
    bound with the items in it: the flags, not the blobs, decide the components. With each value standing for its
    rounding interval (the step from the data, the default) the blobs are found; with ``resolution=0`` they are
    not."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 100)
    blobs = rng.normal(size=(300, 2)) + 4.0 * np.array([[0, 0], [1, 0], [0, 1]])[y]
    x = np.hstack([blobs, (rng.random((300, 2)) < 0.02).astype(float)])
    small = {"n_chains": 2, "n_burnin": 40, "n_samples": 5, "random_state": 0}
    assert adjusted_rand_index(y, NestedDPMM(**small).fit(x).labels_) > 0.8
    assert adjusted_rand_index(y, NestedDPMM(resolution=0.0, **small).fit(x).labels_) < 0.2
    # a step per column, as given: the blobs' columns rounded to 0.01, the flags to 1
    given = NestedDPMM(resolution=[0.01, 0.01, 1.0, 1.0], **small).fit(x)
    assert adjusted_rand_index(y, given.labels_) > 0.8


def test_answers_passed_where_y_goes_are_refused_not_ignored():
    with pytest.raises(ConstraintError, match=r"y: NestedDPMM.fit got constraints .*constraints="):
        NestedDPMM(**SMALL).fit(X, Constraints(18, cannot_link=[(0, 1)]))


def _two_blob_classes():
    rng = np.random.default_rng(3)
    centres = np.array([[0, 0], [0, 9], [9, 0], [9, 9], [18, 0], [18, 9]], float)
    blob = np.repeat(np.arange(6), 6)
    return centres[blob] + rng.normal(scale=0.5, size=(36, 2)), blob


def test_more_correct_random_answers_never_make_classes_of_two_blobs_worse():
    """Three classes, each two separated blobs (a class no single Gaussian fits): random correct answers at
    growing budgets never lower the ARI of the class labelling, and enough of them find the classes exactly."""
    X6, blob = _two_blob_classes()
    y6 = blob // 2  # classes: blobs {0, 1}, {2, 3}, {4, 5}
    rng = np.random.default_rng(4)
    pairs = [tuple(int(v) for v in rng.choice(36, 2, replace=False)) for _ in range(80)]
    answers = [(i, j, "must" if y6[i] == y6[j] else "cannot") for i, j in pairs]
    scores = []
    for budget in (0, 10, 40, 80):
        cons = Constraints.from_answers(36, answers[:budget])
        model = NestedDPMM(**SMALL).fit(X6, constraints=cons)
        scores.append(adjusted_rand_index(y6, model.labels_))
    assert all(b >= a - 0.02 for a, b in zip(scores, scores[1:], strict=False)), scores
    assert scores[-1] == 1.0, scores


def test_a_warm_start_keeps_the_components_it_is_given():
    """Classes of two blobs each, warm-started from a fit's last state: with its components every sample of the
    first sweeps has the six blobs as components; from its classes alone (one component per class) the sweeps
    have not yet cut the classes again."""
    X6, blob = _two_blob_classes()
    cons = Constraints(36, must_link=[(0, 6), (12, 18), (24, 30)])
    first = NestedDPMM(**SMALL).fit(X6, constraints=cons)
    assert all(adjusted_rand_index(blob, z) == 1.0 for z in first.final_components_)
    warm = {"n_burnin": 0, "thin": 1, "init_labels": first.final_labels_}
    short = NestedDPMM(**{**SMALL, "n_split_merge": 0})
    kept = short.fit(X6, constraints=cons, init_components=first.final_components_, **warm).components_
    assert all(adjusted_rand_index(blob, z) == 1.0 for z in kept)
    rebuilt = short.fit(X6, constraints=cons, **warm).components_
    assert all(adjusted_rand_index(blob, z) < 0.6 for z in rebuilt)


def test_the_labels_of_init_components_are_any_integers():
    """Components named by any integers (negative, beyond n) start the chains as their relabelling does, even where
    a label minus n equals another class's label."""
    X6, blob = _two_blob_classes()
    odd = blob.copy()
    odd[blob == 0], odd[blob == 2] = 35, -1  # blob 0 in class 0, blob 2 in class 1: 0 * 36 + 35 == 1 * 36 - 1
    warm = {"n_burnin": 0, "thin": 1, "init_labels": blob // 2}
    short = NestedDPMM(**{**SMALL, "n_split_merge": 0})
    a = short.fit(X6, init_components=odd, **warm).components_
    np.testing.assert_array_equal(a, short.fit(X6, init_components=blob, **warm).components_)


def test_init_components_are_checked():
    X6, _ = _two_blob_classes()
    with pytest.raises(InvalidInputError, match="init_components: given without init_labels"):
        NestedDPMM(**SMALL).fit(X6, init_components=np.zeros(36, int))
    with pytest.raises(
        InvalidInputError, match=r"init_components: expected shape \(36,\) or \(n_chains, n\)"
    ):
        NestedDPMM(**SMALL).fit(X6, init_labels=np.zeros(36, int), init_components=np.zeros((3, 36), int))
