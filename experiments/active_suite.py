"""Active clustering suite: how much each answer is worth, against COBRAS, on data we did not tune on.

Fourteen labelled sets (UCI and other sets of the clustering benchmark battery, scikit-learn's digits, and four
whose classes are unions of sub-types: a synthetic set of 4 classes made of 2-3 separated blobs each, the two
moons, digits grouped into 3 classes, glass grouped into window / non-window), standardised per column. Each run
is one learning curve: one method, one seed, one oracle (``gold``: every answer right; ``noisy``: 10 % of the
answers flipped, the flip of a pair fixed by the seed so a repeated question gets the same answer).

Methods, all at equal numbers of questions:

* ``cobras``: COBRAS with k-means splits (Van Craenendonck et al. 2018, the ``cobras-ts`` package; it needs
  NumPy's removed ``np.int`` alias and its GUI queriers out of the way: :func:`cobras_curve` does both here,
  never in the library).
* ``explore_classes``: jaxclust's default session, ``ActiveLearner(DPMM(...))``: questions about untested pairs
  of components, answers joining components into classes.
* ``explore_pairs``, ``batch_classes``: the two mechanisms apart (component questions with answers on pairs
  only; the link-entropy batch method with answers joining classes).
* ``batch_pairs``: the previous default (link-entropy batch method, answers on pairs only).
* ``random_pairs``: random pairs, answers on pairs only (refit every 10 answers).
* ``nested_explore``, ``nested_random``: ``ActiveLearner(NestedDPMM(random_state=seed), ...)`` with its
  defaults (classes of components in the sampled model, answers on its classes): the explore questions refitted
  after every answer, random pairs refitted every 10 answers.

The DPMM is the ``jaxclust annotate`` model (4 chains, 50 burn-in, 10 samples 3 apart, default prior); with
the noisy oracle the learner is told ``error_rate=0.1`` (answers as observations), as a user who knows the
annotators err would. Scores: ARI and V-beta (beta = 1) of the session's labels against the gold classes after
every answer; the summary reports them at 20/60/100/200 questions, the area under the ARI curve (mean ARI over
0..n_queries questions) and, per set, whether the default session is at or above COBRAS at 60 questions.

    jaxclust experiment run experiments/configs/active_suite.toml --out results/grid/active_suite
    python experiments/active_suite.py --dataset wine --method explore_classes --n-queries 60
    python experiments/active_suite.py --summarize results/grid/active_suite_* --out results/active_suite
    python experiments/active_suite.py --kmeans      # k-means with the true k on every set, no question
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types
from pathlib import Path

import numpy as np

DATASETS = (
    "iris",
    "wine",
    "ecoli",
    "glass",
    "wdbc",
    "ionosphere",
    "sonar",
    "yeast",
    "statlog",
    "digits",
    "blobs_subtypes",
    "moons",
    "digits_groups",
    "glass_window",
)
#: Texts (``experiments/text_features.py``'s draws of BBC news and 20 Newsgroups, 600 each), on the features a
#: text session gets by default (``wordllama``) or got before (``tfidf``), as the apps give them (not standardised)
TEXT_SETS = tuple(
    f"{s}_{f}"
    for s in ("bbc600_0", "bbc600_1", "bbc600_2", "ng6_0", "ng6_1", "ng6_2")
    for f in ("wordllama", "tfidf")
)
SUBTYPE_SETS = ("blobs_subtypes", "moons", "digits_groups", "glass_window")
METHODS = (
    "cobras",
    "explore_classes",
    "explore_components",
    "explore_pairs",
    "batch_classes",
    "batch_pairs",
    "random_pairs",
    "nested_explore",
    "nested_random",
)
ORACLES = ("gold", "noisy")
FLIP_RATE = 0.1
CHECKPOINTS = (20, 60, 100, 200)
_BATTERY = {
    "iris": ("other", "iris"),
    "wine": ("uci", "wine"),
    "ecoli": ("uci", "ecoli"),
    "glass": ("uci", "glass"),
    "wdbc": ("uci", "wdbc"),
    "ionosphere": ("uci", "ionosphere"),
    "sonar": ("uci", "sonar"),
    "yeast": ("uci", "yeast"),
    "statlog": ("uci", "statlog"),
}
_SUBSAMPLE = {"statlog": 800, "digits": 600, "digits_groups": 600}


def load(dataset: str, data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """Standardised features (n, d) and gold labels (n,) of a suite set (the subsamples are fixed: seed 0); a
    text set's features as the apps make them."""
    from sklearn.preprocessing import StandardScaler

    if dataset in TEXT_SETS:
        from text_features import FEATURIZERS, load_sets

        name, features = dataset.rsplit("_", 1)
        where = data_dir or os.environ.get("JAXCLUST_DATA") or "../shared/data"
        texts, y = load_sets(Path(where))[name]
        return np.asarray(FEATURIZERS[features]().fit_transform(texts), np.float64), np.asarray(y, np.int64)

    rng = np.random.default_rng(0)
    if dataset in _BATTERY:
        from jaxclust.datasets import load_clustering_benchmark

        ds = load_clustering_benchmark(*_BATTERY[dataset], data_dir=data_dir)
        X, y = ds.X, ds.labels[ds.target]
    elif dataset in ("digits", "digits_groups"):
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        if dataset == "digits_groups":  # 3 classes, each a union of 3-4 digits
            y = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2])[y]
    elif dataset == "glass_window":  # window glass (3 kinds) vs non-window glass (3 kinds)
        from jaxclust.datasets import load_clustering_benchmark

        ds = load_clustering_benchmark("uci", "glass", data_dir=data_dir)
        X, y = ds.X, (ds.labels[ds.target] >= 4).astype(np.int64)
    elif dataset == "blobs_subtypes":  # 4 classes, each 2-3 separated Gaussian blobs in 6 dimensions
        sizes = [3, 2, 3, 2]
        centres = rng.normal(0.0, 6.0, size=(sum(sizes), 6))
        X = np.concatenate([c + rng.normal(size=(40, 6)) for c in centres])
        y = np.repeat(np.repeat(np.arange(4), sizes), 40)
    elif dataset == "moons":
        from sklearn.datasets import make_moons

        X, y = make_moons(400, noise=0.06, random_state=0)
    else:
        from jaxclust.errors import InvalidInputError

        raise InvalidInputError(f"dataset: expected one of {DATASETS}, got {dataset!r}")
    if dataset in _SUBSAMPLE and len(X) > _SUBSAMPLE[dataset]:
        keep = np.sort(rng.choice(len(X), _SUBSAMPLE[dataset], replace=False))
        X, y = X[keep], y[keep]
    X = np.asarray(X, np.float64)
    keep_cols = X.std(axis=0) > 0
    return StandardScaler().fit_transform(X[:, keep_cols]), np.asarray(y, np.int64)


