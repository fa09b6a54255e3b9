"""Many chains: ``vmap`` over chains inside one ``lax.scan`` over sweeps, burn-in, thinning, capacity growth.

The host loop runs blocks of ``thin`` iterations of the kernel (:func:`jaxclust.dpmm.kernels.build_kernel`; one
compiled function, reused for burn-in and sampling, across fits and across active-learning rounds as long as
``n``, D, the capacity and the partner-list width stay the same). After each block it reads the iterations'
``overflow``: if any chain needed a new component while all slots were occupied, the slots grow (a re-trace;
the policy is :mod:`jaxclust.dpmm.capacity`) and the block is redone from its starting state with the same
keys, so no retained sample ever comes from a truncated sampler. Chains shard over devices when several are
present.

Over several processes (``jax.distributed``; :mod:`jaxclust.dpmm.distributed`), ``run_chains(..., mesh=)``
either shards the chains over the mesh's devices (the collapsed sampler: each chain needs every row), or, for
the sub-cluster sampler, splits the group *rows* over the devices with ``shard_map`` (:mod:`jaxclust.dpmm.rows`)
and runs every chain on every device. The host loop is the same on every process: it only reads replicated
values (the overflow flags, the traces) and gathers the labels of retained samples to every process, so every
process returns the same :class:`ChainResult`, the single-process one for the same seed up to float rounding
(sums over rows are added in another order; a draw that rounding decides can then differ).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxclust.coclustering import relabel
from jaxclust.dpmm import splitmerge
from jaxclust.dpmm import state as _state
from jaxclust.dpmm.capacity import SlotPolicy, initial_capacity
from jaxclust.dpmm.kernels import Kernel, build_kernel
from jaxclust.dpmm.rows import RowAxis, resolve_mesh
from jaxclust.errors import InvalidInputError
from jaxclust.transfer import to_device

__all__ = [
    "ChainResult",
    "run_chains",
    "repair_labels",
    "TRACE_COUNTER",
]

# Python-side count of traces of the block function (tests use it to check that new constraints re-use the
# compile).
TRACE_COUNTER = {"block": 0}


class ChainResult(NamedTuple):
    """Output of :func:`run_chains` (NumPy arrays).

    samples : (C, S, n_items) int, slot labels of the retained samples (relabelled 0.. per sample)
    log_joint, alpha, n_components : (C, S) at the retained samples
    trace_log_joint, trace_alpha, trace_n_components : (C, n_burnin + S * thin) every sweep
    final_labels : (C, n_items) labels of each chain's last state
    capacity : int, final number of slots
    n_capacity_growths : int, number of times the slots grew (proactively or after an overflow)
    n_overflow_redos : int, number of blocks redone because a chain ran out of slots
    split_merge : (C, 4) int, each chain's split-merge moves over all its sweeps, in the order of
        :data:`jaxclust.dpmm.splitmerge.MOVES` (proposed and accepted splits, proposed and accepted merges)
    """

    samples: np.ndarray
    log_joint: np.ndarray
    alpha: np.ndarray
    n_components: np.ndarray
    trace_log_joint: np.ndarray
    trace_alpha: np.ndarray
    trace_n_components: np.ndarray
    final_labels: np.ndarray
    capacity: int
    n_capacity_growths: int
    n_overflow_redos: int = 0
    split_merge: np.ndarray | None = None


class _Trace(NamedTuple):
    """Per-iteration traces of a block: ``log_joint``, ``n_components``, ``alpha``, ``overflow`` (n_sweeps, C) and
    ``moves`` (n_sweeps, C, 4), the split-merge counts in the order of :data:`jaxclust.dpmm.splitmerge.MOVES`."""

    log_joint: jax.Array
    n_components: jax.Array
    alpha: jax.Array
    moves: jax.Array
    overflow: jax.Array


def _block(keys, states, data, family, alpha_prior, n_active, block, *, n_sweeps, spec, rows=None):
    """``n_sweeps`` iterations (the first ``n_active`` of them real) of every chain, with the chains' keys
    ``keys`` (C,) folded with the block's index ``block``: the states and a :class:`_Trace`."""
    keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, block)
    sweep_keys = jax.vmap(lambda k: jax.random.split(k, n_sweeps))(keys)  # (C, n_sweeps)
    kernel = jax.vmap(build_kernel(spec, family, alpha_prior, rows), in_axes=(0, 0, None))
    idle = jax.vmap(lambda _: _state.no_moves())(keys)

    def body(states, xs):
        i, ks = xs
        # unbatched predicate: a real branch, so the inactive tail of a short block costs nothing
        states, info = jax.lax.cond(i < n_active, lambda s: kernel(ks, s, data), lambda s: (s, idle), states)
        moves = jnp.stack(info[:4], axis=-1)
        return states, _Trace(
            states.log_joint, jnp.sum(states.counts > 0, -1), states.alpha, moves, info.overflow
        )

    return jax.lax.scan(body, states, (jnp.arange(n_sweeps), jnp.swapaxes(sweep_keys, 0, 1)))


