"""Benchmark: seconds per question of an active session once compiled, at n items.

The default session (``ActiveLearner(DPMM(...))``: the explore strategy, answers joining components into
classes, one refit per answer) against the previous default (the batch method with 5 questions per refit,
answers on pairs), both with the ``jaxclust annotate`` model (4 chains, 50 burn-in, 10 samples 3 apart; warm
refits of 10 burn-in sweeps), on 20 Gaussian blobs in 16 dimensions answered by a gold oracle. The first
``--warmup`` answers (the fits that compile) are left out of the median.

    python benchmarks/bench_active_question.py --n 5000 --questions 20

``--refits``: instead, ``ActiveLearner(DPMM())`` as a user writes it (the DPMM's own defaults), with the session's
warm refits (``warm_thin=1``: the model's samples on consecutive sweeps) against the earlier ones (``warm_thin=5``,
the collapsed sampler's own spacing), and the ratio of their medians.

    python benchmarks/bench_active_question.py --n 1500 --questions 20 --refits

``--nested``: instead, the two models of ``jaxclust annotate --model`` (``dpmm``, the default, and ``nested``,
:class:`~jaxclust.NestedDPMM`), each as the command builds it, and the ratio of their medians.

    python benchmarks/bench_active_question.py --n 500 --questions 20 --nested
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def session_seconds(
    X,
    y,
    strategy: str,
    propagation: str | None,
    batch_size: int,
    n_questions: int,
    warm_thin: int | None = None,
    model_name: str | None = None,
) -> list[float]:
    """Seconds of each answer's refit and next question; ``warm_thin``: ``ActiveLearner(DPMM(random_state=0),
    warm_thin=...)``; ``model_name``: ``jaxclust annotate --model``'s model; else the annotate model, all with the
    learner's defaults."""
    from jaxclust import DPMM
    from jaxclust.active import ActiveLearner, GoldOracle
    from jaxclust.apps.opening import default_model

    oracle = GoldOracle(y)
    if model_name is not None:
        model, kw = default_model(0, model=model_name), {}
    elif warm_thin is None:
        model, kw = DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3, random_state=0), {}
    else:
        model, kw = DPMM(random_state=0), {"warm_thin": warm_thin}
    learner = ActiveLearner(
        model, oracle, strategy=strategy, batch_size=batch_size, propagation=propagation, progress=False, **kw
    )
    return answer_seconds(learner, oracle, X, n_questions)


def answer_seconds(learner, oracle, X, n_questions: int) -> list[float]:
    """Seconds of each answer's refit and next question in ``learner``'s session on ``X``, answered by
    ``oracle``."""
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
    ap.add_argument("--refits", action="store_true", help="DPMM() with warm_thin=1 against warm_thin=5")
    ap.add_argument("--nested", action="store_true", help="annotate's --model dpmm against --model nested")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    centres = rng.normal(0.0, 4.0, size=(20, 16))
    y = rng.integers(0, 20, args.n)
    X = centres[y] + rng.normal(size=(args.n, 16))
    out = {"n": args.n, "d": 16, "questions": args.questions}
    if args.nested:
        runs = [
            ("--model dpmm (default)", "explore", None, 1, None, "dpmm"),
            ("--model nested", "explore", None, 1, None, "nested"),
        ]
    elif args.refits:
        runs = [
            ("DPMM(), warm_thin=1 (default)", "explore", "classes", 1, 1, None),
            ("DPMM(), warm_thin=5 (before)", "explore", "classes", 1, 5, None),
        ]
    else:
        runs = [
            ("default (explore, classes, 1 per refit)", "explore", "classes", 1, None, None),
            ("previous default (batch, pairs, 5 per refit)", "batch", "pairs", 5, None, None),
        ]
    for name, strategy, propagation, batch, thin, model_name in runs:
        t0 = time.perf_counter()
        times = session_seconds(X, y, strategy, propagation, batch, args.questions, thin, model_name)
        warm = times[args.warmup :]
        out[name] = {
            "median_s_per_question": float(np.median(warm)),
            "max_s_per_question": float(np.max(warm)),
            "first_questions_s": [round(v, 2) for v in times[: args.warmup]],
            "total_s": time.perf_counter() - t0,
        }
        print(name, json.dumps(out[name]), flush=True)
    if args.refits:
        a, b = (out[r[0]]["median_s_per_question"] for r in runs)
        out["ratio_before_over_default"] = b / a
        print(f"median s per question: {a:.3f} (warm_thin=1) vs {b:.3f} (warm_thin=5): {b / a:.2f}x")
    if args.nested:
        a, b = (out[r[0]]["median_s_per_question"] for r in runs)
        out["ratio_nested_over_dpmm"] = b / a
        print(f"median s per question: {a:.3f} (dpmm) vs {b:.3f} (nested): {b / a:.2f}x")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
