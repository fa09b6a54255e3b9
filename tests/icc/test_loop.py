"""ICC loop: prototypes, propagation, the silh_const query rule, strategies, determinism, input errors."""

from __future__ import annotations

import numpy as np
import pytest

from jaxclust.errors import InvalidInputError
from jaxclust.icc import ICC, propagate_labels, prototypes
from jaxclust.icc.agglomerative import (
    complete_link,
    constrained_complete_link,
    cut_by_merge_count,
    euclidean_distances,
    klein_active_queries,
)
from jaxclust.icc.silhouette import silh_const_scores


def _blobs(n_per=15, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0], [6.0, 6.0]])
    X = np.vstack([c + rng.normal(scale=1.2, size=(n_per, 2)) for c in centres])
    y = np.repeat(np.array(["S", "O", "O", "S"]), n_per)
    return X, y


def test_prototypes_are_members_closest_to_mean():
    X = np.array([[0.0], [1.0], [5.0], [10.0], [11.0], [13.0]])
    np.testing.assert_array_equal(prototypes(X, np.array([0, 0, 0, 1, 1, 1])), [1, 4])


def test_propagate_labels_majority_own_and_nearest():
    clusters = np.array([0, 0, 0, 1, 1, 2])
    D = np.abs(np.arange(6.0)[:, None] - np.arange(6.0)[None, :])
    # cluster 0: labels 1, 1 -> 1 (index 2 keeps its own 0); cluster 1: 0 and 1 tie -> 0;
    # cluster 2: none -> its nearest labelled instance (4)
    out = propagate_labels(clusters, np.array([0, 1, 2, 3, 4]), np.array([1, 1, 0, 0, 1]), D)
    np.testing.assert_array_equal(out, [1, 1, 0, 0, 1, 1])


def test_first_query_is_lowest_silh_const_after_constrained_clustering():
    X, y = _blobs()
    k = 4
    icc = ICC(n_clusters=k, metric_learning=False, budget=k + 1, n_components=None).fit(X, y)
    # replay Algorithm 1 by hand: complete link, prototypes, cannot-links, constrained complete link, argmin
    D = euclidean_distances(X)
    protos = prototypes(X, cut_by_merge_count(complete_link(D), len(X), k))
    np.testing.assert_array_equal(icc.queried_[:k], protos)
    lab = y[protos]
    cl = np.array([(a, b) for i, a in enumerate(protos) for b in protos[i + 1 :] if y[a] != y[b]])
    clusters, _, _, _ = constrained_complete_link(D, k, (), cl)
    s = silh_const_scores(D, clusters, protos, lab)
    unl = np.setdiff1d(np.arange(len(X)), protos)
    assert icc.queried_[k] == unl[np.argmin(s[unl])]


def test_full_budget_reproduces_gold_and_weights():
    X, y = _blobs(n_per=5)
    icc = ICC(
        n_clusters=4, strategy="random", metric_learning=False, budget=1.0, batch_size=4, random_state=0
    ).fit(X, y)
    np.testing.assert_array_equal(icc.labels_, y)
    np.testing.assert_array_equal(np.sort(icc.queried_), np.arange(len(X)))
    np.testing.assert_array_equal(icc.sample_weight_, np.ones(len(X)))


def test_separated_blobs_get_pure_labels_from_prototypes_with_metric_learning():
    X, _ = _blobs()
    y = np.where(X[:, 0] > 3.0, "O", "S")  # the label depends on the first coordinate only
    icc = ICC(n_clusters=4, budget=8, batch_size=2, max_iter=50, random_state=0, checkpoints=[4, 6, 8]).fit(
        X, y
    )
    assert list(icc.history_) == [4, 6, 8]
    assert np.mean(icc.labels_ == y) >= 0.95
    q = icc.queried_
    np.testing.assert_array_equal(icc.query_labels_, y[q])
    w = icc.sample_weight_
    np.testing.assert_array_equal(w[q], 1.0)
    rest = np.setdiff1d(np.arange(len(X)), q)
    np.testing.assert_allclose(w[rest], (icc.silh_const_[rest] + 1) / 2)


def test_random_strategy_is_deterministic_per_seed_and_klein_is_prefix_consistent():
    X, y = _blobs()
    a = ICC(n_clusters=4, strategy="random", metric_learning=False, budget=10, random_state=3).fit(X, y)
    b = ICC(n_clusters=4, strategy="random", metric_learning=False, budget=10, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.queried_, b.queried_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    k10 = ICC(n_clusters=4, strategy="klein", metric_learning=False, budget=10, n_components=None).fit(X, y)
    D = euclidean_distances(X)
    q, _ = klein_active_queries(D, lambda i: y[i], 10)
    np.testing.assert_array_equal(k10.queried_, q)
    # single pass: with the same starting cut a smaller budget asks a prefix of the same queries
    q6, _ = klein_active_queries(D, lambda i: y[i], 6, n_start=10)
    np.testing.assert_array_equal(q6, q[:6])


def test_callable_oracle_equals_array_oracle():
    X, y = _blobs(n_per=6)
    a = ICC(n_clusters=4, metric_learning=False, budget=7).fit(X, y)
    b = ICC(n_clusters=4, metric_learning=False, budget=7).fit(X, lambda ids: y[ids])
    np.testing.assert_array_equal(a.queried_, b.queried_)


def test_bad_input():
    X, y = _blobs(n_per=3)
    with pytest.raises(InvalidInputError, match="strategy"):
        ICC(strategy="greedy").fit(X, y)
    with pytest.raises(InvalidInputError, match="budget"):
        ICC(n_clusters=4, budget=2).fit(X, y)
    with pytest.raises(InvalidInputError, match="oracle"):
        ICC(n_clusters=4, budget=5).fit(X, y[:-1])


def test_must_link_option_keeps_equal_labels_together():
    X, y = _blobs(n_per=8)
    icc = ICC(n_clusters=4, metric_learning=False, must_link=True, budget=12, batch_size=2, n_components=None)
    icc.fit(X, y)
    q, lab, cl = icc.queried_, icc.query_labels_, icc.clusters_
    same = lab[:, None] == lab[None, :]
    np.testing.assert_array_equal(cl[q][:, None] == cl[q][None, :], same)  # together iff same label


def test_sparse_input_is_reduced_by_svd():
    import scipy.sparse as sp

    X, y = _blobs(n_per=6)
    Xs = sp.csr_matrix(np.hstack([X, np.zeros((len(X), 3))]))
    icc = ICC(n_clusters=4, metric_learning=False, budget=6, n_components=2, random_state=0).fit(Xs, y)
    ref = ICC(n_clusters=4, metric_learning=False, budget=6, n_components=None, random_state=0).fit(X, y)
    # X has rank 2, so its rank-2 SVD is a rotation of X: same distances, same prototypes, same run
    np.testing.assert_array_equal(icc.queried_, ref.queried_)
    np.testing.assert_array_equal(icc.labels_, ref.labels_)


def test_ties_go_to_the_instance_farthest_from_its_clusters_labels():
    # one label everywhere: no opposing cluster, all silh_const are 1 -> explore (largest x), not lowest index
    X, _ = _blobs(n_per=6)
    y = np.zeros(len(X), int)
    icc = ICC(n_clusters=4, metric_learning=False, budget=5, n_components=None).fit(X, y)
    D = euclidean_distances(X)
    clusters = cut_by_merge_count(complete_link(D), len(X), 4)
    protos = prototypes(X, clusters)
    x = D[np.arange(len(X)), protos[clusters]]  # the only labelled member of each cluster is its prototype
    x[protos] = -1.0
    assert icc.queried_[4] == np.argmax(x)
