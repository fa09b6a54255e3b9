"""The first fit of a text session: its burn-in, on texts as ``jaxclust annotate`` featurises them.

    JAXCLUST_DATA=../shared/data python experiments/text_first_fit.py --out experiments/results/text_first_fit

A session's first fit is what a person waits for before the first question; its later refits start from its
chains. For each set (2,000 BBC articles drawn with seeds 0-2, all 2,225, and 2,000 20 Newsgroups posts of 6
groups drawn with seeds 100-102, headers removed) and each burn-in, the apps' ``DPMM`` (``default_model``) is
fitted with ``random_state`` 0 and 1, and the ARI of ``labels_``, its number of clusters and the mean log joint
of the kept samples are written, with the seconds of the fit (a first fit of each set, at the default burn-in,
compiles the slots it grows through and is not timed). Writes ``text_first_fit.json`` and ``text_first_fit.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score
from text_features import newsgroups_draw

N = 2000


def load_sets(data: Path) -> dict:
    bbc = [json.loads(line) for line in (data / "bbc_news" / "bbc_news.jsonl").open()]
    texts, y = [" ".join(d["text"].split()) for d in bbc], np.array([d["label"] for d in bbc])
    sets = {}
    for s in range(3):
        keep = np.random.default_rng(s).choice(len(texts), N, replace=False)
        sets[f"bbc2000_{s}"] = ([texts[i] for i in keep], y[keep])
    sets["bbc_all"] = (texts, y)
    for s in range(3):
        sets[f"ng6_2000_{s}"] = newsgroups_draw(data, 100 + s, N)
    return sets


def plot(rows: list[dict], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for name in sorted({r["set"] for r in rows}):
        own = [r for r in rows if r["set"] == name]
        burns = sorted({r["n_burnin"] for r in own})
        ari = [np.mean([r["ari"] for r in own if r["n_burnin"] == b]) for b in burns]
        ax.plot(burns, ari, marker="o", label=name)
    ax.set_xlabel("burn-in sweeps of the first fit")
    ax.set_ylabel("ARI of labels_ (mean of 2 seeds)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("JAXCLUST_DATA", "../shared/data")))
    ap.add_argument("--out", type=Path, default=Path("experiments/results/text_first_fit"))
    ap.add_argument("--burnin", type=int, nargs="+", default=[10, 20, 50])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--sets", nargs="+", default=None)
    args = ap.parse_args()
    from jaxclust.apps.opening import default_model
    from jaxclust.text import text_featurizer

    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, (texts, y) in load_sets(args.data).items():
        if args.sets is not None and name not in args.sets:
            continue
        X = np.asarray(text_featurizer().fit_transform(texts))
        default_model(0).fit(X)  # compiles every number of slots a fit of this set reaches
        for burn in args.burnin:
            for seed in args.seeds:
                model = default_model(seed, n_burnin=burn)
                t0 = time.perf_counter()
                model.fit(X)
                row = {
                    "set": name,
                    "n": len(X),
                    "n_burnin": burn,
                    "seed": seed,
                    "ari": float(adjusted_rand_score(y, model.labels_)),
                    "clusters": int(len(np.unique(model.labels_))),
                    "mean_log_joint": float(np.mean(model.log_joint_)),
                    "seconds": time.perf_counter() - t0,
                    "capacity": model.capacity_,
                    "growths": model.n_capacity_growths_,
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    (args.out / "text_first_fit.json").write_text(json.dumps(rows, indent=1))
    plot(rows, args.out / "text_first_fit.png")


if __name__ == "__main__":
    main()
