"""``jaxclust demo``: active vs random constraint selection for the constrained DPMM on a bundled data set.

Runs the experiment of Vlachos, Ghahramani & Briscoe (2010), Figure 1 (a), on scikit-learn's wine data (178
wines, 13 standardised features, 3 cultivars; no data directory needed): the default active session
(``"explore"``: first whether components the model keeps apart are one class, then the pairs the sampled
partitions disagree on most; answers join whole components into classes) against random pairs (drawn uniformly
among the pairs not yet known, read the same way), both answered by a gold oracle, several seeds of each, 5
questions per refit. It prints V-beta (the
V-measure with beta = number of classes / number of clusters, as in the paper) against the number of questions,
averaged over the seeds, and writes ``demo.json`` (every run's history) and ``demo.png`` (mean curves with the
range over seeds as a band).

With ``model="nested"`` (``jaxclust demo --model nested``) the model is :class:`~jaxclust.NestedDPMM`, whose
classes are sampled inside the model: every answer acts on classes, whoever picked the pair, so the random
pairs' curve rises too (with ``DPMM`` the session's class layer splits components around random "different"
answers). Its files are ``demo_nested.*``.

Results layout (shared with ``experiments/active_dpmm.py`` so other methods can add curves)::

    {"meta": {...},                       # data set, model settings, date, command
     "runs": [{"name": "active (explore)",  # legend label
               "strategy": "explore", "propagation": "classes", "seed": 0, "batch_size": 5,
               "history": [ {round, n_queries, n_constraints, v_beta, v_measure, homogeneity,
                             completeness, vi, link_accuracy, n_clusters, seconds, queries, ...}, ... ]},
              ...]}
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from jaxclust.apps.experiment.records import jsonable
from jaxclust.apps.opening import MODELS
from jaxclust.errors import InvalidInputError
from jaxclust.validation import Int, Options, check_rule

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "run_demo",
    "run_curves",
    "plot_curves",
    "format_table",
    "load_wine_standardised",
    "check_demo_options",
    "METRIC_LABELS",
]

CURVE_METRICS = ("v_beta", "v_measure", "homogeneity", "completeness", "vi", "link_accuracy")


def load_wine_standardised() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled wine data, columns standardised to mean 0 / variance 1, and the cultivar
    labels.
    """
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y.astype(np.int64)


def run_curves(
    X,
    y,
    model,
    strategies: Sequence[tuple],
    n_queries: int,
    min_samples: int = 10,
    warm_burnin: int | None = None,
    progress: bool = True,
    propagation: str | None = "classes",
) -> list[dict]:
    """One ActiveLearner run per ``(name, strategy, batch_size, seed[, model_seed])``, answered by a gold
    oracle. ``seed`` seeds the learner (the random strategy's pairs); ``model_seed``, when given, the model's
    fits (else the model's own ``random_state``); ``propagation`` as :class:`~jaxclust.active.ActiveLearner`'s
    (None: its default for the model), recorded as the session ran it.

    Returns the ``runs`` list of the results layout (see the module docstring).
    """
    from sklearn.base import clone

    from jaxclust.active import ActiveLearner, GoldOracle

    runs = []
    for entry in strategies:
        name, strategy, batch_size, seed = entry[:4]
        model_seed = entry[4] if len(entry) > 4 else None
        run_model = model if model_seed is None else clone(model).set_params(random_state=model_seed)
        learner = ActiveLearner(
            run_model,
            GoldOracle(y),
            strategy=strategy,
            batch_size=batch_size,
            min_samples=min_samples,
            random_state=seed,
            warm_burnin=warm_burnin,
            progress=progress,
            propagation=propagation,
        )
        t0 = time.perf_counter()
        history = learner.run(X, n_queries, eval_labels=y)
        runs.append(
            {
                "name": name,
                "strategy": strategy,
                "propagation": learner.session_settings().propagation,
                "batch_size": batch_size,
                "seed": seed,
                "model_seed": model_seed,
                "seconds": time.perf_counter() - t0,
                "history": history,
            }
        )
    return runs


def _curve(run: dict, metric: str, x: str = "n_queries") -> tuple[np.ndarray, np.ndarray]:
    h = run["history"]
    return np.array([r[x] for r in h], float), np.array([r.get(metric, np.nan) for r in h], float)


