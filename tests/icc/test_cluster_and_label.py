"""Cluster-and-label helpers: label fractions, simple-margin selection, weighted training."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import LinearSVC

from jaxclust.errors import InvalidInputError
from jaxclust.icc.cluster_and_label import labels_needed, train_on_generated, uncertainty_sampling_curve


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=80) > 0).astype(int)
    return X[:60], y[:60], X[60:], y[60:]


def test_labels_needed():
    assert labels_needed([0.1, 0.2, 0.5, 1.0], [0.6, 0.79, 0.8, 0.9], 0.8) == 0.5
    assert labels_needed([0.1, 0.2], [0.6, 0.7], 0.8) is None


def test_uncertainty_sampling_asks_smallest_margin():
    X, y, Xt, yt = _data()
    acc = uncertainty_sampling_curve(X, y, Xt, yt, [11], n_initial=10, batch_size=1, random_state=4)
    init = list(np.random.default_rng(4).choice(60, 10, replace=False))
    clf = LinearSVC(random_state=0).fit(X[init], y[init])
    unl = np.setdiff1d(np.arange(60), init)
    pick = unl[np.argmin(np.abs(clf.decision_function(X[unl])))]
    ref = LinearSVC(random_state=0).fit(X[init + [pick]], y[init + [pick]])
    assert acc == [np.mean(ref.predict(Xt) == yt)]


def test_weights_reach_the_classifier():
    X, y, _, _ = _data()
    w = np.linspace(0, 1, 60)
    ours = train_on_generated(X, y, w)
    ref = LinearSVC(random_state=0).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.coef_, ref.coef_)
    assert not np.allclose(ours.coef_, LinearSVC(random_state=0).fit(X, y).coef_)
    one = train_on_generated(X, np.zeros(60, int))
    np.testing.assert_array_equal(one.predict(X[:3]), [0, 0, 0])


def test_bad_budgets():
    X, y, Xt, yt = _data()
    with pytest.raises(InvalidInputError, match="budgets"):
        uncertainty_sampling_curve(X, y, Xt, yt, [30, 20])


def test_train_on_generated_takes_sparse_features():
    """TF-IDF features arrive as a scipy sparse matrix (len() of one raises): the row count comes from .shape."""
    import scipy.sparse as sp

    from jaxclust.icc.cluster_and_label import train_on_generated

    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]]))
    clf = train_on_generated(X, np.array([0, 0, 1, 1]))
    assert clf.predict(X).tolist() == [0, 0, 1, 1]
