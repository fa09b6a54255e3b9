"""Compatibility alias of :mod:`jaxclust.apps.experiment`, where this module's code now lives.

Kept so that code written for the old layout (``from jaxclust.experiment import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.apps.experiment` and holds no code;
new code imports from there. Its submodules ``config``, ``registry``, ``runner``, ``summary``
and ``cli`` are kept as aliases too.
"""

from jaxclust.apps.experiment import *  # noqa: F403
from jaxclust.apps.experiment import __all__  # noqa: F401
