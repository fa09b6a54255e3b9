"""Do correct answers compose in the two-level mixture? Random pairs answered from the gold labels, at growing budgets.

For each data set and budget, the answers (hard must-links / cannot-links between random pairs, right by the gold
labels) are given to ``NestedDPMM`` (classes of components, answers acting on classes; :mod:`jaxclust.dpmm.nested`)
with its defaults; the clustering is its ``labels_``, the class labelling of least Binder loss among the retained
samples. Written: ``nested_answers.json`` (ARI and
number of classes per set, budget and seed) and ``nested_answers.png`` in ``--out``.

``NestedDPMM``'s defaults (``--param NAME=VALUE`` sets others): columns standardised, each value standing for the
interval of its column's step (the median gap between its distinct values); each component's prior mean 0,
``kappa = 0.05``, ``shape = 2``, ``scale = 0.5`` (a component's expected variance half a column's), ``alpha = 1``
and ``gamma`` (see its docstring); 4 chains of 150 iterations (an item sweep, a component sweep, 20 proposals each
of class split-merge, component split-merge and group moves), 100 burn-in, every 5th kept; each chain starts from
a k-means partition into 12 parts, repaired to keep the hard answers.

    python experiments/nested_answers.py --out experiments/results/nested_answers --seeds 0 1 2

``--session STRATEGY`` runs, instead of one fit per budget, one session ``ActiveLearner(NestedDPMM(random_state=seed),
GoldOracle(y), strategy=STRATEGY, batch_size=25, propagation="pairs")`` per set and seed (warm refits every 25
answers, the session's own questions), read at each budget.

``--baseline`` also runs today's default session on the same sets, budgets and seeds, as a user writes it:
``ActiveLearner(DPMM(random_state=seed), GoldOracle(y), strategy="random", batch_size=25)`` (its own random pairs,
its class layer), and reports ``labels_``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn import datasets
from sklearn.metrics import adjusted_rand_score

from jaxclust import Constraints, NestedDPMM
from jaxclust.coclustering import least_squares_sample
from jaxclust.metrics import v_beta

SETS = {
    "wine": datasets.load_wine,
    "iris": datasets.load_iris,
    "breast_cancer": datasets.load_breast_cancer,
}
BUDGETS = (0, 50, 200, 1000)


def load_set(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Standardised features and gold labels: the three scikit-learn sets above, any set of the active suite
    (``experiments/active_suite.py``) or a verb set ``verbs-general``, ``verbs-bio-top``, ... (the verb runs'
    35 NMF dimensions, ``experiments/active_dpmm.py``); the last two need ``../shared/data``."""
    if name in SETS:
        X, y = SETS[name](return_X_y=True)
        return (X - X.mean(0)) / X.std(0), y
    if name.startswith("verbs-"):
        from active_dpmm import load_set as load_verbs
        from active_dpmm import preprocess

        X, y, _ = load_verbs(name.removeprefix("verbs-"))
        return preprocess(X), np.unique(y, return_inverse=True)[1]
    from active_suite import load

    return load(name)


def references(X, y, seed: int) -> list[dict]:
    """What a user would have without answers: k-means with the true number of classes, and every item alone
    (the clustering V-beta rates as high as any on sets of many small classes, and ARI rates 0)."""
    from sklearn.cluster import KMeans

    k = int(len(np.unique(y)))
    km = KMeans(k, n_init=10, random_state=seed).fit_predict(X)
    alone = np.arange(len(y))
    return [
        {
            "model": f"KMeans({k})",
            "ari": float(adjusted_rand_score(y, km)),
            "v_beta": float(v_beta(y, km)),
            "n_classes": k,
        },
        {
            "model": "singletons",
            "ari": float(adjusted_rand_score(y, alone)),
            "v_beta": float(v_beta(y, alone)),
            "n_classes": len(y),
        },
    ]


def random_answers(y: np.ndarray, budget: int, seed: int, wrong: float = 0.0) -> list[tuple]:
    """``budget`` random pairs answered from the gold labels ``y``; with ``wrong`` > 0 each answer is flipped with
    that probability (the flips fixed by the seed) and given as a soft answer with that error rate."""
    rng = np.random.default_rng([seed, 17])
    flips = np.random.default_rng([seed, 29]).random(budget) < wrong
    out = []
    while len(out) < budget:
        i, j = (int(v) for v in rng.choice(len(y), 2, replace=False))
        same = (y[i] == y[j]) != flips[len(out)]
        out.append((i, j, "must" if same else "cannot") + ((wrong,) if wrong > 0 else ()))
    return out


def nested_classes(X, answers, seed: int, **params) -> np.ndarray:
    """Class labels of the retained samples (S, n) of ``NestedDPMM(random_state=seed, **params)``."""
    cons = Constraints.from_answers(X.shape[0], answers, on_conflict="drop")
    return NestedDPMM(random_state=seed, **params).fit(X, constraints=cons).samples_


