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

Component prior (``--prior-scale``): the DPMM's data-driven Normal-Gamma prior has a component width ``scale``
(a component's expected variance is ``scale`` x the data's, per dimension; the DPMM's default is 0.5).
``--prior-scale auto`` chooses it WITHOUT labels by empirical Bayes: for each scale in ``--eb-grid`` the
unsupervised DPMM is fitted on the training part of ``--eb-folds`` disjoint random splits (``--eb-test-frac``
held out) and scored by the held-out log posterior predictive density per point (mixture over the retained
samples; each sample's predictive is the CRP-weighted mixture of its components' Student-t predictives plus a new
component); the scale with the highest mean score is used (``--eb-only``: select and stop).

JSON layout (other methods can append runs): ``{"meta": {...}, "runs": [{"name", "strategy", "batch_size",
"seed", "seconds", "history": [one dict per round: n_queries, n_constraints, v_beta, v_measure, homogeneity,
completeness, vi, link_accuracy, n_clusters, queries, ...]}], "summary": {...}}``.

    python experiments/active_dpmm.py --quick --out results/active_quick
    python experiments/active_dpmm.py --sets bio-fine general --out results/active
    python experiments/active_dpmm.py --sets bio-fine --prior-scale auto --eb-only

Experiment grids (``jaxclust experiment run experiments/configs/verbs_*.toml --out DIR``, kind ``active_dpmm``):
:func:`run_one` computes ONE learning curve (a data set, a strategy, a seed, a prior, sampler settings) and
:func:`summarize` writes each setting's ``<set>[_prior<scale>].json/png`` in the layout above from the curves
that exist. A curve is the same whether this script or the grid computes it (same seeds, same code).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

SETS = ("general", "general-full", "bio-top", "bio-mid", "bio-fine")
EB_GRID = (0.5, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01)


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


def _ng_heldout_logpred(prior, X_train, samples, alphas, X_test) -> np.ndarray:
    """(S, m) ``ln p(x | X_train, z_s, alpha_s)`` for each retained sample s and held-out row x.

    Each sample's predictive is the CRP mixture ``sum_k n_k/(N+alpha) t_k(x) + alpha/(N+alpha) t_0(x)`` with
    the Normal-Gamma posterior predictive ``t_k`` of component k (prior predictive ``t_0``), taken from the
    sampler's own conjugate algebra (:class:`jaxclust.dpmm.NormalGamma`).
    """
    samples = np.asarray(samples)
    X_train, X_test = np.asarray(X_train, np.float64), np.asarray(X_test, np.float64)
    family = prior.check(X_train).astype(jnp.float32)
    # every row its own group of one: the family's group statistics of single points
    train = family.group_stats(X_train, np.arange(len(X_train)), len(X_train))
    test = family.group_stats(X_test, np.arange(len(X_test)), len(X_test))
    train, test = (jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), t) for t in (train, test))
    K = int(samples.max()) + 1
    return np.asarray(
        _ng_logpred(family, train, jnp.asarray(samples), jnp.asarray(alphas, jnp.float32), test, K)
    )


@partial(jax.jit, static_argnums=5)
def _ng_logpred(family, train, samples, alphas, test, K):
    N = samples.shape[1]

    def one(z, alpha):
        slots = family.slots_from_groups(z, train, K)  # (K,)
        # one extra slot for a new component: the prior (an empty slot's posterior is the prior too)
        new = jax.tree.map(lambda a: a[None], family.prior_slot())
        slots = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), slots, new)
        n = slots.kappa[:K] - family.kappa
        logw = jnp.append(jnp.where(n > 0.5, jnp.log(jnp.maximum(n, 1.0)), -jnp.inf), jnp.log(alpha))
        logw = logw - jnp.log(N + alpha)
        lt = jax.vmap(lambda gs: family.log_pred(slots, gs))(test)  # (m, K + 1)
        return logsumexp(lt + logw[None], axis=1)

    return jax.vmap(one)(samples, alphas)


