"""ICC experiments: context representations, ICC learning curves on SENSEVAL-2, cluster-and-label on Pang &
Lee.

    python experiments/icc.py --quick --out runs/icc_quick      # minutes on a laptop CPU
    python experiments/icc.py --out runs/icc              # larger samples (experiments/README.md)

Writes ``results.json`` and ``icc_curves.png`` / ``downstream.png`` into ``--out``. Needs the evaluation data
(``JAXCLUST_DATA`` or ``../shared/data``).

Experiment grids (kind ``icc``, ``experiments/configs/icc.toml``): :func:`run_one` runs ONE part (senseval with
a label set, or downstream), :func:`summarize` writes each label set's folder from the parts that exist.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform
from sklearn.decomposition import TruncatedSVD
from sklearn.metrics import pairwise_distances
from sklearn.model_selection import StratifiedKFold
from tqdm import tqdm

from jaxclust.datasets import load_senseval2, load_subjectivity
from jaxclust.icc import ICC
from jaxclust.icc.agglomerative import cut_by_merge_count
from jaxclust.icc.cluster_and_label import (
    icc_curve,
    labels_needed,
    random_sampling_curve,
    train_on_generated,
    uncertainty_sampling_curve,
)
from jaxclust.metrics import purity
from jaxclust.text import LocalFeatures, build_space, context_vectors, mixed

WORDS = ("hard", "interest", "line", "serve")


def _subsample(n, m, seed):
    if m is None or m >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, m, replace=False))


def representations(ds, idx, space):
    """local, dsm_add, dsm_mul, mixed (local + dsm_mul) for the chosen instances."""
    tok = [ds.extra["tokens"][i] for i in idx]
    pos = [ds.extra["pos"][i] for i in idx]
    head = [int(ds.extra["head_index"][i]) for i in idx]
    local = LocalFeatures(min_count=2).fit_transform(list(zip(tok, pos, head, strict=True)))
    add = context_vectors(list(zip(tok, head, strict=True)), space, mode="add", window=5)
    mul = context_vectors(list(zip(tok, head, strict=True)), space, mode="mul", window=2)
    return {"local": local, "dsm_add": add, "dsm_mul": mul, "mixed": mixed(local, mul)}


def average_link_purity(X, y, k=7):
    D = pairwise_distances(X, metric="cosine")
    D = np.nan_to_num(0.5 * (D + D.T), nan=1.0)  # zero rows: cosine undefined -> maximal distance
    np.fill_diagonal(D, 0.0)
    Z = linkage(squareform(D, checks=False), method="average")
    return float(purity(y, cut_by_merge_count(Z, len(y), k)))


def corpus_sentences(data_dir, max_sentences):
    """Token lists for the PPMI space: SENSEVAL-2 contexts of the four words + the Pang & Lee sentences."""
    sents = []
    for w in WORDS:
        sents += load_senseval2(w, data_dir).extra["tokens"]
    sents += [t.split() for t in load_subjectivity(data_dir).texts]
    if max_sentences is not None and len(sents) > max_sentences:
        keep = _subsample(len(sents), max_sentences, 0)
        sents = [sents[i] for i in keep]
    return sents


def run_senseval(args, res, space):
    res["representations"], res["icc_curves"] = {}, {}
    for w in WORDS[: args.n_words]:
        ds = load_senseval2(w, args.data_dir)
        y_all = np.asarray(ds.labels["sense"])
        idx = _subsample(len(y_all), args.max_instances, 1)
        y = y_all[idx]
        if args.label_set == "binary":  # ours: the word's most frequent sense vs all its other senses
            y = (y_all[idx] == np.bincount(y_all).argmax()).astype(np.int64)
        reps = representations(ds, idx, space)
        res["representations"][w] = {"n": int(len(y)), "skew": float(np.bincount(y).max() / len(y))}
        for name, X in reps.items():
            res["representations"][w][name] = average_link_purity(X, y)
        print(w, res["representations"][w], flush=True)
        X = TruncatedSVD(args.n_components, random_state=0).fit_transform(reps["mixed"])
        n = len(y)
        budgets = sorted({max(7, int(round(p * n / 100))) for p in args.percents})
        curves = {}
        runs = [
            ("silh_const", True),
            ("silh_const", False),
            ("random", True),
            ("random", False),
            ("klein", False),
            ("klein", True),
        ]
        for strat, ml in tqdm(runs, desc=f"ICC {w}"):
            t = time.time()
            icc = ICC(
                n_clusters=7,
                strategy=strat,
                metric_learning=ml,
                budget=max(budgets),
                checkpoints=budgets,
                batch_size=max(1, int(round(args.batch_frac * n))),
                max_iter=args.itml_iter,
                n_components=None,
                random_state=0,
            ).fit(X, y)
            key = f"{strat}{'+ML' if ml else ''}"
            curves[key] = {f"{100 * b / n:.1f}": float(np.mean(icc.history_[b] == y)) for b in budgets}
            print(f"  {key}: {curves[key]}  ({time.time() - t:.0f}s)", flush=True)
        res["icc_curves"][w] = curves


def run_downstream(args, res):
    from sklearn.feature_extraction.text import TfidfVectorizer

    ds = load_subjectivity(args.data_dir)
    y_all = np.asarray(ds.labels["subjectivity"])
    idx = _subsample(len(y_all), args.downstream_n, 2)
    texts = [ds.texts[i] for i in idx]
    y = y_all[idx]
    fracs = args.fractions
    acc = {"icc": [], "random": [], "uncertainty": [], "full": []}
    pur = []
    folds = StratifiedKFold(args.folds, shuffle=True, random_state=0).split(np.zeros(len(y)), y)
    for tr, te in tqdm(list(folds), desc="folds"):
        vec = TfidfVectorizer(min_df=2, sublinear_tf=True).fit([texts[i] for i in tr])
        Xtr, Xte = vec.transform([texts[i] for i in tr]), vec.transform([texts[i] for i in te])
        Xc = TruncatedSVD(args.n_components, random_state=0).fit_transform(Xtr)
        budgets = [max(7, int(round(f * len(tr)))) for f in fracs]
        acc["full"].append(float(np.mean(train_on_generated(Xtr, y[tr]).predict(Xte) == y[te])))
        acc["random"].append(random_sampling_curve(Xtr, y[tr], Xte, y[te], budgets))
        acc["uncertainty"].append(
            uncertainty_sampling_curve(Xtr, y[tr], Xte, y[te], budgets, batch_size=max(1, len(tr) // 100))
        )
        a, p = icc_curve(
            Xc,
            Xtr,
            y[tr],
            Xte,
            y[te],
            budgets,
            n_clusters=7,
            n_components=None,
            batch_size=max(1, int(round(args.downstream_batch_frac * len(tr)))),
            max_iter=args.itml_iter,
            random_state=0,
        )
        acc["icc"].append(a)
        pur.append(p)
    full = float(np.mean(acc["full"]))
    mean = {k: np.mean(v, axis=0).tolist() for k, v in acc.items() if k != "full"}
    res["downstream"] = {
        "n": int(len(y)),
        "folds": args.folds,
        "fractions": list(fracs),
        "full_accuracy": full,
        "accuracy": mean,
        "icc_label_purity": np.mean(pur, axis=0).tolist(),
        "fraction_needed_for_full": {k: labels_needed(fracs, v, full) for k, v in mean.items()},
    }
    print(json.dumps(res["downstream"], indent=1), flush=True)


def plot(res, out):
    if res.get("icc_curves"):
        words = list(res["icc_curves"])
        fig = Figure(figsize=(4 * len(words), 3.2))
        axes = fig.subplots(1, len(words), squeeze=False)
        for ax, w in zip(axes[0], words, strict=True):
            for key, c in res["icc_curves"][w].items():
                ax.plot([float(p) for p in c], list(c.values()), marker="o", label=key)
            ax.set_title(f"{w} (skew {res['representations'][w]['skew']:.2f})")
            ax.set_xlabel("% of instances queried")
            ax.set_ylabel("purity of generated labels")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "icc_curves.png", dpi=110)
    if res.get("downstream"):
        d = res["downstream"]
        fig = Figure(figsize=(5, 3.5))
        ax = fig.subplots()
        for k, v in d["accuracy"].items():
            ax.plot(100 * np.asarray(d["fractions"]), v, marker="o", label=k)
        ax.axhline(d["full_accuracy"], color="k", ls="--", label="full (all gold labels)")
        ax.set_xlabel("% of training labels")
        ax.set_ylabel("accuracy")
        ax.set_title("Pang & Lee subjectivity: cluster-and-label")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "downstream.png", dpi=110)


# the script's settings: full and --quick
FULL = dict(
    n_words=4,
    max_instances=500,
    percents=[2, 5, 10, 15, 20, 25],
    corpus_sentences=None,
    batch_frac=0.005,
    itml_iter=50,
    n_components=50,
    downstream_n=1000,
    folds=10,
    fractions=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    downstream_batch_frac=0.02,
)
QUICK = dict(
    n_words=2,
    max_instances=200,
    percents=[4, 8, 12, 16],
    corpus_sentences=8000,
    batch_frac=0.01,
    itml_iter=30,
    n_components=30,
    downstream_n=400,
    folds=3,
    fractions=[0.1, 0.2, 0.3, 0.5, 1.0],
    downstream_batch_frac=0.02,
)


def run_parts(args, parts):
    """The senseval and/or downstream parts with the settings in ``args``; the results dict."""
    res = {"config": {k: v for k, v in vars(args).items() if k != "data_dir"}}
    t0 = time.time()
    if "senseval" in parts:
        space = build_space(corpus_sentences(args.data_dir, args.corpus_sentences), window=10, n_columns=2000)
        res["space"] = {"rows": len(space.rows), "columns": len(space.columns), "nnz": int(space.matrix.nnz)}
        run_senseval(args, res, space)
    if "downstream" in parts:
        run_downstream(args, res)
    res["seconds"] = time.time() - t0
    return res


def _default_data_dir():
    return os.environ.get("JAXCLUST_DATA") or str(Path(__file__).resolve().parents[2] / "shared" / "data")


def run_one(
    part: str,
    label_set: str = "sense",
    quick: bool = False,
    n_words: int | None = None,
    max_instances: int | None = None,
    percents: list | None = None,
    corpus_sentences: int | None = None,
    batch_frac: float | None = None,
    itml_iter: int | None = None,
    n_components: int | None = None,
    downstream_n: int | None = None,
    folds: int | None = None,
    fractions: list | None = None,
    downstream_batch_frac: float | None = None,
    data_dir: str | None = None,
) -> dict:
    """ONE part (the grid kind ``icc``): ``senseval`` (representations and ICC curves, gold = ``label_set``:
    ``sense`` or ``binary``) or ``downstream`` (cluster-and-label on Pang & Lee; ``label_set`` is not used).

    Settings left as None take the script's full values (``FULL``), or with ``quick`` its ``--quick`` ones
    (``QUICK``). (``corpus_sentences`` None means the whole corpus in the full settings.)
    """
    from jaxclust.errors import InvalidInputError

    if part not in ("senseval", "downstream"):
        raise InvalidInputError(f"part: expected 'senseval' or 'downstream', got {part!r}")
    if label_set not in ("sense", "binary"):
        raise InvalidInputError(f"label_set: expected 'sense' or 'binary', got {label_set!r}")
    given = dict(locals())
    settings = {k: (v if given[k] is None else given[k]) for k, v in (QUICK if quick else FULL).items()}
    args = argparse.Namespace(
        quick=quick,
        out=None,
        data_dir=data_dir or _default_data_dir(),
        parts=part,
        label_set=label_set,
        **settings,
    )
    return run_parts(args, {part})


def summarize(records, out_dir) -> dict:
    """The grid's summary (kind ``icc``): per label set, ``senses/`` or ``binary/`` with the script's
    ``results.json``, ``icc_curves.png`` and ``downstream.png`` from the parts that exist (downstream runs go
    with their ``label_set``, by default ``sense``)."""
    out_dir = Path(out_dir)
    groups: dict[str, dict] = {}
    for rec in sorted(records, key=lambda r: r["params"]["part"] != "senseval"):
        label_set = rec["params"].get("label_set", "sense")
        folder = ("senses" if label_set == "sense" else label_set) + (
            "_quick" if rec["params"].get("quick") else ""
        )
        res = groups.setdefault(folder, {"run_ids": [], "made_by": "jaxclust experiment (kind icc)"})
        res["run_ids"].append(rec["id"])
        for k, v in rec["result"].items():
            if k == "seconds":
                res["seconds"] = res.get("seconds", 0.0) + v
            elif k != "config" or "config" not in res:
                res[k] = v
    files = []
    for folder, res in groups.items():
        (out_dir / folder).mkdir(exist_ok=True)
        (out_dir / folder / "results.json").write_text(json.dumps(res, indent=1))
        plot(res, out_dir / folder)
        files += [f"{folder}/{f.name}" for f in sorted((out_dir / folder).iterdir())]
    return {"files": files}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small samples: a few minutes")
    ap.add_argument("--out", default="runs/icc", help="output folder")
    ap.add_argument(
        "--data-dir",
        default=_default_data_dir(),
        help="evaluation data root (default: $JAXCLUST_DATA, else ../shared/data beside the repository)",
    )
    ap.add_argument("--parts", default="senseval,downstream", help="comma list: senseval, downstream")
    ap.add_argument(
        "--label-set",
        default="sense",
        choices=("sense", "binary"),
        help="SENSEVAL gold: the senses, or (ours) the most frequent sense vs the rest",
    )
    args = ap.parse_args()
    for k, v in (QUICK if args.quick else FULL).items():
        setattr(args, k, v)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    res = run_parts(args, set(args.parts.split(",")))
    with open(out / "results.json", "w") as fh:
        json.dump(res, fh, indent=1)
    plot(res, out)
    print(f"wrote {out / 'results.json'} in {res['seconds']:.0f}s")


if __name__ == "__main__":
    main()
