"""Benchmark: what one iteration of ``NestedDPMM`` costs, move by move, beside a short warm fit.

Separated Gaussian blobs (``--n`` items, ``--d`` columns, ``--classes`` classes of two blobs each), ``--answers``
random correct answers, ``--chains`` chains in ``--slots`` component slots, started from the true components
and classes (the state a warm refit starts from). Each move is one ``jax.jit`` of ``jax.vmap`` over the chains,
timed over ``--repeats`` calls after a compiling one; then a warm ``NestedDPMM.fit`` of 10 iterations from the
same start (the moves, the per-sweep statistics and the host work of a refit), at each ``--fit-proposals``.
Prints JSON: milliseconds per call (CPU time of the process and wall time) and each move's share of the moves'
sum (timed alone, they need not add up to the fit's iteration), and the seconds XLA takes to compile each move
and the fit's block of sweeps (``compile_s``: what a cold first fit waits for, once per shape; a move compiled
alone closes over the data as a constant, so the block's figure is the one to read). The item sweep is the one
the fit runs (given sampled component parameters); the collapsed one is timed beside it.

    python benchmarks/bench_nested_moves.py --n 1500 --d 8 --slots 16
    python benchmarks/bench_nested_moves.py --n 1500 --d 16 --classes 10 --slots 32 --fit-proposals 0 5 20
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _compile_seconds(fn, *args) -> float:
    """Seconds to lower and compile the jitted ``fn`` for ``args`` (nothing cached: a fresh compile)."""
    t = time.perf_counter()
    fn.lower(*args).compile()
    return round(time.perf_counter() - t, 2)


def _timed(fn, repeats: int) -> dict:
    import jax

    jax.block_until_ready(fn())  # compile
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(repeats):
        out = fn()
    jax.block_until_ready(out)
    return {
        "cpu_ms": round((time.process_time() - cpu) / repeats * 1000, 2),
        "wall_ms": round((time.perf_counter() - wall) / repeats * 1000, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--answers", type=int, default=60)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--proposals", type=int, default=20, help="n_split_merge: proposals per kind")
    ap.add_argument("--fit-proposals", type=int, nargs="*", help="n_split_merge values for the warm fit")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import jax
    import jax.numpy as jnp

    from jaxclust import Constraints, NestedDPMM
    from jaxclust.dpmm import nested as N
    from jaxclust.dpmm import nested_params as NP
    from jaxclust.dpmm import nested_splitmerge as MH
    from jaxclust.dpmm.nested_model import _run_block

    rng = np.random.default_rng(args.seed)
    n_blobs = 2 * args.classes
    blob = rng.integers(0, n_blobs, args.n)
    X = rng.normal(scale=6.0, size=(n_blobs, args.d))[blob] + rng.normal(size=(args.n, args.d))
    cls = blob // 2
    pairs = rng.choice(args.n, size=(args.answers, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = cls[pairs[:, 0]] == cls[pairs[:, 1]]
    cons = Constraints(args.n, must_link=pairs[same].tolist(), cannot_link=pairs[~same].tolist())
    Xs = (X - X.mean(0)) / X.std(0)
    data = N.pad_answers(N.prepare(Xs, cons), 128)
    D, K, C = args.d, args.slots, args.slots
    prior = N.NestedPrior(
        jnp.zeros(D, jnp.float32), jnp.float32(0.05), jnp.float32(2.0), jnp.full(D, 0.5, jnp.float32)
    )
    owner = np.full(K, -1)
    owner[np.arange(n_blobs)] = np.arange(n_blobs) // 2
    z = jnp.asarray(np.tile(blob, (args.chains, 1)), jnp.int32)
    state = jax.vmap(lambda zc: N.init(zc, jnp.asarray(owner), data, K))(z)
    keys = jax.random.split(jax.random.key(args.seed), args.chains)
    P = args.proposals
    moves = {
        "item sweep": lambda k, s: NP.item_sweep_given_params(k, s, data, prior, 1.0, 10.0, C),
        "collapsed item sweep": lambda k, s: N.item_sweep(k, s, data, prior, 1.0, 10.0, C),
        "component sweep": lambda k, s: N.component_sweep(k, s, data, prior, 1.0, 10.0, C),
        "class split-merge": lambda k, s: MH.class_split_merge(k, s, data, prior, 1.0, 10.0, C, P),
        "component split-merge": lambda k, s: MH.component_split_merge(k, s, data, prior, 1.0, 10.0, C, P),
        "group moves": lambda k, s: MH.group_sweep(k, s, data, prior, 1.0, 10.0, C, P),
    }
    out: dict = {"setup": vars(args), "moves": {}, "compile_s": {}}
    for name, move in moves.items():
        fn = jax.jit(jax.vmap(lambda k, s, move=move: move(k, s)[0]))
        out["compile_s"][name] = _compile_seconds(fn, keys, state)
        out["moves"][name] = _timed(lambda fn=fn: fn(keys, state), args.repeats)
    run = [m for name, m in out["moves"].items() if name != "collapsed item sweep"]  # the moves a fit runs
    total = sum(m["cpu_ms"] for m in run)
    for m in run:
        m["share"] = round(m["cpu_ms"] / total, 3)
    block_keys = jax.vmap(lambda k: jax.random.split(k, 10))(keys)
    out["compile_s"]["block of sweeps"] = _compile_seconds(
        _run_block, state, block_keys, data, prior, 1.0, 10.0, jnp.int32(P)
    )
    # the moves timed alone do not add up to a fit (one compiled program of all five): time the fit too, at each
    # number of proposals asked for
    out["warm_fit_of_10"] = {}
    for p in args.fit_proposals or [P]:
        model = NestedDPMM(
            n_chains=args.chains, n_burnin=9, n_samples=1, thin=1, n_split_merge=p, random_state=0
        )
        out["warm_fit_of_10"][f"n_split_merge={p}"] = _timed(
            lambda model=model: (
                model.fit(X, constraints=cons, init_labels=cls, init_components=blob).samples_
            ),
            args.repeats,
        )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
