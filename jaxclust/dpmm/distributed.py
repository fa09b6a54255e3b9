"""The DPMM over several processes and hosts, on JAX's own multi-process runtime (``jax.distributed``).

Every process runs the same script (one process per host, or per GPU) with the same data, constraints and
seed, and gets the same result, which is the single-process result for that seed up to float rounding (see
"What is split" for what that means for the partition)::

    import jaxclust
    from jaxclust.dpmm import distributed

    distributed.initialize()        # first, before anything runs on JAX (see below for the settings)
    X, c = load_my_data()           # the same on every process
    res = jaxclust.dpmm.sample(0, X, c, sampler="subcluster", mesh="all")
    model = jaxclust.DPMM(sampler="subcluster", mesh="all").fit(X, c)

What is split. With ``mesh`` (``"all"``: every device of every process, :func:`global_mesh`):

* the **sub-cluster sampler** splits the must-link group rows over the devices (``shard_map``): each device
  holds the group statistics of ``ceil(n / devices)`` consecutive rows (:func:`shard_data`; the last device's
  block is padded with empty rows), and each process computes the host-side statistics of its own devices'
  rows only. Per-component statistics are summed over devices (``psum``); the seeds and anchors that are
  per-component minima or maxima over rows are ``pmin`` / ``pmax``; the few rows one device needs from another
  (a split's two seed rows) come through a masked ``psum``, and the labels of cannot-link and answer partners
  through an ``all_gather`` of the labels (n int32, only when there are partners). Everything else (weights,
  parameters, the split-merge pairing and its acceptance scan, alpha) is computed from those reduced values
  with the same key on every device. Per-row random numbers are the single-device ones (the ``(n,)`` draw,
  sliced), so the partition sampled with a seed is the single-process one as long as rounding decides no
  draw: sums over rows are added in another order, so statistics agree only to float rounding, and a
  split-merge or label draw that falls within rounding of its threshold can go the other way (seen at 200,000
  rows, not at test sizes); from there the chains follow another, equally valid path;
* the **collapsed sampler** (sequential over groups) splits the chains over the devices instead; chains are
  padded to a multiple of the devices (the padding chains are run and discarded).

Starting the processes (:func:`initialize` wraps ``jax.distributed.initialize``):

* on Slurm or Open MPI, ``initialize()`` with no arguments: JAX reads the job's layout (one task per host or
  per GPU, e.g. ``srun --ntasks-per-node=1 python fit.py``);
* elsewhere, set on every process ``JAX_COORDINATOR_ADDRESS=host0:12355`` (process 0's host and a free port),
  ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` (0 .. N - 1), or pass them as arguments;
* CPU processes need cross-process collectives: ``initialize`` selects gloo
  (``jax_cpu_collectives_implementation``) unless told otherwise.

Not split: the preprocessing (column location/scale, the default prior) reads all of ``X`` on every process,
and the retained samples are gathered to every process (``ChainResult`` holds them all). The sampler's
per-iteration work and device memory are what scale.
"""

from __future__ import annotations

import os
import warnings
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxclust.dpmm import state as _state
from jaxclust.dpmm.rows import ROW_AXIS, global_mesh, resolve_mesh
from jaxclust.errors import DistributedError, InvalidInputError, JaxclustWarning
from jaxclust.transfer import to_device
from jaxclust.validation import check_int

__all__ = [
    "initialize",
    "global_mesh",
    "resolve_mesh",
    "shard_data",
    "ROW_AXIS",
]


def _env_int(name: str, minimum: int) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise InvalidInputError(f"{name}: expected an int >= {minimum}, got {raw!r}")
    return value


def _arg_int(value, name: str, minimum: int) -> int | None:
    if value is None:
        return None
    return check_int(value, name, minimum=minimum)


