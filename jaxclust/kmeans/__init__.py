"""k-means and its relatives: Lloyd, EM mixtures, constrained k-means, classic active-query baselines.

* :mod:`jaxclust.kmeans.lloyd_kmeans`: Lloyd's classify/estimate iterations in jitted JAX (restarts under
  ``vmap``, chunked distances, split over CPU host devices by :mod:`jaxclust.kmeans.host_devices`) and the
  :class:`KMeans` estimator; :mod:`jaxclust.kmeans.seeding`: k-means++ seeding;
* :mod:`jaxclust.kmeans.mixture`: EM for Gaussian mixtures (full, diagonal, spherical covariances), soft k-means,
  and the :class:`GaussianMixture` estimator;
* :mod:`jaxclust.kmeans.constrained`: COP-KMeans (hard must/cannot-links) and PCKMeans (penalised ones);
* :mod:`jaxclust.kmeans.query_baselines`: the classic pair-selection baselines Explore-and-Consolidate, MinMax
  and NPU;
* :mod:`jaxclust.kmeans.common`: checks and numerical helpers the modules above share.

Every public name of those modules is importable from here::

    from jaxclust.kmeans import KMeans, COPKMeans, PCKMeans, GaussianMixture, ExploreConsolidate
"""

from __future__ import annotations

from jaxclust.kmeans import constrained, lloyd_kmeans, mixture, query_baselines, seeding
from jaxclust.kmeans.common import bucket_rows
from jaxclust.kmeans.constrained import *  # noqa: F403
from jaxclust.kmeans.lloyd_kmeans import *  # noqa: F403
from jaxclust.kmeans.mixture import *  # noqa: F403
from jaxclust.kmeans.query_baselines import *  # noqa: F403
from jaxclust.kmeans.seeding import *  # noqa: F403

# every public name of the modules (their __all__), and bucket_rows from the shared helpers
__all__ = ["bucket_rows"]
__all__ += seeding.__all__
__all__ += lloyd_kmeans.__all__
__all__ += constrained.__all__
__all__ += mixture.__all__
__all__ += query_baselines.__all__
