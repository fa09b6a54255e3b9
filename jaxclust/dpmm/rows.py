"""Group rows split over devices: the reductions, draws and gathers of the sub-cluster sampler.

The sub-cluster sampler (:mod:`jaxclust.dpmm.subcluster`, :mod:`jaxclust.dpmm.splitmerge`) touches the group
rows in three ways only: per-row arithmetic (log-likelihoods, draws), segment reductions into per-component or
per-pair quantities, and a few reads of other rows (a split's seed rows, the slots of cannot-link partners).
The mesh itself (:func:`global_mesh`, :func:`resolve_mesh`) is defined here too, so that the sampler reaches it
without importing :mod:`jaxclust.dpmm.distributed` (the multi-process runtime). Each helper here takes ``rows``:

* ``None`` (one device): it is exactly the plain operation the sampler has always used, so the single-device
  sampler computes what it always computed;
* a :class:`RowAxis` inside ``jax.shard_map`` over a mesh axis, where every device holds ``n_local``
  consecutive rows (device ``i`` of the axis holds global rows ``i * n_local ...``): reductions end with a
  collective (``psum``, ``pmin``, ``pmax``) so every device holds the same per-component result, per-row random
  numbers are the single-device draws of the device's own rows (the whole ``(n_rows,)`` vector is drawn from
  the same key on every device and sliced, so the same seed gives the same numbers as on one device), and
  reads of other rows go through a masked ``psum`` (a few rows) or an ``all_gather`` (the labels, n int32).

Everything not per-row (weights, parameters, the split-merge pairing and acceptance scan, alpha) is computed
from reduced quantities with the same key on every device, hence is the same everywhere.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from jaxclust.errors import DistributedError, InvalidInputError, InvalidInputTypeError

__all__ = [
    "ROW_AXIS",
    "global_mesh",
    "resolve_mesh",
    "RowAxis",
    "axis_name",
    "psum",
    "segment_sum",
    "segment_min",
    "segment_max",
    "row_ids",
    "uniform",
    "gather",
    "take",
]


# Name of the mesh axis that :func:`global_mesh` lays the devices along.
ROW_AXIS = "rows"


def global_mesh(axis: str = ROW_AXIS) -> Mesh:
    """A one-axis mesh over every device of every process, process by process (each process's devices hold
    consecutive blocks of rows)."""
    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    return Mesh(np.array(devices), (axis,))


def resolve_mesh(mesh) -> Mesh:
    """``"all"`` -> :func:`global_mesh`; a one-axis ``jax.sharding.Mesh`` that every process holds devices of
    is returned as it is."""
    if isinstance(mesh, str):
        if mesh != "all":
            raise InvalidInputError(f"mesh: expected None, 'all' or a jax.sharding.Mesh, got {mesh!r}")
        return global_mesh()
    if not isinstance(mesh, Mesh):
        raise InvalidInputTypeError(
            f"mesh: expected None, 'all' or a jax.sharding.Mesh, got {type(mesh).__name__}"
        )
    if len(mesh.axis_names) != 1:
        raise InvalidInputError(
            f"mesh: expected one axis (the devices in a row), got axes {tuple(mesh.axis_names)} of shape "
            f"{tuple(mesh.devices.shape)}"
        )
    held = sorted({d.process_index for d in mesh.devices.flat})
    if len(held) != jax.process_count():
        missing = sorted(set(range(jax.process_count())) - set(held))
        raise DistributedError(
            f"mesh: has devices of processes {held} only; processes {missing} of the {jax.process_count()} "
            "running would wait for ever: every process must hold part of the mesh"
        )
    return mesh


class RowAxis(NamedTuple):
    """Static description of rows split over a mesh axis (hashable: a jit static argument).

    name : the mesh axis the rows are split over
    n_rows : rows of the single-device layout (the number of items): the length of every per-row draw
    n_shards : devices along ``name``; the padded global row count is ``n_shards * n_local``
    partners : whether the data has cannot-links or soft answers (False: the label all-gathers are skipped)
    """

    name: str
    n_rows: int
    n_shards: int
    partners: bool = True


def axis_name(rows: RowAxis | None) -> str | None:
    return None if rows is None else rows.name


def psum(x, rows: RowAxis | None):
    """``x`` summed over the devices holding the rows (``x`` itself on one device)."""
    return x if rows is None else jax.lax.psum(x, rows.name)


def segment_sum(x, seg, n: int, rows: RowAxis | None):
    return psum(jax.ops.segment_sum(x, seg, num_segments=n), rows)


def _across(reduce, out, rows: RowAxis | None):
    if rows is None:
        return out
    if out.dtype == jnp.bool_:  # collectives reduce numbers
        return reduce(out.astype(jnp.int32), rows.name) > 0
    return reduce(out, rows.name)


def segment_min(x, seg, n: int, rows: RowAxis | None):
    return _across(jax.lax.pmin, jax.ops.segment_min(x, seg, num_segments=n), rows)


def segment_max(x, seg, n: int, rows: RowAxis | None):
    return _across(jax.lax.pmax, jax.ops.segment_max(x, seg, num_segments=n), rows)


def _offset(n_local: int, rows: RowAxis):
    return jax.lax.axis_index(rows.name) * n_local


def row_ids(n_local: int, rows: RowAxis | None):
    """(n_local,) global index of each local row."""
    ids = jnp.arange(n_local)
    return ids if rows is None else ids + _offset(n_local, rows)


def uniform(key, shape: tuple, dtype, rows: RowAxis | None):
    """``jax.random.uniform(key, shape, dtype)`` for the local rows (``shape = (n_local, ...)``): on a device
    of the row axis, the slice of the single-device ``(n_rows, ...)`` draw that belongs to its rows (padding
    rows get 0; they never move)."""
    if rows is None:
        return jax.random.uniform(key, shape, dtype)
    n_local, rest = shape[0], tuple(shape[1:])
    full = jax.random.uniform(key, (rows.n_rows,) + rest, dtype)
    full = jnp.pad(full, [(0, n_local * rows.n_shards - rows.n_rows)] + [(0, 0)] * len(rest))
    return jax.lax.dynamic_slice_in_dim(full, _offset(n_local, rows), n_local)


def gather(x, rows: RowAxis | None):
    """All rows of ``x`` (the padded global array) on every device: an ``all_gather``."""
    return x if rows is None else jax.lax.all_gather(x, rows.name, tiled=True)


def take(x, idx, rows: RowAxis | None):
    """``x[idx]`` for global row indices ``idx`` (the same on every device): each device contributes the rows
    it holds (zeros elsewhere) to a ``psum``, so the result is exact."""
    if rows is None:
        return x[idx]
    n_local = x.shape[0]
    local = idx - _offset(n_local, rows)
    own = (local >= 0) & (local < n_local)
    v = x[jnp.clip(local, 0, n_local - 1)]
    is_bool = v.dtype == jnp.bool_
    if is_bool:
        v = v.astype(jnp.int32)
    v = jnp.where(own.reshape(own.shape + (1,) * (v.ndim - own.ndim)), v, jnp.zeros_like(v))
    v = jax.lax.psum(v, rows.name)
    return v > 0 if is_bool else v
