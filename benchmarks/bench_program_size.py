"""Benchmark: how big the sampler's compiled block is, and how long XLA takes to compile it.

The block (``jaxclust.dpmm.chains._block``: ``thin`` iterations of every chain) is what a first fit compiles.
For each sampler this lowers and compiles it for the workload of the first-fit benchmark (20 blobs, N = 20,000,
D = 32, the sampler's default chains and thinning, 32 component slots; ``--n``/``--d`` change it) and prints
JSON: the number of HLO instructions of the optimised program, of fusions (XLA's fused kernels), of scatters,
gathers, sorts and while loops, and the seconds to lower and to compile. Counts are of the program XLA runs
after its optimisations, compiled with the options a fit uses (``chains.cpu_compiler_options``).
``--fusion-emitters`` compiles the sub-cluster block with XLA's MLIR fusion emitters instead of the classic loop
emitters a fit uses there. The classic emitters turn each scatter into a loop of its own, so counts under the two
are not comparable; the compile seconds are.

    python benchmarks/bench_program_size.py
    python benchmarks/bench_program_size.py --n 2000 --d 35 --sampler collapsed
    python benchmarks/bench_program_size.py --n 2000 --d 35 --sampler collapsed --chains 64
    python benchmarks/bench_program_size.py --sampler subcluster --fusion-emitters
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter

import numpy as np

OPS = ("fusion", "scatter", "gather", "sort", "while", "custom-call")


def program_counts(hlo: str) -> dict[str, int]:
    """Counts of the instructions of an optimised HLO module's text (one instruction per ``name = ...`` line)."""
    ops: Counter = Counter()
    n = 0
    for line in hlo.splitlines():
        # "name = type op(...)"; a tuple type holds spaces: "(s32[], f32[4]{0}) while(...)"
        m = re.match(r"\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?:\(.*?\)|\S+)\s+([\w\-]+)\(", line)
        if m:
            n += 1
            ops[m.group(1)] += 1
    return {"instructions": n, **{op: ops[op] for op in OPS}}


def measure(
    sampler: str, n: int, d: int, slots: int = 32, fusion_emitters: bool = False, n_chains: int | None = None
) -> dict:
    import jax
    import jax.numpy as jnp

    from jaxclust.dpmm import chains
    from jaxclust.dpmm import state as _state
    from jaxclust.dpmm.kernels import Kernel
    from jaxclust.dpmm.model import SAMPLER_DEFAULTS, prepare_data

    rng = np.random.default_rng(0)
    centres = rng.normal(0.0, 4.0, size=(20, d))
    X = centres[rng.integers(0, 20, n)] + rng.normal(size=(n, d))
    prepared = prepare_data(X, None)
    family = prepared.family.astype(jnp.float32)
    data = _state.prepare(prepared.X, None, family, jnp.float32, features=sampler == "subcluster")
    settings = SAMPLER_DEFAULTS[sampler]
    C, thin = n_chains or settings["n_chains"], settings["thin"]
    states = chains._init_states(jnp.zeros((C, n), jnp.int32), data, family, jnp.float32(1.0), capacity=slots)
    alpha_prior = (jnp.float32(1.0), jnp.float32(1.0), jnp.asarray(False))
    spec = Kernel(sampler, split_merge=1, constrained=False)
    options = chains.cpu_compiler_options(sampler) if jax.default_backend() == "cpu" else None
    if options and fusion_emitters:
        options = {k: v for k, v in options.items() if k not in chains._CPU_SUBCLUSTER_OPTIONS}
    fn = jax.jit(chains._block, static_argnames=("n_sweeps", "spec", "rows"), compiler_options=options)
    t0 = time.perf_counter()
    lowered = fn.lower(
        jax.random.split(jax.random.key(0), C),
        states,
        data,
        family,
        alpha_prior,
        jnp.asarray(thin),
        jnp.asarray(0),
        n_sweeps=thin,
        spec=spec,
    )
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    return {
        "sampler": sampler,
        "n": n,
        "d": d,
        "chains": C,
        "sweeps_per_block": thin,
        "slots": slots,
        **program_counts(compiled.as_text()),
        "lower_seconds": round(t1 - t0, 2),
        "compile_seconds": round(t2 - t1, 2),
        "backend": jax.default_backend(),
        "compiler_options": options,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--sampler", nargs="+", default=["subcluster", "collapsed"])
    ap.add_argument("--chains", type=int, default=None, help="chains (default: the sampler's default)")
    ap.add_argument(
        "--fusion-emitters", action="store_true", help="XLA's MLIR fusion emitters for every block"
    )
    args = ap.parse_args()
    rows = [
        measure(s, args.n, args.d, fusion_emitters=args.fusion_emitters, n_chains=args.chains)
        for s in args.sampler
    ]
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
