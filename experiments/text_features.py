"""Texts by meaning: the default text features (WordLlama embeddings, rows of unit length) against TF-IDF -> SVD ->
standardised, before any question.

Sets (``--data`` is the folder of the labelled data, evaluation only):

* ``bbc_all``: all 2,225 BBC news articles, 5 topics; ``bbc600_s``: 600 of them drawn with seed ``s`` (0, 1, 2);
* ``ng6_s``: 6 of the 20 Newsgroups drawn with seed ``100 + s``, 600 posts of them drawn with the same seed, the
  headers (everything before the first blank line) removed, posts left empty by that left out.

For each set and featuriser: k-means told the true number of classes (scikit-learn, ``n_init=10``, seeds 0 and 1,
mean adjusted Rand index) and ``DPMM(random_state=0)`` with no answer (its ``labels_``), and the seconds to
featurise. Written: ``text_features.json`` and ``text_features.png`` in ``--out``.

    python experiments/text_features.py --data ../shared/data --out experiments/results/text_features
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from jaxclust import DPMM
from jaxclust.text import TextEmbedder, TextFeaturizer

FEATURIZERS = {"wordllama": TextEmbedder, "tfidf": TextFeaturizer}


def load_sets(data: Path) -> dict:
    bbc = [json.loads(line) for line in (data / "bbc_news" / "bbc_news.jsonl").open()]
    texts, y = [d["text"] for d in bbc], np.array([d["label"] for d in bbc])
    sets = {"bbc_all": (texts, y)}
    for s in range(3):
        keep = np.random.default_rng(s).choice(len(texts), 600, replace=False)
        sets[f"bbc600_{s}"] = ([texts[i] for i in keep], y[keep])
    for s in range(3):
        sets[f"ng6_{s}"] = newsgroups_draw(data, 100 + s, 600)
    return sets


def newsgroups_draw(data: Path, seed: int, n: int, n_groups: int = 6) -> tuple[list[str], np.ndarray]:
    """``n`` 20 Newsgroups posts of ``n_groups`` groups drawn with ``seed``, headers removed, empty posts left
    out: (texts, labels)."""
    with gzip.open(data / "newsgroups20_bydate" / "20news_bydate.jsonl.gz", "rt") as f:
        posts = [json.loads(line) for line in f]
    groups = sorted({p["newsgroup"] for p in posts})
    rng = np.random.default_rng(seed)
    chosen = {groups[i] for i in rng.choice(len(groups), n_groups, replace=False)}
    docs = [p for p in posts if p["newsgroup"] in chosen and p["text"].split("\n\n", 1)[-1].strip()]
    keep = rng.choice(len(docs), n, replace=False)
    return [docs[i]["text"].split("\n\n", 1)[-1] for i in keep], np.array([docs[i]["label"] for i in keep])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, default=Path("experiments/results/text_features"))
    ap.add_argument("--no-dpmm", action="store_true", help="k-means only")
    ap.add_argument("--sets", nargs="+", default=None, help="only these sets")
    ap.add_argument("--from-json", nargs="+", default=[], help="rows of earlier runs to add")
    args = ap.parse_args()
    rows = [row for f in args.from_json for row in json.loads(Path(f).read_text())]
    for name, (texts, y) in load_sets(args.data).items():
        if args.sets is not None and name not in args.sets:
            continue
        k = len(set(y.tolist()))
        for feat, make in FEATURIZERS.items():
            t0 = time.perf_counter()
            X = make().fit_transform(texts)
            seconds = time.perf_counter() - t0
            km = [adjusted_rand_score(y, KMeans(k, n_init=10, random_state=s).fit_predict(X)) for s in (0, 1)]
            row = {"set": name, "n": len(texts), "classes": k, "features": feat, "dims": int(X.shape[1])}
            row |= {"featurise_seconds": seconds, "kmeans_ari": float(np.mean(km))}
            if not args.no_dpmm:
                labels = DPMM(random_state=0).fit(X).labels_
                row |= {
                    "dpmm_ari": adjusted_rand_score(y, labels),
                    "dpmm_clusters": len(set(labels.tolist())),
                }
            rows.append(row)
            print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "text_features.json").write_text(json.dumps(rows, indent=1))
    fig = Figure(figsize=(8, 3.5))
    ax = fig.add_subplot()
    names = list(dict.fromkeys(r["set"] for r in rows))
    for off, feat in ((-0.2, "tfidf"), (0.2, "wordllama")):
        vals = [next(r["kmeans_ari"] for r in rows if r["set"] == s and r["features"] == feat) for s in names]
        ax.bar(np.arange(len(names)) + off, vals, 0.4, label=feat)
    ax.set_xticks(range(len(names)), names, rotation=30)
    ax.set_ylabel("k-means (true k), ARI")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out / "text_features.png", dpi=120)


if __name__ == "__main__":
    main()