def _scores(y, labels) -> tuple[float, float]:
    from sklearn.metrics import adjusted_rand_score

    from jaxclust.metrics.partition import v_beta

    return float(adjusted_rand_score(y, labels)), float(v_beta(y, labels))


def cobras_curve(X, y, n_queries: int, answer, seed: int = 0) -> tuple[list, list]:
    """COBRAS (k-means splits) for ``n_queries`` questions; the labels after each answer (the last clustering
    repeated when COBRAS finishes early), and its wall time per question.
    """
    np.int = int  # cobras-ts uses the alias NumPy 1.24 removed
    for name in ("visualquerier", "visualquerier_images", "notebookquerier_images", "notebookquerier_ts"):
        stub = types.ModuleType(f"cobras_ts.querier.{name}")  # GUI queriers need bokeh/tensorflow: not used
        stub.VisualQuerier = stub.VisualImageQuerier = object
        sys.modules.setdefault(f"cobras_ts.querier.{name}", stub)
    from cobras_ts.cobras_kmeans import COBRAS_kmeans
    from cobras_ts.querier.querier import Querier

    class _Oracle(Querier):
        def query_points(self, i, j):
            return answer(int(i), int(j)) == "must"

    np.random.seed(seed)  # COBRAS draws through NumPy's global generator (k-means inits, representatives)
    t = time.perf_counter()
    _, inter, *_ = COBRAS_kmeans(X, _Oracle(), n_queries).cluster()
    seconds = (time.perf_counter() - t) / max(len(inter), 1)
    curve = [np.zeros(len(y), np.int64)] + [np.asarray(c) for c in inter]
    while len(curve) < n_queries + 1:
        curve.append(curve[-1])
    return curve, [seconds] * n_queries