def default_session(X, y, budget: int, seed: int) -> np.ndarray:
    """``labels_`` of today's default session after ``budget`` random answers."""
    from jaxclust import DPMM
    from jaxclust.active import ActiveLearner, GoldOracle

    learner = ActiveLearner(
        DPMM(random_state=seed),
        GoldOracle(y),
        strategy="random",
        batch_size=25,
        random_state=seed,
        progress=False,
    )
    learner.run(X, budget)
    return np.asarray(learner.labels_)


def nested_session(X, y, budgets, seed: int, strategy: str) -> list[dict]:
    """One session ``ActiveLearner(NestedDPMM(random_state=seed), GoldOracle(y), strategy=strategy,
    batch_size=25, propagation="pairs")`` (warm refits, every 25 answers) up to the largest budget: per budget
    the session's scores after its last round that ended at or before it (its history's ``ari`` and
    ``n_clusters``: means over the retained samples) and that round's seconds."""
    from jaxclust.active import ActiveLearner, GoldOracle

    learner = ActiveLearner(
        NestedDPMM(random_state=seed),
        GoldOracle(y),
        strategy=strategy,
        batch_size=25,
        propagation="pairs",
        random_state=seed,
        progress=False,
    )
    history = learner.run(X, max(budgets), eval_labels=y)
    rows = []
    for b in budgets:
        r = [h for h in history if h["n_queries"] <= b][-1]
        rows.append({"budget": b, "ari": r["ari"], "n_classes": r["n_clusters"], "seconds": r["seconds"]})
    return rows


def two_annotators(X, y, seed: int, n_each: int) -> list[dict]:
    """Answers of two annotators pooled: two default sessions (``ActiveLearner(DPMM(random_state=seed + a),
    GoldOracle(y))``, a = 0, 1, each asking its own ``n_each`` questions), then one fit of each model on the
    union of their answers. Rows: each session alone (its ``labels_``), and ``NestedDPMM`` and the default
    session's class layer (``ActiveLearner(DPMM(random_state=seed)).run(X, 0, constraints=...)``) given one
    annotator's answers or both."""
    from jaxclust import DPMM
    from jaxclust.active import ActiveLearner, GoldOracle

    rows, answers = [], []
    for a in (0, 1):
        t0 = time.perf_counter()
        learner = ActiveLearner(
            DPMM(random_state=seed + a), GoldOracle(y), random_state=seed + a, progress=False
        )
        learner.run(X, n_each)
        answers.append(
            [(r["i"], r["j"], r["answer"]) for r in learner.answers_ if r["answer"] in ("must", "cannot")]
        )
        rows.append(
            {
                "model": f"annotator {a}: its own session",
                "answers": f"annotator {a}",
                "ari": float(adjusted_rand_score(y, learner.labels_)),
                "n_classes": int(len(np.unique(learner.labels_))),
                "seconds": time.perf_counter() - t0,
            }
        )
    given = {"annotator 0": answers[0], "annotator 1": answers[1], "both": answers[0] + answers[1]}
    for who, ans in given.items():
        cons = Constraints.from_answers(len(y), ans, on_conflict="drop")
        t0 = time.perf_counter()
        nested = NestedDPMM(random_state=seed).fit(X, constraints=cons).labels_
        rows.append(
            {
                "model": "NestedDPMM()",
                "answers": who,
                "n_answers": len(ans),
                "ari": float(adjusted_rand_score(y, nested)),
                "n_classes": int(len(np.unique(nested))),
                "seconds": time.perf_counter() - t0,
            }
        )
        t0 = time.perf_counter()
        layer = ActiveLearner(DPMM(random_state=seed), GoldOracle(y), progress=False)
        layer.run(X, 0, constraints=cons)
        rows.append(
            {
                "model": "ActiveLearner(DPMM()) class layer",
                "answers": who,
                "n_answers": len(ans),
                "ari": float(adjusted_rand_score(y, layer.labels_)),
                "n_classes": int(len(np.unique(layer.labels_))),
                "seconds": time.perf_counter() - t0,
            }
        )
    return rows


