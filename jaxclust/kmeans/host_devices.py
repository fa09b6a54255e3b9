"""Lloyd over several CPU host devices: the mesh, when splitting pays, and a step run on each device's chunks.

XLA:CPU runs each fusion on one core; several host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=N``)
are how JAX uses several cores, so :mod:`jaxclust.kmeans.lloyd_kmeans` splits its chunks of points over them
when the work is large enough. On an accelerator one device already uses all of its cores.
"""

from __future__ import annotations

import jax
import numpy as np
from jax import lax

__all__ = ["SPLIT_MIN_WORK", "can_split", "lloyd_mesh", "sharded"]


def lloyd_mesh():
    """1-D mesh over the CPU host devices when there are several (else None: the single-device path).

    XLA:CPU runs each fusion on one core; several host devices
    (``XLA_FLAGS=--xla_force_host_platform_device_count=N``) are how JAX uses several cores, so Lloyd splits the
    chunks over them. Only on CPU: on an accelerator one device already uses all of its cores.
    """
    devices = jax.devices()
    if len(devices) < 2 or jax.default_backend() != "cpu":
        return None
    return jax.sharding.Mesh(np.array(devices), ("points",))


# Split Lloyd only from this much work per iteration (n · k · d, times the restarts run together): each
# iteration's all-reduce costs ~1 ms between host devices, which made 5e3 x 16, k = 20 3x slower when split,
# while 1e5 x 64, k = 100 (6.4e8) ran 1.7x faster (benchmarks/RESULTS.md, k-means).
SPLIT_MIN_WORK = 1 << 27


def can_split(work: int, *args) -> bool:
    """Split over the host devices when the work is large enough, unless an argument is pinned (committed) to
    only some devices: jit refuses to mix such an array with a computation on every device."""
    if lloyd_mesh() is None or work < SPLIT_MIN_WORK:
        return False
    n_dev = jax.device_count()
    return not any(
        isinstance(a, jax.Array)
        and not isinstance(a, jax.core.Tracer)
        and a.committed
        and len(a.sharding.device_set) < n_dev
        for a in args
    )


def sharded(fn, mesh, n_out_sharded, n_out_psum, n_in_sharded=4):
    """``fn(Xp, x_sq, valid, wts, *replicated)`` run on each device's share of the chunks (leading axis of
    the first ``n_in_sharded`` arguments).

    The first ``n_out_sharded`` outputs stay split by chunk; the next ``n_out_psum`` are per-device partial
    sums, added across devices (the only communication: O(k·d) per call).
    """
    P = jax.sharding.PartitionSpec
    pts = P("points")

    def local(*args):
        out = fn(*args)
        return tuple(out[:n_out_sharded]) + tuple(lax.psum(o, "points") for o in out[n_out_sharded:])

    def call(*args):
        return jax.shard_map(
            local,
            mesh=mesh,
            in_specs=(pts,) * n_in_sharded + (P(),) * (len(args) - n_in_sharded),
            out_specs=(pts,) * n_out_sharded + (P(),) * n_out_psum,
            check_vma=False,
        )(*args)

    return call
