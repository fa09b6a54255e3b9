"""The kernel contract: every move is ``(key, state, data) -> (state, info)``, leaves a state whose counts, slots
and log joint are those of its labels, and reports what it proposed, accepted and lacked in its info;
``build_kernel`` composes the moves, summing their infos."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclust import Constraints
from jaxclust.dpmm import Kernel, MoveInfo, build_kernel, gibbs, splitmerge, subcluster
from jaxclust.dpmm import state as _state
from jaxclust.dpmm.problem import prepare_problem, start_labels

RNG = np.random.default_rng(4)
X = np.concatenate([RNG.normal(c, 0.3, size=(5, 2)) for c in (-4.0, 0.0, 4.0)])
C = Constraints(15, must_link=[(0, 1)], cannot_link=[(0, 5), (6, 11)]).with_answer(
    2, 7, "cannot", error_rate=0.1
)


def _setup(sampler, capacity=8, labels=None):
    problem = prepare_problem(X, C, None, sampler=sampler)
    n = len(X)
    z = start_labels(np.zeros((1, n)) if labels is None else labels[None], C, n)[0]
    state = _state.init(jnp.asarray(z), problem.data, problem.family, 1.0, capacity)
    return problem, state


def _assert_consistent(state, data, family):
    """Counts, slots and log joint recomputed from the labels equal the state's."""
    counts, slots = _state.refresh(state.z, data, family, state.counts.shape[0])
    np.testing.assert_allclose(np.asarray(state.counts), np.asarray(counts))
    for a, b in zip(jax.tree.leaves(state.slots), jax.tree.leaves(slots), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)
    lj = _state.log_joint(counts, slots, state.alpha, data, family, state.z)
    np.testing.assert_allclose(float(state.log_joint), float(lj), rtol=1e-5, atol=1e-3)


def _moves(problem, alpha_prior):
    family, spec = problem.family, problem.spec
    return {
        "split_merge": functools.partial(splitmerge.split_merge, family=family),
        "sweep": functools.partial(gibbs.sweep, family=family, alpha_prior=alpha_prior),
        "restricted": functools.partial(
            subcluster.restricted_move, family=family, constrained=spec.constrained
        ),
        "alpha": functools.partial(_state.alpha_move, family=family, alpha_prior=alpha_prior),
    }


@pytest.mark.parametrize("name", ["split_merge", "sweep", "restricted", "alpha"])
def test_every_move_returns_a_consistent_state_and_its_info(name):
    """Each move alone, ten times from 3 components that mix the 3 clusters (so the moves move items): the
    state it returns is that of its labels (the sub-cluster step used to return labels alone, leaving its caller
    to finish the state), it obeys the cannot-links, and its info is a MoveInfo whose counts are possible."""
    sampler = "subcluster" if name == "restricted" else "collapsed"
    problem, state = _setup(sampler, labels=np.arange(15) % 3)
    start = np.asarray(state.z)
    move = jax.jit(_moves(problem, _state.alpha_prior_arrays((1.0, 1.0), jnp.float32))[name])
    keys = jax.random.split(jax.random.key(0), 10)
    for key in keys:
        state, info = move(key, state, problem.data)
        assert isinstance(info, MoveInfo)
        _assert_consistent(state, problem.data, problem.family)
        labels = np.asarray(state.z)[np.asarray(problem.data.group_of)]
        assert labels[0] == labels[1] and labels[0] != labels[5] and labels[6] != labels[11]
        assert 0 <= int(info.accepted_splits) <= int(info.proposed_splits)
        assert 0 <= int(info.accepted_merges) <= int(info.proposed_merges)
        if name != "split_merge":
            assert int(info.proposed_splits) == int(info.proposed_merges) == 0
        assert not bool(info.overflow)
    assert (name == "alpha") == np.array_equal(np.asarray(state.z), start)  # every other move moved items


def test_build_kernel_is_the_composition_of_its_moves():
    """The sub-cluster kernel with two split-merge rounds equals the moves applied by hand with the documented
    keys (local, alpha, then one per round), and its info is the sum of theirs."""
    problem, state = _setup("subcluster", labels=np.repeat([0, 1, 2], 5))
    ap = _state.alpha_prior_arrays((2.0, 1.0), jnp.float32)
    spec = Kernel("subcluster", split_merge=2, constrained=True)
    kernel = jax.jit(build_kernel(spec, problem.family, ap))
    moves = _moves(problem, ap)
    key = jax.random.key(3)
    got, info = kernel(key, state, problem.data)
    k_local, k_alpha, *k_sm = jax.random.split(key, 4)
    want, total = state, _state.no_moves()
    for k, move in (
        (k_sm[0], "split_merge"),
        (k_sm[1], "split_merge"),
        (k_local, "restricted"),
        (k_alpha, "alpha"),
    ):
        want, done = moves[move](k, want, problem.data)
        total = _state.combine(total, done)
    np.testing.assert_array_equal(np.asarray(got.z), np.asarray(want.z))
    np.testing.assert_array_equal(np.asarray(got.counts), np.asarray(want.counts))
    # one compiled program against moves run one by one: floats may differ by rounding
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)
    for a, b in zip(info, total, strict=True):
        assert int(a) == int(b)
    assert int(info.proposed_splits) + int(info.proposed_merges) > 0


def test_info_says_overflow_when_a_new_component_has_no_slot():
    """Every slot occupied (3 components in 3 slots) and a group that belongs nowhere: the sweep reports
    ``overflow`` and keeps the labels feasible; with a free slot it does not."""
    far = X.copy()
    far[14] = [40.0, 40.0]  # its own component under any sensible posterior
    problem = prepare_problem(far, C, None, sampler="collapsed")
    labels = start_labels(np.repeat([0, 1, 2], 5)[None], C, len(X))[0]
    seen = {}
    for capacity in (int(labels.max()) + 1, int(labels.max()) + 3):
        state = _state.init(jnp.asarray(labels), problem.data, problem.family, 1.0, capacity)
        sweep = jax.jit(functools.partial(gibbs.sweep, family=problem.family))
        flags = [
            bool(sweep(k, state, problem.data)[1].overflow) for k in jax.random.split(jax.random.key(1), 5)
        ]
        seen[capacity] = any(flags)
    assert seen == {int(labels.max()) + 1: True, int(labels.max()) + 3: False}


def test_combine_adds_counts_and_ors_overflow():
    a = MoveInfo(*(jnp.int32(v) for v in (3, 1, 2, 0)), jnp.asarray(False))
    b = MoveInfo(*(jnp.int32(v) for v in (1, 1, 4, 2)), jnp.asarray(True))
    c = _state.combine(a, b)
    assert [int(v) for v in c[:4]] == [4, 2, 6, 2] and bool(c.overflow)
    assert not bool(_state.combine(a, _state.no_moves()).overflow)