WIDTHS = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0)


def _session_curve(learner, X, n_queries: int, teller, constraints=None):
    """Run ``learner``'s session for ``n_queries`` answers of ``teller``: the labels after 0..n answers, the
    seconds per answer, and the answers ``(i, j, answer)``."""
    session = learner.iter_questions(X, n_queries, constraints=constraints)
    curve, seconds, answers = [], [], []
    try:
        pair = next(session)
        while True:
            curve.append(np.asarray(learner.labels_))
            t = time.perf_counter()
            reply = teller.answer(*pair)
            answers.append((min(pair), max(pair), reply))
            pair = session.send(reply)
            seconds.append(time.perf_counter() - t)
    except StopIteration:
        pass
    curve.append(np.asarray(learner.labels_))
    return curve, seconds, answers


def answers_log_likelihood(samples: np.ndarray, i, j, same) -> float:
    """``sum log p(answer)`` of answered pairs ``(i, j)`` (``same``: True for "must") under the sampled
    partitions ``samples`` (S, n): the share of samples that put ``i`` and ``j`` together, clipped to [0.02,
    0.98] (a share of 0 or 1 from a few samples is not a certainty), is the probability of "same"."""
    p = np.clip(np.mean(samples[:, i] == samples[:, j], axis=0), 0.02, 0.98)
    return float(np.sum(np.where(same, np.log(p), np.log1p(-p))))


def best_width(score: dict) -> float:
    """The width of highest ``score`` (``{width: log-likelihood}``); ties go to the one nearest the default 0.5."""
    return max(score, key=lambda w: (score[w], -abs(np.log(w / 0.5))))


def choose_width(X, answers, settings, widths=WIDTHS) -> float:
    """The prior width (of ``widths``) whose unsupervised DPMM samples give ``answers`` ``(i, j, "must" |
    "cannot")`` the highest :func:`answers_log_likelihood` (:func:`best_width`)."""
    from jaxclust import DPMM
    from jaxclust.dpmm import NormalGamma

    i = np.array([a[0] for a in answers if a[2] != "unknown"], np.int64)
    j = np.array([a[1] for a in answers if a[2] != "unknown"], np.int64)
    same = np.array([a[2] == "must" for a in answers if a[2] != "unknown"])
    return best_width(
        {
            w: answers_log_likelihood(
                DPMM(prior=NormalGamma.from_data(X, scale=w), **settings).fit(X).samples_, i, j, same
            )
            for w in widths
        }
    )


