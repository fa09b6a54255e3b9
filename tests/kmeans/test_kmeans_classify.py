"""The classify step (closest centre per point) against NumPy's argmin, exact ties included, on both paths.

``_classify`` uses ``jnp.argmin`` below k = 32 and a min then a first-index-of-the-min reduction over a (k, b) block
from k = 32 on; these
tests fail if it ever picks another centre than NumPy (ties to the lowest index) or returns another minimum.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from jaxclust.kmeans.lloyd_kmeans import _classify, assign, chunk_size, lloyd


def _integer_block(rng, b, k, d, dup):
    """Small-integer points and centres: every distance is exact in float32, so ties are exact ties."""
    X = rng.integers(-3, 4, size=(b, d)).astype(np.float32)
    C = rng.integers(-3, 4, size=(k, d)).astype(np.float32)
    for i, j in dup:  # duplicated centres: every point is tied between i and j
        C[j] = C[i]
    return X, C


# k < 32 takes the jnp.argmin path, k >= 32 the min / first-index path over a (k, b) block.
@pytest.mark.parametrize(
    "b,k,d", [(1, 1, 1), (37, 5, 2), (300, 7, 1), (100, 32, 2), (256, 100, 3), (64, 130, 4)]
)
def test_classify_matches_numpy_argmin_with_exact_ties(b, k, d):
    rng = np.random.default_rng(b * 1000 + k)
    dup = [(0, k - 1), (k // 2, k // 3)] if k > 3 else []
    X, C = _integer_block(rng, b, k, d, dup)
    exact = (C.astype(np.int64) ** 2).sum(1)[None, :] - 2 * X.astype(np.int64) @ C.astype(np.int64).T
    labels, best = _classify(jnp.asarray(X), jnp.asarray(C), jnp.asarray((C * C).sum(1)))
    np.testing.assert_array_equal(np.asarray(labels), exact.argmin(1))  # NumPy: first index of the min
    np.testing.assert_array_equal(np.asarray(best), exact.min(1).astype(np.float32))
    if dup:  # duplicated centres: the data must really contain ties for the test to mean something
        ties = (exact == exact.min(1, keepdims=True)).sum(1) > 1
        assert ties.any()


@pytest.mark.parametrize("k", [9, 40])
def test_all_centres_equal_gives_label_zero(k):
    X = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)
    C = np.zeros((k, 3), np.float32)
    labels, _ = _classify(jnp.asarray(X), jnp.asarray(C), jnp.zeros(k, jnp.float32))
    np.testing.assert_array_equal(np.asarray(labels), 0)


@pytest.mark.parametrize("n,k", [(1000, 100), (777, 3), (5000, 600)])
def test_assign_matches_cdist_argmin_float64(n, k):
    """Chunked classify (several blocks, a padded last one) equals the argmin of exact distances."""
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 8))
    C = rng.normal(size=(k, 8))
    assert chunk_size(n, k) < n or n * k <= 1 << 15
    with jax.enable_x64(True):
        labels, dist = assign(jnp.asarray(X), jnp.asarray(C), chunk=64 if k == 3 else None)
    ref = cdist(X, C, "sqeuclidean")
    np.testing.assert_array_equal(np.asarray(labels), ref.argmin(1))
    np.testing.assert_allclose(np.asarray(dist), ref.min(1), rtol=1e-9, atol=1e-9)


def test_chunk_size_rules():
    assert chunk_size(100, 100) == 100  # small: one block
    assert chunk_size(100_000, 100) == 256  # ~128 KiB float32 blocks, a power of two
    assert chunk_size(100_000, 100, itemsize=8) == 128
    assert chunk_size(100_000, 5000) == 64
    assert chunk_size(100_000, 10) == 100_000  # small k: blocks of up to 2**21 entries
    assert chunk_size(1_000_000, 10) == 200_000


@pytest.mark.parametrize("k", [12, 40])  # both classify paths inside the Lloyd loop
def test_lloyd_labels_are_argmin_of_final_centres(k):
    """One Lloyd step on small-integer data from centres at distinct data points (exact arithmetic, ties
    present, no empty cluster): the centres are the means of NumPy's first-index argmin labels, and the final
    labels are the argmin for the final centres."""
    rng = np.random.default_rng(7)
    X = rng.integers(-3, 4, size=(2000, 3)).astype(np.float64)
    C = np.unique(X, axis=0)[rng.choice(len(np.unique(X, axis=0)), k, replace=False)]
    with jax.enable_x64(True):
        res = lloyd(jnp.asarray(X), jnp.asarray(C), max_iter=1, chunk=64)
        centers = np.asarray(res.centers)
    d0 = cdist(X, C, "sqeuclidean")
    assert ((d0 == d0.min(1, keepdims=True)).sum(1) > 1).any()  # exact ties present
    lab0 = d0.argmin(1)
    assert np.bincount(lab0, minlength=k).min() > 0  # no empty cluster: plain means
    expect = np.stack([X[lab0 == j].mean(0) for j in range(k)])
    np.testing.assert_allclose(centers, expect, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(res.labels), cdist(X, centers, "sqeuclidean").argmin(1))
