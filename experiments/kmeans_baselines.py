"""Constrained k-means baselines for the active-DPMM verb-clustering learning curves.

COP-KMeans and PCKMeans (``jaxclust.kmeans``), each fed the constraints chosen by Explore-and-Consolidate,
MinMax
and NPU (``jaxclust.kmeans.query_baselines``), on the same verb sets, preprocessing (NMF to 35 dimensions,
standardised),
gold oracle, question budget and metrics as ``experiments/active_dpmm.py``. The number of clusters is the
number
of gold classes (these baselines need it; the DPMM infers it). Each strategy asks its questions once; the
constraint set after b questions is the first b answers, so one selection run gives the whole curve.

Output per set: ``<out>/<set>_kmeans_baselines.json`` in the active experiment's layout
(``{"meta", "runs": [{"name", "strategy", "batch_size", "seed", "seconds", "history": [...]}]}``, one history
row
per evaluation point with ``n_queries``, ``n_constraints``, ``v_beta``, ``v_measure``, ``homogeneity``,
``completeness``, ``vi``, ``link_accuracy``, ``n_clusters``) and ``<out>/<set>_kmeans_baselines.png``.
``--merge-with results/active/<set>.json`` also draws the DPMM runs of that file in the same figure
(``<set>_merged.png``).

    python experiments/kmeans_baselines.py --quick --out results/kmeans_quick
    python experiments/kmeans_baselines.py --sets general bio-fine --out results/kmeans_baselines

Experiment grids: :func:`run_one` (kind ``kmeans_baselines``) computes one strategy on one set, :func:`summarize`
writes ``<set>_kmeans_baselines.json/png`` from the strategies that exist.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _active_module():
    """The active-DPMM experiment script (for its data loading and preprocessing: the very same inputs)."""
    spec = importlib.util.spec_from_file_location("active_dpmm", HERE / "active_dpmm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def evaluate(X, y, k, constraints, seed, n_init):
    """Fit COP-KMeans and PCKMeans on ``constraints``; metrics of each (NaN row for an infeasible COP run)."""
    from jaxclust.active.learner import score_samples
    from jaxclust.errors import InfeasibleConstraintsError
    from jaxclust.kmeans import COPKMeans, PCKMeans
    from jaxclust.kmeans.query_baselines import closure_constraints

    out = {}
    try:
        cop = COPKMeans(k, n_init=n_init, random_state=seed).fit(X, constraints=constraints)
        out["COP-KMeans"] = score_samples(cop.labels_[None], y)
    except InfeasibleConstraintsError:
        out["COP-KMeans"] = {"infeasible": True}
    # Basu et al. give PCKMeans the transitive closure; fixed capacity keeps one compilation for the whole
    # curve.
    # w = total feature variance = the mean squared distance of an item to the data mean: one violated
    # constraint
    # costs about as much as placing an item in a far cluster (w = 1 is negligible on standardised 35-d data).
    w = float(np.var(X, axis=0).sum())
    pck = PCKMeans(k, w=w, n_init=n_init, random_state=seed, capacity=128).fit(
        X, constraints=closure_constraints(constraints)
    )
    out["PCKMeans"] = score_samples(pck.labels_[None], y)
    return out


STRATEGIES = ("explore-consolidate", "minmax", "npu")


def strategy_runs(X, y, strategy, budget, step, n_init, n_estimators, seed, echo=print, label=""):
    """One query strategy's questions (asked once, up to ``budget``) and the COP-KMeans and PCKMeans curves on
    their first b answers, b = 0, step, ..., budget: two runs of the results layout."""
    from jaxclust.active.oracles import GoldOracle
    from jaxclust.kmeans.query_baselines import NPU, ExploreConsolidate, MinMax, constraints_from_queries

    n, k = X.shape[0], len(np.unique(y))
    sel = {
        "explore-consolidate": lambda: ExploreConsolidate(k, max_queries=budget, random_state=seed),
        "minmax": lambda: MinMax(k, max_queries=budget, random_state=seed),
        "npu": lambda: NPU(k, max_queries=budget, random_state=seed, n_estimators=n_estimators),
    }[strategy]()
    grid = list(range(0, budget + 1, step))
    t0 = time.perf_counter()
    sel.fit(X, GoldOracle(y))
    t_sel = time.perf_counter() - t0
    hist = {m: [] for m in ("COP-KMeans", "PCKMeans")}
    t0 = time.perf_counter()
    for b in grid:
        c = constraints_from_queries(sel.queries_, n, budget=b)
        scores = evaluate(X, y, k, c, seed, n_init)
        for m, sc in scores.items():
            hist[m].append({"n_queries": b, "n_constraints": len(c), "round": len(hist[m]), **sc})
    t_eval = time.perf_counter() - t0
    runs = [
        {
            "name": f"{m} + {strategy}",
            "strategy": strategy,
            "clusterer": m,
            "batch_size": step,
            "seed": seed,
            "seconds": t_sel + t_eval / 2,
            "selection_seconds": t_sel,
            "n_neighborhoods": len(sel.neighborhoods_),
            "history": h,
        }
        for m, h in hist.items()
    ]
    last = {m: h[-1] for m, h in hist.items()}
    echo(
        f"[{label}] {strategy}: selection {t_sel:.1f}s, {len(sel.neighborhoods_)} neighbourhoods; "
        f"at {grid[-1]} "
        + "; ".join(f"{m} V-beta {r.get('v_beta', float('nan')):.3f}" for m, r in last.items())
    )
    return runs


def set_meta(name, desc, X, y, budget, step, n_init):
    return {
        "set": name,
        "description": desc,
        "n_items": int(X.shape[0]),
        "nmf_dims": int(X.shape[1]),
        "n_clusters": len(np.unique(y)),
        "budget": budget,
        "step": step,
        "n_init": n_init,
        "oracle": "GoldOracle",
    }


def run_set(name, args, active, echo=print):
    X_raw, y, desc = active.load_set(name, args.data_dir)
    X = active.preprocess(X_raw, args.nmf_dims, args.seed)
    runs = []
    for sname in args.strategies or STRATEGIES:
        runs += strategy_runs(
            X, y, sname, args.budget, args.step, args.n_init, args.n_estimators, args.seed, echo, label=name
        )
    meta = {
        **set_meta(name, desc, X, y, args.budget, args.step, args.n_init),
        "command": " ".join(["python"] + sys.argv),
        "date": time.strftime("%Y-%m-%d"),
    }
    result = {"meta": meta, "runs": runs}
    out = Path(args.out)
    (out / f"{name}_kmeans_baselines.json").write_text(json.dumps(result, indent=1, default=active._jsonable))
    _plot(runs, out / f"{name}_kmeans_baselines.png", f"{desc}: constrained k-means baselines")
    if args.merge_with:
        other = json.loads(Path(args.merge_with).read_text())
        _plot(
            other["runs"] + runs,
            out / f"{name}_merged.png",
            f"{desc}: DPMM (active/random) vs k-means baselines",
        )
    return result


def run_one(
    dataset: str,
    strategy: str,
    budget: int = 200,
    step: int = 10,
    n_init: int = 5,
    n_estimators: int = 50,
    nmf_dims: int = 35,
    seed: int = 0,
    data_dir: str | None = None,
) -> dict:
    """ONE strategy on one verb set (the grid kind ``kmeans_baselines``): its COP-KMeans and PCKMeans curves.

    Parameters as the script's options; ``dataset`` one of the active experiment's sets, ``strategy`` one of
    ``STRATEGIES``.
    """
    from jaxclust.errors import InvalidInputError

    if strategy not in STRATEGIES:
        raise InvalidInputError(f"strategy: expected one of {', '.join(STRATEGIES)}, got {strategy!r}")
    active = _active_module()
    X_raw, y, desc = active.load_set(dataset, data_dir)
    X = active.preprocess(X_raw, nmf_dims, seed)
    runs = strategy_runs(X, y, strategy, budget, step, n_init, n_estimators, seed, lambda s: None, dataset)
    result = {"meta": set_meta(dataset, desc, X, y, budget, step, n_init), "runs": runs}
    result["final_v_beta"] = {r["clusterer"]: r["history"][-1].get("v_beta") for r in runs}
    return json.loads(json.dumps(result, default=active._jsonable))


def summarize(records, out_dir) -> dict:
    """The grid's summary (kind ``kmeans_baselines``): per set (and setting), the strategies' curves that exist in
    ``<set>_kmeans_baselines.json/png``, the script's layout and figure."""
    import hashlib

    out_dir = Path(out_dir)
    groups: dict[str, list] = {}
    for rec in records:
        key = json.dumps({k: v for k, v in rec["params"].items() if k != "strategy"}, sort_keys=True)
        groups.setdefault(key, []).append(rec)
    bases = {key: recs[0]["params"]["dataset"] for key, recs in groups.items()}
    files = []
    for key, recs in groups.items():
        base = bases[key]
        if list(bases.values()).count(base) > 1:
            base += "_" + hashlib.sha256(key.encode()).hexdigest()[:6]
        order = {s: i for i, s in enumerate(STRATEGIES)}
        recs = sorted(recs, key=lambda r: order.get(r["params"]["strategy"], len(order)))
        runs = [run for r in recs for run in r["result"]["runs"]]
        meta = {
            **recs[0]["result"]["meta"],
            "setting": json.loads(key),
            "made_by": "jaxclust experiment (kind kmeans_baselines)",
            "run_ids": [r["id"] for r in recs],
        }
        (out_dir / f"{base}_kmeans_baselines.json").write_text(
            json.dumps({"meta": meta, "runs": runs}, indent=1)
        )
        _plot(
            runs,
            out_dir / f"{base}_kmeans_baselines.png",
            f"{meta['description']}: constrained k-means baselines",
        )
        files += [f"{base}_kmeans_baselines.json", f"{base}_kmeans_baselines.png"]
    return {"files": files}