# XLA's CPU backend compiles the sampler's block faster at LLVM optimisation level 1 than at its default, and the
# compiled block runs as fast (benchmarks/RESULTS.md, "first call"): on CPU compiling is most of what a notebook user
# waits for on a first fit. The sub-cluster block (large data, where compiling is most of a fit) also uses XLA's
# classic loop emitters instead of its MLIR fusion emitters: much less compile time for slightly slower runs; the
# collapsed block (active sessions: one compile, many fits) would lose more run time than it saves (RESULTS,
# "seventh round"). Other backends keep their defaults.
_CPU_COMPILER_OPTIONS = {"xla_backend_optimization_level": 1}
_CPU_SUBCLUSTER_OPTIONS = {"xla_cpu_use_fusion_emitters": False}


@functools.cache
def _known(name: str, value) -> bool:
    """Whether this jaxlib's XLA accepts the compile option (probed once, on a trivial program): the options
    above are XLA debug options, which a later XLA may drop; that should cost compile time, not every fit."""
    try:
        jax.jit(lambda x: x + 1, compiler_options={name: value}).lower(
            jax.ShapeDtypeStruct((), jnp.float32)
        ).compile()
    except jax.errors.JaxRuntimeError:
        return False
    return True


def cpu_compiler_options(sampler: str | None = None) -> dict:
    """The CPU compile options of a block of ``sampler`` (None: the other compiled pieces) that this jaxlib
    knows (level 1 for every block, and the classic loop emitters for the sub-cluster one: see the comment
    above ``_CPU_COMPILER_OPTIONS`` in this module)."""
    wanted = dict(_CPU_COMPILER_OPTIONS)
    if sampler == "subcluster":
        wanted.update(_CPU_SUBCLUSTER_OPTIONS)
    return {name: value for name, value in wanted.items() if _known(name, value)}


def _jit(static_argnames):
    """``jax.jit`` with :func:`cpu_compiler_options` (of the ``spec`` argument's sampler) when the default
    backend is the CPU."""

    def wrap(fun):
        default = jax.jit(fun, static_argnames=static_argnames)
        cpu = {}  # by sampler, built on the first CPU call: probing the options needs a backend, import must not

        @functools.wraps(fun)
        def call(*args, **kwargs):
            if jax.default_backend() != "cpu":
                return default(*args, **kwargs)
            spec = kwargs.get("spec")
            sampler = None if spec is None else spec.sampler
            if sampler not in cpu:
                options = cpu_compiler_options(sampler)
                cpu[sampler] = jax.jit(fun, static_argnames=static_argnames, compiler_options=options)
            return cpu[sampler](*args, **kwargs)

        return call

    return wrap


@_jit(static_argnames=("n_sweeps", "spec"))
def _run_block(keys, states, data, family, alpha_prior, n_active, block, *, n_sweeps, spec):
    TRACE_COUNTER["block"] += 1
    return _block(keys, states, data, family, alpha_prior, n_active, block, n_sweeps=n_sweeps, spec=spec)


def _state_spec(rows: RowAxis):
    """Row-split states: labels (C, rows) split along the rows, everything else replicated."""
    rep = P()
    return _state.GibbsState(P(None, rows.name), rep, rep, rep, rep)


