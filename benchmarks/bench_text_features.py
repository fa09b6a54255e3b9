"""Featurising many texts: WordLlama embeddings (``jaxclust.text.TextEmbedder``, the default text features) against
TF-IDF -> truncated SVD (``jaxclust.text.TextFeaturizer``, scikit-learn, the fallback), on the same real posts, in
one run; prints seconds and the ratio.

    python benchmarks/bench_text_features.py --n 10000 --repeats 3

The texts are the first ``--n`` posts of 20 Newsgroups (by date, headers removed) from ``../shared/data``; the
load of the model (first call) is timed apart from featurising.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import time
from pathlib import Path

from jaxclust.text import TextEmbedder, TextFeaturizer


def posts(data: Path, n: int) -> list[str]:
    with gzip.open(data / "newsgroups20_bydate" / "20news_bydate.jsonl.gz", "rt") as f:
        texts = [json.loads(line)["text"].split("\n\n", 1)[-1] for line in f]
    texts = [t for t in texts if t.strip()]
    if len(texts) < n:
        raise SystemExit(f"only {len(texts)} posts, asked for {n}")
    return texts[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    texts = posts(args.data, args.n)
    chars = sum(len(t) for t in texts)
    cpu = platform.processor() or platform.machine()
    print(f"{len(texts)} posts, {chars / len(texts):.0f} characters on average; {cpu}, {os.cpu_count()} CPUs")
    t0 = time.perf_counter()
    embedder = TextEmbedder()
    embedder.fit(texts[:2])  # loads the model
    load = time.perf_counter() - t0
    ours, peer = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        X = TextEmbedder().fit_transform(texts)
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        Y = TextFeaturizer().fit_transform(texts)
        peer.append(time.perf_counter() - t0)
    best, best_peer = min(ours), min(peer)
    print(f"model load (first call): {load:.2f} s")
    runs, peer_runs = ", ".join(f"{t:.2f}" for t in ours), ", ".join(f"{t:.2f}" for t in peer)
    print(f"TextEmbedder (WordLlama, {X.shape[1]} dims): best of {args.repeats} {best:.2f} s (all: {runs})")
    print(
        f"TextFeaturizer (TF-IDF, SVD, {Y.shape[1]} dims): best of {args.repeats}: {best_peer:.2f} s ({peer_runs})"
    )
    print(f"ratio (embedder / TF-IDF): {best / best_peer:.2f}")


if __name__ == "__main__":
    main()
