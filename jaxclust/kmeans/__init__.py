"""k-means and its relatives (seed 002): Lloyd, EM mixtures, constrained k-means, classic active-query baselines.

* :mod:`jaxclust.kmeans.lloyd_kmeans`: k-means++ seeding, Lloyd's classify/estimate iterations in jitted JAX
  (restarts under ``vmap``, chunked distances) and the :class:`KMeans` estimator;
* :mod:`jaxclust.kmeans.mixture`: EM for Gaussian mixtures (full, diagonal, spherical covariances), soft k-means,
  and the :class:`GaussianMixture` estimator;
* :mod:`jaxclust.kmeans.constrained`: COP-KMeans (hard must/cannot-links) and PCKMeans (penalised ones);
* :mod:`jaxclust.kmeans.query_baselines`: the classic pair-selection baselines Explore-and-Consolidate, MinMax
  and NPU;
* :mod:`jaxclust.kmeans.common`: checks and numerical helpers the modules above share.

Every public name of those modules is importable from here::

    from jaxclust.kmeans import KMeans, COPKMeans, PCKMeans, GaussianMixture, ExploreConsolidate

The old top-level modules ``jaxclust.mixture``, ``jaxclust.constrained_kmeans`` and ``jaxclust.query_baselines``
are kept as compatibility aliases of the modules above.
"""

from __future__ import annotations

from jaxclust.kmeans.common import bucket_rows
from jaxclust.kmeans.constrained import COPKMeans, COPResult, PCKMeans, PCKResult, cop_kmeans, pck_kmeans
from jaxclust.kmeans.lloyd_kmeans import (
    KMeans,
    KMeansResult,
    assign,
    chunk_size,
    kmeans,
    kmeans_plusplus,
    lloyd,
)
from jaxclust.kmeans.mixture import (
    EMResult,
    GaussianMixture,
    GMMParams,
    SoftKMeansResult,
    e_step,
    em,
    log_gaussian,
    m_step,
    soft_kmeans,
)
from jaxclust.kmeans.query_baselines import (
    NPU,
    ExploreConsolidate,
    MinMax,
    closure_constraints,
    constraints_from_queries,
)

__all__ = [
    # k-means (Lloyd)
    "KMeansResult",
    "kmeans_plusplus",
    "lloyd",
    "kmeans",
    "assign",
    "chunk_size",
    "bucket_rows",
    "KMeans",
    # constrained k-means
    "COPResult",
    "cop_kmeans",
    "PCKResult",
    "pck_kmeans",
    "COPKMeans",
    "PCKMeans",
    # EM mixtures
    "GMMParams",
    "EMResult",
    "log_gaussian",
    "e_step",
    "m_step",
    "em",
    "SoftKMeansResult",
    "soft_kmeans",
    "GaussianMixture",
    # active-query baselines
    "ExploreConsolidate",
    "MinMax",
    "NPU",
    "constraints_from_queries",
    "closure_constraints",
]
