"""Posterior predictive assignment of new points (``DPMM.predict_proba`` / ``predict``) against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from jaxclust.dpmm import DPMM, NormalGamma
from jaxclust.dpmm.predictive import assignment_probabilities
from jaxclust.errors import InvalidInputError, NotFittedError

PRIOR = NormalGamma(mean=0.0, kappa=0.5, shape=2.0, rate=1.5)


def _student(x, data):
    """The Normal-Gamma posterior predictive density of ``x`` given ``data`` (1-D): a Student t."""
    n = len(data)
    k0, m0, a0, b0 = 0.5, 0.0, 2.0, 1.5
    xbar = np.mean(data) if n else 0.0
    kn, an = k0 + n, a0 + n / 2
    mn = (k0 * m0 + n * xbar) / kn
    bn = b0 + 0.5 * np.sum((np.asarray(data) - xbar) ** 2) + k0 * n * (xbar - m0) ** 2 / (2 * kn)
    return stats.t.pdf(x, df=2 * an, loc=mn, scale=np.sqrt(bn * (kn + 1) / (an * kn)))


def test_one_sample_is_the_collapsed_conditional_of_one_more_item():
    X = np.array([[0.0], [0.2], [5.0], [5.3], [5.1]])
    z = np.array([0, 0, 1, 1, 1])
    X_new = np.array([[0.1], [2.5], [5.2], [-9.0]])
    got = assignment_probabilities(PRIOR.check(X), X, X_new, z[None], [0.7], z)
    for r, (x,) in enumerate(X_new):
        w = np.array([2 * _student(x, X[:2, 0]), 3 * _student(x, X[2:, 0]), 0.7 * _student(x, [])])
        np.testing.assert_allclose(got[r], w / w.sum(), rtol=2e-4, atol=1e-7)


def test_samples_are_read_in_the_reference_clusters_and_averaged():
    """Sample 2 names its components the other way round and splits the reference's cluster 1: each component
    gives each reference cluster the share of its items there; the average is over samples."""
    X = np.array([[0.0], [0.2], [5.0], [5.3], [5.1]])
    ref = np.array([0, 0, 1, 1, 1])
    s2 = np.array([1, 1, 0, 0, 2])
    X_new = np.array([[5.0]])
    one = assignment_probabilities(PRIOR.check(X), X, X_new, ref[None], [1.0], ref)
    two = assignment_probabilities(PRIOR.check(X), X, X_new, s2[None], [1.0], ref)
    w = np.array([2 * _student(5.0, X[:2, 0]), 2 * _student(5.0, X[2:4, 0]), _student(5.0, X[4:, 0])])
    w = np.append(w, _student(5.0, []))
    w /= w.sum()
    np.testing.assert_allclose(two[0], [w[0], w[1] + w[2], w[3]], rtol=2e-4)
    both = assignment_probabilities(PRIOR.check(X), X, X_new, np.stack([ref, s2]), [1.0, 1.0], ref)
    np.testing.assert_allclose(both, (one + two) / 2, rtol=1e-6)


def test_dpmm_predict_puts_new_points_with_their_blob_and_far_points_in_a_new_cluster():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(-5, 1, (15, 2)), rng.normal(5, 1, (15, 2))])
    with pytest.raises(NotFittedError, match="DPMM.predict_proba: call fit"):
        DPMM().predict(X)
    model = DPMM(n_chains=2, n_burnin=20, n_samples=5, random_state=0).fit(X)
    P = model.predict_proba(np.array([[-5.0, -5.0], [5.0, 5.0], [60.0, 60.0]]))
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert P[0, model.labels_[0]] > 0.99 and P[1, model.labels_[20]] > 0.99 and P[2, -1] > 0.99
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    with pytest.raises(InvalidInputError, match="X has 3 features, but DPMM was fitted with 2"):
        model.predict(np.zeros((2, 3)))
