"""Explore-and-Consolidate, MinMax, NPU: never ask a known pair, respect the budget, exact NPU scores."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from jaxclust.constraints import Constraints
from jaxclust.errors import InvalidInputError
from jaxclust.kmeans.query_baselines import (
    NPU,
    ExploreConsolidate,
    MinMax,
    closure_constraints,
    constraints_from_queries,
    hood_probabilities,
    npu_scores,
)

N, D, K = 60, 2, 4


class RecordingOracle:
    """Gold answers via ``query(i, j) -> bool | None``; fails if a known or repeated pair is asked."""

    def __init__(self, y, unknown_every=0):
        self.y = y
        self.c = Constraints(len(y), on_conflict="drop")
        self.seen = set()
        self.unknown_every = unknown_every
        self.n = 0

    def query(self, i, j):
        assert self.c.status(i, j) is None, f"pair ({i}, {j}) was already known"
        key = (min(i, j), max(i, j))
        assert key not in self.seen, f"pair {key} asked twice"
        self.seen.add(key)
        self.n += 1
        if self.unknown_every and self.n % self.unknown_every == 0:
            return None
        must = bool(self.y[i] == self.y[j])
        self.c = self.c.with_constraint(i, j, must)
        return must


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(N, D, centers=K, cluster_std=0.3, center_box=(-20, 20), random_state=0)
    return X, y


@pytest.mark.parametrize("cls", [ExploreConsolidate, MinMax])
@pytest.mark.parametrize("unknown_every", [0, 3])
def test_neighbourhood_strategies_never_ask_known_pairs(blobs, cls, unknown_every):
    X, y = blobs
    o = RecordingOracle(y, unknown_every)
    s = cls(K, max_queries=40, random_state=1).fit(X, o)
    assert s.n_queries_ == o.n == 40
    for h in s.neighborhoods_:  # gold oracle: every neighbourhood is pure
        assert len(set(y[h])) == 1
    assert s.constraints_.check_assignment(y) == []


def test_explore_finds_all_clusters_of_separated_data(blobs):
    X, y = blobs
    s = ExploreConsolidate(K, max_queries=30, random_state=0).fit(X, RecordingOracle(y))
    assert sorted(int(y[h[0]]) for h in s.neighborhoods_) == list(range(K))
    # Every neighbourhood member after the first was must-linked by an answer or by transitivity.
    for h in s.neighborhoods_:
        assert all(s.constraints_.status(h[0], m) == "must" for m in h[1:])


def test_npu_never_asks_known_pairs(blobs):
    X, y = blobs
    o = RecordingOracle(y)
    s = NPU(K, max_queries=15, n_estimators=10, random_state=0).fit(X, o)
    assert s.n_queries_ == o.n == 15
    assert all(len(set(y[h])) == 1 for h in s.neighborhoods_)


def test_npu_scores_sort_probabilities_descending():
    p = np.array([[0.1, 0.6, 0.3], [1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    ent = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0), axis=1)
    cost = np.array([0.6 * 1 + 0.3 * 2 + 0.1 * 3, 1.0, 2.0])  # asked in order of decreasing probability
    np.testing.assert_allclose(npu_scores(p), ent / cost, rtol=1e-12)


def test_hood_probabilities_equal_bruteforce_similarity():
    rng = np.random.RandomState(0)
    leaves = rng.randint(0, 5, size=(30, 7))
    hoods = [[0, 3, 4], [1], [2, 9]]
    S = (leaves[:, None, :] == leaves[None, :, :]).mean(2)  # random-forest similarity, n x n
    raw = np.stack([S[:, h].mean(1) for h in hoods], axis=1)
    expected = raw / raw.sum(1, keepdims=True)
    np.testing.assert_allclose(hood_probabilities(leaves, hoods), expected, rtol=1e-12)


def test_constraints_from_queries_prefix_and_closure():
    q = [(0, 1, "must"), (1, 2, "must"), (3, 4, "unknown"), (2, 5, "cannot")]
    c = constraints_from_queries(q, 6, budget=2)
    assert c.must_link == ((0, 1), (1, 2)) and c.cannot_link == ()
    full = closure_constraints(constraints_from_queries(q, 6))
    assert set(full.must_link) == {(0, 1), (0, 2), (1, 2)}
    assert set(full.cannot_link) == {(0, 5), (1, 5), (2, 5)}


def test_bad_parameters(blobs):
    X, y = blobs
    with pytest.raises(InvalidInputError, match="n_clusters"):
        ExploreConsolidate(0).fit(X, RecordingOracle(y))
    with pytest.raises(InvalidInputError, match="max_queries"):
        MinMax(K, max_queries=-1).fit(X, RecordingOracle(y))