METRIC_LABELS = {
    "v_beta": "V-beta (V-measure, beta = classes / clusters)",
    "v_measure": "V-measure",
    "homogeneity": "homogeneity",
    "completeness": "completeness",
    "vi": "variation of information (nats)",
    "link_accuracy": "pairwise link accuracy",
}


def _run_curves(runs: list[dict], metric: str, grid: np.ndarray) -> np.ndarray:
    """(runs, grid) step-interpolated values (each run's value at its last round with ``n_queries <= g``)."""
    vals = []
    for run in runs:
        xs, ys = _curve(run, metric)
        idx = np.searchsorted(xs, grid, side="right") - 1
        vals.append(np.where(idx >= 0, ys[np.clip(idx, 0, None)], np.nan))
    return np.array(vals)


def _mean_curve(runs: list[dict], metric: str, grid: np.ndarray) -> np.ndarray:
    """Step-interpolated mean over repeats."""
    return np.nanmean(_run_curves(runs, metric, grid), axis=0)


def format_table(runs: list[dict], metric: str = "v_beta", grid: Sequence[int] | None = None) -> str:
    """Plain-text table: one row per number of questions, one column per run name, each the mean over that
    name's runs (the header says over how many)."""
    names = list(dict.fromkeys(r["name"] for r in runs))
    if grid is None:
        grid = sorted({int(x) for r in runs for x in _curve(r, metric)[0]})
    grid = np.asarray(grid)
    groups = {name: [r for r in runs if r["name"] == name] for name in names}
    cols = {name: _mean_curve(g, metric, grid) for name, g in groups.items()}
    heads = {name: f"{name} (mean of {len(g)})" for name, g in groups.items()}
    width = max(12, *(len(h) for h in heads.values()))
    lines = [f"{'questions':>9}  " + "  ".join(f"{heads[n]:>{width}}" for n in names)]
    for t, g in enumerate(grid):
        lines.append(f"{int(g):>9}  " + "  ".join(f"{cols[n][t]:>{width}.4f}" for n in names))
    return f"{METRIC_LABELS.get(metric, metric)} against the number of questions answered\n" + "\n".join(
        lines
    )


