"""Signal check of the evaluation data sets: k-means (k = number of gold classes) against random clusterings
with the gold class sizes, scored with jaxclust.metrics (purity, inverse purity, NMI, V-measure).

It reproduces the checks printed in the data READMEs (verbs balanced: k-means purity 0.24 / NMI 0.44 against
0.155 / 0.39 random; biomedical verbs, top level: purity 0.34 against 0.23) through the jaxclust loaders, and
extends them to the text sets (TF-IDF + truncated SVD features) and the embedded scikit-learn sets.

Usage::

    python experiments/dataset_signal.py --quick --out results/dataset_signal
    python experiments/dataset_signal.py --out results/dataset_signal      # all sets, 5 seeds

Writes ``signal.json`` and ``signal.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import StandardScaler, normalize
from tqdm import tqdm

from jaxclust import datasets as D
from jaxclust.errors import DatasetNotFoundError
from jaxclust.metrics import inverse_purity, normalized_mutual_info, purity, v_measure


def _scf(ds):
    """SCF relative frequencies -> square root (Hellinger geometry), as in the README checks."""
    return np.sqrt(ds.X)


def _standard(ds):
    return StandardScaler().fit_transform(ds.X)


def _text(ds, dim=100, seed=0):
    """TF-IDF (sublinear, English stop words, min_df=2) -> truncated SVD -> unit rows (LSA)."""
    tfidf = TfidfVectorizer(sublinear_tf=True, stop_words="english", min_df=2).fit_transform(ds.texts)
    return normalize(TruncatedSVD(n_components=dim, random_state=seed).fit_transform(tfidf))


def _tasks(quick: bool):
    """(label, loader thunk, featurizer); data-dir sets are skipped when absent."""
    tasks = [
        ("verbs_general balanced / root_class", lambda: D.load_verbs_general("balanced"), _scf),
        ("verbs_biomed / top", lambda: D.load_verbs_biomed(level=1), _scf),
        ("iris", D.load_iris, _standard),
        ("wine", D.load_wine, _standard),
        ("digits", D.load_digits, _standard),
    ]
    if not quick:
        tasks += [
            ("verbs_general full / root_class", lambda: D.load_verbs_general("full"), _scf),
            (
                "verbs_general balanced / levin_top",
                lambda: D.load_verbs_general("balanced", label="levin_top"),
                _scf,
            ),
            ("verbs_biomed / mid", lambda: D.load_verbs_biomed(level=2), _scf),
            ("verbs_biomed / fine", lambda: D.load_verbs_biomed(level=3), _scf),
            ("bbc_news / topic", D.load_bbc_news, _text),
            ("newsgroups / topic", D.load_newsgroups, _text),
            ("newsgroups / author (>=20 posts)", lambda: D.load_newsgroups(labels="author"), _text),
            ("subjectivity", D.load_subjectivity, _text),
            ("senseval2 / line", lambda: D.load_senseval2("line"), _text),
            (
                "nps_chat / dialog_act (no System)",
                lambda: D.load_nps_chat(label="dialog_act", exclude_system=True),
                _text,
            ),
        ]
    return tasks


def _scores(y, z):
    return {
        "purity": purity(y, z),
        "inverse_purity": inverse_purity(y, z),
        "nmi": normalized_mutual_info(y, z),
        "v_measure": v_measure(y, z),
    }


def signal_row(name, ds, featurize, seeds) -> dict:
    """k-means (k = gold classes, one init per seed) and random equal-size clusterings of one data set."""
    t0 = time.perf_counter()
    X, y, k = featurize(ds), ds.y, ds.n_classes
    km, rnd = [], []
    for s in range(seeds):
        z = KMeans(n_clusters=k, n_init=1, random_state=s).fit_predict(X)
        km.append(_scores(y, z))
        rnd.append(_scores(y, np.random.default_rng(s).permutation(y)))  # gold class sizes, random members
    mean = lambda rows: {m: float(np.mean([r[m] for r in rows])) for m in rows[0]}
    return {
        "dataset": name,
        "n": int(len(y)),
        "k": int(k),
        "dim": int(X.shape[1]),
        "seeds": seeds,
        "kmeans": mean(km),
        "random": mean(rnd),
        "seconds": time.perf_counter() - t0,
    }


def plot(results, seeds, path) -> None:
    fig = Figure(figsize=(12, 0.45 * len(results) + 1.5))
    axes = fig.subplots(1, 2, sharey=True)
    pos = np.arange(len(results))
    for ax, metric in zip(axes, ("purity", "nmi"), strict=True):
        ax.barh(pos - 0.2, [r["kmeans"][metric] for r in results], height=0.4, label="k-means")
        ax.barh(pos + 0.2, [r["random"][metric] for r in results], height=0.4, label="random (gold sizes)")
        ax.set_xlabel(metric)
        ax.set_xlim(0, 1)
    axes[0].set_yticks(pos, [r["dataset"] for r in results])
    axes[0].invert_yaxis()
    axes[1].legend(loc="lower right")
    fig.suptitle(f"k-means vs random clusterings ({seeds} seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def run_one(dataset: str, seeds: int = 5) -> dict:
    """ONE data set (the grid kind ``dataset_signal``; ``dataset`` is a name of the script's table, e.g.
    ``"wine"`` or ``"verbs_biomed / top"``). A missing data set is an error here (the script skips it)."""
    from jaxclust.errors import InvalidInputError

    tasks = {name: (load, featurize) for name, load, featurize in _tasks(quick=False)}
    if dataset not in tasks:
        raise InvalidInputError(f"dataset: expected one of {', '.join(map(repr, tasks))}, got {dataset!r}")
    load, featurize = tasks[dataset]
    return signal_row(dataset, load(), featurize, seeds)


def summarize(records, out_dir) -> dict:
    """The grid's summary (kind ``dataset_signal``): ``signal.json`` and ``signal.png`` from the data sets that
    exist, in the script's table order."""
    order = [name for name, _, _ in _tasks(quick=False)]
    rows = sorted((r["result"] for r in records), key=lambda r: order.index(r["dataset"]))
    seeds = max(r["seeds"] for r in rows)
    out_dir = Path(out_dir)
    (out_dir / "signal.json").write_text(
        json.dumps(
            {"quick": False, "results": rows, "made_by": "jaxclust experiment (kind dataset_signal)"},
            indent=1,
        )
    )
    plot(rows, seeds, out_dir / "signal.png")
    return {"files": ["signal.json", "signal.png"]}