def heldout_score(prior, X_train, samples, alphas, X_test) -> float:
    """Mean over held-out rows of ``ln (1/S) sum_s p(x | X_train, z_s, alpha_s)`` (posterior predictive)."""
    lp = _ng_heldout_logpred(prior, X_train, samples, alphas, X_test)
    return float(np.mean(np.logaddexp.reduce(lp, axis=0) - np.log(lp.shape[0])))


def select_prior_scale(
    X: np.ndarray, model, grid=EB_GRID, n_folds: int = 2, test_frac: float = 0.2, seed: int = 0, echo=print
) -> tuple[float, list[dict]]:
    """Empirical Bayes choice of ``NormalGamma.from_data(., scale)`` without labels.

    For each scale, the unsupervised ``model`` (its sampler settings, prior replaced) is fitted on the training
    rows of ``n_folds`` disjoint random held-out sets (``test_frac`` of the rows each) and scored by
    :func:`heldout_score`; returns the scale with the highest mean score and one row per scale.
    """
    from sklearn.base import clone

    from jaxclust.dpmm import NormalGamma
    from jaxclust.errors import InvalidInputError

    grid = [float(g) for g in grid]
    if not grid or any(not np.isfinite(g) or g <= 0 for g in grid):
        raise InvalidInputError(f"eb grid: scales must be positive and finite, got {grid}")
    if not 0 < test_frac < 1 or n_folds < 1 or n_folds * test_frac > 1:
        raise InvalidInputError(
            f"eb folds/test fraction: need n_folds >= 1 and 0 < n_folds * test_frac <= 1, "
            f"got {n_folds} x {test_frac}"
        )
    X = np.asarray(X, float)
    n = X.shape[0]
    m = max(1, int(round(test_frac * n)))
    perm = np.random.default_rng(seed).permutation(n)
    rows = []
    for scale in grid:
        scores, n_comp, lj = [], [], []
        for f in range(n_folds):
            test = np.zeros(n, bool)
            test[perm[f * m : (f + 1) * m]] = True
            prior = NormalGamma.from_data(X[~test], scale=scale)
            fit = clone(model).set_params(prior=prior).fit(X[~test])
            scores.append(heldout_score(prior, X[~test], fit.samples_, fit.alpha_samples_, X[test]))
            n_comp.append(float(np.mean([len(np.unique(s)) for s in fit.samples_])))
            lj.append(float(np.mean(fit.log_joint_)) / (n - m))
        row = {
            "scale": scale,
            "heldout_logpred": float(np.mean(scores)),
            "heldout_logpred_folds": scores,
            "n_clusters": float(np.mean(n_comp)),
            "log_joint_per_item": float(np.mean(lj)),
        }
        rows.append(row)
        echo(
            f"  eb scale {scale:g}: held-out log predictive {row['heldout_logpred']:.4f} per item "
            f"(folds {', '.join(f'{v:.4f}' for v in scores)}), {row['n_clusters']:.1f} clusters, "
            f"log joint {row['log_joint_per_item']:.3f} per item"
        )
    best = max(rows, key=lambda r: r["heldout_logpred"])["scale"]
    if at_grid_edge(rows):
        # e.g. zero-heavy features: the Gaussian likelihood grows without bound as components narrow
        echo(f"  eb WARNING: the best scale {best:g} is at the edge of the grid: no optimum inside it")
    return best, rows


def at_grid_edge(rows: list[dict]) -> bool:
    """True if the best-scoring scale of ``select_prior_scale``'s rows is the grid's smallest or largest."""
    scales = [r["scale"] for r in rows]
    best = max(rows, key=lambda r: r["heldout_logpred"])["scale"]
    return len(scales) > 1 and best in (min(scales), max(scales))


