"""Host data onto the device without compiling anything.

``jnp.asarray`` of a NumPy array runs a small compiled program (a copy, or a dtype conversion), compiled once per
new shape and dtype: a first fit would compile a dozen of them before its sampler. :func:`to_device` converts on
the host and copies, which compiles nothing.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["to_device"]


def to_device(a, dtype=None) -> jax.Array:
    """``a`` as a JAX array of ``dtype`` (default: ``a``'s own, as JAX canonicalises it, so float64 becomes
    float32 unless x64 is enabled). Host data (NumPy arrays, Python numbers) is converted by NumPy and copied;
    a JAX array (or a tracer) goes through ``jnp.asarray``."""
    if isinstance(a, jax.Array):
        return jnp.asarray(a, dtype)
    host = np.asarray(a, dtype)
    return jax.device_put(host.astype(jax.dtypes.canonicalize_dtype(host.dtype), copy=False))