def data_spec(rows: RowAxis) -> _state.GroupData:
    """How :class:`jaxclust.dpmm.state.GroupData` lies on a mesh when its rows are split over ``rows.name``:
    per-row fields split, the scalars and the item-to-group map replicated."""
    row, rep = P(rows.name), P()
    return _state.GroupData(
        stats=row,
        valid=row,
        partners=row,
        partner_w=row,
        spill=rep,
        spill_w=rep,
        spill_owner=rep,
        spill_span=row,
        group_of=rep,
        n_items=rep,
        log_const=rep,
        colour=row,
        n_colours=rep,
        feat=row,
    )


@_jit(static_argnames=("n_sweeps", "spec", "mesh", "rows"))
def _run_block_rows(keys, states, data, family, alpha_prior, n_active, block, *, n_sweeps, spec, mesh, rows):
    """:func:`_run_block` with the rows split over ``mesh`` (``shard_map``; the collectives are in
    :mod:`jaxclust.dpmm.rows`). Outputs: states (labels split, the rest replicated) and replicated traces."""
    TRACE_COUNTER["block"] += 1
    body = functools.partial(_block, n_sweeps=n_sweeps, spec=spec, rows=rows)
    rep = P()
    mapped = jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(rep, _state_spec(rows), data_spec(rows), rep, rep, rep, rep),
        out_specs=(_state_spec(rows), rep),
        check_vma=False,  # replicated outputs are reduced (psum/pmin/pmax) or drawn from replicated keys
    )
    return mapped(keys, states, data, family, alpha_prior, n_active, block)


@_jit(static_argnames=("capacity",))
def _init_states(z, data, family, alpha, *, capacity):
    return jax.vmap(_state.init, in_axes=(0, None, None, None, None))(z, data, family, alpha, capacity)


@_jit(static_argnames=("capacity", "mesh", "rows"))
def _init_states_rows(z, data, family, alpha, *, capacity, mesh, rows):
    init = functools.partial(_state.init, capacity=capacity, rows=rows)
    rep = P()
    mapped = jax.shard_map(
        jax.vmap(init, in_axes=(0, None, None, None)),
        mesh=mesh,
        in_specs=(P(None, rows.name), data_spec(rows), rep, rep),
        out_specs=_state_spec(rows),
        check_vma=False,
    )
    return mapped(z, data, family, alpha)


_pad_states = jax.jit(_state.pad_capacity, static_argnames=("capacity",))


@jax.jit
def _summary(partners, valid):
    """Whether any group has a partner, and the number of groups: one small program instead of three."""
    return jnp.any(partners >= 0), jnp.sum(valid)


def _fetch(tree):
    """Host NumPy copies of a pytree of arrays; arrays split over other processes' devices are gathered
    (``process_allgather``, a collective: every process calls it at the same point of the host loop)."""

    def one(a):
        if isinstance(a, jax.Array) and not (a.is_fully_addressable or a.is_fully_replicated):
            from jax.experimental import multihost_utils

            return np.asarray(multihost_utils.process_allgather(a, tiled=True))
        return jax.device_get(a)

    return jax.tree.map(one, tree)


def _global(x: np.ndarray, sharding) -> jax.Array:
    """A global array with ``sharding`` from a host value every process holds in full."""
    x = np.asarray(x)
    return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])


def chain_rows(labels: np.ndarray, n: int, n_chains: int, name: str) -> np.ndarray:
    """(n_chains, n) starting labels from checked ``labels`` of shape (n,) (every chain alike) or (n_chains, n)
    (``jaxclust.validation.check_label_rows``)."""
    if labels.shape not in ((n,), (n_chains, n)):
        raise InvalidInputError(
            f"{name}: expected shape ({n},) or (n_chains, n) = ({n_chains}, {n}), got {labels.shape}"
        )
    return np.array(np.broadcast_to(labels, (n_chains, n)))