def setup(
    name: str,
    *,
    nmf_dims: int,
    n_chains: int,
    n_burnin: int,
    n_samples: int,
    thin: int,
    max_components: int,
    prior_scale,
    seed: int,
    data_dir: str | None = None,
    eb_grid=EB_GRID,
    eb_folds: int = 2,
    eb_test_frac: float = 0.2,
    echo=print,
):
    """Features, labels, description, the DPMM (prior set) and the prior's scale/selection of one data set.

    ``prior_scale``: None (the DPMM's data-driven default), a positive number, or ``"auto"`` (empirical Bayes
    over ``eb_grid``, see :func:`select_prior_scale`). ``seed`` seeds the NMF, the EB splits and the DPMM.
    """
    from jaxclust.dpmm import DPMM, NormalGamma

    X_raw, y, desc = load_set(name, data_dir)
    X = preprocess(X_raw, nmf_dims, seed)
    model = DPMM(
        n_chains=n_chains,
        n_burnin=n_burnin,
        n_samples=n_samples,
        thin=thin,
        alpha_prior=(1.0, 1.0),
        capacity=max_components,  # the experiments' name for DPMM's starting slots
        random_state=seed,
    )
    scale, selection = prior_scale, None
    if scale == "auto":  # empirical Bayes on the features only (no labels)
        t0 = time.perf_counter()
        scale, rows = select_prior_scale(X, model, eb_grid, eb_folds, eb_test_frac, seed, echo=echo)
        selection = {
            "criterion": "held-out log posterior predictive per item (unsupervised DPMM)",
            "grid": list(eb_grid),
            "folds": eb_folds,
            "test_frac": eb_test_frac,
            "selected_scale": scale,
            "at_grid_edge": at_grid_edge(rows),
            "rows": rows,
            "seconds": time.perf_counter() - t0,
        }
        echo(f"[{name}] empirical Bayes prior scale: {scale:g} ({selection['seconds']:.0f} s)")
    if scale is not None:  # a finer/coarser component than the DPMM's data-driven default (scale 0.5)
        model.set_params(prior=NormalGamma.from_data(X, scale=float(scale)))
    return X, y, desc, model, scale, selection