def run_one(
    dataset: str,
    method: str = "explore_classes",
    seed: int = 0,
    oracle: str = "gold",
    n_queries: int = 200,
    n_chains: int = 4,
    n_burnin: int = 50,
    n_samples: int = 10,
    thin: int = 3,
    prior_scale: float | None = None,
    choose_width_after: int | None = None,
    widths: list | None = None,
    data_dir: str | None = None,
    dpmm_defaults: bool = False,
    warm_thin: int | None = None,
    warm_burnin: int | None = None,
) -> dict:
    """ONE learning curve (grid kind ``active_suite``): ARI and V-beta after 0..n_queries answers.

    ``prior_scale``: None for the DPMM's default prior, else ``NormalGamma.from_data(X, scale=prior_scale)``.
    ``choose_width_after`` (DPMM methods): after that many answers, the prior width whose unsupervised samples
    give those answers the highest log-likelihood (of :data:`WIDTHS`) replaces the prior, and a new session
    goes on from the answers so far (:func:`choose_width`); ``widths`` replaces that list (``[0.5]``: the same
    restart at the default width, the control).
    ``dpmm_defaults``: ``DPMM(random_state=seed)`` as a user writes it, not the chain settings above;
    ``warm_thin``, ``warm_burnin``: the session's (None: the learner's default).
    """
    from jaxclust import DPMM
    from jaxclust.active import ActiveLearner, GoldOracle, NoisyOracle
    from jaxclust.errors import InvalidInputError

    if method not in METHODS:
        raise InvalidInputError(f"method: expected one of {METHODS}, got {method!r}")
    if oracle not in ORACLES:
        raise InvalidInputError(f"oracle: expected one of {ORACLES}, got {oracle!r}")
    X, y = load(dataset, data_dir)
    teller = GoldOracle(y) if oracle == "gold" else NoisyOracle(y, FLIP_RATE, random_state=seed)
    chosen = None
    session_kw = {k: v for k, v in (("warm_thin", warm_thin), ("warm_burnin", warm_burnin)) if v is not None}
    t0 = time.perf_counter()
    if method == "cobras":
        curve, seconds = cobras_curve(X, y, n_queries, teller.answer, seed)
    elif method.startswith("nested_"):
        from jaxclust import NestedDPMM

        strategy = method.split("_")[1]
        session = ActiveLearner(
            NestedDPMM(random_state=seed),
            teller,
            strategy=strategy,
            batch_size=10 if strategy == "random" else 1,
            random_state=seed,
            progress=False,
            error_rate=0.0 if oracle == "gold" else FLIP_RATE,
            **session_kw,
        )
        curve, seconds, _ = _session_curve(session, X, n_queries, teller)
        while len(curve) < n_queries + 1:
            curve.append(curve[-1])
    else:
        strategy, propagation = method.split("_")
        strategy = "random" if strategy == "random" else strategy
        from jaxclust.dpmm import NormalGamma

        prior = None if prior_scale is None else NormalGamma.from_data(X, scale=prior_scale)
        settings = dict(
            n_chains=n_chains, n_burnin=n_burnin, n_samples=n_samples, thin=thin, random_state=seed
        )
        if dpmm_defaults:
            settings = dict(random_state=seed)
        rate = 0.0 if oracle == "gold" else FLIP_RATE

        def learner(prior):
            return ActiveLearner(
                DPMM(prior=prior, **settings),
                teller,
                strategy=strategy,
                batch_size=10 if strategy == "random" else 1,
                random_state=seed,
                progress=False,
                error_rate=rate,
                propagation=propagation,
                **session_kw,
            )

        first = n_queries if choose_width_after is None else min(choose_width_after, n_queries)
        curve, seconds, answers = _session_curve(learner(prior), X, first, teller)
        if choose_width_after is not None and first < n_queries:
            from jaxclust import Constraints

            chosen = choose_width(X, answers, settings, WIDTHS if widths is None else tuple(widths))
            initial = (
                Constraints.from_answers(len(X), [(i, j, a, rate) for i, j, a in answers])
                if rate
                else (
                    Constraints(
                        len(X),
                        must_link=[(i, j) for i, j, a in answers if a == "must"],
                        cannot_link=[(i, j) for i, j, a in answers if a == "cannot"],
                        on_conflict="drop",
                    )
                )
            )
            more, sec, _ = _session_curve(
                learner(NormalGamma.from_data(X, scale=chosen)), X, n_queries - first, teller, initial
            )
            curve, seconds = curve[:-1] + more, seconds + sec
        while len(curve) < n_queries + 1:  # nothing left to ask: the clustering stays
            curve.append(curve[-1])
    ari, vb = zip(*(_scores(y, c) for c in curve), strict=True)
    return {
        "dataset": dataset,
        "method": method,
        "seed": seed,
        "oracle": oracle,
        "n": int(len(y)),
        "n_classes": int(len(np.unique(y))),
        "ari": [round(v, 5) for v in ari],
        "v_beta": [round(v, 5) for v in vb],
        "n_clusters_final": int(len(np.unique(curve[-1]))),
        "seconds_per_question": float(np.median(seconds)) if seconds else None,
        "chosen_width": chosen,
        "seconds": time.perf_counter() - t0,
    }


def _at(curve: list, q: int) -> float:
    return float(curve[min(q, len(curve) - 1)])


