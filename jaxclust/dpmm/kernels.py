"""One iteration of either DPMM sampler: moves composed into one kernel ``(key, state, data) -> (state, info)``.

Every move has that contract (``info`` a :class:`jaxclust.dpmm.state.MoveInfo`: split-merge proposals and
acceptances, and whether it needed a slot it did not have) and leaves the (constrained) posterior invariant, so
any composition does too:

``collapsed``:  split-merge rounds (:func:`jaxclust.dpmm.splitmerge.split_merge`), then one collapsed Gibbs sweep
                over groups ending with alpha | K (:func:`jaxclust.dpmm.gibbs.sweep`).
``subcluster``: split-merge rounds, the parallel restricted step
                (:func:`jaxclust.dpmm.subcluster.restricted_move`), then alpha | K
                (:func:`jaxclust.dpmm.state.alpha_move`).

The kernel is pure and jittable; ``vmap`` it over chains. Growing the slots when ``info.overflow`` says a move
lacked one is the driver's business (:func:`jaxclust.dpmm.chains.run_chains`), never the kernel's.

Usage::

    kernel = build_kernel(Kernel("subcluster", split_merge=1), family, alpha_prior)
    state, info = kernel(key, state, data)   # jit; vmap over chains
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax

from jaxclust.dpmm import gibbs, splitmerge, subcluster
from jaxclust.dpmm import state as _state
from jaxclust.errors import InvalidInputError

__all__ = ["Kernel", "build_kernel", "SAMPLERS"]

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


def _without_partners(data: _state.GroupData) -> _state.GroupData:
    """``data`` with a partner table of width 0: with no cannot-links or answers their terms then drop out of the
    traced program, where a table of -1s would still be read every iteration."""
    return data._replace(
        partners=data.partners[:, :0],
        partner_w=data.partner_w[:, :0],
        spill=data.spill[:0],
        spill_w=data.spill_w[:0],
        spill_owner=data.spill_owner[:0],
    )


def build_kernel(spec: Kernel, family, alpha_prior=None, rows=None):
    """The iteration ``spec`` describes, as ``kernel(key, state, data) -> (state, info)``.

    The moves' keys are ``split(key, 2 + spec.split_merge)``: the local move's, alpha's (the sub-cluster
    sampler; the sweep draws alpha from its own), then one per split-merge round.

    Parameters
    ----------
    spec : Kernel
    family : prepared family (:mod:`jaxclust.dpmm.families`)
    alpha_prior : ``(shape, rate)`` or ``(shape, rate, infer)`` of arrays, ``infer`` a traced bool (one compiled
        kernel for fixed and inferred alpha), or None to keep alpha fixed
    rows : RowAxis, optional, sub-cluster sampler only
        Inside ``shard_map`` with the group rows split over a mesh axis (:class:`jaxclust.dpmm.rows.RowAxis`);
        the kernel then computes what it computes on one device.
    """
    if spec.sampler not in SAMPLERS:
        raise InvalidInputError(f"spec.sampler: expected one of {SAMPLERS}, got {spec.sampler!r}")
    if rows is not None and spec.sampler != "subcluster":
        raise InvalidInputError("rows: only the sub-cluster sampler splits rows over devices")
    moves = [  # (index of the move's key, move)
        (
            2 + r,
            functools.partial(splitmerge.split_merge, family=family, n_steps=spec.kmeans_steps, rows=rows),
        )
        for r in range(spec.split_merge)
    ]
    alpha = functools.partial(_state.alpha_move, family=family, alpha_prior=alpha_prior, rows=rows)
    if spec.sampler == "subcluster":
        local = functools.partial(
            subcluster.restricted_move, family=family, constrained=spec.constrained, rows=rows
        )
        moves += [(0, local), (1, alpha)]
    elif spec.gibbs:
        moves.append((0, functools.partial(gibbs.sweep, family=family, alpha_prior=alpha_prior)))
    else:  # split-merge alone, then alpha on a refreshed state (an iteration's end, as the sweep's)
        moves += [
            (1, lambda key, state, data: alpha(key, _state.refreshed(state.z, state, data, family), data))
        ]
    unconstrained = spec.sampler == "subcluster" and not spec.constrained

    def kernel(key, state: _state.GibbsState, data: _state.GroupData):
        if unconstrained:
            data = _without_partners(data)
        keys = jax.random.split(key, 2 + spec.split_merge)
        info = _state.no_moves()
        for k, move in moves:
            state, done = move(keys[k], state, data)
            info = _state.combine(info, done)
        return state, info

    return kernel