def repair_labels(labels: np.ndarray, constraints) -> np.ndarray:
    """Group labels (n_groups,) from item labels (n,) that satisfy ``constraints``.

    A must-link group takes the label of its first member; then, in group order, a group whose label an
    earlier cannot-linked partner holds moves to the first *extra* component of its label that none of its
    earlier partners hold. Extra components are shared by the groups of one label (a greedy colouring of each
    component's cannot-link graph), so a start with many cannot-links has a few more components, not one per
    cannot-link: the sub-cluster sampler's parallel step never empties a component (only merges do), and
    hundreds of one-group components would each wait for a merge. Labels are compacted to 0..K-1.
    """
    labels = np.asarray(labels, dtype=np.int64)
    if constraints is None:
        return np.unique(labels, return_inverse=True)[1].astype(np.int32)
    first = np.array([members[0] for members in constraints.groups], dtype=np.int64)
    gl = np.unique(labels[first], return_inverse=True)[1].astype(np.int64)
    edges = np.asarray(constraints.cannot_link_groups, dtype=np.int64).reshape(-1, 2)
    if len(edges):
        edges = np.sort(edges, axis=1)
        earlier: dict[int, list[int]] = {}
        for lo, hi in edges.tolist():
            earlier.setdefault(hi, []).append(lo)
        extra: dict[tuple[int, int], int] = {}  # (label, k) -> the label's k-th extra component
        # each group is visited once, after all its earlier partners, and still holds its own label then
        for hi in sorted(earlier):
            taken = {int(gl[lo]) for lo in earlier[hi]}
            label, k = int(gl[hi]), 1
            while label in taken:
                label = extra.setdefault((int(gl[hi]), k), len(gl) + len(extra))
                k += 1
            gl[hi] = label
    return np.unique(gl, return_inverse=True)[1].astype(np.int32)