def _order(method: str) -> tuple:
    base = method.split(" ")[0]
    return (METHODS.index(base) if base in METHODS else len(METHODS), method)


def summarize(records: list[dict], out_dir) -> dict:
    """Per set and oracle: mean ARI / V-beta over seeds at 20/60/100/200 questions and the area under the ARI
    curve, per method; the sets where the default session is at or above COBRAS at 60; a figure."""
    from matplotlib.figure import Figure

    out_dir = Path(out_dir)
    runs: dict[tuple, list[dict]] = {}
    for rec in records:
        r = rec["result"]
        scale = rec.get("params", {}).get("prior_scale")
        method = r["method"] if scale is None else f"{r['method']} (prior {scale})"
        after = rec.get("params", {}).get("choose_width_after")
        method = method if after is None else f"{method} (width by {after} answers)"
        runs.setdefault((r["oracle"], r["dataset"], method), []).append(r)
    table = []
    for (oracle, dataset, method), rs in sorted(runs.items()):
        row = {"oracle": oracle, "dataset": dataset, "method": method, "seeds": sorted(r["seed"] for r in rs)}
        for q in CHECKPOINTS:
            if all(len(r["ari"]) > q for r in rs):
                row[f"ari@{q}"] = float(np.mean([_at(r["ari"], q) for r in rs]))
                row[f"v_beta@{q}"] = float(np.mean([_at(r["v_beta"], q) for r in rs]))
        row["ari@0"] = float(np.mean([r["ari"][0] for r in rs]))
        row["auc_ari"] = float(np.mean([np.mean(r["ari"]) for r in rs]))
        row["auc_v_beta"] = float(np.mean([np.mean(r["v_beta"]) for r in rs]))
        sec = [r["seconds_per_question"] for r in rs if r["seconds_per_question"] is not None]
        row["seconds_per_question"] = float(np.median(sec)) if sec else None
        table.append(row)
    index = {(t["oracle"], t["dataset"], t["method"]): t for t in table}
    verdict = {}
    for oracle in ORACLES:
        sets = sorted({d for (o, d, _m) in index if o == oracle})
        wins = []
        for d in sets:
            ours, peer = index.get((oracle, d, "explore_classes")), index.get((oracle, d, "cobras"))
            if ours and peer and "ari@60" in ours and "ari@60" in peer:
                wins.append({"dataset": d, "ours": ours["ari@60"], "cobras": peer["ari@60"]})
        if wins:
            verdict[oracle] = {
                "at_or_above_cobras_at_60": sum(w["ours"] >= w["cobras"] - 1e-9 for w in wins),
                "of": len(wins),
                "sets": wins,
            }
    overall = {}
    for (oracle, _d, method), t in index.items():
        overall.setdefault(oracle, {}).setdefault(method, []).append(t)
    overall = {
        o: {
            m: {k: float(np.mean([t[k] for t in ts if k in t])) for k in ("ari@60", "auc_ari", "auc_v_beta")}
            | {"sets": len(ts)}
            for m, ts in ms.items()
        }
        for o, ms in overall.items()
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {"table": table, "verdict": verdict, "overall": overall}
    (out_dir / "active_suite.json").write_text(json.dumps(summary, indent=1))

    figures = []
    colours: dict[str, str] = {}
    for oracle in ORACLES:
        sets = sorted({d for (o, d, _m) in runs if o == oracle})
        if not sets:
            continue
        cols = 4
        rows = -(-len(sets) // cols)
        fig = Figure(figsize=(4 * cols, 3 * rows))
        for k, d in enumerate(sets):
            ax = fig.add_subplot(rows, cols, k + 1)
            for method in sorted({m for (o, dd, m) in runs if o == oracle and dd == d}, key=_order):
                rs = runs.get((oracle, d, method))
                if not rs:
                    continue
                m = min(len(r["ari"]) for r in rs)
                mean = np.mean([r["ari"][:m] for r in rs], axis=0)
                ax.plot(
                    np.arange(m),
                    mean,
                    label=method,
                    color=colours.setdefault(method, f"C{len(colours)}"),  # one colour per method everywhere
                    lw=2 if method in ("explore_classes", "cobras") else 1,
                )
            ax.set_title(f"{d} ({oracle})", fontsize=9)
            ax.set_xlabel("questions")
            ax.set_ylabel("ARI")
            ax.set_ylim(-0.05, 1.02)
        handles = {h.get_label(): h for ax in fig.axes for h in ax.get_lines()}
        fig.axes[0].legend(handles.values(), handles.keys(), fontsize=7)
        fig.tight_layout()
        path = out_dir / f"active_suite_{oracle}.png"
        fig.savefig(path, dpi=80)
        figures.append(str(path))
    summary["figures"] = figures
    return summary


def kmeans_reference(n_init: int = 10) -> dict:
    """ARI of scikit-learn's k-means with the true number of classes on every set (no question asked): the
    reference the DPMM's unsupervised start (ARI at 0 questions) is read against."""
    from sklearn.cluster import KMeans

    out = {}
    for d in DATASETS:
        X, y = load(d)
        k = len(np.unique(y))
        out[d] = {"k": k, "ari": _scores(y, KMeans(k, n_init=n_init, random_state=0).fit_predict(X))[0]}
    return out


def summarize_folders(folders: list, out_dir) -> dict:
    """:func:`summarize` over the finished runs of several grid folders (one per config of the suite); a folder
    given as ``FOLDER:m1,m2`` contributes the runs of those methods only."""
    records = []
    for spec in folders:
        folder, _, methods = str(spec).partition(":")
        keep = set(methods.split(",")) if methods else None
        for path in sorted(Path(folder, "runs").glob("*.json")):
            if not path.name.endswith(".failed.json"):
                rec = json.loads(path.read_text())
                if keep is None or rec["result"]["method"] in keep:
                    records.append(rec)
    return summarize(records, out_dir)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--summarize",
        nargs="+",
        metavar="GRID_DIR",
        help="summarise these grid folders together (GRID_DIR:m1,m2 takes those methods only)",
    )
    ap.add_argument("--out", default="results/active_suite", help="where --summarize writes")
    ap.add_argument("--kmeans", action="store_true", help="print k-means (true k) ARI on every set and stop")
    ap.add_argument("--dataset", default="wine", choices=DATASETS + TEXT_SETS)
    ap.add_argument("--method", default="explore_classes", choices=METHODS)
    ap.add_argument("--oracle", default="gold", choices=ORACLES)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-queries", type=int, default=60)
    ap.add_argument("--prior-scale", type=float, default=None)
    ap.add_argument("--dpmm-defaults", action="store_true", help="DPMM() as a user writes it (DPMM methods)")
    ap.add_argument(
        "--warm-thin", type=int, default=None, help="the session's warm_thin (default: the learner's)"
    )
    ap.add_argument(
        "--warm-burnin", type=int, default=None, help="the session's warm_burnin (default: the learner's)"
    )
    ap.add_argument("--json", default=None, help="also write the whole record to this file")
    args = ap.parse_args(argv)
    if args.kmeans:
        print(json.dumps(kmeans_reference(), indent=1))
        return
    if args.summarize:
        out = summarize_folders(args.summarize, args.out)
        print(
            json.dumps(
                {"verdict": out["verdict"], "overall": out["overall"], "figures": out["figures"]}, indent=1
            )
        )
        return
    r = run_one(
        args.dataset,
        args.method,
        args.seed,
        args.oracle,
        args.n_queries,
        prior_scale=args.prior_scale,
        dpmm_defaults=args.dpmm_defaults,
        warm_thin=args.warm_thin,
        warm_burnin=args.warm_burnin,
    )
    r.update(dpmm_defaults=args.dpmm_defaults, warm_thin=args.warm_thin, warm_burnin=args.warm_burnin)
    if args.json:
        Path(args.json).write_text(json.dumps(r))
    print(
        json.dumps(
            {
                k: (v if not isinstance(v, list) else [v[q] for q in (0, 20, 60) if q < len(v)])
                for k, v in r.items()
            }
        )
    )


if __name__ == "__main__":
    main()
