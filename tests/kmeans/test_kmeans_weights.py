"""k-means with sample weights: scikit-learn parity from the same initial centres, integer weights as repeated
rows, and the weighted seeding laws (first draw, zero weights, "random" init)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.cluster import KMeans as SKKMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from jaxclust.kmeans import KMeans, kmeans_plusplus
from jaxclust.kmeans.lloyd_kmeans import _kmeans_random

N, K = 150, 4


@pytest.fixture(scope="module")
def data():
    X, _ = make_blobs(N, 3, centers=5, cluster_std=1.8, random_state=7)
    w = np.random.default_rng(7).exponential(1.0, N)
    return X, w


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_init_matches_sklearn_weighted(data, seed):
    X, w = data
    init = X[np.random.RandomState(seed).choice(N, K, replace=False)]
    ref = SKKMeans(K, init=init, n_init=1, tol=1e-4).fit(X, sample_weight=w)
    ours = KMeans(K, init=init, n_init=1, tol=1e-4).fit(X, sample_weight=w)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-10)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)
    assert ours.n_iter_ == ref.n_iter_
    assert ours.score(X, sample_weight=w) == pytest.approx(ref.score(X, sample_weight=w), rel=1e-12)


def test_weighted_empty_cluster_relocated_like_sklearn(data):
    X, w = data
    init = X[:K].copy()
    init[1] = init[2] = 1e3  # both far centres lose every point after the first classify step
    ref = SKKMeans(K, init=init, n_init=1, tol=0.0).fit(X, sample_weight=w)
    ours = KMeans(K, init=init, n_init=1, tol=0.0).fit(X, sample_weight=w)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-10)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)


def test_integer_weights_equal_repeated_rows(data):
    X, _ = data
    reps = np.random.default_rng(1).integers(0, 4, N)
    init = X[np.flatnonzero(reps)[:K]]
    weighted = KMeans(K, init=init, n_init=1, tol=0.0).fit(X, sample_weight=reps)
    repeated = KMeans(K, init=init, n_init=1, tol=0.0).fit(np.repeat(X, reps, axis=0))
    np.testing.assert_array_equal(np.repeat(weighted.labels_, reps), repeated.labels_)
    np.testing.assert_allclose(weighted.cluster_centers_, repeated.cluster_centers_, rtol=0, atol=1e-10)
    assert weighted.inertia_ == pytest.approx(repeated.inertia_, rel=1e-12)


def test_scaling_every_weight_changes_only_the_inertia(data):
    X, w = data
    X = X.astype(np.float32)
    a = KMeans(K, random_state=3).fit(X, sample_weight=w)
    b = KMeans(K, random_state=3).fit(X, sample_weight=w * 1e36)  # weighted sums would overflow float32
    assert adjusted_rand_score(a.labels_, b.labels_) == 1.0
    assert b.inertia_ == pytest.approx(a.inertia_ * 1e36, rel=1e-4)


def test_unit_weights_are_the_unweighted_fit(data):
    X, _ = data
    a = KMeans(K, random_state=5).fit(X)
    b = KMeans(K, random_state=5).fit(X, sample_weight=np.full(N, 3.0))
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert b.inertia_ == pytest.approx(3.0 * a.inertia_, rel=1e-12)


def test_first_seed_is_drawn_in_proportion_to_the_weights():
    X = jnp.asarray([[0.0], [1.0], [2.0], [3.0]])
    w = jnp.asarray([1.0, 2.0, 0.0, 5.0])
    keys = jax.random.split(jax.random.key(0), 4000)
    first = jax.vmap(lambda k: kmeans_plusplus(k, X, 1, sample_weight=w)[0, 0])(keys)
    counts = np.bincount(np.asarray(first).astype(int), minlength=4)
    expected = 4000 * np.array([1, 2, 0, 5]) / 8
    assert counts[2] == 0
    # binomial standard deviations: within 4 of each expected count
    assert np.all(np.abs(counts - expected) <= 4 * np.sqrt(expected * (1 - expected / 4000)) + 1e-9)


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_rows_of_weight_zero_are_never_seeds(init):
    X, _ = make_blobs(60, 2, centers=3, cluster_std=0.5, random_state=0)
    X = np.vstack([X, [[100.0, 100.0], [-100.0, 100.0]]])  # far outliers: k-means++ would pick them
    w = np.r_[np.ones(60), 0.0, 0.0]
    for seed in range(5):
        km = KMeans(3, init=init, n_init=1, max_iter=1, tol=0.0, random_state=seed).fit(X, sample_weight=w)
        assert np.all(np.abs(km.cluster_centers_) < 50)  # no centre at (or pulled by) an outlier
        if init == "k-means++":
            ref = KMeans(3, init=init, n_init=1, max_iter=1, tol=0.0, random_state=seed).fit(X)
            assert np.any(np.abs(ref.cluster_centers_) > 50)  # and without the weights one is


def test_random_init_draws_in_proportion_to_the_weights():
    X = jnp.arange(6.0)[:, None]
    w = jnp.asarray([8.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    # max_iter=0: the restart's centres are the rows drawn (two distinct rows, without replacement)
    run = jax.vmap(lambda k: _kmeans_random(k, X, 2, 1, 0, 0.0, 6, w, False).centers[:, 0])
    drawn = np.asarray(run(jax.random.split(jax.random.key(0), 3000))).astype(int)
    assert np.all(drawn[:, 0] != drawn[:, 1]) and not np.any(drawn == 5)
    # P(row 0 among the two) = 8/12 + 4 * (1/12) * (8/11) for successive draws in proportion to the weights
    p = 8 / 12 + 4 * (1 / 12) * (8 / 11)
    hits = np.sum(np.any(drawn == 0, axis=1))
    assert abs(hits - 3000 * p) <= 4 * np.sqrt(3000 * p * (1 - p))
