"""How the evaluation metrics score trivial clusterings: the numbers to quote beside any real result.

Two parts, both on evaluation data only (gold labels; no model is trained):

1. Partition metrics on verb clustering (VerbNet root classes of the 552-verb balanced set, 46 classes):
   purity, inverse purity, V-measure, V-beta, VI, ARI, NMI and pairwise link accuracy of random refinements of
   the gold partition (each class split into ``s`` random parts) and of random merges (classes grouped into
   ``m`` random super-clusters), plus one cluster and all singletons. Shows which metric rewards
   over-splitting (purity, pair accuracy) and how V-beta's beta = K/C penalises it more than V.
2. Coreference metrics on LitBank and GUM test (gold mentions): gold, one entity per document, all singletons
   and random entities (as many as gold), each with singletons kept and removed from key and response,
   micro-averaged over documents like the reference scorer.

Usage: ``python experiments/metrics_baselines.py [--quick] [--out DIR] [--data-dir DIR] [--seeds 5]``
Writes ``metrics_baselines.json`` and ``metrics_baselines.png`` to ``--out``. Experiment grids (kind
``metrics_baselines``): :func:`run_one` computes one part, :func:`summarize` writes both files.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np


def _partition_part(data_dir: str, seeds: int, quick: bool) -> dict:
    from jaxclust import datasets as D
    from jaxclust.metrics import partition as P

    ds = D.load_verbs_general(data_dir=data_dir)
    y = np.unique(ds.labels[ds.target], return_inverse=True)[1]
    n_classes = int(y.max()) + 1
    metrics = {
        "purity": P.purity,
        "inverse_purity": P.inverse_purity,
        "v_measure": P.v_measure,
        "v_beta": P.v_beta,
        "vi": P.variation_of_information,
        "ari": P.adjusted_rand_index,
        "nmi": P.normalized_mutual_info,
        "pair_accuracy": P.pairwise_link_accuracy,
    }

    def score(z):
        return {name: float(fn(y, z)) for name, fn in metrics.items()}

    splits = [1, 2, 3, 4, 6] if quick else [1, 2, 3, 4, 6, 8, 12]
    merges = [n_classes // 2, n_classes // 4, 4, 2] if quick else [n_classes // 2, n_classes // 4, 8, 4, 2]
    rows = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        for s in splits:
            z = y * s + rng.integers(0, s, y.shape[0])  # refine each class into <= s random parts
            rows.append(dict(kind="split", param=s, seed=seed, n_clusters=len(np.unique(z)), **score(z)))
        for m in merges:
            group = rng.integers(0, m, n_classes)
            z = group[y]
            rows.append(dict(kind="merge", param=m, seed=seed, n_clusters=len(np.unique(z)), **score(z)))
    rows.append(dict(kind="one_cluster", param=1, seed=0, n_clusters=1, **score(np.zeros_like(y))))
    rows.append(dict(kind="singletons", param=len(y), seed=0, n_clusters=len(y), **score(np.arange(len(y)))))
    return dict(dataset=ds.name, n_items=int(len(y)), n_classes=n_classes, rows=rows)


def _load_coref(path: Path) -> list[list[set]]:
    docs = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            ents: dict[int, set] = {}
            for m in d["mentions"]:
                ents.setdefault(m["entity"], set()).add((m["start"], m["end"] - 1))  # JSON end is exclusive
            docs.append(list(ents.values()))
    return docs


def _coref_part(data_dir: str, seeds: int, quick: bool) -> dict:
    from jaxclust.metrics import corpus_scores

    out = {}
    for corpus in ("litbank", "gum"):
        path = Path(data_dir) / "coref" / corpus / "test.jsonl"
        if not path.exists():
            out[corpus] = {"skipped": f"{path} not found"}
            continue
        gold = _load_coref(path)
        if quick:
            gold = gold[:5]
        res = {}
        for singletons in ("kept", "removed"):

            def prep(clustering, singletons=singletons):
                return [e for e in clustering if singletons == "kept" or len(e) > 1]

            key = [prep(g) for g in gold]
            baselines = {
                "gold": [prep(g) for g in gold],
                "one_entity": [prep([set().union(*g)]) if g else [] for g in gold],
                "singletons": [prep([{m} for m in set().union(*g)]) if g else [] for g in gold],
            }
            rand = []
            for seed in range(seeds):
                rng = np.random.default_rng(seed)
                resp = []
                for g in gold:
                    ms = sorted(set().union(*g)) if g else []
                    lab = rng.integers(0, max(len(g), 1), len(ms))
                    resp.append(
                        prep([{m for m, lb in zip(ms, lab, strict=True) if lb == k} for k in np.unique(lab)])
                    )
                rand.append(corpus_scores(key, resp))
            res[singletons] = {name: corpus_scores(key, r) for name, r in baselines.items()}
            res[singletons]["random_same_k"] = {
                m: (
                    np.mean([r[m] for r in rand], axis=0).tolist()
                    if m != "conll_f1"
                    else float(np.mean([r[m] for r in rand]))
                )
                for m in rand[0]
            }
        out[corpus] = dict(n_docs=len(gold), n_mentions=int(sum(len(e) for g in gold for e in g)), scores=res)
    return out


def _plot(part: dict, coref: dict, path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5))
    axes = fig.subplots(1, 2)
    rows = [r for r in part["rows"] if r["kind"] in ("split", "merge")]
    names = ["purity", "inverse_purity", "v_measure", "v_beta", "ari", "pair_accuracy"]
    for name in names:
        xs, ys = [], []
        for kind in ("merge", "split"):
            params = sorted({r["param"] for r in rows if r["kind"] == kind}, reverse=(kind == "merge"))
            for p in params:
                sel = [r for r in rows if r["kind"] == kind and r["param"] == p]
                xs.append(np.mean([r["n_clusters"] for r in sel]))
                ys.append(np.mean([r[name] for r in sel]))
        order = np.argsort(xs)
        axes[0].plot(np.array(xs)[order], np.array(ys)[order], marker="o", label=name)
    axes[0].axvline(part["n_classes"], color="grey", ls=":", lw=1)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("number of clusters (random merges < gold classes < random splits)")
    axes[0].set_ylabel("score")
    axes[0].set_title(f"{part['dataset']}: {part['n_classes']} classes, {part['n_items']} verbs")
    axes[0].legend(fontsize=8)
    metrics = ["muc", "b_cubed", "ceaf_e", "lea", "blanc"]
    labels, vals = [], []
    for corpus, res in coref.items():
        if "scores" not in res:
            continue
        for base in ("one_entity", "singletons", "random_same_k"):
            labels.append(f"{corpus}\n{base}")
            vals.append([res["scores"]["kept"][base][m][2] for m in metrics])
    if vals:
        vals = np.array(vals)
        width = 0.8 / len(metrics)
        for j, m in enumerate(metrics):
            axes[1].bar(np.arange(len(labels)) + j * width, vals[:, j], width, label=m)
        axes[1].set_xticks(np.arange(len(labels)) + 0.4 - width / 2)
        axes[1].set_xticklabels(labels, fontsize=7)
        axes[1].set_ylabel("F1 (singletons kept)")
        axes[1].set_title("coreference baselines, test sets, gold mentions")
        axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def run_one(part: str, seeds: int = 5, quick: bool = False, data_dir: str | None = None) -> dict:
    """ONE part (the grid kind ``metrics_baselines``): ``partition`` (verb classes) or ``coref`` (LitBank, GUM).

    ``quick``: the script's fewer settings and documents; ``seeds`` is used as given (the script's ``--quick``
    also caps it at 2: give ``seeds = 2``).
    """
    from jaxclust.errors import InvalidInputError

    data_dir = data_dir or os.environ.get("JAXCLUST_DATA", "../shared/data")
    if part == "partition":
        return _partition_part(data_dir, seeds, quick)
    if part == "coref":
        return _coref_part(data_dir, seeds, quick)
    raise InvalidInputError(f"part: expected 'partition' or 'coref', got {part!r}")


def summarize(records, out_dir) -> dict:
    """The grid's summary (kind ``metrics_baselines``): ``metrics_baselines.json`` and ``.png`` from the parts that
    exist (the last record of each part wins when settings differ)."""
    parts = {r["params"]["part"]: r for r in records}
    part = (
        parts["partition"]["result"] if "partition" in parts else {"rows": [], "n_classes": 0, "dataset": "-"}
    )
    part.setdefault("n_items", 0)
    coref = parts["coref"]["result"] if "coref" in parts else {}
    first = next(iter(parts.values()))["params"]
    result = dict(
        quick=first.get("quick", False),
        seeds=first.get("seeds", 5),
        partition=parts["partition"]["result"] if "partition" in parts else None,
        coref=coref,
        made_by="jaxclust experiment (kind metrics_baselines)",
        run_ids=[r["id"] for r in parts.values()],
    )
    out_dir = Path(out_dir)
    (out_dir / "metrics_baselines.json").write_text(json.dumps(result, indent=1))
    _plot(part, coref, out_dir / "metrics_baselines.png")
    return {"files": ["metrics_baselines.json", "metrics_baselines.png"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer settings and documents (a few seconds)")
    parser.add_argument("--out", default="results/metrics_baselines")
    parser.add_argument("--data-dir", default=os.environ.get("JAXCLUST_DATA", "../shared/data"))
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    seeds = min(args.seeds, 2) if args.quick else args.seeds
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    part = _partition_part(args.data_dir, seeds, args.quick)
    coref = _coref_part(args.data_dir, seeds, args.quick)
    result = dict(
        command="python experiments/metrics_baselines.py"
        + (" --quick" if args.quick else "")
        + f" --seeds {args.seeds}",
        quick=args.quick,
        seeds=seeds,
        partition=part,
        coref=coref,
        seconds=round(time.perf_counter() - t0, 2),
    )
    (out / "metrics_baselines.json").write_text(json.dumps(result, indent=1))
    _plot(part, coref, out / "metrics_baselines.png")
    for corpus, res in coref.items():
        if "scores" not in res:
            print(corpus, res)
            continue
        for sing in ("kept", "removed"):
            for base, sc in res["scores"][sing].items():
                f1 = " ".join(f"{m}={sc[m][2]:.3f}" for m in ("muc", "b_cubed", "ceaf_e", "lea", "blanc"))
                print(f"{corpus:8s} singletons {sing:7s} {base:14s} {f1} conll={sc['conll_f1']:.3f}")
    print(
        f"wrote {out / 'metrics_baselines.json'} and {out / 'metrics_baselines.png'} in {result['seconds']} s"
    )


if __name__ == "__main__":
    main()
