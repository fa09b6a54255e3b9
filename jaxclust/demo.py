"""Compatibility alias of :mod:`jaxclust.apps.demo`, where this module's code now lives.

Kept so that code written for the old layout (``from jaxclust.demo import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.apps.demo` and holds no code;
new code imports from there.
"""

from jaxclust.apps.demo import *  # noqa: F403
from jaxclust.apps.demo import __all__  # noqa: F401
