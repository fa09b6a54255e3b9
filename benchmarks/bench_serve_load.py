"""Load on the web annotator: simulated annotators answering through the JSON API of ``jaxclust serve`` on this
machine (127.0.0.1) with no pause between answers, for a fixed time each.

For 1, 5 and 20 annotators it reports the answers per second, the time from sending an answer to holding the next
question (p50, p95, max), the model fits done meanwhile, and that every acknowledged answer is in the store exactly
once. There is no peer to time against (no labelling tool chooses its questions with a model); the figures go to
benchmarks/RESULTS.md with the machine and date.

    python benchmarks/bench_serve_load.py [--seconds 60] [--annotators 1 5 20] [--out results/serve_load.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np

from jaxclust.active import AnswerStore
from jaxclust.apps.serve_load import load_test, start_server, stop_server


def items(folder: Path, n_clusters: int = 16, n_per: int = 125, seed: int = 0) -> np.ndarray:
    """``n_clusters`` 2-D blobs on a grid (2,000 items by default: a perfect team needs more than 2,000 answers to
    settle every pair, so nobody runs out of questions in a minute) as a CSV of numbers; returns the gold labels
    the simulated annotators answer from."""
    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(n_clusters)))
    centres = 6.0 * np.array([(a, b) for a in range(side) for b in range(side)][:n_clusters], dtype=float)
    y = np.repeat(np.arange(n_clusters), n_per)
    X = centres[y] + rng.normal(size=(len(y), 2))
    with open(folder / "items.csv", "w", encoding="utf-8") as f:
        f.write("name,f1,f2\n")
        f.writelines(f"item{k},{a:.4f},{b:.4f}\n" for k, (a, b) in enumerate(X))
    return y


def one(n_annotators: int, seconds: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        gold = items(folder)
        proc, url = start_server(
            folder / "items.csv", folder / "answers.sqlite", "--double", "0.2", "--no-compilation-cache"
        )
        try:
            time.sleep(1.0)
            result = load_test(
                url, lambda i, j: "must" if gold[i] == gold[j] else "cannot", n_annotators, seconds
            )
            status = json.loads(urllib.request.urlopen(url + "api/status").read())
        finally:
            stop_server(proc)
        with AnswerStore(folder / "answers.sqlite", shared=True) as store:
            kept = Counter((r["annotator"], r["i"], r["j"], r["answer"]) for r in store.records)
    acked = Counter(result.acknowledged)
    return {
        "annotators": n_annotators,
        **result.summary(),
        "n_fits": status["n_fits"],
        "items": len(gold),
        "store_matches_acknowledged": kept == acked and max(acked.values(), default=1) == 1,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--annotators", type=int, nargs="+", default=[1, 5, 20])
    ap.add_argument("--out", type=Path, default=Path("results/serve_load.json"))
    args = ap.parse_args(argv)
    rows = []
    for n in args.annotators:
        row = one(n, args.seconds)
        rows.append(row)
        print(
            f"{n:3d} annotators: {row['answers']:5d} answers ({row['answers_per_second']:.1f}/s), next question "
            f"p50 {row['p50_ms']:.0f} ms, p95 {row['p95_ms']:.0f} ms, max {row['max_ms']:.0f} ms; "
            f"{row['n_fits']} fits; store == acknowledged: {row['store_matches_acknowledged']}",
            flush=True,
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "machine": platform.platform(),
        "python": sys.version.split()[0],
        "date": time.strftime("%Y-%m-%d"),
    }
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