def main() -> None:
    parser = argparse.ArgumentParser(description="k-means vs random clusterings on every evaluation set")
    parser.add_argument("--quick", action="store_true", help="five small sets, 2 seeds (about 10 s)")
    parser.add_argument("--out", type=Path, default=Path("results/dataset_signal"))
    parser.add_argument("--seeds", type=int, default=None, help="k-means restarts and random baselines (5)")
    args = parser.parse_args()
    seeds = args.seeds or (2 if args.quick else 5)
    args.out.mkdir(parents=True, exist_ok=True)

    results = []
    for name, load, featurize in tqdm(_tasks(args.quick), desc="data sets"):
        try:
            ds = load()
        except DatasetNotFoundError as err:
            print(f"skip {name}: {err}")
            continue
        row = signal_row(name, ds, featurize, seeds)
        results.append(row)
        print(
            f"{name:40s} n={row['n']:6d} k={row['k']:4d}  k-means purity {row['kmeans']['purity']:.3f} "
            f"NMI {row['kmeans']['nmi']:.3f} | random purity {row['random']['purity']:.3f} "
            f"NMI {row['random']['nmi']:.3f}"
        )

    (args.out / "signal.json").write_text(json.dumps({"quick": args.quick, "results": results}, indent=1))
    plot(results, seeds, args.out / "signal.png")
    print(f"wrote {args.out / 'signal.json'} and {args.out / 'signal.png'}")


if __name__ == "__main__":
    main()
