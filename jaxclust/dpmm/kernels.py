"""One iteration of either DPMM sampler, as a pure jittable function of one chain's state.

``collapsed``:  split-merge rounds, then one collapsed Gibbs sweep over groups (:mod:`jaxclust.dpmm.gibbs`).
``subcluster``: split-merge rounds, then the parallel restricted step (:mod:`jaxclust.dpmm.subcluster`).
Both end with alpha | K (Escobar-West, when inferred) and an exact refresh of the statistics. Every piece
leaves the (constrained) posterior invariant, so any composition does too.

Usage::

    spec = Kernel("subcluster", split_merge=1)
    state, moves = iterate(key, state, data, family, alpha_prior, spec)  # jit, ``spec`` static; vmap chains
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxclust.dpmm import gibbs, splitmerge, subcluster
from jaxclust.dpmm import state as _state

__all__ = ["Kernel", "iterate", "SAMPLERS"]

SAMPLERS = ("collapsed", "subcluster")


class Kernel(NamedTuple):
    """Static description of one iteration (hashable: a jit static argument).

    sampler : "collapsed" | "subcluster"
    split_merge : int, split-merge rounds per iteration (0: none)
    gibbs : bool, collapsed only: run the Gibbs sweep (False leaves split-merge alone, for tests)
    kmeans_steps : int, 2-means steps of each split launch
    constrained : bool, subcluster only: run the colour loop over cannot-links and soft answers; False is a
        shortcut for data without any (``run_chains`` refuses it for data that has some)
    """

    sampler: str = "collapsed"
    split_merge: int = 1
    gibbs: bool = True
    kmeans_steps: int = splitmerge.KMEANS_STEPS
    constrained: bool = True


def iterate(
    key, state: _state.GibbsState, data: _state.GroupData, family, alpha_prior, spec: Kernel, rows=None
):
    """One iteration (see the module docstring); ``alpha_prior`` as in :func:`jaxclust.dpmm.gibbs.sweep`.
    Returns the new state and the iteration's split-merge counts, (4,) int32 in the order of
    :data:`jaxclust.dpmm.splitmerge.MOVES`.

    ``rows`` (static, sub-cluster sampler only): inside ``shard_map`` with the group rows split over a mesh
    axis (:class:`jaxclust.dpmm.rows.RowAxis`); the iteration then computes what it computes on one device.
    """
    if rows is not None and spec.sampler != "subcluster":
        raise ValueError("rows: only the sub-cluster sampler splits rows over devices")
    if spec.sampler == "subcluster" and not spec.constrained:
        # no cannot-links or answers (run_chains checks): a partner table of width 0 drops their terms from the
        # traced program, where a table of -1s would still be read every sweep
        data = data._replace(
            partners=data.partners[:, :0],
            partner_w=data.partner_w[:, :0],
            spill=data.spill[:0],
            spill_w=data.spill_w[:0],
            spill_owner=data.spill_owner[:0],
        )
    k_main, k_alpha, *k_sm = jax.random.split(key, 2 + spec.split_merge)
    moves = jnp.zeros((len(splitmerge.MOVES),), jnp.int32)
    for r in range(spec.split_merge):
        state, m = splitmerge.split_merge(k_sm[r], state, data, family, n_steps=spec.kmeans_steps, rows=rows)
        moves = moves + m
    if spec.sampler == "collapsed":
        if spec.gibbs:
            return gibbs.sweep(k_main, state, data, family, alpha_prior), moves
        z = state.z
    else:
        z = subcluster.restricted_step(k_main, state, data, family, spec.constrained, rows)
    return _state.finish(k_alpha, z, state, data, family, alpha_prior, rows), moves
