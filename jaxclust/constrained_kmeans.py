"""Compatibility alias of :mod:`jaxclust.kmeans.constrained`, where this module's code now lives.

Kept so that code written for the old flat layout (``from jaxclust.constrained_kmeans import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.kmeans.constrained` and holds no code;
new code imports from there (or from :mod:`jaxclust.kmeans`).
"""

from jaxclust.kmeans.constrained import *  # noqa: F403
from jaxclust.kmeans.constrained import __all__  # noqa: F401