def _merge(arg, env, arg_name: str, env_name: str):
    if arg is not None and env is not None and arg != env:
        raise DistributedError(
            f"{arg_name}={arg!r} but {env_name}={env!r}: the process count and id must agree"
        )
    return arg if arg is not None else env


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    local_device_ids=None,
    cpu_collectives: str | None = "gloo",
    timeout: int = 300,
) -> tuple[int, int]:
    """Start JAX's multi-process runtime; returns ``(process_id, num_processes)``.

    Call it on every process before anything runs on JAX. Unset arguments come from the environment
    (``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``), else from Slurm or Open MPI
    (JAX's own detection). Calling it again in a running runtime with the same process count does nothing,
    and so does ``num_processes=1`` (one process needs no runtime). With no settings at all and no Slurm or
    Open MPI job, it warns and the script runs as one process (the same script works on a laptop).

    Parameters
    ----------
    coordinator_address : str, optional
        ``host:port`` of process 0 (the coordinator), reachable from every process.
    num_processes, process_id : int, optional
    local_device_ids : int or list of int, optional
        The accelerators this process uses (e.g. one GPU per process).
    cpu_collectives : str or None
        Cross-process collectives for CPU devices (``"gloo"``, or ``"mpi"``); ``None`` leaves JAX's setting.
    timeout : int
        Seconds to wait for all processes to connect.

    Raises
    ------
    DistributedError
        The runtime is already up with another process count, the arguments disagree with the environment,
        JAX already ran something in this process, or the processes could not connect.
    InvalidInputError
        A malformed argument or environment variable (named).
    """
    coordinator_address, num_processes, process_id = _settings(coordinator_address, num_processes, process_id)
    if num_processes == 1 and not jax.distributed.is_initialized():
        return 0, 1  # one process needs no runtime
    if jax.distributed.is_initialized():
        if num_processes is not None and jax.process_count() != num_processes:
            raise DistributedError(
                f"num_processes: asked for {num_processes} processes, but the running jax.distributed runtime "
                f"has {jax.process_count()}"
            )
        return jax.process_index(), jax.process_count()
    if cpu_collectives not in (None, "gloo", "mpi"):
        raise InvalidInputError(f"cpu_collectives: expected 'gloo', 'mpi' or None, got {cpu_collectives!r}")
    nothing_set = coordinator_address is None and num_processes is None and process_id is None
    previous = jax.config.jax_cpu_collectives_implementation
    if cpu_collectives is not None:
        jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    try:
        jax.distributed.initialize(
            coordinator_address,
            num_processes,
            process_id,
            local_device_ids=local_device_ids,
            initialization_timeout=timeout,
        )
    except (RuntimeError, ValueError) as exc:
        jax.config.update("jax_cpu_collectives_implementation", previous)
        if isinstance(exc, ValueError) and nothing_set and "must be called before" not in str(exc):
            warnings.warn(  # no settings and no cluster: one process
                "jaxclust.dpmm.distributed.initialize: no multi-process settings (JAX_COORDINATOR_ADDRESS, "
                "JAX_NUM_PROCESSES, JAX_PROCESS_ID) and no Slurm or Open MPI job found; running as one process",
                JaxclustWarning,
                stacklevel=2,
            )
            return 0, 1
        raise _start_failed(exc) from exc
    if num_processes is not None and jax.process_count() != num_processes:  # pragma: no cover - JAX checks
        raise DistributedError(
            f"num_processes: asked for {num_processes} processes, the runtime has {jax.process_count()}"
        )
    return jax.process_index(), jax.process_count()


def _settings(coordinator_address, num_processes, process_id) -> tuple[str | None, int | None, int | None]:
    """The arguments merged with ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` (an
    argument and its variable must agree), checked."""
    num_processes = _merge(
        _arg_int(num_processes, "num_processes", 1),
        _env_int("JAX_NUM_PROCESSES", 1),
        "num_processes",
        "JAX_NUM_PROCESSES",
    )
    process_id = _merge(
        _arg_int(process_id, "process_id", 0), _env_int("JAX_PROCESS_ID", 0), "process_id", "JAX_PROCESS_ID"
    )
    if num_processes is not None and process_id is not None and process_id >= num_processes:
        raise InvalidInputError(f"process_id: expected 0 .. {num_processes - 1}, got {process_id}")
    coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS") or None
    if coordinator_address is not None and (
        not isinstance(coordinator_address, str) or ":" not in coordinator_address
    ):
        raise InvalidInputError(f"coordinator_address: expected 'host:port', got {coordinator_address!r}")
    return coordinator_address, num_processes, process_id


def _start_failed(exc: Exception) -> DistributedError:
    """Why ``jax.distributed.initialize`` failed, in words a user can act on."""
    if "must be called before" in str(exc):
        return DistributedError(
            "jax.distributed must start before JAX runs anything in this process: call "
            "jaxclust.dpmm.distributed.initialize() at the top of the script"
        )
    if isinstance(exc, ValueError):  # JAX found no settings (no cluster environment detected)
        return DistributedError(
            f"{exc} Set JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID (or pass them), or "
            "run under Slurm or Open MPI"
        )
    return DistributedError(f"jax.distributed.initialize failed: {exc}")


def _process_sum(x: float) -> float:
    """Sum of a float64 over processes (float32 pairs through JAX's collectives: x64 may be off)."""
    if jax.process_count() == 1:
        return float(x)
    from jax.experimental import multihost_utils

    hi = np.float32(x)
    lo = np.float32(x - np.float64(hi))
    got = np.asarray(multihost_utils.process_allgather(np.array([hi, lo], np.float32)), np.float64)
    return float(np.sum(got.reshape(-1, 2).sum(1)))


