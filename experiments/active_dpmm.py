"""Reproduce Figure 1 of Vlachos, Ghahramani & Briscoe (2010) on the verb sets: active vs random constraints.

Data (read from the evaluation data directory, never copied): the general verbs (VALEX SCFs x VerbNet 3.3 root
classes, balanced 46 x 12 subset; ``general-full`` = all 2,582 verbs, a scale test) and the biomedical verbs
(BioCat SCFs x BioVerbNet, three gold levels used independently: ``bio-top`` 22, ``bio-mid`` 71, ``bio-fine``
112 classes; the seed's bio-16/34/50). Preprocessing as in the seed: NMF to 35 dimensions (scikit-learn), then
columns standardised for the data-driven Normal-Gamma prior of the DPMM.

Per data set (each writes ``<out>/<set>.json`` and ``<out>/<set>.png``):

* (a)-(d): active (the seed's batch method, batches of ``--al-batch``) vs random selection
  (``--random-repeats`` runs, up to ``--n-random`` constraints), V-beta against the number of constraints;
* (e)-(f) (``--compare-naive``): batch selection vs naive top-B batches ("active 10");
* (g)-(h): homogeneity and completeness during active learning (from the active run's history);
* the unsupervised DPMM's pairwise link accuracy (round 0), and how many active constraints reach the V-beta
  that random selection has at its last point.

JSON layout (other methods can append runs): ``{"meta": {...}, "runs": [{"name", "strategy", "batch_size",
"seed", "seconds", "history": [one dict per round: n_queries, n_constraints, v_beta, v_measure, homogeneity,
completeness, vi, link_accuracy, n_clusters, queries, ...]}], "summary": {...}}``.

    python experiments/active_dpmm.py --quick --out results/active_quick
    python experiments/active_dpmm.py --sets bio-fine general --out results/active
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

SETS = ("general", "general-full", "bio-top", "bio-mid", "bio-fine")


def load_set(name: str, data_dir: str | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """Raw non-negative SCF features, gold labels and a description, via ``jaxclust.datasets``."""
    from jaxclust.datasets.verbs import load_verbs_biomed, load_verbs_general

    if name.startswith("general"):
        d = load_verbs_general("full" if name == "general-full" else "balanced", data_dir=data_dir)
    else:
        d = load_verbs_biomed(name.split("-")[1], data_dir=data_dir)
    return np.asarray(d.X, float), np.asarray(d.y), f"{d.name} ({d.target}, {len(np.unique(d.y))} classes)"


def preprocess(X: np.ndarray, n_components: int = 35, seed: int = 0) -> np.ndarray:
    """NMF to ``n_components`` dimensions (the seed's preprocessing), then standardised columns."""
    from sklearn.decomposition import NMF

    k = min(n_components, X.shape[1])
    W = NMF(n_components=k, init="nndsvda", max_iter=800, random_state=seed).fit_transform(X)
    sd = W.std(axis=0)
    return (W - W.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def run_set(name: str, args, echo=print) -> dict:
    from jaxclust.demo import plot_curves, queries_to_reach, run_curves
    from jaxclust.dpmm import DPMM

    X_raw, y, desc = load_set(name, args.data_dir)
    X = preprocess(X_raw, args.nmf_dims, args.seed)
    prior = None
    if args.prior_scale is not None:  # finer components than the DPMM's data-driven default (scale 0.5)
        from jaxclust.dpmm import NormalGamma

        prior = NormalGamma.from_data(X, scale=args.prior_scale)
    model = DPMM(
        prior=prior,
        n_chains=args.n_chains,
        n_burnin=args.n_burnin,
        n_samples=args.n_samples,
        thin=args.thin,
        alpha_prior=(1.0, 1.0),
        max_components=args.max_components,
        random_state=args.seed,
    )
    min_samples = max(4, args.n_chains * args.n_samples // 8)
    strategies = [("active (batch)", "batch", args.al_batch, args.seed)]
    if args.compare_naive:
        strategies.append((f"active {args.al_batch} (naive top-B)", "naive_batch", args.al_batch, args.seed))
    runs = run_curves(
        X,
        y,
        model,
        strategies,
        args.n_active,
        min_samples=min_samples,
        warm_burnin=args.warm_burnin,
        progress=args.progress,
    )
    runs += run_curves(
        X,
        y,
        model,
        [("random", "random", args.random_batch, args.seed + 1 + r) for r in range(args.random_repeats)],
        args.n_random,
        min_samples=min_samples,
        warm_burnin=args.warm_burnin,
        progress=args.progress,
    )
    random_runs = [r for r in runs if r["strategy"] == "random"]
    target = float(np.mean([r["history"][-1]["v_beta"] for r in random_runs]))
    active = [r for r in runs if r["strategy"] == "batch"]
    reach = queries_to_reach(active, target)
    summary = {
        "unsupervised_link_accuracy": active[0]["history"][0]["link_accuracy"],
        "unsupervised_v_beta": active[0]["history"][0]["v_beta"],
        "unsupervised_n_clusters": active[0]["history"][0]["n_clusters"],
        "random_final_n_constraints": random_runs[0]["history"][-1]["n_constraints"],
        "random_final_v_beta_mean": target,
        "active_final_n_constraints": active[0]["history"][-1]["n_constraints"],
        "active_final_v_beta": active[0]["history"][-1]["v_beta"],
        "active_constraints_to_reach_random_final": reach,
    }
    meta = {
        "set": name,
        "description": desc,
        "n_items": int(X.shape[0]),
        "nmf_dims": int(X.shape[1]),
        "model": {k: v for k, v in model.get_params().items() if k != "prior"},
        "prior_scale": args.prior_scale,
        "warm_burnin": args.warm_burnin,
        "min_samples": min_samples,
        "command": " ".join(["python"] + sys.argv),
        "date": time.strftime("%Y-%m-%d"),
    }
    result = {"meta": meta, "runs": runs, "summary": summary}
    out = Path(args.out)
    (out / f"{name}.json").write_text(json.dumps(result, indent=1, default=_jsonable))
    plot_curves(
        runs,
        out / f"{name}.png",
        metrics=("v_beta", "homogeneity", "completeness", "link_accuracy"),
        title=f"{desc}: constrained DPMM, active vs random constraints",
    )
    echo(
        f"[{name}] {desc}, n={X.shape[0]}: "
        f"unsupervised link accuracy {summary['unsupervised_link_accuracy']:.3f}, "
        f"V-beta {summary['unsupervised_v_beta']:.3f}; random at {summary['random_final_n_constraints']} "
        f"constraints: V-beta {target:.3f}; active at {summary['active_final_n_constraints']}: "
        f"{summary['active_final_v_beta']:.3f}; active constraints to reach random's final V-beta: {reach}"
    )
    return result


def _jsonable(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="bio-top only, small sampler, 30 active / 60 random")
    ap.add_argument("--out", default="results/active_dpmm")
    ap.add_argument("--sets", nargs="+", choices=SETS, default=["general", "bio-top", "bio-mid", "bio-fine"])
    ap.add_argument("--data-dir", default=None, help="evaluation data root (default $JAXCLUST_DATA)")
    ap.add_argument("--n-active", type=int, default=200)
    ap.add_argument("--n-random", type=int, default=1000)
    ap.add_argument("--random-repeats", type=int, default=3)
    ap.add_argument("--al-batch", type=int, default=10)
    ap.add_argument("--random-batch", type=int, default=100)
    ap.add_argument("--compare-naive", action="store_true", help="also run naive top-B batches (figures e-f)")
    ap.add_argument("--nmf-dims", type=int, default=35)
    ap.add_argument("--n-chains", type=int, default=5)
    ap.add_argument("--n-burnin", type=int, default=100)
    ap.add_argument("--n-samples", type=int, default=20)
    ap.add_argument("--thin", type=int, default=5)
    ap.add_argument("--warm-burnin", type=int, default=20)
    ap.add_argument(
        "--prior-scale",
        type=float,
        default=None,
        help="NormalGamma.from_data scale (default: the DPMM's prior)",
    )
    ap.add_argument(
        "--max-components",
        type=int,
        default=64,
        help="initial component slots (fixed shapes: fewer recompiles)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.sets = ["bio-top"] if args.sets == ap.get_default("sets") else args.sets
        args.n_active, args.n_random, args.random_repeats = 30, 60, 1
        args.al_batch, args.random_batch = 10, 30
        args.n_chains, args.n_burnin, args.n_samples, args.thin, args.warm_burnin = 2, 30, 10, 2, 10
    import matplotlib

    matplotlib.use("Agg")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for name in args.sets:
        t0 = time.perf_counter()
        run_set(name, args)
        print(f"[{name}] {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
