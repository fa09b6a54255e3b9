"""Compatibility alias of :mod:`jaxclust.apps.experiment.runner`, where this module's code now lives.

Kept so that code written for the old layout (``from jaxclust.experiment.runner import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.apps.experiment.runner` and holds no code;
new code imports from there.
"""

from jaxclust.apps.experiment.runner import *  # noqa: F403
from jaxclust.apps.experiment.runner import __all__  # noqa: F401
