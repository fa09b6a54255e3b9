"""Compatibility alias of :mod:`jaxclust.apps.annotate`, where this module's code now lives.

Kept so that code written for the old layout (``from jaxclust.annotate import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.apps.annotate` and holds no code;
new code imports from there.
"""

from jaxclust.apps.annotate import *  # noqa: F403
from jaxclust.apps.annotate import __all__  # noqa: F401
