"""Compatibility alias of :mod:`jaxclust.apps.cli_active`, where this module's code now lives.

Kept so that code written for the old layout (``from jaxclust.cli_active import ...``) keeps working.
It re-exports the public names (``__all__``) of :mod:`jaxclust.apps.cli_active` and holds no code;
new code imports from there.
"""

from jaxclust.apps.cli_active import *  # noqa: F403
from jaxclust.apps.cli_active import __all__  # noqa: F401

if __name__ == "__main__":  # ``python -m jaxclust.cli_active``, as before
    app()  # noqa: F405
