"""Compatibility alias of :mod:`jaxclust.apps.cli`, where this module's code now lives.

Kept so that code written for the old layout (``from jaxclust.cli import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.apps.cli` and holds no code;
new code imports from there. The console script ``jaxclust`` is ``jaxclust.apps.cli:app``.
"""

from jaxclust.apps.cli import *  # noqa: F403
from jaxclust.apps.cli import __all__  # noqa: F401

if __name__ == "__main__":  # ``python -m jaxclust.cli``, as before
    main()  # noqa: F405
