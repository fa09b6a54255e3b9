"""COP-KMeans and PCKMeans: constraints never violated, zero weights = k-means, penalised objective exact."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.datasets import make_blobs

from jaxclust.constraints import Constraints
from jaxclust.errors import ConstraintError, InfeasibleConstraintsError, InvalidInputError
from jaxclust.kmeans import COPKMeans, KMeans, PCKMeans
from jaxclust.kmeans.constrained import pack_point_constraints, pck_kmeans

N, D, K = 120, 3, 5


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(N, D, centers=K, cluster_std=2.5, random_state=2)
    return X, y


def _random_constraints(y, seed, n_pairs=40, flip=0.0):
    """Random pairs labelled by gold classes (consistent); ``flip`` > 0 makes some answers wrong."""
    rng = np.random.RandomState(seed)
    pairs = []
    while len(pairs) < n_pairs:
        i, j = rng.choice(len(y), 2, replace=False)
        must = bool(y[i] == y[j]) != (rng.rand() < flip)
        pairs.append((int(i), int(j), "must" if must else "cannot"))
    return Constraints.from_pairs(len(y), pairs, on_conflict="drop")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_cop_kmeans_never_violates(blobs, seed):
    X, y = blobs
    c = _random_constraints(y, seed, n_pairs=60)
    m = COPKMeans(K, n_init=2, random_state=seed).fit(X, constraints=c)
    assert c.check_assignment(m.labels_) == []
    assert m.inertia_ == pytest.approx(((X - m.cluster_centers_[m.labels_]) ** 2).sum(), rel=1e-10)


def test_cop_kmeans_with_wrong_answers_still_satisfies_kept_constraints(blobs):
    X, y = blobs
    c = _random_constraints(y, 9, n_pairs=60, flip=0.3)
    m = COPKMeans(K, n_init=2).fit(X, constraints=c)
    assert c.check_assignment(m.labels_) == []


def test_cop_kmeans_without_constraints_is_a_lloyd_fixed_point(blobs):
    X, _ = blobs
    m = COPKMeans(K, n_init=2).fit(X)
    ref = KMeans(K, init=m.cluster_centers_, n_init=1, tol=0.0).fit(X)
    np.testing.assert_array_equal(m.labels_, ref.labels_)


def test_cop_kmeans_infeasible_raises_naming_the_item():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    c = Constraints(4, cannot_link=[(0, 1), (0, 2), (1, 2)])  # a triangle of cannot-links, 2 clusters
    with pytest.raises(InfeasibleConstraintsError, match=r"item 2 .*cannot-link partners.*\[0, 1\]"):
        COPKMeans(2, n_init=2).fit(X, constraints=c)


def test_pckmeans_zero_weights_equals_kmeans(blobs):
    X, y = blobs
    c = _random_constraints(y, 4, n_pairs=50, flip=0.2)
    init = X[:K]
    km = KMeans(K, init=init, n_init=1).fit(X)
    mean = X.mean(0)
    tol = float(np.var(X, 0).mean() * 1e-4)
    pts, ml, cl = pack_point_constraints(c, N)
    with jax.enable_x64(True):
        r = pck_kmeans(
            jax.random.key(0), jnp.asarray(X - mean), jnp.asarray(init - mean), pts, ml, cl, 0.0, 0.0, tol=tol
        )
    np.testing.assert_array_equal(np.asarray(r.labels), km.labels_)
    assert float(r.inertia) == pytest.approx(km.inertia_, rel=1e-12)
    assert int(r.n_iter) == km.n_iter_
    # Through the estimator: with no penalty the objective is exactly half the inertia.
    p = PCKMeans(K, w=0.0, n_init=2, random_state=0).fit(X, constraints=c)
    assert p.objective_ == pytest.approx(0.5 * p.inertia_, rel=1e-12)


def test_pckmeans_objective_and_large_weights(blobs):
    X, y = blobs
    c = _random_constraints(y, 5, n_pairs=40)
    p = PCKMeans(K, w=3.0, w_bar=2.0, n_init=2).fit(X, constraints=c)
    z = p.labels_
    ml_v = sum(z[i] != z[j] for i, j in c.must_link)
    cl_v = sum(z[i] == z[j] for i, j in c.cannot_link)
    inertia = ((X - p.cluster_centers_[z]) ** 2).sum()
    assert p.inertia_ == pytest.approx(inertia, rel=1e-10)
    assert p.objective_ == pytest.approx(0.5 * inertia + 3.0 * ml_v + 2.0 * cl_v, rel=1e-10)
    strong = PCKMeans(K, w=1e6, n_init=2).fit(
        X, constraints=c
    )  # consistent constraints, huge cost: none broken
    assert c.check_assignment(strong.labels_) == []


def test_constraints_must_match_rows(blobs):
    X, _ = blobs
    with pytest.raises(ConstraintError, match="built for 10 items"):
        PCKMeans(K).fit(X, constraints=Constraints(10))
    with pytest.raises(InvalidInputError, match=r"PCKMeans\(w=-1.0\): expected a finite number >= 0"):
        PCKMeans(K, w=-1.0).fit(X)


def test_top_level_exports():
    import jaxclust
    import jaxclust.kmeans as km

    assert jaxclust.KMeans is km.KMeans
    assert jaxclust.COPKMeans is km.COPKMeans and jaxclust.PCKMeans is km.PCKMeans
    from jaxclust.kmeans.mixture import GaussianMixture

    assert jaxclust.GaussianMixture is GaussianMixture
