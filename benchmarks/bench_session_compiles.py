"""Benchmark: how many programs XLA compiles over an active session, and when.

A default ``ActiveLearner`` session (the ``jaxclust annotate`` model: 4 chains, 50 burn-in, 10 samples 3 apart;
the explore strategy, classes propagation) on 20 Gaussian blobs in 16 dimensions, answered by a gold oracle.
Every backend compile is counted with ``jax.monitoring`` and attributed to the question it happened before; the
sampler's own compiles are the traces of its block function. Prints JSON: compiles per question, total, and how
many happened after the first question.

    python benchmarks/bench_session_compiles.py --n 2000 --questions 100

``--nested``: the model of ``jaxclust annotate --model nested`` (:class:`~jaxclust.NestedDPMM`, 4 chains, 100
burn-in, 10 samples), its sampler's compiles the programs of its block of sweeps.

    python benchmarks/bench_session_compiles.py --n 500 --questions 100 --nested
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--nested", action="store_true", help="annotate's --model nested (NestedDPMM)")
    args = ap.parse_args()

    import jax

    from jaxclust.active import ActiveLearner, GoldOracle
    from jaxclust.apps.opening import default_model
    from jaxclust.dpmm import chains, nested_model

    def block_traces() -> int:
        if args.nested:  # the compiled programs of its block of sweeps
            return nested_model._run_block._cache_size()
        return chains.TRACE_COUNTER["block"]

    compiles: list[tuple[int, float]] = []
    asked = [0]

    def on_event(event: str, seconds: float, **kwargs) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append((asked[0], seconds))

    jax.monitoring.register_event_duration_secs_listener(on_event)
    rng = np.random.default_rng(0)
    centres = rng.normal(0.0, 4.0, size=(20, 16))
    y = rng.integers(0, 20, args.n)
    X = centres[y] + rng.normal(size=(args.n, 16))
    oracle = GoldOracle(y)
    model = default_model(random_state=0, model="nested" if args.nested else "dpmm")
    learner = ActiveLearner(model, oracle, progress=False)
    traces: list[int] = []
    stamps: list[float] = []
    degree = np.zeros(args.n, int)
    t0 = time.perf_counter()
    session = learner.iter_questions(X, args.questions)
    try:
        pair = next(session)
        while True:
            asked[0] += 1
            traces.append(block_traces())
            stamps.append(time.perf_counter())
            degree[list(pair)] += 1
            pair = session.send(oracle.answer(*pair))
    except StopIteration:
        pass
    per_question = np.bincount([q for q, _ in compiles], minlength=asked[0] + 1).tolist()
    out = {
        "n": args.n,
        "questions": asked[0],
        "seconds": round(time.perf_counter() - t0, 1),
        "compiles": len(compiles),
        "compile_seconds": round(sum(s for _, s in compiles), 2),
        "compiles_before_the_first_question": per_question[0],
        "compiles_after_the_first_question": len(compiles) - per_question[0],
        "questions_followed_by_a_compile": [q for q, c in enumerate(per_question) if c and q > 0],
        "model": type(model).__name__,
        "most_answers_about_one_item": int(degree.max()),
        "sampler_block_traces": block_traces(),
        "sampler_traces_after_the_first_question": block_traces() - (traces[0] if traces else 0),
        "median_seconds_per_question_last_20": round(float(np.median(np.diff(stamps[-21:]))), 3)
        if len(stamps) > 21
        else None,
        "backend": jax.default_backend(),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
