"""Fallible annotators: how much of active learning's gain survives wrong answers, and what soft answers recover.

Vlachos, Ghahramani & Briscoe (2010) assume a perfect oracle and suggest, as an extension, modelling answers
that may be wrong. Here a ``NoisyOracle`` flips the gold answer with probability ``flip_rate`` (0, 5 %, 10 %,
20 %); the DPMM takes the answers either as hard constraints (``mode="hard"``: the earliest answers win, a
contradicting later one is dropped) or as observations with an error rate (``mode="soft"``: eps = the true flip
rate; ``mode="soft2x"``: eps = twice it, a misspecified rate; both at least ``EPS_FLOOR`` so that the noiseless
setting is also run with a small doubt). Strategies: the link-entropy batch method ("active") and random pairs.
Data: scikit-learn's wine (178 x 13) and the balanced general verb set (552 verbs x 35 NMF dimensions, 46
classes; the empirical-Bayes prior scale 0.03 of ``active_dpmm.py``).

    python experiments/noisy_annotators.py --quick --out results/noisy_quick
    jaxclust experiment run experiments/configs/noisy_annotators.toml --out results/grid/noisy

Each run's JSON is one learning curve (``run_one``); ``summarize`` draws V-beta against questions, one panel per
(data set, flip rate), mean over seeds with the range as a band, and tabulates the final V-beta and the gain of
active over random per setting.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

EPS_FLOOR = 0.02
MODES = ("hard", "soft", "soft2x")
DATASETS = ("wine", "general")


def error_rate(mode: str, flip_rate: float) -> float:
    """The error rate the model assumes for an answer."""
    if mode == "hard":
        return 0.0
    eps = flip_rate * (2.0 if mode == "soft2x" else 1.0)
    return float(min(0.5, max(EPS_FLOOR, eps)))


def load(dataset: str, data_seed: int = 0, data_dir=None):
    """Features, labels and the DPMM prior (None: the default) of a data set."""
    if dataset == "wine":
        from jaxclust.apps.demo import load_wine_standardised

        X, y = load_wine_standardised()
        return X, y, None
    if dataset == "general":
        from jaxclust.apps.experiment.registry import load_target
        from jaxclust.dpmm import NormalGamma

        load_set = load_target("@experiments/active_dpmm.py:load_set")
        preprocess = load_target("@experiments/active_dpmm.py:preprocess")
        X_raw, y, _ = load_set("general", data_dir)
        X = preprocess(X_raw, 35, data_seed)
        return X, y, NormalGamma.from_data(X, scale=0.03)
    from jaxclust.errors import InvalidInputError

    raise InvalidInputError(f"dataset: expected one of {DATASETS}, got {dataset!r}")


def run_one(
    dataset: str,
    flip_rate: float = 0.1,
    mode: str = "soft",
    strategy: str = "batch",
    seed: int = 0,
    n_queries: int = 100,
    batch_size: int = 10,
    n_chains: int = 4,
    n_burnin: int = 50,
    n_samples: int = 10,
    thin: int = 3,
    warm_burnin: int = 15,
    max_components: int = 64,
    data_seed: int = 0,
    data_dir: str | None = None,
) -> dict:
    """ONE learning curve (grid kind ``noisy_annotators``): the oracle's flips and the random strategy's pairs
    follow ``seed``, the model's fits ``seed`` too (so active and random share their first fit)."""
    from jaxclust import DPMM
    from jaxclust.active import ActiveLearner, NoisyOracle
    from jaxclust.errors import InvalidInputError

    if mode not in MODES:
        raise InvalidInputError(f"mode: expected one of {MODES}, got {mode!r}")
    X, y, prior = load(dataset, data_seed, data_dir)
    model = DPMM(
        prior=prior,
        n_chains=n_chains,
        n_burnin=n_burnin,
        n_samples=n_samples,
        thin=thin,
        alpha_prior=(1.0, 1.0),
        capacity=max_components,  # the experiments' name for DPMM's starting slots
        random_state=seed,
    )
    eps = error_rate(mode, flip_rate)
    learner = ActiveLearner(
        model,
        NoisyOracle(y, flip_rate=flip_rate, random_state=seed),
        strategy=strategy,
        batch_size=batch_size,
        min_samples=max(4, n_chains * n_samples // 8),
        random_state=seed,
        warm_burnin=warm_burnin,
        progress=False,
        error_rate=eps,
        propagation="pairs",  # the reported runs: answers on their pairs only
    )
    t0 = time.perf_counter()
    history = learner.run(X, n_queries, eval_labels=y)
    wrong = sum(
        (a["answer"] == "must") != (y[a["i"]] == y[a["j"]])
        for a in learner.answers_
        if a["answer"] != "unknown"
    )
    return {
        "run": {
            "name": f"{'active' if strategy != 'random' else 'random'} / {mode}",
            "strategy": strategy,
            "mode": mode,
            "error_rate": eps,
            "flip_rate": flip_rate,
            "seed": seed,
            "batch_size": batch_size,
            "seconds": time.perf_counter() - t0,
            "wrong_answers": int(wrong),
            "dropped_answers": len(learner.dropped_),
            "history": history,
        },
        "meta": {
            "dataset": dataset,
            "n": int(len(y)),
            "classes": int(len(np.unique(y))),
            # the prior object is not JSON: name it instead (None: the DPMM's default data-driven prior)
            "model": {
                **model.get_params(),
                "prior": "default" if prior is None else "empirical Bayes, scale 0.03",
            },
        },
    }


def summarize(records: list[dict], out_dir) -> dict:
    """V-beta curves per (data set, flip rate), and a table of final V-beta and the active - random gain."""
    from matplotlib.figure import Figure

    from jaxclust.apps.demo import plot_curves

    out_dir = Path(out_dir)
    by_panel: dict[tuple, list[dict]] = {}
    for rec in records:
        p = rec["params"]
        by_panel.setdefault((p["dataset"], float(p.get("flip_rate", 0.1))), []).append(rec["result"]["run"])
    panels = sorted(by_panel)
    table = []
    for (dataset, flip), runs in sorted(by_panel.items()):
        finals: dict[str, list[float]] = {}
        for r in runs:
            finals.setdefault(r["name"], []).append(r["history"][-1]["v_beta"])
        for mode in MODES:
            act, rnd = finals.get(f"active / {mode}"), finals.get(f"random / {mode}")
            if act is None and rnd is None:
                continue
            table.append(
                {
                    "dataset": dataset,
                    "flip_rate": flip,
                    "mode": mode,
                    "active_final": float(np.mean(act)) if act else None,
                    "random_final": float(np.mean(rnd)) if rnd else None,
                    "gain": float(np.mean(act) - np.mean(rnd)) if act and rnd else None,
                    "seeds": len(act or rnd),
                    "start": float(np.mean([r["history"][0]["v_beta"] for r in runs])),
                }
            )
    files = []
    if panels:
        datasets = sorted({d for d, _ in panels})
        flips = sorted({f for _, f in panels})
        fig = Figure(figsize=(4.2 * len(flips), 3.6 * len(datasets)), layout="tight")
        axes = fig.subplots(len(datasets), len(flips), squeeze=False)
        for a, dataset in enumerate(datasets):
            for b, flip in enumerate(flips):
                ax = axes[a][b]
                runs = sorted(by_panel.get((dataset, flip), []), key=lambda r: r["name"])
                if runs:
                    plot_curves(runs, metrics=("v_beta",), axes=[ax])
                ax.set_title(f"{dataset}: {flip:.0%} of answers wrong", fontsize=10)
                if ax.get_legend() is not None:
                    ax.get_legend().set_visible(a == 0 and b == 0)
        fig.suptitle("active vs random under annotator error: hard constraints vs answers with an error rate")
        fig.savefig(out_dir / "noisy_annotators.png", dpi=100)
        files.append("noisy_annotators.png")
    (out_dir / "noisy_annotators.json").write_text(json.dumps({"table": table}, indent=1))
    files.append("noisy_annotators.json")
    return {"files": files, "table": table}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="wine only, 2 flip rates, 30 questions, one seed")
    ap.add_argument("--out", default="results/noisy_annotators")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        grid = [
            dict(dataset="wine", flip_rate=f, mode=m, strategy=s, seed=0, n_queries=30, batch_size=10, n_chains=2,
                 n_burnin=20, n_samples=5, thin=2, warm_burnin=10)
            for f in (0.0, 0.2) for m in MODES for s in ("batch", "random")
        ]  # fmt: skip
    else:
        grid = [
            dict(dataset=d, flip_rate=f, mode=m, strategy=s, seed=seed, data_dir=args.data_dir)
            for d in DATASETS for f in (0.0, 0.05, 0.1, 0.2) for m in MODES for s in ("batch", "random")
            for seed in (0, 1)
        ]  # fmt: skip
    records = []
    for k, params in enumerate(grid):
        result = run_one(**params)
        records.append({"params": params, "result": result})
        run = result["run"]
        print(f"[{k + 1}/{len(grid)}] {params['dataset']} flip {params['flip_rate']:.2f} {run['name']}: "
              f"V-beta {run['history'][-1]['v_beta']:.3f} ({run['seconds']:.0f} s)")  # fmt: skip
    summary = summarize(records, out)
    for row in summary["table"]:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
