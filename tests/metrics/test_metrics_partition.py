"""Host partition metrics against scikit-learn on random label pairs and on the edge cases of docs/algorithms/metrics.md
§5."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from sklearn import metrics as skm
from sklearn.metrics.cluster import contingency_matrix, pair_confusion_matrix

from jaxclust.errors import InvalidInputError
from jaxclust.metrics import partition as P

RTOL, ATOL = 1e-10, 1e-12


def _random_pairs(n_pairs=40, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n_pairs):
        n = int(rng.integers(1, 60))
        c = int(rng.integers(1, 8))
        k = int(rng.integers(1, 12))
        y = rng.integers(0, c, n)
        z = rng.integers(0, k, n)
        # sparse / negative / unused ids must not matter
        if rng.random() < 0.3:
            y = y * 7 - 3
        if rng.random() < 0.3:
            z = z * 13 + 100
        yield y, z


def _reference_purity(y, z):
    if len(y) == 0:
        return 1.0
    m = contingency_matrix(y, z)
    return m.max(axis=0).sum() / len(y)


def _reference_vi(y, z):
    # VI = H(C) + H(K) - 2 I with scipy entropies and scikit-learn's mutual information (natural log)
    if len(y) == 0:
        return 0.0
    h = [scipy.stats.entropy(np.unique(v, return_counts=True)[1]) for v in (y, z)]
    return h[0] + h[1] - 2 * skm.mutual_info_score(y, z)


def _brute_pairs(y, z):
    agree = total = 0
    for i in range(len(y)):
        for j in range(i + 1, len(y)):
            total += 1
            agree += (y[i] == y[j]) == (z[i] == z[j])
    return agree, total


@pytest.mark.parametrize("seed", [0, 1])
def test_random_pairs_match_sklearn(seed):
    for y, z in _random_pairs(seed=seed):
        h, c, v = P.homogeneity_completeness_v_measure(y, z)
        np.testing.assert_allclose(
            (h, c, v), skm.homogeneity_completeness_v_measure(y, z), rtol=RTOL, atol=ATOL
        )
        for beta in (0.5, 2.0):
            assert P.v_measure(y, z, beta=beta) == pytest.approx(
                skm.v_measure_score(y, z, beta=beta), rel=RTOL, abs=ATOL
            )
        beta = len(np.unique(z)) / len(np.unique(y))
        assert P.v_beta(y, z) == pytest.approx(skm.v_measure_score(y, z, beta=beta), rel=RTOL, abs=ATOL)
        assert P.adjusted_rand_index(y, z) == pytest.approx(skm.adjusted_rand_score(y, z), rel=RTOL, abs=ATOL)
        for avg in ("arithmetic", "geometric", "min", "max"):
            ref = skm.normalized_mutual_info_score(y, z, average_method=avg)
            assert P.normalized_mutual_info(y, z, avg) == pytest.approx(ref, rel=1e-9, abs=1e-10)
        assert P.mutual_info(y, z) == pytest.approx(skm.mutual_info_score(y, z), rel=RTOL, abs=ATOL)
        assert P.pairwise_link_accuracy(y, z) == pytest.approx(skm.rand_score(y, z), rel=RTOL, abs=ATOL)
        assert P.purity(y, z) == pytest.approx(_reference_purity(y, z), rel=RTOL)
        assert P.inverse_purity(y, z) == pytest.approx(_reference_purity(z, y), rel=RTOL)
        assert P.variation_of_information(y, z) == pytest.approx(_reference_vi(y, z), rel=1e-9, abs=1e-10)
        tn, fp, fn, tp = P.pair_confusion(y, z)
        np.testing.assert_array_equal([[tn, fp], [fn, tp]], pair_confusion_matrix(y, z))


def test_pairwise_link_accuracy_is_exact_pair_enumeration():
    rng = np.random.default_rng(3)
    for _ in range(10):
        y, z = rng.integers(0, 4, 25), rng.integers(0, 5, 25)
        agree, total = _brute_pairs(y, z)
        assert P.pairwise_link_accuracy(y, z) == agree / total


def test_contingency_matches_sklearn_dense_table():
    rng = np.random.default_rng(4)
    y, z = rng.integers(-2, 5, 80), rng.integers(10, 20, 80)
    t = P.contingency(y, z)
    dense = np.zeros((t.n_classes, t.n_clusters), dtype=np.int64)
    dense[t.rows, t.cols] = t.counts
    np.testing.assert_array_equal(dense, contingency_matrix(y, z))
    np.testing.assert_array_equal(t.class_sizes, dense.sum(1))
    np.testing.assert_array_equal(t.cluster_sizes, dense.sum(0))


TRUTH = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])  # classes of sizes 3, 3, 4; N = 10
EDGE_PREDICTIONS = {
    "perfect": TRUTH.copy(),
    "one cluster": np.zeros(10, dtype=int),
    "all singletons": np.arange(10),
    "permuted unused ids": np.array([7, 7, 7, 3, 3, 3, 9, 9, 9, 9]),
}


@pytest.mark.parametrize("name", list(EDGE_PREDICTIONS))
def test_edge_cases_match_sklearn(name):
    z = EDGE_PREDICTIONS[name]
    for y in (TRUTH, np.zeros(10, dtype=int), np.arange(10)):  # also truth = 1 class and truth = singletons
        np.testing.assert_allclose(
            P.homogeneity_completeness_v_measure(y, z),
            skm.homogeneity_completeness_v_measure(y, z),
            rtol=RTOL,
            atol=ATOL,
        )
        assert P.normalized_mutual_info(y, z) == pytest.approx(
            skm.normalized_mutual_info_score(y, z), abs=ATOL
        )
        assert P.adjusted_rand_index(y, z) == pytest.approx(skm.adjusted_rand_score(y, z), abs=ATOL)
        assert P.pairwise_link_accuracy(y, z) == pytest.approx(skm.rand_score(y, z), abs=ATOL)
        assert P.variation_of_information(y, z) == pytest.approx(_reference_vi(y, z), abs=1e-12)


def test_edge_case_table_values():
    """The table of docs/algorithms/metrics.md (truth sizes 3, 3, 4)."""
    z1 = EDGE_PREDICTIONS["one cluster"]
    assert P.purity(TRUTH, z1) == pytest.approx(0.4)
    assert P.variation_of_information(TRUTH, z1) == pytest.approx(1.0889, abs=1e-4)
    assert P.v_beta(TRUTH, z1) == 0.0
    zs = EDGE_PREDICTIONS["all singletons"]
    assert P.purity(TRUTH, zs) == 1.0
    assert P.v_beta(TRUTH, zs) == pytest.approx(0.538, abs=1e-3)
    assert P.variation_of_information(TRUTH, zs) == pytest.approx(1.214, abs=1e-3)
    assert P.variation_of_information(np.zeros(10), zs) == pytest.approx(math.log(10))
    zp = EDGE_PREDICTIONS["permuted unused ids"]
    assert P.variation_of_information(TRUTH, zp) == 0.0
    assert P.adjusted_rand_index(TRUTH, zp) == 1.0
    assert P.v_beta(TRUTH, zp) == pytest.approx(1.0)


def test_empty_input_follows_sklearn():
    e = np.array([], dtype=int)
    assert (
        P.homogeneity_completeness_v_measure(e, e)
        == skm.homogeneity_completeness_v_measure(e, e)
        == (1.0, 1.0, 1.0)
    )
    assert P.normalized_mutual_info(e, e) == skm.normalized_mutual_info_score(e, e) == 1.0
    assert P.adjusted_rand_index(e, e) == skm.adjusted_rand_score(e, e) == 1.0
    assert P.pairwise_link_accuracy(e, e) == skm.rand_score(e, e) == 1.0
    assert P.v_beta(e, e) == 1.0
    assert P.variation_of_information(e, e) == 0.0
    assert P.purity(e, e) == 1.0


def test_single_item():
    one = np.array([4])
    assert P.homogeneity_completeness_v_measure(one, one) == (1.0, 1.0, 1.0)
    assert P.adjusted_rand_index(one, [2]) == skm.adjusted_rand_score(one, [2])
    assert P.pairwise_link_accuracy(one, [2]) == 1.0


def test_large_input_exact_integer_pairs():
    """1e5 items, all-singleton prediction: pair counts stay exact (no overflow), ARI matches sklearn."""
    rng = np.random.default_rng(5)
    y = rng.integers(0, 50, 100_000)
    z = np.arange(100_000)
    tn, fp, fn, tp = P.pair_confusion(y, z)
    np.testing.assert_array_equal([[tn, fp], [fn, tp]], pair_confusion_matrix(y, z))
    assert P.adjusted_rand_index(y, z) == pytest.approx(skm.adjusted_rand_score(y, z), abs=1e-12)
    assert P.v_measure(y, z) == pytest.approx(skm.v_measure_score(y, z), rel=1e-10)


def test_bad_inputs_name_the_culprit():
    with pytest.raises(InvalidInputError, match="labels_pred"):
        P.v_measure([0, 1, 1], [0, 1])
    with pytest.raises(InvalidInputError, match="labels_true"):
        P.purity([[0, 1]], [[0, 1]])
    with pytest.raises(InvalidInputError, match="labels_pred"):
        P.adjusted_rand_index([0, 1], [0.5, 1.0])
    with pytest.raises(InvalidInputError, match="beta"):
        P.v_measure([0, 1], [0, 1], beta=-1.0)
    with pytest.raises(InvalidInputError, match="average_method"):
        P.normalized_mutual_info([0, 1], [0, 1], "median")


def test_entropy_and_wrappers():
    rng = np.random.default_rng(6)
    y, z = rng.integers(0, 5, 40), rng.integers(0, 3, 40)
    assert P.entropy(y) == pytest.approx(scipy.stats.entropy(np.unique(y, return_counts=True)[1]), rel=1e-12)
    assert P.entropy([3, 3, 3]) == 0.0
    assert P.homogeneity(y, z) == pytest.approx(skm.homogeneity_score(y, z), rel=1e-10)
    assert P.completeness(y, z) == pytest.approx(skm.completeness_score(y, z), rel=1e-10)
