"""Compatibility alias of :mod:`jaxclust.apps.experiment.config`, where this module's code now lives.

Kept so that code written for the old layout (``from jaxclust.experiment.config import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.apps.experiment.config` and holds no code;
new code imports from there.
"""

from jaxclust.apps.experiment.config import *  # noqa: F403
from jaxclust.apps.experiment.config import __all__  # noqa: F401