def _fingerprints(X: np.ndarray, group_of, partners, partner_w, family) -> dict[str, int]:
    """Cheap 31-bit fingerprints of what every process must hold alike."""

    def crc(*arrays) -> int:
        h = 0
        for a in arrays:
            h = zlib.crc32(np.ascontiguousarray(a).tobytes(), h)
        return h & 0x7FFFFFFF

    stride = max(1, X.shape[0] // 1024)
    return {
        "X shape": crc(np.array(X.shape, np.int64)),
        "X": crc(np.asarray(X[::stride], np.float64), np.sum(X, axis=0, dtype=np.float64)),
        "constraints": crc(group_of, partners, np.asarray(partner_w, np.float64)),
        "prior": crc(*[np.asarray(leaf, np.float64) for leaf in jax.tree.leaves(family)]),
    }


def _check_same_everywhere(prints: dict[str, int]) -> None:
    if jax.process_count() == 1:
        return
    from jax.experimental import multihost_utils

    mine = np.array(list(prints.values()), np.int32)
    every = np.asarray(multihost_utils.process_allgather(mine)).reshape(jax.process_count(), -1)
    for col, name in enumerate(prints):
        differ = np.flatnonzero(every[:, col] != every[0, col])
        if len(differ):
            raise DistributedError(
                f"{name}: process {int(differ[0])} holds other {name} than process 0; every process must pass "
                "the same X, constraints and prior"
            )


def shard_data(
    X: np.ndarray,
    constraints,
    family,
    mesh,
    dtype=jnp.float32,
    partner_capacity: int | None = None,
    log_jacobian: float = 0.0,
) -> _state.GroupData:
    """:func:`jaxclust.dpmm.state.prepare` (with the sub-cluster features) split over ``mesh``'s devices.

    The ``n`` group rows are padded to ``devices * ceil(n / devices)`` (empty rows, never moved) and device
    ``i`` of the mesh axis gets rows ``i * ceil(n / devices) ...``. Each process computes the group statistics
    and features of its own devices' rows only (from the items of those groups); the row-to-group layout, the
    partner tables and the scalars are the same on every process. Every process must call it with the same
    arguments (checked by fingerprints of the data, constraints and prior: :class:`DistributedError`).

    Returns a :class:`GroupData` of global arrays for ``run_chains(..., mesh=mesh)``.
    """
    mesh = resolve_mesh(mesh)
    name = mesh.axis_names[0]
    n_shards = int(mesh.size)
    X = np.asarray(X)
    n = X.shape[0]
    n_local = -(-n // n_shards)
    n_pad = n_local * n_shards
    # no spill rows: they would be read across devices; the table's width grows with the largest degree
    group_of, n_groups, table, colour, n_colours = _state.layout(
        constraints, n, partner_capacity, spill=False
    )
    partners, partner_w = table.partners, table.weights
    _check_same_everywhere(_fingerprints(X, group_of, partners, partner_w, family))
    row_sharding = NamedSharding(mesh, P(name))
    index_of = row_sharding.addressable_devices_indices_map((n_pad,))
    np_dtype = np.dtype(dtype)

    # this process's blocks: statistics of the groups in each of its devices' row ranges
    blocks, coef = {}, 0.0
    for device, index in index_of.items():
        lo = index[0].start or 0
        hi = min(lo + n_local, n)
        mask = (group_of >= lo) & (group_of < hi)
        st = family.group_stats(X[mask], group_of[mask] - lo, n_local)
        if hasattr(st, "coef"):
            coef += float(np.sum(st.coef))
        st = jax.tree.map(lambda a, d=device: jax.device_put(np.asarray(a).astype(np_dtype), d), st)
        blocks[device] = (st, family.loglik_features(st))
    log_const = _process_sum(coef) + float(log_jacobian)
    log_const += 0.0 if constraints is None else constraints.log_answer_constant

    def assemble(per_device, shape):
        return jax.make_array_from_single_device_arrays(
            shape, row_sharding, [per_device[d] for d in row_sharding.addressable_devices]
        )

    devices = list(index_of)
    stats = jax.tree.map(
        lambda *leaves: assemble(dict(zip(devices, leaves, strict=True)), (n_pad,) + leaves[0].shape[1:]),
        *[blocks[d][0] for d in devices],
    )
    feat = assemble({d: blocks[d][1] for d in devices}, (n_pad,) + blocks[devices[0]][1].shape[1:])

    def rows_of(host: np.ndarray, fill, out_dtype):
        padded = np.full((n_pad,) + host.shape[1:], fill, dtype=out_dtype)
        padded[:n] = host
        return jax.make_array_from_callback(padded.shape, row_sharding, lambda idx: padded[idx])

    return _state.GroupData(
        stats=stats,
        valid=rows_of(np.arange(n) < n_groups, False, bool),
        partners=rows_of(partners, -1, np.int32),
        partner_w=rows_of(partner_w, 0.0, np_dtype),
        spill=to_device(table.spill),
        spill_w=to_device(table.spill_weights, dtype),
        spill_owner=to_device(table.spill_owner),
        spill_span=rows_of(table.spill_span, 0, np.int32),
        group_of=to_device(group_of),
        n_items=to_device(n, dtype),
        log_const=to_device(log_const, dtype),
        colour=rows_of(colour, 0, np.int32),
        n_colours=to_device(n_colours, jnp.int32),
        feat=feat,
    )
