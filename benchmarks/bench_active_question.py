"""Benchmark: seconds per question of an active session once compiled, at n items.

The default session (``ActiveLearner(DPMM(...))``: the explore strategy, answers joining components into
classes, one refit per answer) against the previous default (the batch method with 5 questions per refit,
answers on pairs), both with the ``jaxclust annotate`` model (4 chains, 50 burn-in, 10 samples 3 apart; warm
refits of 10 burn-in sweeps), on 20 Gaussian blobs in 16 dimensions answered by a gold oracle. The first
``--warmup`` answers (the fits that compile) are left out of the median.

    python benchmarks/bench_active_question.py --n 5000 --questions 20
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def session_seconds(X, y, strategy: str, propagation: str, batch_size: int, n_questions: int) -> list[float]:
    from jaxclust import DPMM
    from jaxclust.active import ActiveLearner, GoldOracle

    oracle = GoldOracle(y)
    model = DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3, random_state=0)
    learner = ActiveLearner(
        model, oracle, strategy=strategy, batch_size=batch_size, propagation=propagation, progress=False
    )
    session = learner.iter_questions(X, n_questions)
    times, t = [], time.perf_counter()
    try:
        pair = next(session)
        while True:
            pair = session.send(oracle.answer(*pair))
            now = time.perf_counter()
            times.append(now - t)
            t = now
    except StopIteration:
        pass
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    centres = rng.normal(0.0, 4.0, size=(20, 16))
    y = rng.integers(0, 20, args.n)
    X = centres[y] + rng.normal(size=(args.n, 16))
    out = {"n": args.n, "d": 16, "questions": args.questions}
    for name, strategy, propagation, batch in (
        ("default (explore, classes, 1 per refit)", "explore", "classes", 1),
        ("previous default (batch, pairs, 5 per refit)", "batch", "pairs", 5),
    ):
        t0 = time.perf_counter()
        times = session_seconds(X, y, strategy, propagation, batch, args.questions)
        warm = times[args.warmup :]
        out[name] = {
            "median_s_per_question": float(np.median(warm)),
            "max_s_per_question": float(np.max(warm)),
            "first_questions_s": [round(v, 2) for v in times[: args.warmup]],
            "total_s": time.perf_counter() - t0,
        }
        print(name, json.dumps(out[name]), flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
