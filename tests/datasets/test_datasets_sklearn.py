"""The embedded sets equal scikit-learn's bundled data."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn.datasets as skd

from jaxclust import datasets as D


@pytest.mark.parametrize(
    "ours, theirs, shape, k",
    [
        (D.load_iris, skd.load_iris, (150, 4), 3),
        (D.load_wine, skd.load_wine, (178, 13), 3),
        (D.load_digits, skd.load_digits, (1797, 64), 10),
    ],
)
def test_matches_sklearn(ours, theirs, shape, k):
    ds, sk = ours(), theirs()
    assert ds.X.shape == shape and ds.X.dtype == np.float64 and ds.X.flags.c_contiguous
    np.testing.assert_array_equal(ds.X, sk.data)
    np.testing.assert_array_equal(ds.y, sk.target)
    assert ds.label_names["class"] == [str(c) for c in sk.target_names]
    assert ds.feature_names == [str(f) for f in sk.feature_names]
    assert ds.n_classes == k == len(np.unique(sk.target))
    assert ds.texts is None and len(ds.item_names) == shape[0]
    assert ds.description == sk.DESCR and "CC BY 4.0" in ds.license


def test_each_call_returns_independent_arrays():
    a = D.load_iris()
    a.X[0, 0] = -1.0
    assert D.load_iris().X[0, 0] == skd.load_iris().data[0, 0]