def plot_curves(runs: list[dict], metrics: Sequence[str] = ("v_beta",), title: str = "", axes=None) -> Figure:
    """Learning curves (metric against questions answered): per run name the mean over its runs, and the range
    over them as a band when there are several.

    Draws one panel per metric and returns the figure for the caller to save (``fig.savefig("curves.png")``)
    or show. The matplotlib backend and pyplot's global state are left alone: without ``axes`` the figure is a
    bare :class:`matplotlib.figure.Figure`, which saves to a file on any machine, with or without a display,
    and needs no closing. In a notebook, pass axes made by ``plt.subplots`` (the kernel shows pyplot's
    figures), or run ``%matplotlib inline`` once, after which a returned figure displays too.

    Parameters
    ----------
    runs : list of dict
        The ``runs`` list of the results layout (see the module docstring).
    metrics : sequence of str
        History keys to draw, one panel each.
    title : str
        Figure title (none when empty).
    axes : sequence of matplotlib Axes, optional
        Draw into these (one per metric) instead of a new figure; the figure of the first is returned.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    if axes is None:
        fig = Figure(figsize=(5 * len(metrics), 3.8), layout="tight")
        axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    else:
        axes = list(np.ravel(axes))
        if len(axes) != len(metrics):
            raise ValueError(f"got {len(axes)} axes for {len(metrics)} metrics")
        fig = axes[0].get_figure()
    from matplotlib.ticker import MaxNLocator

    names = list(dict.fromkeys(r["name"] for r in runs))
    for ax, metric in zip(axes, metrics, strict=True):
        for name in names:
            group = [r for r in runs if r["name"] == name]
            grid = np.unique(np.concatenate([_curve(r, metric)[0] for r in group]))
            values = _run_curves(group, metric, grid)
            label = name + (f" (mean of {len(group)}, band: range)" if len(group) > 1 else "")
            (line,) = ax.plot(grid, np.nanmean(values, axis=0), drawstyle="steps-post", label=label)
            if len(group) > 1:
                ax.fill_between(
                    grid,
                    np.nanmin(values, axis=0),
                    np.nanmax(values, axis=0),
                    step="post",
                    color=line.get_color(),
                    alpha=0.2,
                    linewidth=0,
                )
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("questions answered")
        ax.set_ylabel(METRIC_LABELS.get(metric, metric))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def queries_to_reach(runs: list[dict], target: float, metric: str = "v_beta") -> float | None:
    """Fewest questions after which the (repeat-averaged) curve of ``runs`` reaches ``target``; None if
    never.
    """
    grid = np.unique(np.concatenate([_curve(r, metric)[0] for r in runs]))
    curve = _mean_curve(runs, metric, grid)
    hit = np.flatnonzero(curve >= target)
    return float(grid[hit[0]]) if len(hit) else None


def check_demo_options(
    out_dir: str | Path,
    n_queries: Any = None,
    random_state: Any = 0,
    spelled: dict[str, str] | None = None,
    model: Any = "dpmm",
) -> None:
    """Check the demo's options before anything is created: ``InvalidInputError`` names the culprit
    (``spelled`` maps parameter names to the names messages use, e.g. ``{"out_dir": "--out"}``).
    """

    name = (spelled or {}).get
    if n_queries is not None:
        check_rule(Int(1), n_queries, name("n_queries", "n_queries"))
    if random_state is not None:
        check_rule(Int(0), random_state, name("random_state", "random_state"))
    check_rule(Options(MODELS), model, name("model", "model"))
    out = Path(out_dir)
    flag = name("out_dir", "out_dir")
    if out.exists() and not out.is_dir():
        raise InvalidInputError(
            f"{flag}: {out} is a file, not a folder; pass a folder for demo.json and demo.png"
        )
    existing = out
    while not existing.exists():  # the nearest existing ancestor must be a writable folder
        existing = existing.parent
    if not existing.is_dir():
        raise InvalidInputError(f"{flag}: cannot create {out}: {existing} is a file")
    if not os.access(existing, os.W_OK):
        raise InvalidInputError(f"{flag}: cannot write into {existing} (permission denied)")


def _summarise(runs: list[dict], grid: np.ndarray, repeats: int, active: str, rand: str):
    """The demo's ``summary`` (mean V-beta curves on ``grid``, where active is ahead, when it reaches random's
    final score) and the mean curves by run name."""
    means = {
        name: _mean_curve([r for r in runs if r["name"] == name], "v_beta", grid) for name in (active, rand)
    }
    ahead = means[active] - means[rand]
    summary = {
        "grid": grid.tolist(),
        "v_beta_mean": {k: v.tolist() for k, v in means.items()},
        "repeats": repeats,
        "active_minus_random_last": float(ahead[-1]),
        "questions_active_ahead": int(np.sum(ahead[1:] > 0)),
        "questions_points": int(len(grid) - 1),
        "random_final": float(means[rand][-1]),
        "active_reaches_random_final_at": queries_to_reach(
            [r for r in runs if r["name"] == active], float(means[rand][-1])
        ),
    }
    return summary, means


def _verdict(summary: dict, means: dict, n_q: int, active: str, rand: str) -> str:
    """The demo's closing claim, said as a failure when active selection ends at or below random."""
    reach = summary["active_reaches_random_final_at"]
    verdict = (
        f"active is ahead of random at {summary['questions_active_ahead']} of {summary['questions_points']} "
        f"points; after {n_q} questions {means[active][-1]:.3f} vs {means[rand][-1]:.3f}"
        + (f"; it reaches random's final V-beta after {reach:.0f} questions" if reach is not None else "")
    )
    if summary["active_minus_random_last"] <= 0:
        verdict = "on this run active selection did NOT beat random: " + verdict
    return verdict


_TITLES = {"dpmm": "constrained DPMM", "nested": "classes inside the model (NestedDPMM)"}


def _demo_model(model: str, quick: bool, random_state: int):
    """The demo's model (``"dpmm"`` or ``"nested"``), the session's ``min_samples`` and its warm burn-in (None:
    the session's own, a fifth of the model's)."""
    if model == "nested":
        from jaxclust.dpmm.nested_model import NestedDPMM

        if quick:
            return (
                NestedDPMM(n_chains=2, n_burnin=30, n_samples=10, thin=2, random_state=random_state),
                4,
                None,
            )
        return NestedDPMM(n_samples=10, random_state=random_state), 12, None
    from jaxclust.dpmm import DPMM

    if quick:
        return DPMM(n_chains=2, n_burnin=30, n_samples=10, thin=2, random_state=random_state), 4, 10
    return DPMM(n_samples=10, random_state=random_state), 12, 20


