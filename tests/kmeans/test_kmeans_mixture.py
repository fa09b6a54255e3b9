"""EM for Gaussian mixtures and soft k-means: scikit-learn parity, scipy densities, monotone likelihood."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture as SKGaussianMixture

from jaxclust.errors import InvalidInputError
from jaxclust.kmeans import KMeans
from jaxclust.kmeans.mixture import GaussianMixture, GMMParams, em, log_gaussian, m_step, soft_kmeans

N, D, K = 150, 3, 4


@pytest.fixture(scope="module")
def blobs():
    X, _ = make_blobs(N, D, centers=K, cluster_std=1.2, random_state=5)
    return X


def _init(X, ct, seed=0):
    means = X[np.random.RandomState(seed).choice(N, K, replace=False)]
    prec = {"full": np.tile(np.eye(D), (K, 1, 1)), "diag": np.ones((K, D)), "spherical": np.ones(K)}[ct]
    return means, prec


@pytest.mark.parametrize("ct", ["full", "diag", "spherical"])
def test_same_init_matches_sklearn(blobs, ct):
    X = blobs
    means, prec = _init(X, ct)
    kw = dict(
        covariance_type=ct,
        means_init=means,
        precisions_init=prec,
        weights_init=np.full(K, 1 / K),
        max_iter=15,
        tol=1e-12,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = SKGaussianMixture(K, **kw).fit(X)
    ours = GaussianMixture(K, **kw).fit(X)
    np.testing.assert_allclose(ours.lower_bounds_, ref.lower_bounds_, rtol=1e-10)
    np.testing.assert_allclose(ours.means_, ref.means_, atol=1e-9)
    np.testing.assert_allclose(ours.covariances_, ref.covariances_, atol=1e-9)
    np.testing.assert_allclose(ours.weights_, ref.weights_, atol=1e-11)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-9)
    np.testing.assert_allclose(ours.score_samples(X), ref.score_samples(X), rtol=1e-10)
    np.testing.assert_array_equal(ours.labels_, ref.predict(X))


def test_log_gaussian_matches_scipy(blobs):
    X = blobs[:20]
    rng = np.random.RandomState(0)
    means = rng.normal(size=(2, D))
    A = rng.normal(size=(2, D, D))
    cov = A @ A.transpose(0, 2, 1) + np.eye(D)
    diag = rng.uniform(0.5, 2.0, size=(2, D))
    sph = np.array([0.7, 1.9])
    with jax.enable_x64(True):
        full = np.asarray(log_gaussian(jnp.asarray(X), jnp.asarray(means), jnp.asarray(cov), "full"))
        dg = np.asarray(log_gaussian(jnp.asarray(X), jnp.asarray(means), jnp.asarray(diag), "diag"))
        sp = np.asarray(log_gaussian(jnp.asarray(X), jnp.asarray(means), jnp.asarray(sph), "spherical"))
    for k in range(2):
        np.testing.assert_allclose(full[:, k], multivariate_normal(means[k], cov[k]).logpdf(X), rtol=1e-12)
        np.testing.assert_allclose(
            dg[:, k], multivariate_normal(means[k], np.diag(diag[k])).logpdf(X), rtol=1e-12
        )
        np.testing.assert_allclose(
            sp[:, k], multivariate_normal(means[k], sph[k] * np.eye(D)).logpdf(X), rtol=1e-12
        )


@pytest.mark.parametrize("ct", ["full", "diag"])
def test_em_log_likelihood_never_decreases(blobs, ct):
    X = blobs
    rng = np.random.RandomState(1)
    resp = rng.dirichlet(np.ones(K), size=N)  # a poor random start: many iterations
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        p0 = m_step(Xj, jnp.asarray(resp), 1e-6, ct)
        res = em(Xj, p0, tol=0.0, max_iter=60, reg_covar=1e-6, covariance_type=ct)
    trace = np.asarray(res.log_likelihood)[: int(res.n_iter)]
    assert len(trace) > 5 and np.isfinite(trace).all()
    # The 1e-6 floor makes the M-step a tiny step off the exact maximiser; allow that, nothing more.
    assert np.all(np.diff(trace) >= -1e-9)


def test_soft_kmeans_monotone_and_hard_limit(blobs):
    X = blobs
    init = X[:K]
    with jax.enable_x64(True):
        soft = soft_kmeans(jnp.asarray(X), jnp.asarray(init), beta=0.2, tol=0.0, max_iter=40)
        hard = soft_kmeans(jnp.asarray(X), jnp.asarray(init), beta=1e4, tol=0.0, max_iter=60)
    trace = np.asarray(soft.log_likelihood)[: int(soft.n_iter)]
    assert np.all(np.diff(trace) >= -1e-12 * np.abs(trace[1:]))
    r = np.asarray(soft.resp)
    np.testing.assert_allclose(r.sum(1), 1.0, atol=1e-12)
    # beta -> infinity: responsibilities become one-hot and the centres are Lloyd's.
    km = KMeans(K, init=init, n_init=1, tol=0.0).fit(X)
    np.testing.assert_array_equal(np.asarray(hard.resp).argmax(1), km.labels_)
    np.testing.assert_allclose(np.asarray(hard.centers), km.cluster_centers_, atol=1e-8)


def test_spherical_em_with_equal_fixed_weights_is_soft_kmeans(blobs):
    """The seed's reading: soft k-means = EM for isotropic Gaussians, variance 1/(2 beta), uniform weights."""
    X = blobs
    beta = 0.3
    init = X[5 : 5 + K]
    with jax.enable_x64(True):
        sk = soft_kmeans(jnp.asarray(X), jnp.asarray(init), beta=beta, tol=0.0, max_iter=1)
        from jaxclust.kmeans.mixture import e_step

        params = GMMParams(jnp.full((K,), 1.0 / K), jnp.asarray(init), jnp.full((K,), 1.0 / (2 * beta)))
        _, log_resp = e_step(jnp.asarray(X), params, "spherical")
        new_means = m_step(jnp.asarray(X), jnp.exp(log_resp), 0.0, "spherical").means
    np.testing.assert_allclose(np.asarray(sk.centers), np.asarray(new_means), atol=1e-12)


def test_collapsed_component_stops_without_nan(blobs):
    X = blobs
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        resp = (
            jax.nn.one_hot(jnp.arange(N) % K, K, dtype=Xj.dtype)
            .at[:, 0]
            .set(0.0)
            .at[0]
            .set(jnp.array([1.0, 0, 0, 0]))
        )  # component 0 owns one point: singular without a floor
        res = em(
            Xj, m_step(Xj, resp, 1e-300, "full"), tol=0.0, max_iter=20, reg_covar=0.0, covariance_type="full"
        )
    assert all(np.isfinite(np.asarray(a)).all() for a in res.params)


def test_fit_restarts_best_and_bad_params(blobs):
    X = blobs
    g = GaussianMixture(K, n_init=2, random_state=3).fit(X)
    assert g.lower_bound_ == pytest.approx(g.lower_bounds_[-1])
    assert g.score(X) == pytest.approx(np.mean(g.score_samples(X)))
    with pytest.raises(InvalidInputError, match="covariance_type"):
        GaussianMixture(K, covariance_type="tied").fit(X)
    with pytest.raises(InvalidInputError, match="n_components"):
        GaussianMixture(N + 1).fit(X)
