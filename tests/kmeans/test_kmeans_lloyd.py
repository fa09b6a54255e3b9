"""k-means core and estimator: scikit-learn parity from the same initial centres, restarts, empty clusters."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.cluster import KMeans as SKKMeans
from sklearn.datasets import make_blobs

from jaxclust.errors import InvalidInputError
from jaxclust.kmeans import KMeans, kmeans, kmeans_plusplus, lloyd

N, D, K = 120, 3, 5


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(N, D, centers=4, cluster_std=1.5, random_state=3)
    return X, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_init_matches_sklearn(blobs, seed):
    X, _ = blobs
    init = X[np.random.RandomState(seed).choice(N, K, replace=False)]
    ref = SKKMeans(K, init=init, n_init=1, tol=1e-4).fit(X)
    ours = KMeans(K, init=init, n_init=1, tol=1e-4).fit(X)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-10)
    assert ours.n_iter_ == ref.n_iter_


def test_tol_zero_and_max_iter_match_sklearn(blobs):
    X, _ = blobs
    init = X[:K]
    for max_iter in (1, 2, 50):
        ref = SKKMeans(K, init=init, n_init=1, tol=0.0, max_iter=max_iter).fit(X)
        ours = KMeans(K, init=init, n_init=1, tol=0.0, max_iter=max_iter).fit(X)
        np.testing.assert_array_equal(ours.labels_, ref.labels_)
        assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)
        assert ours.n_iter_ == ref.n_iter_


def test_empty_cluster_relocated_like_sklearn(blobs):
    X, _ = blobs
    init = X[:K].copy()
    init[1] = init[3] = 1e3  # two centres far away: both clusters are empty after the first classify step
    ref = SKKMeans(K, init=init, n_init=1, tol=1e-4).fit(X)
    ours = KMeans(K, init=init, n_init=1, tol=1e-4).fit(X)
    assert np.isfinite(ours.cluster_centers_).all()
    assert len(np.unique(ours.labels_)) == K
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)


def test_more_clusters_than_distinct_points_never_nan():
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.0]]), 4, axis=0)  # 3 distinct points, 12 rows
    m = KMeans(K, n_init=2).fit(X)
    assert np.isfinite(m.cluster_centers_).all()
    assert m.inertia_ == pytest.approx(0.0, abs=1e-12)


def test_chunked_equals_single_block(blobs):
    X, _ = blobs
    with jax.enable_x64(True):
        Xj, c0 = jnp.asarray(X), jnp.asarray(X[:K])
        a = lloyd(Xj, c0, tol=0.0, max_iter=100, chunk=16)  # 8 chunks, last one padded
        b = lloyd(Xj, c0, tol=0.0, max_iter=100, chunk=128)
    np.testing.assert_array_equal(np.asarray(a.labels), np.asarray(b.labels))
    np.testing.assert_allclose(np.asarray(a.centers), np.asarray(b.centers), atol=1e-12)
    assert float(a.inertia) == pytest.approx(float(b.inertia), rel=1e-12)


def test_inertia_is_exact_sum_of_squares(blobs):
    X, _ = blobs
    m = KMeans(K, random_state=4, n_init=3).fit(X)
    assert m.inertia_ == pytest.approx(((X - m.cluster_centers_[m.labels_]) ** 2).sum(), rel=1e-12)
    # Labels are the closest centres (Lloyd fixed point reached or final classify step run).
    np.testing.assert_array_equal(m.labels_, cdist(X, m.cluster_centers_, "sqeuclidean").argmin(1))


def test_kmeans_plusplus_with_k_equal_n_picks_every_point():
    X = np.random.RandomState(0).normal(size=(12, 2))
    with jax.enable_x64(True):
        C = np.asarray(kmeans_plusplus(jax.random.key(1), jnp.asarray(X), 12))
    # Each chosen point has zero potential afterwards, so all 12 distinct rows must be picked exactly once.
    assert sorted(map(tuple, C)) == sorted(map(tuple, X))


def test_restarts_keep_lowest_inertia(blobs):
    X, _ = blobs
    key = jax.random.key(7)
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        best = kmeans(key, Xj, K, n_init=4, max_iter=50, tol=0.0)
        singles = [
            float(lloyd(Xj, kmeans_plusplus(k, Xj, K), tol=0.0, max_iter=50).inertia)
            for k in jax.random.split(key, 4)
        ]
    assert float(best.inertia) == pytest.approx(min(singles), rel=1e-12)


def test_same_seed_same_result_and_predict_transform(blobs):
    X, _ = blobs
    a = KMeans(K, random_state=11, n_init=2).fit(X)
    b = KMeans(K, random_state=11, n_init=2).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    Xn = X[:7] + 0.3
    np.testing.assert_allclose(a.transform(Xn), cdist(Xn, a.cluster_centers_), atol=1e-10)
    np.testing.assert_array_equal(a.predict(Xn), cdist(Xn, a.cluster_centers_).argmin(1))
    np.testing.assert_array_equal(a.fit_predict(X), a.labels_)


def test_float32_input_stays_float32(blobs):
    X, _ = blobs
    m = KMeans(K, init=X[:K], n_init=1).fit(X.astype(np.float32))
    assert m.cluster_centers_.dtype == np.float32
    ref = SKKMeans(K, init=X[:K].astype(np.float32), n_init=1).fit(X.astype(np.float32))
    np.testing.assert_array_equal(m.labels_, ref.labels_)
    assert m.inertia_ == pytest.approx(ref.inertia_, rel=1e-5)


def test_bad_input_names_the_culprit(blobs):
    X, _ = blobs
    Xbad = X.copy()
    Xbad[5, 2] = np.nan
    with pytest.raises(InvalidInputError, match=r"row 5"):
        KMeans(K).fit(Xbad)
    with pytest.raises(InvalidInputError, match="n_clusters"):
        KMeans(200).fit(X)
    with pytest.raises(InvalidInputError, match=r"init: array has shape \(6, 3\)"):
        KMeans(K, init=np.zeros((K + 1, D))).fit(X)


def test_random_init_reaches_a_lloyd_fixed_point(blobs):
    X, _ = blobs
    m = KMeans(K, init="random", n_init=2, tol=0.0, random_state=5).fit(X)
    means = np.stack([X[m.labels_ == j].mean(0) for j in range(K)])
    np.testing.assert_allclose(m.cluster_centers_, means, atol=1e-10)  # estimate step changes nothing
    np.testing.assert_array_equal(m.labels_, cdist(X, m.cluster_centers_, "sqeuclidean").argmin(1))
