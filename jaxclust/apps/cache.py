"""The applications keep JAX's compiled programs on disk by default; the library leaves that to its user.

A first ``DPMM().fit`` spends most of its time compiling; with the cache on, the second ``jaxclust annotate``,
``jaxclust demo``, experiment grid or notebook annotator loads what the first one compiled. The library itself
changes no JAX setting unless asked (:func:`jaxclust.enable_compilation_cache`).
"""

from __future__ import annotations

import os
import warnings

from jaxclust.compilation_cache import enable_compilation_cache
from jaxclust.errors import InvalidInputError, JaxclustWarning

__all__ = ["NO_CACHE_VARIABLE", "use_compilation_cache"]

#: set to 1 to turn the applications' compilation cache off without a flag (the test suite does)
NO_CACHE_VARIABLE = "JAXCLUST_NO_COMPILATION_CACHE"


def use_compilation_cache(enabled: bool = True) -> str | None:
    """The applications keep JAX's compiled programs on disk by default (the library leaves it to the user:
    :func:`jaxclust.enable_compilation_cache`), so the second ``jaxclust annotate`` or ``demo`` skips most of the
    first one's compiling. Off with ``enabled=False`` (``--no-compilation-cache``) or the environment variable
    ``JAXCLUST_NO_COMPILATION_CACHE=1``. Returns the cache folder, or None when off; a folder that cannot be
    used is a warning, never a failure."""
    if not enabled or os.environ.get(NO_CACHE_VARIABLE, "").strip() not in ("", "0"):
        return None
    try:
        return str(enable_compilation_cache())
    except InvalidInputError as exc:
        warnings.warn(f"compilation cache off: {exc}", JaxclustWarning, stacklevel=2)
        return None
