"""Compatibility alias of :mod:`jaxclust.apps.experiment.cli`, where this module's code now lives.

Kept so that code written for the old layout (``from jaxclust.experiment.cli import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.apps.experiment.cli` and holds no code;
new code imports from there.
"""

from jaxclust.apps.experiment.cli import *  # noqa: F403
from jaxclust.apps.experiment.cli import __all__  # noqa: F401
