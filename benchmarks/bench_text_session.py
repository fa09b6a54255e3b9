"""A text session as ``jaxclust annotate`` runs it: the first question, cold and with the compilation cache, and
the seconds per answer, on real texts; the sampler ``"auto"`` picks against the collapsed sampler, in one run.

    python benchmarks/bench_text_session.py --n 2000 --questions 20

The texts are ``--n`` BBC news articles drawn with ``--seed`` from ``../shared/data`` (``--data``), one per line.
The first question is timed as a user meets it: ``echo q | jaxclust annotate texts.txt`` in a fresh process with
an empty ``JAXCLUST_CACHE_DIR`` (cold: featurising, compiling and the first fit), then again with that cache
(warm). The answers are timed in this process: the session ``jaxclust annotate`` builds (its model, the explore
strategy, one refit per answer) answered from the topics, with the model's sampler left to ``"auto"`` and set
to ``"collapsed"``; the first ``--warmup`` answers (the fits that compile) are left out of the median.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_active_question import answer_seconds


def first_question(texts_file: Path, cache: str, work: str) -> dict:
    """Wall seconds of ``jaxclust annotate`` up to its first question (answered ``q``), and its own
    "Model ready" time."""
    env = dict(os.environ, JAXCLUST_CACHE_DIR=cache)
    store = Path(work) / f"s{time.monotonic_ns()}.sqlite"
    cmd = [sys.executable, "-m", "jaxclust.apps.cli", "annotate", str(texts_file), "--store", str(store)]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, input="q\n", capture_output=True, text=True, env=env, cwd=work, check=False)
    wall = time.perf_counter() - t0
    ready = re.search(r"Model ready \(([0-9.]+) s\)", res.stdout)
    if ready is None:
        raise SystemExit(f"jaxclust annotate failed:\n{res.stdout}\n{res.stderr}")
    return {"wall_s": round(wall, 2), "model_ready_s": float(ready.group(1))}


def text_session(X: np.ndarray, y: np.ndarray, sampler: str, n_questions: int) -> tuple[list[float], float]:
    """Seconds of each answer's refit and next question in the annotate session, and the ARI of its labels."""
    from sklearn.metrics import adjusted_rand_score

    from jaxclust.active import GoldOracle
    from jaxclust.apps.opening import default_model, make_learner

    model = default_model(random_state=0)
    model.set_params(sampler=sampler)
    oracle = GoldOracle(y)
    learner = make_learner(model, oracle, None, random_state=0, stop_entropy=None)
    times = answer_seconds(learner, oracle, X, n_questions)
    return times, float(adjusted_rand_score(y, learner.labels_))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("JAXCLUST_DATA", "../shared/data")))
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    from jaxclust.datasets import load_bbc_news
    from jaxclust.text import text_featurizer

    data = load_bbc_news(data_dir=args.data)
    pick = np.random.default_rng(args.seed).choice(len(data.texts), args.n, replace=False)
    texts = [" ".join(data.texts[i].split()) for i in pick]
    y = np.asarray(data.labels["topic"])[pick]
    out = {
        "n": args.n,
        "questions": args.questions,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
    }
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as cache:
        texts_file = Path(work) / "texts.txt"
        texts_file.write_text("\n".join(texts) + "\n", encoding="utf-8")
        out["first_question_cold"] = first_question(texts_file, cache, work)
        out["first_question_warm_cache"] = first_question(texts_file, cache, work)
    print(
        "first question:",
        json.dumps(out["first_question_cold"]),
        "cold;",
        json.dumps(out["first_question_warm_cache"]),
        "with the cache",
        flush=True,
    )
    X = np.asarray(text_featurizer().fit_transform(texts))
    for sampler in ("auto", "collapsed"):
        t0 = time.perf_counter()
        times, ari = text_session(X, y, sampler, args.questions)
        warm = times[args.warmup :]
        out[sampler] = {
            "median_s_per_answer": float(np.median(warm)),
            "max_s_per_answer": float(np.max(warm)),
            "first_answers_s": [round(v, 2) for v in times[: args.warmup]],
            "ari": ari,
            "total_s": time.perf_counter() - t0,
        }
        print(f"sampler={sampler!r}:", json.dumps(out[sampler]), flush=True)
    ratio = out["collapsed"]["median_s_per_answer"] / out["auto"]["median_s_per_answer"]
    out["ratio_collapsed_over_auto"] = ratio
    print(
        f"median s per answer: {out['auto']['median_s_per_answer']:.2f} (auto) vs "
        f"{out['collapsed']['median_s_per_answer']:.2f} (collapsed): {ratio:.2f}x"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
