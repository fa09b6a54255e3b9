"""Compatibility alias of :mod:`jaxclust.kmeans.mixture`, where this module's code now lives.

Kept so that code written for the old flat layout (``from jaxclust.mixture import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.kmeans.mixture` and holds no code;
new code imports from there (or from :mod:`jaxclust.kmeans`).
"""

from jaxclust.kmeans.mixture import *  # noqa: F403
from jaxclust.kmeans.mixture import __all__  # noqa: F401