def _shard(states, n_chains: int, mesh=None):
    """Chains split over ``mesh``'s devices (default: every device JAX sees, of every process), when they
    divide; otherwise left where they are."""
    devices = jax.devices() if mesh is None else list(mesh.devices.flat)
    if len(devices) < 2 or n_chains % len(devices):
        return states
    mesh = jax.sharding.Mesh(np.array(devices), ("chains",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("chains"))
    return jax.device_put(states, sharding)


def _grow(states, family, capacity: int, n_chains: int, mesh, rows):
    """``states`` with ``capacity`` slots, placed as the next block wants them."""
    if mesh is None:
        return _shard(_state.pad_capacity(states, family, capacity), n_chains)
    if rows is None:
        return _shard(_pad_states(states, family, capacity=capacity), n_chains, mesh)
    return _pad_states(states, family, capacity=capacity)  # the block's shard_map places them


class _Placement(NamedTuple):
    """Where the chains run: ``mesh`` (or None), ``rows`` (a RowAxis when the sub-cluster sampler splits the rows
    over it), the group labels (n_chains, rows) as the states start, ``n_chains`` (padded to the mesh when the
    chains split over it), ``n_real`` (the caller's chains), ``n_rows`` (group rows as on one device) and
    ``n_groups``."""

    mesh: object
    rows: object
    group_labels: np.ndarray
    n_chains: int
    n_real: int
    n_rows: int
    n_groups: int


def _place(data: _state.GroupData, group_labels, spec: Kernel, mesh) -> _Placement:
    """The chains' :class:`_Placement`, with the checks of ``spec`` and ``mesh`` against ``data``."""
    group_labels = np.asarray(group_labels, dtype=np.int32)
    n_chains = n_real = group_labels.shape[0]
    has_partners, groups = _fetch(_summary(data.partners, data.valid))
    any_partners, n_groups = bool(has_partners), int(groups)
    if spec.sampler == "subcluster" and not spec.constrained and any_partners:
        raise InvalidInputError(
            "spec: Kernel('subcluster', constrained=False) would ignore the data's cannot-links and answers; "
            "use constrained=True"
        )
    n_rows = int(data.valid.shape[0])
    rows = None
    if mesh is not None:
        mesh = resolve_mesh(mesh)
        if spec.sampler == "subcluster":
            rows = RowAxis(mesh.axis_names[0], int(data.group_of.shape[0]), int(mesh.size), any_partners)
            if n_rows % rows.n_shards or n_rows < rows.n_rows:
                raise InvalidInputError(
                    f"data: {n_rows} group rows do not split evenly over the mesh's {rows.n_shards} devices; "
                    "pack it with jaxclust.dpmm.distributed.shard_data"
                )
            if group_labels.shape[1] < n_rows:  # padding rows: slot 0, never moved
                group_labels = np.pad(group_labels, ((0, 0), (0, n_rows - group_labels.shape[1])))
            n_rows = rows.n_rows  # capacities as on one device (the padding is not items)
        elif n_chains % mesh.size:
            # chains split over the devices: pad with copies of the first chains (same labels, same keys, hence
            # the same trajectories), dropped from the result
            n_chains = -(-n_chains // mesh.size) * mesh.size
            group_labels = group_labels[np.arange(n_chains) % n_real]
    return _Placement(mesh, rows, group_labels, n_chains, n_real, n_rows, n_groups)


def _start(place: _Placement, data, family, alpha, capacity: int):
    """The chains' first states (``capacity`` slots), placed as the blocks want them."""
    # host values as they are: a jitted function copies them over without compiling a conversion
    alpha = np.asarray(alpha, data.n_items.dtype)
    if place.rows is not None:
        z0 = _global(place.group_labels, NamedSharding(place.mesh, P(None, place.rows.name)))
        return _init_states_rows(z0, data, family, alpha, capacity=capacity, mesh=place.mesh, rows=place.rows)
    states = _init_states(place.group_labels, data, family, alpha, capacity=capacity)
    return _shard(states, place.n_chains, place.mesh)


def _schedule(n_burnin: int, n_samples: int, thin: int) -> list[tuple[int, bool]]:
    """Blocks of ``thin`` iterations as ``(real iterations, kept)``: burn-in (its last block may be short),
    then one kept block per retained sample."""
    n_burn_blocks = -(-n_burnin // thin) if n_burnin > 0 else 0
    blocks = [(min(thin, n_burnin - b * thin), False) for b in range(n_burn_blocks)]
    return blocks + [(thin, True)] * n_samples


def _run_growing(run_block, states, slots: SlotPolicy, grow):
    """``run_block(states) -> (states, trace)`` until no chain overflowed, each redo from ``states`` grown by
    ``grow(states, capacity)`` to the policy's next capacity."""
    while True:
        new_states, trace = run_block(states)
        if not bool(np.any(_fetch(trace.overflow))):
            return new_states, trace
        states = grow(states, slots.after_overflow())


def _result(kept, traces, final_z, group_of, n_chains: int, slots: SlotPolicy) -> ChainResult:
    """The :class:`ChainResult` from the kept samples ``(z, log joint, alpha, components)``, the blocks' traces
    and the final group labels (n_chains, rows)."""
    final = relabel(final_z[:, group_of])
    if kept:
        z = np.stack([k[0] for k in kept], axis=1)[:, :, group_of]  # (C, S, n)
        samples = relabel(z.reshape(-1, z.shape[-1])).reshape(z.shape)
        lj, al, kk = (np.stack([k[i] for k in kept], axis=1) for i in (1, 2, 3))
    else:
        samples = np.zeros((n_chains, 0, len(group_of)), np.int64)
        lj = al = kk = np.zeros((n_chains, 0))
    if traces:
        t_lj, t_k, t_al = (np.concatenate([t[i] for t in traces], axis=0).T for i in range(3))
        moves = np.concatenate([t[3] for t in traces], axis=0).sum(axis=0).astype(np.int64)
    else:
        t_lj = t_k = t_al = np.zeros((n_chains, 0))
        moves = np.zeros((n_chains, len(splitmerge.MOVES)), np.int64)
    return ChainResult(
        samples, lj, al, kk, t_lj, t_al, t_k, final, slots.capacity, slots.growths, slots.redos, moves
    )


def run_chains(
    key,
    data: _state.GroupData,
    family,
    group_labels: np.ndarray,
    *,
    alpha,
    alpha_prior=None,
    n_burnin: int = 100,
    n_samples: int = 20,
    thin: int = 5,
    capacity: int | None = None,
    progress: bool = False,
    spec: Kernel = Kernel(),
    mesh=None,
) -> ChainResult:
    """Run ``C = len(group_labels)`` chains from group labels (C, n_rows) satisfying the constraints.

    Parameters
    ----------
    key : PRNG key
    data : GroupData from :func:`jaxclust.dpmm.state.prepare`
    family : prepared family
    group_labels : np.ndarray, shape (C, n_rows), int
        Initial slot of each group (padded rows: any value).
    alpha : float
        Initial (or fixed) concentration.
    alpha_prior : (shape, rate) or None
    n_burnin, n_samples, thin : int
        Sweeps before the first retained sample, retained samples per chain, sweeps between retained samples.
    capacity : int, optional
        Smallest initial number of slots (default: from the initial labels, see the module docstring); grows
        when the chains need more.
    progress : bool
        A tqdm bar over blocks.
    spec : Kernel
        What one iteration is (:class:`jaxclust.dpmm.kernels.Kernel`); the default is a collapsed Gibbs sweep
        after one split-merge round.
    mesh : jax.sharding.Mesh with one axis, optional
        Devices (of one or several processes) to run on. The sub-cluster sampler splits the group rows over
        them: ``data`` must then come from :func:`jaxclust.dpmm.distributed.shard_data` (rows padded to a
        multiple of the mesh size, split along the axis). The collapsed sampler splits the chains over them
        (padded to a multiple of the mesh size with copies of the first chains, dropped from the result).
        Every process calls ``run_chains`` alike and gets the same result, the single-device one for the same
        key up to float rounding (:mod:`jaxclust.dpmm.distributed`). ``None``: chains shard over all devices
        when they divide evenly.
    """
    place = _place(data, group_labels, spec, mesh)
    n_used = int(place.group_labels[:, : place.n_groups].max()) + 1 if place.n_groups else 1
    slots = SlotPolicy(initial_capacity(n_used, place.n_rows, capacity), place.n_groups, place.n_rows)
    states = _start(place, data, family, alpha, slots.capacity)
    alpha_prior = _state.alpha_prior_arrays(alpha_prior, data.n_items.dtype)
    chain_keys = jax.random.split(key, place.n_real)
    if place.n_chains > place.n_real:
        chain_keys = chain_keys[jnp.arange(place.n_chains) % place.n_real]
    blocks = _schedule(n_burnin, n_samples, thin)
    run_block = (
        _run_block
        if place.rows is None
        else functools.partial(_run_block_rows, mesh=place.mesh, rows=place.rows)
    )

    def run(states, n_active, index):
        return run_block(
            chain_keys, states, data, family, alpha_prior, n_active, index, n_sweeps=thin, spec=spec
        )

    def grow(states, capacity):
        return _grow(states, family, capacity, place.n_chains, place.mesh, place.rows)

    iterator = range(len(blocks))
    if progress and jax.process_index() == 0:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc="DPMM sweeps", unit="block")
    traces, kept, before = [], [], n_used
    for b in iterator:
        n_active, keep = blocks[b]
        step = functools.partial(run, n_active=to_device(n_active, np.int32), index=to_device(b, np.int32))
        states, got = _run_growing(step, states, slots, grow)
        trace = tuple(t[:n_active, : place.n_real] for t in _fetch(got[:4]))
        traces.append(trace)
        occupied = int(trace[1].max()) if n_active > 0 else 0
        capacity = slots.after_block(occupied, last=b + 1 == len(blocks), before=before)
        if capacity is not None:  # proactive growth: cheaper than an overflow, which would redo a block
            states = grow(states, capacity)
        before = occupied if n_active > 0 else before
        if keep:  # a kept block is a whole block: its last traced count is the kept sample's
            got = _fetch((states.z, states.log_joint, states.alpha))
            kept.append((*(a[: place.n_real] for a in got), trace[1][-1]))
    final_z = np.asarray(_fetch(states.z))[: place.n_real]
    return _result(kept, traces, final_z, np.asarray(_fetch(data.group_of)), place.n_real, slots)