def _anneal(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="experiments/results/nested_answers")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument(
        "--sets",
        nargs="+",
        default=list(SETS),
        help="scikit-learn's wine, iris, breast_cancer or a suite set",
    )
    ap.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    ap.add_argument(
        "--baseline", action="store_true", help="also run the default ActiveLearner(DPMM()) session"
    )
    ap.add_argument("--baseline-only", action="store_true", help="run only the default session")
    ap.add_argument("--from-json", nargs="+", default=[], help="rows of earlier runs to add (and plot)")
    ap.add_argument(
        "--session",
        metavar="STRATEGY",
        help="instead of one fit per budget, one ActiveLearner(NestedDPMM(), propagation='pairs') session asking "
        "its own questions by STRATEGY (random, explore, ...), read at each budget",
    )
    ap.add_argument(
        "--anneal-from", default="default", help="NestedDPMM's anneal_from ('none' for no annealing)"
    )
    ap.add_argument(
        "--param",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="NestedDPMM parameters other than the defaults (numbers), e.g. gamma=10",
    )
    ap.add_argument(
        "--two-annotators",
        type=int,
        metavar="N",
        help="instead: two default sessions of N questions each, their answers pooled (two_annotators)",
    )
    ap.add_argument(
        "--references",
        action="store_true",
        help="also k-means with the true k and all singletons (no answers)",
    )
    ap.add_argument(
        "--wrong",
        type=float,
        default=0.0,
        help="flip each random answer with this probability and give it as a soft answer with this rate",
    )
    args = ap.parse_args()
    # an integer as written stays one (n_split_merge, n_chains); any other number is a float
    given = {
        k: int(v) if v.lstrip("-").isdigit() else float(v) for k, v in (p.split("=", 1) for p in args.param)
    }
    if args.wrong and (args.session or args.baseline or args.baseline_only):
        ap.error("--wrong is for the one-fit-per-budget runs of NestedDPMM")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [row for f in args.from_json for row in json.loads(Path(f).read_text())]
    for name in [] if args.from_json else args.sets:
        X, y = load_set(name)
        for seed in args.seeds:
            if args.references:
                for ref in references(X, y, seed):
                    rows.append({"set": name, "seed": seed, "budget": 0, **ref})
                    print(json.dumps(rows[-1]), flush=True)
            if args.two_annotators:
                for row in two_annotators(X, y, seed, args.two_annotators):
                    rows.append({"set": name, "seed": seed, "budget": args.two_annotators, **row})
                    print(json.dumps(rows[-1]), flush=True)
                continue
            if args.session:
                model = f"ActiveLearner(NestedDPMM(), {args.session!r})"
                for row in nested_session(X, y, args.budgets, seed, args.session):
                    rows.append({"set": name, "model": model, "seed": seed, **row})
                    print(json.dumps(rows[-1]), flush=True)
                continue
            for budget in args.budgets:
                if args.baseline or args.baseline_only:
                    t0 = time.perf_counter()
                    labels = default_session(X, y, budget, seed)
                    row = {
                        "set": name,
                        "model": "ActiveLearner(DPMM())",
                        "seed": seed,
                        "budget": budget,
                        "ari": float(adjusted_rand_score(y, labels)),
                        "n_classes": int(len(np.unique(labels))),
                        "seconds": time.perf_counter() - t0,
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                if args.baseline_only:
                    continue
                t0 = time.perf_counter()
                params = dict(given)
                if args.anneal_from != "default":
                    params["anneal_from"] = _anneal(args.anneal_from)
                samples = nested_classes(X, random_answers(y, budget, seed, args.wrong), seed, **params)
                best = samples[least_squares_sample(samples)]  # NestedDPMM's labels_
                row = {
                    "set": name,
                    "model": f"NestedDPMM({', '.join(f'{k}={v}' for k, v in params.items())})"
                    + (f", {args.wrong:.0%} wrong" if args.wrong else ""),
                    "seed": seed,
                    "budget": budget,
                    "ari": float(adjusted_rand_score(y, best)),
                    "v_beta": float(v_beta(y, best)),
                    "mean_ari": float(np.mean([adjusted_rand_score(y, s) for s in samples])),
                    "n_classes": int(len(np.unique(best))),
                    "n_gold": int(len(np.unique(y))),
                    "wrong": args.wrong,
                    "seconds": time.perf_counter() - t0,
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    (out / "nested_answers.json").write_text(json.dumps(rows, indent=1) + "\n")

    from matplotlib import colormaps
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 4.5))
    ax = fig.add_subplot()
    budgets = args.budgets
    models = sorted({r["model"] for r in rows})
    for k, name in enumerate(args.sets):
        colour = colormaps["tab10" if len(args.sets) <= 10 else "tab20"](k)  # one colour per set
        for model in models:
            style = ":" if model.startswith("ActiveLearner(DPMM") else "-"
            got = [
                [r["ari"] for r in rows if (r["set"], r["model"], r["budget"]) == (name, model, b)]
                for b in budgets
            ]
            if all(got):
                ax.plot(
                    budgets,
                    [np.mean(g) for g in got],
                    style,
                    color=colour,
                    marker="o",
                    label=f"{name}, {model}",
                )
    ax.set_xscale("symlog", linthresh=50)
    ax.set_xlabel("random correct answers")
    ax.set_ylabel("ARI (least-squares class labelling)")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(out / "nested_answers.png", dpi=120)


if __name__ == "__main__":
    main()