def run_demo(
    quick: bool = False,
    out_dir: str | Path = "jaxclust_demo",
    random_state: int = 0,
    n_queries: int | None = None,
    progress: bool = True,
    echo=print,
    model: str = "dpmm",
) -> dict[str, Any]:
    """Active (the default ``explore`` session) vs random constraint selection on the wine data; writes JSON +
    PNG.

    Parameters
    ----------
    quick : bool
        The same comparison, smaller: 2 seeds of each strategy, 30 questions, a small sampler (2 chains, 30
        burn-in, 10 samples 2 apart). Otherwise 3 seeds of each, 100 questions, and ``DPMM()``'s defaults with 10
        samples per chain (the collapsed sampler at this size: 5 chains, 100 burn-in, 10 samples 5 apart: 50 for
        link entropy), so that the whole comparison runs in about a minute.
    out_dir : path
        Where ``demo.json`` and ``demo.png`` go (created); ``demo_quick.json`` and ``demo_quick.png`` with
        ``quick``, so a quick run never writes over a full one.
    random_state : int
        Seed of the first repeat; repeat r uses ``random_state + r`` for the model's fits (both strategies) and
        ``random_state + 1000 + r`` for the random strategy's pairs.
    n_queries : int, optional
        Overrides the number of questions.
    echo : callable
        Where the table is printed.
    model : {"dpmm", "nested"}
        ``"dpmm"`` (default): :class:`~jaxclust.DPMM`, its samples read as classes of components by the
        session. ``"nested"``: :class:`~jaxclust.NestedDPMM` (``n_samples=10``, its other defaults; with
        ``quick`` 2 chains, 30 burn-in, 10 samples 2 apart), classes sampled inside the model, read as they are.
        Its files are ``demo_nested.*`` (``demo_quick_nested.*``).

    Returns
    -------
    dict
        The results (``meta``, ``runs`` and ``summary``) as written to ``demo.json``.
    """
    check_demo_options(out_dir, n_queries, random_state, model=model)  # before anything is created
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    X, y = load_wine_standardised()
    estimator, min_samples, warm = _demo_model(model, quick, random_state)
    n_q = (30 if quick else 100) if n_queries is None else n_queries
    batch, repeats = 5, 2 if quick else 3
    active, rand = "active (explore)", "random pairs"
    strategies = []
    for r in range(repeats):
        strategies.append((active, "explore", batch, random_state + r, random_state + r))
        strategies.append((rand, "random", batch, random_state + 1000 + r, random_state + r))
    echo(
        f"wine data, 178 items: {n_q} questions by active selection and by random pairs, {repeats} seeds each; "
        "the first fit compiles the sampler (kept in the compilation cache for the next run)"
    )
    t0 = time.perf_counter()
    # None: the learner reads a model that samples classes as it is ("pairs"), the DPMM's through classes
    runs = run_curves(
        X, y, estimator, strategies, n_q, min_samples, warm_burnin=warm, progress=progress, propagation=None
    )
    grid = np.arange(0, n_q + 1, batch)
    summary, means = _summarise(runs, grid, repeats, active, rand)
    meta = {
        "dataset": "sklearn wine (178 x 13, standardised), 3 classes",
        "quick": quick,
        "model": {k: v for k, v in estimator.get_params().items() if k != "prior"},
        "warm_burnin": warm,
        "n_queries": n_q,
        "batch_size": batch,
        "repeats": repeats,
        "random": "pairs drawn uniformly among those not yet known, answered by the same gold oracle",
        "seconds": time.perf_counter() - t0,
        "date": time.strftime("%Y-%m-%d"),
        "command": f"jaxclust demo{' --quick' if quick else ''}{' --model nested' if model == 'nested' else ''}",
    }
    result = {"meta": meta, "runs": runs, "summary": summary}
    # a quick run never writes over the full run's files, nor one model's over the other's
    stem = ("demo_quick" if quick else "demo") + ("_nested" if model == "nested" else "")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1, default=jsonable))
    plot_curves(
        runs,
        metrics=("v_beta", "homogeneity", "completeness"),
        title=f"wine: active vs random constraint selection, {_TITLES[model]} ({repeats} seeds each)",
    ).savefig(out / f"{stem}.png", dpi=110)
    echo(format_table(runs, "v_beta", grid=grid[:: max(1, len(grid) // 10)]))
    echo(_verdict(summary, means, n_q, active, rand))
    echo(f"wrote {out / (stem + '.json')} and {out / (stem + '.png')} ({meta['seconds']:.0f} s)")
    return result
