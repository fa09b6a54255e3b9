"""Compatibility alias of :mod:`jaxclust.kmeans.query_baselines`, where this module's code now lives.

Kept so that code written for the old flat layout (``from jaxclust.query_baselines import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.kmeans.query_baselines` and holds no code;
new code imports from there (or from :mod:`jaxclust.kmeans`).
"""

from jaxclust.kmeans.query_baselines import *  # noqa: F403
from jaxclust.kmeans.query_baselines import __all__  # noqa: F401