def run_set(name: str, args, echo=print) -> dict:
    from sklearn.base import clone

    from jaxclust.apps.demo import plot_curves, run_curves

    out = Path(args.out)
    X, y, desc, model, scale, selection = setup(
        name,
        nmf_dims=args.nmf_dims,
        n_chains=args.n_chains,
        n_burnin=args.n_burnin,
        n_samples=args.n_samples,
        thin=args.thin,
        max_components=args.max_components,
        prior_scale=args.prior_scale,
        seed=args.seed,
        data_dir=args.data_dir,
        eb_grid=args.eb_grid,
        eb_folds=args.eb_folds,
        eb_test_frac=args.eb_test_frac,
        echo=echo,
    )
    if selection is not None and args.eb_only:
        path = out / f"{name}{args.tag}_eb.json"
        cmd = " ".join(["python"] + sys.argv)
        path.write_text(
            json.dumps({"set": name, "description": desc, "command": cmd, "selection": selection}, indent=1)
        )
        return {"selection": selection}
    min_samples = max(4, args.n_chains * args.n_samples // 8)
    runs = []
    # each active seed seeds the DPMM's fits (the features and the random runs stay the same)
    for seed in args.active_seeds or [args.seed]:
        strategies = [("active (batch)", "batch", args.al_batch, seed)]
        if args.compare_naive:
            strategies.append((f"active {args.al_batch} (naive top-B)", "naive_batch", args.al_batch, seed))
        runs += run_curves(
            X,
            y,
            clone(model).set_params(random_state=seed),
            strategies,
            args.n_active,
            min_samples=min_samples,
            warm_burnin=args.warm_burnin,
            progress=args.progress,
            propagation="pairs",  # the reported verb runs (see run_one)
        )
    runs += run_curves(
        X,
        y,
        model,
        [("random", "random", args.random_batch, args.seed + 1 + r) for r in range(args.random_repeats)],
        args.n_random,
        min_samples=min_samples,
        warm_burnin=args.warm_burnin,
        propagation="pairs",
        progress=args.progress,
    )
    summary = curve_summary(runs)
    meta = {
        "set": name,
        "description": desc,
        "n_items": int(X.shape[0]),
        "nmf_dims": int(X.shape[1]),
        "model": {k: v for k, v in model.get_params().items() if k != "prior"},
        "prior_scale": None if scale is None else float(scale),
        "prior_selection": selection,
        "warm_burnin": args.warm_burnin,
        "min_samples": min_samples,
        "command": " ".join(["python"] + sys.argv),
        "date": time.strftime("%Y-%m-%d"),
    }
    result = {"meta": meta, "runs": runs, "summary": summary}
    (out / f"{name}{args.tag}.json").write_text(json.dumps(result, indent=1, default=_jsonable))
    plot_curves(
        runs,
        metrics=("v_beta", "homogeneity", "completeness", "link_accuracy"),
        title=f"{desc}: constrained DPMM, active vs random constraints",
    ).savefig(out / f"{name}{args.tag}.png", dpi=110)
    echo(f"[{name}] {desc}, n={X.shape[0]}: " + describe(summary))
    return result


def curve_summary(runs: list[dict]) -> dict:
    """The headline numbers of a set's curves: unsupervised start, random's final V-beta (mean over the random
    runs), active's final V-beta and how many active questions reach random's final V-beta. Works on any subset
    of the curves (a partial grid): what cannot be computed is None.
    """
    from jaxclust.apps.demo import queries_to_reach

    random_runs = [r for r in runs if r["strategy"] == "random"]
    active = [r for r in runs if r["strategy"] == "batch"]
    first = (active or runs)[0]["history"][0] if runs else {}
    target = float(np.mean([r["history"][-1]["v_beta"] for r in random_runs])) if random_runs else None
    return {
        "unsupervised_link_accuracy": first.get("link_accuracy"),
        "unsupervised_v_beta": first.get("v_beta"),
        "unsupervised_n_clusters": first.get("n_clusters"),
        "random_final_n_constraints": random_runs[0]["history"][-1]["n_constraints"] if random_runs else None,
        "random_final_v_beta_mean": target,
        "active_final_n_constraints": active[0]["history"][-1]["n_constraints"] if active else None,
        "active_final_v_beta": float(np.mean([r["history"][-1]["v_beta"] for r in active]))
        if active
        else None,
        "active_seeds": [r["seed"] for r in active],
        "active_constraints_to_reach_random_final": (
            queries_to_reach(active, target) if active and target is not None else None
        ),
    }


def describe(summary: dict) -> str:
    """One line from :func:`curve_summary` (parts that could not be computed are left out)."""

    def f(v):
        return "n/a" if v is None else f"{v:.3f}"

    line = (
        f"unsupervised link accuracy {f(summary['unsupervised_link_accuracy'])}, "
        f"V-beta {f(summary['unsupervised_v_beta'])}"
    )
    if summary["random_final_v_beta_mean"] is not None:
        line += (
            f"; random at {summary['random_final_n_constraints']} constraints: V-beta "
            f"{f(summary['random_final_v_beta_mean'])}"
        )
    if summary["active_final_v_beta"] is not None:
        line += f"; active at {summary['active_final_n_constraints']}: {f(summary['active_final_v_beta'])}"
    if summary["active_final_v_beta"] is not None and summary["random_final_v_beta_mean"] is not None:
        line += (
            "; active constraints to reach random's final V-beta: "
            f"{summary['active_constraints_to_reach_random_final']}"
        )
    return line


CURVE_NAMES = {"batch": "active (batch)", "random": "random"}


def run_one(
    dataset: str,
    strategy: str = "batch",
    seed: int = 0,
    model_seed: int | None = None,
    n_queries: int = 200,
    batch_size: int = 10,
    prior_scale: float | str | None = None,
    data_seed: int = 0,
    nmf_dims: int = 35,
    n_chains: int = 5,
    n_burnin: int = 100,
    n_samples: int = 20,
    thin: int = 5,
    warm_burnin: int = 20,
    max_components: int = 64,
    eb_grid: list = EB_GRID,
    eb_folds: int = 2,
    eb_test_frac: float = 0.2,
    name: str | None = None,
    data_dir: str | None = None,
    progress: bool = False,
    propagation: str = "pairs",
) -> dict:
    """ONE learning curve (the grid kind ``active_dpmm``): the history of one ActiveLearner run.

    ``propagation``: ``"pairs"`` (default here: the setting of the rounds' verb runs, answers on their pairs
    only), ``"components"`` (answers join whole components into classes) or ``"classes"`` (the library's
    default: answers also split a component a "different" answer falls inside).

    ``dataset``: one of ``SETS``; ``prior_scale``: None or ``"default"`` (the DPMM's default prior), a
    number, or ``"auto"``; ``strategy``: ``batch`` (the paper's batch method), ``naive_batch``,
    ``entropy`` or ``random``; ``seed`` seeds the learner (the random strategy's pairs), ``model_seed`` the
    DPMM's fits (default: ``seed``); ``data_seed`` the NMF and the empirical-Bayes splits. The script's curves
    are: active seed s -> ``seed = model_seed = s``; random repeat r -> ``seed = data_seed + 1 + r``,
    ``model_seed = data_seed``. Other parameters: as the script's options of the same names.
    """
    from sklearn.base import clone

    from jaxclust.apps.demo import run_curves
    from jaxclust.errors import InvalidInputError

    if dataset not in SETS:
        raise InvalidInputError(f"dataset: expected one of {', '.join(SETS)}, got {dataset!r}")
    if prior_scale == "default":  # a grid axis cannot hold None: the DPMM's data-driven default
        prior_scale = None
    if prior_scale is not None and prior_scale != "auto":
        prior_scale = _scale_arg(str(prior_scale))
    X, y, desc, model, scale, selection = setup(
        dataset,
        nmf_dims=nmf_dims,
        n_chains=n_chains,
        n_burnin=n_burnin,
        n_samples=n_samples,
        thin=thin,
        max_components=max_components,
        prior_scale=prior_scale,
        seed=data_seed,
        data_dir=data_dir,
        eb_grid=eb_grid,
        eb_folds=eb_folds,
        eb_test_frac=eb_test_frac,
        echo=lambda s: None,
    )
    model = clone(model).set_params(random_state=seed if model_seed is None else model_seed)
    if name is None:
        name = (
            f"active {batch_size} (naive top-B)"
            if strategy == "naive_batch"
            else CURVE_NAMES.get(strategy, strategy)
        )
    min_samples = max(4, n_chains * n_samples // 8)
    (run,) = run_curves(
        X,
        y,
        model,
        [(name, strategy, batch_size, seed)],
        n_queries,
        min_samples=min_samples,
        warm_burnin=warm_burnin,
        progress=progress,
        propagation=propagation,
    )
    meta = {
        "set": dataset,
        "description": desc,
        "n_items": int(X.shape[0]),
        "nmf_dims": int(X.shape[1]),
        "model": {k: v for k, v in model.get_params().items() if k != "prior"},
        "prior_scale": None if scale is None else float(scale),
        "prior_selection": selection,
        "warm_burnin": warm_burnin,
        "min_samples": min_samples,
        "date": time.strftime("%Y-%m-%d"),
    }
    last = run["history"][-1]
    return json.loads(
        json.dumps(
            {
                "meta": meta,
                "run": run,
                "final_n_queries": last["n_queries"],
                "final_v_beta": last["v_beta"],
                "unsupervised_v_beta": run["history"][0]["v_beta"],
            },
            default=_jsonable,
        )
    )


# the parameters that make one curve of a setting (the rest make the setting: one figure per setting)
CURVE_KEYS = ("strategy", "seed", "model_seed", "n_queries", "batch_size", "name", "progress")
STRATEGY_ORDER = {"batch": 0, "naive_batch": 1, "entropy": 2}


def summarize(records: list[dict], out_dir) -> dict:
    """The grid's summary (kind ``active_dpmm``): per setting (data set, prior, sampler...), the curves that
    exist drawn into ``<set>[_prior<scale>].png`` and written to ``<set>[_prior<scale>].json`` in the script's
    layout (``{"meta", "runs", "summary"}``), with :func:`curve_summary`'s headline numbers."""
    import hashlib

    from jaxclust.apps.demo import plot_curves

    out_dir = Path(out_dir)
    groups: dict[str, list[dict]] = {}
    for rec in records:
        key = json.dumps({k: v for k, v in rec["params"].items() if k not in CURVE_KEYS}, sort_keys=True)
        groups.setdefault(key, []).append(rec)
    names: dict[str, str] = {}
    for key, recs in groups.items():
        p = recs[0]["params"]
        base = p["dataset"] + (
            f"_prior{float(p['prior_scale']):g}"
            if p.get("prior_scale") not in (None, "auto", "default")
            else ""
        )
        names[key] = base
    out = {"files": [], "settings": {}}
    for key, recs in groups.items():
        base = names[key]
        if list(names.values()).count(base) > 1:  # two settings of a set differ in more than the prior
            base += "_" + hashlib.sha256(key.encode()).hexdigest()[:6]
        recs = sorted(
            recs,
            key=lambda r: (
                r["params"].get("strategy", "batch") == "random",
                r["result"]["run"]["seed"] if r["params"].get("strategy") == "random" else 0,
                r["result"]["meta"]["model"]["random_state"],
                STRATEGY_ORDER.get(r["params"].get("strategy", "batch"), 3),
                r["id"],
            ),
        )
        runs = [r["result"]["run"] for r in recs]
        summary = curve_summary(runs)
        meta = {
            **{k: v for k, v in recs[0]["result"]["meta"].items() if k != "model"},
            "model": {k: v for k, v in recs[0]["result"]["meta"]["model"].items() if k != "random_state"},
            "setting": json.loads(key),
            "made_by": "jaxclust experiment (kind active_dpmm)",
            "run_ids": [r["id"] for r in recs],
        }
        (out_dir / f"{base}.json").write_text(
            json.dumps({"meta": meta, "runs": runs, "summary": summary}, indent=1, default=_jsonable)
        )
        plot_curves(
            runs,
            metrics=("v_beta", "homogeneity", "completeness", "link_accuracy"),
            title=f"{meta['description']}: constrained DPMM, active vs random constraints",
        ).savefig(out_dir / f"{base}.png", dpi=110)
        out["files"] += [f"{base}.json", f"{base}.png"]
        out["settings"][base] = {"n_curves": len(runs), "line": describe(summary), **summary}
    return out


def _jsonable(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def _scale_arg(v: str):
    if v == "auto":
        return v
    x = float(v)
    if not np.isfinite(x) or x <= 0:
        raise argparse.ArgumentTypeError(f"--prior-scale: must be positive or 'auto', got {v}")
    return x


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
        type=_scale_arg,
        default=None,
        help="NormalGamma.from_data scale, or 'auto' (empirical Bayes over --eb-grid; default: the DPMM's prior)",
    )
    ap.add_argument("--eb-grid", type=float, nargs="+", default=list(EB_GRID))
    ap.add_argument("--eb-folds", type=int, default=2, help="disjoint held-out sets for --prior-scale auto")
    ap.add_argument("--eb-test-frac", type=float, default=0.2)
    ap.add_argument("--eb-only", action="store_true", help="with --prior-scale auto: select, write, stop")
    ap.add_argument(
        "--active-seeds",
        type=int,
        nargs="+",
        default=None,
        help="DPMM seeds of the active runs (default: --seed); the summary averages their curves",
    )
    ap.add_argument("--tag", default="", help="suffix for output file names (keeps earlier runs' files)")
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
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for name in args.sets:
        t0 = time.perf_counter()
        run_set(name, args)
        print(f"[{name}] {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
