"""Many chains: ``vmap`` over chains inside one ``lax.scan`` over sweeps, burn-in, thinning, capacity growth.

The host loop runs blocks of ``thin`` sweeps (one compiled function, reused for burn-in and sampling, across
fits and across active-learning rounds as long as ``n``, D, the capacity and the partner-list width stay the
same). After each block it reads one flag: if any chain needed a new component while all slots were occupied,
the capacity doubles (a re-trace), and the block is redone from its starting state with the same keys, so no
retained sample ever comes from a truncated sampler. Chains shard over devices when several are present.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxclust.dpmm import gibbs
from jaxclust.dpmm.kernels import Kernel, iterate
from jaxclust.errors import InvalidInputError

__all__ = [
    "ChainResult",
    "run_chains",
    "repair_labels",
    "initial_capacity",
    "grown_capacity",
    "TRACE_COUNTER",
]

# Default starting slots: every chain starts in one component and split-merge creates several per round, so
# start roomy (one compile serves up to ~24 components) rather than grow (each growth re-compiles).
MIN_SLOTS = 32
# Free slots kept beyond the largest occupied count: a quarter of the capacity, at least 2.
HEADROOM = 2
# Capacities are multiples of this (fewer distinct compiled shapes) and grow by GROWTH.
SLOT_STEP = 4
GROWTH = 2.0


def headroom(capacity: int) -> int:
    return max(HEADROOM, int(capacity) // 4)


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


@functools.partial(jax.jit, static_argnames=("n_sweeps", "spec"))
def _run_block(keys, states, data, family, alpha_prior, n_active, *, n_sweeps, spec):
    """``n_sweeps`` iterations (the first ``n_active`` of them real) of every chain; per-iteration traces."""
    TRACE_COUNTER["block"] += 1
    sweep_keys = jax.vmap(lambda k: jax.random.split(k, n_sweeps))(keys)  # (C, n_sweeps)
    vstep = jax.vmap(iterate, in_axes=(0, 0, None, None, None, None))

    def body(states, xs):
        i, ks = xs
        # unbatched predicate: a real branch, so the inactive tail of a short block costs nothing
        states = jax.lax.cond(
            i < n_active, lambda s: vstep(ks, s, data, family, alpha_prior, spec), lambda s: s, states
        )
        return states, (states.log_joint, jnp.sum(states.counts > 0, -1), states.alpha)

    return jax.lax.scan(body, states, (jnp.arange(n_sweeps), jnp.swapaxes(sweep_keys, 0, 1)))


@functools.partial(jax.jit, static_argnames=("capacity",))
def _init_states(z, data, family, alpha, *, capacity):
    return jax.vmap(gibbs.init, in_axes=(0, None, None, None, None))(z, data, family, alpha, capacity)


def _relabel_rows(labels: np.ndarray) -> np.ndarray:
    """Relabel each row to 0, 1, ... in order of first appearance (vectorised over rows)."""
    labels = np.asarray(labels, dtype=np.int64)
    R, n = labels.shape
    K = int(labels.max()) + 1 if labels.size else 1
    first = np.full((R, K), n, dtype=np.int64)
    rows = np.repeat(np.arange(R), n)
    np.minimum.at(first, (rows, labels.ravel()), np.tile(np.arange(n), R))
    rank = np.empty_like(first)
    np.put_along_axis(rank, np.argsort(first, axis=1, kind="stable"), np.arange(K)[None, :], axis=1)
    return np.take_along_axis(rank, labels, axis=1)


def repair_labels(labels: np.ndarray, constraints) -> np.ndarray:
    """Group labels (n_groups,) from item labels (n,) that satisfy ``constraints``.

    A must-link group takes the label of its first member; then, in group order, a group whose label equals
    that of an earlier cannot-linked partner gets a fresh label. Labels are compacted to 0..K-1.
    """
    labels = np.asarray(labels, dtype=np.int64)
    if constraints is None:
        return np.unique(labels, return_inverse=True)[1].astype(np.int32)
    first = np.array([members[0] for members in constraints.groups], dtype=np.int64)
    gl = np.unique(labels[first], return_inverse=True)[1].astype(np.int64)
    edges = np.asarray(constraints.cannot_link_groups, dtype=np.int64).reshape(-1, 2)
    if len(edges):
        edges = np.sort(edges, axis=1)
        fresh = int(gl.max()) + 1
        # visit groups in order; each edge is checked when its later endpoint is visited
        order = np.argsort(edges[:, 1], kind="stable")
        for lo, hi in edges[order]:
            if gl[lo] == gl[hi]:
                gl[hi] = fresh
                fresh += 1
    return np.unique(gl, return_inverse=True)[1].astype(np.int32)


def _round_slots(k: int) -> int:
    return SLOT_STEP * -(-int(k) // SLOT_STEP)


def initial_capacity(max_occupied: int, n_groups: int, capacity: int | None = None) -> int:
    """Starting slots: ``capacity`` (default ``MIN_SLOTS``), at least ``max_occupied + HEADROOM`` rounded up to a
    multiple of ``SLOT_STEP``, and at most ``n_groups`` (enough for any partition; never below
    ``max_occupied``). Callers pass the number of group *rows* (the items, a constant of the data) as
    ``n_groups`` so that must-links joining groups between fits do not change the compiled shapes."""
    want = max(int(capacity or MIN_SLOTS), _round_slots(int(max_occupied) + HEADROOM))
    return max(int(max_occupied), 1, min(want, int(n_groups)))


def grown_capacity(capacity: int, max_occupied: int, n_groups: int) -> int:
    """Next capacity: x``GROWTH`` and at least ``max_occupied + HEADROOM``, a multiple of ``SLOT_STEP``, capped at
    ``n_groups``."""
    want = max(_round_slots(math.ceil(GROWTH * capacity)), _round_slots(int(max_occupied) + HEADROOM))
    return min(want, max(int(n_groups), capacity))


def _shard(states, n_chains: int):
    devices = jax.devices()
    if len(devices) < 2 or n_chains % len(devices):
        return states
    mesh = jax.sharding.Mesh(np.array(devices), ("chains",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("chains"))
    return jax.device_put(states, sharding)


def run_chains(
    key,
    data: gibbs.GroupData,
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
) -> ChainResult:
    """Run ``C = len(group_labels)`` chains from group labels (C, n_rows) satisfying the constraints.

    Parameters
    ----------
    key : PRNG key
    data : GroupData from :func:`jaxclust.dpmm.gibbs.prepare`
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
    """
    group_labels = np.asarray(group_labels, dtype=np.int32)
    n_chains = group_labels.shape[0]
    if spec.sampler == "subcluster" and not spec.constrained and bool(np.any(np.asarray(data.partners) >= 0)):
        raise InvalidInputError(
            "spec: Kernel('subcluster', constrained=False) would ignore the data's cannot-links and answers; "
            "use constrained=True"
        )
    n_groups = int(np.sum(np.asarray(data.valid)))
    # slots in use: labels index slots directly (repaired labels are compact: this is the component count)
    n_used = int(group_labels[:, :n_groups].max()) + 1 if n_groups else 1
    n_rows = int(data.valid.shape[0])
    capacity = initial_capacity(n_used, n_rows, capacity)
    dtype = data.n_items.dtype
    # alpha fixed or inferred is a traced flag, so both share one compile
    infer = alpha_prior is not None
    a, b = alpha_prior if infer else (1.0, 1.0)
    alpha_prior = (jnp.asarray(a, dtype), jnp.asarray(b, dtype), jnp.asarray(infer))
    states = _init_states(
        jnp.asarray(group_labels), data, family, jnp.asarray(alpha, dtype), capacity=capacity
    )
    states = _shard(states, n_chains)
    chain_keys = jax.random.split(key, n_chains)
    n_burn_blocks = -(-n_burnin // thin) if n_burnin > 0 else 0
    blocks = [(min(thin, n_burnin - b * thin), False) for b in range(n_burn_blocks)]
    blocks += [(thin, True)] * n_samples
    growths = redos = 0
    traces, kept = [], []
    iterator = range(len(blocks))
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc="DPMM sweeps", unit="block")
    for b in iterator:
        n_active, keep = blocks[b]
        keys = jax.vmap(lambda k, b=b: jax.random.fold_in(k, b))(chain_keys)
        while True:
            new_states, (lj, kk, al) = _run_block(
                keys, states, data, family, alpha_prior, jnp.asarray(n_active), n_sweeps=thin, spec=spec
            )
            if not bool(jnp.any(new_states.overflow)):
                break
            # a chain needed a slot it did not have: grow, and redo the block from its start with the same
            # keys
            if capacity >= n_groups:  # cannot happen (see the module docstring); never loop forever
                raise RuntimeError(f"DPMM sampler overflowed with {capacity} slots for {n_groups} groups")
            capacity = grown_capacity(capacity, capacity, n_rows)
            growths += 1
            redos += 1
            states = _shard(gibbs.pad_capacity(states, family, capacity), n_chains)
        states = new_states
        trace = jax.device_get((lj[:n_active], kk[:n_active], al[:n_active]))
        traces.append(trace)
        occupied = int(trace[1].max()) if n_active > 0 else 0
        if occupied + headroom(capacity) > capacity and capacity < n_groups and b + 1 < len(blocks):
            # proactive growth: cheaper than an overflow, which would redo a block
            capacity = grown_capacity(capacity, occupied, n_rows)
            growths += 1
            states = _shard(gibbs.pad_capacity(states, family, capacity), n_chains)
        if keep:
            kept.append(
                jax.device_get((states.z, states.log_joint, states.alpha, jnp.sum(states.counts > 0, -1)))
            )
    group_of = np.asarray(data.group_of)
    final = _relabel_rows(np.asarray(states.z)[:, group_of])
    if kept:
        z = np.stack([k[0] for k in kept], axis=1)[:, :, group_of]  # (C, S, n)
        samples = _relabel_rows(z.reshape(-1, z.shape[-1])).reshape(z.shape)
        lj, al, kk = (np.stack([k[i] for k in kept], axis=1) for i in (1, 2, 3))
    else:
        samples = np.zeros((n_chains, 0, len(group_of)), np.int64)
        lj = al = kk = np.zeros((n_chains, 0))
    if traces:
        t_lj, t_k, t_al = (np.concatenate([t[i] for t in traces], axis=0).T for i in range(3))
    else:
        t_lj = t_k = t_al = np.zeros((n_chains, 0))
    return ChainResult(samples, lj, al, kk, t_lj, t_al, t_k, final, capacity, growths, redos)