def _plot(runs, path, title):
    """V-beta, homogeneity, completeness, link accuracy against questions (NaN = infeasible COP run)."""
    from matplotlib.figure import Figure

    metrics = ("v_beta", "homogeneity", "completeness", "link_accuracy")
    fig = Figure(figsize=(5 * len(metrics), 4))
    axes = fig.subplots(1, len(metrics))
    names = list(dict.fromkeys(r["name"] for r in runs))
    for ax, metric in zip(axes, metrics, strict=True):
        for nm in names:
            group = [r for r in runs if r["name"] == nm]
            xs = np.array([row["n_queries"] for row in group[0]["history"]], float)
            ys = np.nanmean(
                [
                    [row.get(metric, np.nan) for row in r["history"]]
                    for r in group
                    if len(r["history"]) == len(xs)
                ],
                axis=0,
            )
            style = "--" if "COP" in nm else ("-" if "PCK" in nm else "-.")
            ax.plot(xs, ys, style, label=nm, lw=1.5)
        ax.set_xlabel("questions answered")
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="bio-top only, 40 questions, no NPU")
    ap.add_argument("--out", default="results/kmeans_baselines")
    ap.add_argument("--sets", nargs="+", default=["general", "bio-top", "bio-mid", "bio-fine"])
    ap.add_argument("--strategies", nargs="+", choices=list(STRATEGIES), default=None)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument(
        "--budget", type=int, default=200, help="questions per strategy (the active run's --n-active)"
    )
    ap.add_argument(
        "--step", type=int, default=10, help="evaluate every STEP questions (the active --al-batch)"
    )
    ap.add_argument("--n-init", type=int, default=5)
    ap.add_argument("--n-estimators", type=int, default=50, help="NPU random-forest trees")
    ap.add_argument("--nmf-dims", type=int, default=35)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--merge-with", default=None, help="an active_dpmm.py JSON of the same set, drawn alongside"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.sets, args.budget, args.step = ["bio-top"], 40, 10
        args.strategies = args.strategies or ["explore-consolidate", "minmax"]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    shared = (
        HERE.parent.parent / "shared" / "data"
    )  # the checkout's sibling data folder, as tests/conftest.py
    if args.data_dir is None and "JAXCLUST_DATA" not in os.environ and shared.is_dir():
        os.environ["JAXCLUST_DATA"] = str(shared)
    active = _active_module()
    for s in args.sets:
        run_set(s, args, active)


if __name__ == "__main__":
    main()
