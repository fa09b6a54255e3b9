"""Benchmark: one active-learning round at n = 20,000, D = 64 on this machine: how long a person waits.

A round of the batch method is: refit the DPMM warm-started from the previous chains under the new answers, then
pick the next questions by link entropy over the samples (exact top-k, :func:`jaxclust.active.top_entropy_pairs`).
This script times, on 20 separated blobs (n, D as given):

* the first fit (``DPMM()`` defaults: the sub-cluster sampler at this size; compile included, then again
  compiled),
* a warm refit after 10 new answers (``init_labels`` = the previous chains' final states, 10 burn-in
  iterations, the default samples),
* the selection of the next 10 questions from the refit's samples,
* and a whole ``ActiveLearner`` session of 30 questions in batches of 10 (seconds per question).

Usage::

    python benchmarks/bench_active_round.py                  # n = 20,000, D = 64
    python benchmarks/bench_active_round.py --n 5000 --d 16   # smaller

Prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=64)
    args = ap.parse_args()
    import jax
    from sklearn.datasets import make_blobs

    from jaxclust import DPMM, Constraints
    from jaxclust.active import ActiveLearner, GoldOracle, top_entropy_pairs

    print(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.platform(),
                      "cpus": os.cpu_count(), "device": str(jax.devices()[0]), "load": os.getloadavg()}))  # fmt: skip
    X, y = make_blobs(n_samples=args.n, n_features=args.d, centers=20, cluster_std=2.0, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    rng = np.random.default_rng(0)

    def timed(fn):
        t = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - t

    first, t_first = timed(lambda: DPMM(random_state=0).fit(X))
    _, t_again = timed(lambda: DPMM(random_state=0).fit(X))
    pairs = rng.integers(0, args.n, size=(10, 2))
    c = Constraints.from_answers(
        args.n, [(int(i), int(j), "must" if y[i] == y[j] else "cannot") for i, j in pairs if i != j]
    )
    warm, t_warm = timed(lambda: DPMM(random_state=1).fit(X, c, init_labels=first.final_labels_, n_burnin=10))
    _, t_warm2 = timed(lambda: DPMM(random_state=2).fit(X, c, init_labels=warm.final_labels_, n_burnin=10))
    top, t_select = timed(lambda: top_entropy_pairs(warm.samples_, 10, c))
    print(json.dumps({"n": args.n, "d": args.d, "settings": first.settings_, "first_fit_s": t_first,
                      "first_fit_compiled_s": t_again, "warm_refit_s": t_warm, "warm_refit_again_s": t_warm2,
                      "select_10_s": t_select, "samples": int(warm.samples_.shape[0]),
                      "round_s": t_warm2 + t_select}))  # fmt: skip
    learner = ActiveLearner(
        DPMM(random_state=0), GoldOracle(y), strategy="batch", batch_size=10, progress=False
    )
    _, t_session = timed(lambda: learner.run(X, 30, eval_labels=y))
    print(json.dumps({"session_30_questions_s": t_session, "per_question_s": t_session / 30,
                      "v_beta": learner.history_[-1]["v_beta"]}))  # fmt: skip


if __name__ == "__main__":
    main()
