"""scikit-learn's estimator checks on KMeans and GaussianMixture (small settings keep compiles few)."""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from jaxclust.kmeans import KMeans
from jaxclust.kmeans.mixture import GaussianMixture


@pytest.mark.slow  # ~95 checks, each compiling for new shapes/dtypes: minutes on the shared 2-core CPU
@parametrize_with_checks([KMeans(n_clusters=3, n_init=2), GaussianMixture(n_components=2)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
