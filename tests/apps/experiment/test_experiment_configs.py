"""The configs of the reported experiments (``experiments/configs``): each parses, expands and fits its kind; the
verb, k-means and L3M configs ask for exactly what the reported commands computed; the fast ones run (quick) here
and every one runs (quick) in the slow suite."""

from __future__ import annotations

import json
import re
import sys
import zlib
from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np
import pytest

from jaxclust.apps.experiment import load_config, plan, run_grid
from jaxclust.apps.experiment.registry import KINDS, load_target

REPO = Path(__file__).resolve().parents[3]
CONFIGS = sorted((REPO / "experiments" / "configs").glob("*.toml"))
README = (REPO / "experiments" / "README.md").read_text(encoding="utf-8")


def test_configs_exist():
    assert len(CONFIGS) >= 10


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_config_parses_expands_and_fits_its_kind(path):
    cfg = load_config(path)
    assert cfg.kind in KINDS and cfg.description
    for quick in (False, True):
        _, _, runs, _ = plan(cfg, quick=quick)  # checks every parameter against the kind's run function
        assert runs and len({r.id for r in runs}) == len(runs)
    assert len(cfg.runs(quick=True)) <= len(cfg.runs())
    # each config names the command that runs it, and the experiments README names the config
    assert f"jaxclust experiment run experiments/configs/{path.name}" in path.read_text()
    assert f"experiments/configs/{path.name}" in README


def _module(kind):
    return sys.modules[load_target(KINDS[kind].run).__module__]


# ----------------------------------------------------------------------------------------------------------
# the active-DPMM configs against the reported commands: same features, models, strategies, seeds and budgets


def _synthetic_set(name, data_dir=None):
    """A stand-in for a verb set: different data per name (no evaluation data needed)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return rng.gamma(1.0, 1.0, size=(48, 40)) * (rng.random((48, 40)) < 0.4), rng.integers(0, 4, 48), name


def _fake_preprocess(X, n_components=35, seed=0):
    """A fast stand-in for NMF + standardising that still depends on its arguments (the dimensions, the seed)."""
    k = min(n_components, X.shape[1])
    W = X[:, :k] + 0.01 * seed
    return (W - W.mean(axis=0)) / np.where(W.std(axis=0) > 0, W.std(axis=0), 1.0)


def _stand_ins(monkeypatch, mod):
    monkeypatch.setattr(mod, "load_set", _synthetic_set)
    monkeypatch.setattr(mod, "preprocess", _fake_preprocess)


def _capture_curves(monkeypatch):
    import jaxclust.apps.demo

    calls = []

    def fake_run_curves(
        X,
        y,
        model,
        strategies,
        n_queries,
        min_samples=10,
        warm_burnin=None,
        progress=True,
        propagation="classes",
    ):
        params = model.get_params()
        prior = params.pop("prior")
        leaves = None if prior is None else [np.asarray(a).tolist() for a in jax.tree_util.tree_leaves(prior)]
        runs = []
        for name, strategy, batch_size, seed in strategies:
            calls.append(
                json.dumps(
                    [
                        np.asarray(X).round(10).tolist(),
                        sorted(params.items()),
                        leaves,
                        name,
                        strategy,
                        batch_size,
                        seed,
                        n_queries,
                        min_samples,
                        warm_burnin,
                        propagation,
                    ],
                )
            )
            hist = [
                {
                    "n_queries": q,
                    "n_constraints": q,
                    "v_beta": 0.1 + q / 1e4,
                    "link_accuracy": 0.5,
                    "n_clusters": 3.0,
                    "homogeneity": 0.2,
                    "completeness": 0.3,
                }
                for q in range(0, n_queries + 1, batch_size)
            ]
            runs.append(
                {
                    "name": name,
                    "strategy": strategy,
                    "batch_size": batch_size,
                    "seed": seed,
                    "seconds": 0.0,
                    "history": hist,
                }
            )
        return runs

    monkeypatch.setattr(jaxclust.apps.demo, "run_curves", fake_run_curves)
    return calls


SAMPLER = "--n-chains 4 --n-burnin 50 --n-samples 10 --thin 3 --warm-burnin 15"
# (config, reported commands: experiments/README.md, "Verb clustering")
REPORTED = [
    (
        "verbs_round1.toml",
        [f"--sets bio-fine general bio-mid bio-top --compare-naive {SAMPLER} --n-active 200 --n-random 1000"],
    ),
    (
        "verbs_general_eb.toml",
        [
            f"--sets general --prior-scale 0.03 --n-active 200 --n-random 1000 {SAMPLER}",
            f"--sets general --prior-scale 0.03 --active-seeds 1 --n-active 200 --n-random 100 --random-repeats 1 "
            f"{SAMPLER}",
        ],
    ),
    (
        "verbs_general_full_seeds.toml",
        [
            f"--sets general-full --n-active 100 --n-random 1000 --random-repeats 3 --max-components 128 {SAMPLER}",
            f"--sets general-full --active-seeds 1 --n-active 100 --n-random 100 --random-repeats 1 "
            f"--max-components 128 {SAMPLER}",
            f"--sets general-full --active-seeds 2 --n-active 100 --n-random 100 --random-repeats 1 "
            f"--max-components 128 {SAMPLER}",
        ],
    ),
    (
        "verbs_bio_prior0.03.toml",
        [
            f"--sets bio-top bio-mid --prior-scale 0.03 --n-active 200 --n-random 1000 {SAMPLER}",
            f"--sets bio-fine --prior-scale 0.03 --n-active 200 --n-random 1000 {SAMPLER}",
            f"--sets bio-top bio-mid bio-fine --prior-scale 0.03 --n-active 320 --n-random 100 --random-repeats 1 "
            f"{SAMPLER}",
        ],
    ),
]


def _covers(grid_call: str, script_calls: set[str]) -> bool:
    """The grid's curve equals a reported one, or extends it (same everything, more questions)."""
    g = json.loads(grid_call)
    for s in map(json.loads, script_calls):
        if s[:7] == g[:7] and s[8:] == g[8:] and s[7] <= g[7]:
            return True
    return False


@pytest.mark.parametrize(("config", "commands"), REPORTED, ids=[c for c, _ in REPORTED])
def test_verb_configs_compute_the_reported_curves(config, commands, monkeypatch, tmp_path):
    import jaxclust.apps.demo

    mod = _module("active_dpmm")
    _stand_ins(monkeypatch, mod)
    calls = _capture_curves(monkeypatch)
    no_figure = SimpleNamespace(savefig=lambda *a, **k: None)
    monkeypatch.setattr(jaxclust.apps.demo, "plot_curves", lambda *a, **k: no_figure)  # figures: another test
    for cmd in commands:
        mod.main([*cmd.split(), "--out", str(tmp_path)])
    script = set(calls)
    calls.clear()
    _, _, runs, _ = plan(REPO / "experiments" / "configs" / config)
    for run in runs:
        mod.run_one(**run.params)
    grid = list(calls)
    assert len(grid) == len(runs) == len(set(grid))
    # every curve of the grid is a reported curve (or the same curve, longer), every reported curve is in the grid
    assert all(_covers(g, script) for g in grid)
    assert all(any(_covers(g, {s}) for g in grid) for s in script)


def test_active_dpmm_summary_matches_the_script_layout(monkeypatch, tmp_path):
    mod = _module("active_dpmm")
    _stand_ins(monkeypatch, mod)
    _capture_curves(monkeypatch)
    cfg = REPO / "experiments" / "configs" / "verbs_round1.toml"
    mod.main(
        [
            *REPORTED[0][1][0].replace("bio-fine general bio-mid bio-top", "bio-top").split(),
            "--out",
            str(tmp_path / "script"),
        ]
    )
    run_grid(cfg, tmp_path / "grid", progress=False, summarize=False)  # the fake curves: seconds
    for p in (tmp_path / "grid" / "runs").glob("*.json"):
        if not p.name.startswith("dataset-bio-top_"):
            p.unlink()  # a partial grid: one set of four
    from jaxclust.apps.experiment import summarize

    summarize(tmp_path / "grid")
    script = json.loads((tmp_path / "script" / "bio-top.json").read_text())
    grid = json.loads((tmp_path / "grid" / "bio-top.json").read_text())
    strip = lambda runs: [{k: v for k, v in r.items() if k != "seconds"} for r in runs]  # noqa: E731
    assert strip(grid["runs"]) == strip(script["runs"])  # same curves, same order
    assert grid["summary"] == script["summary"]
    assert (tmp_path / "grid" / "bio-top.png").stat().st_size > 1000
    assert not (tmp_path / "grid" / "general.json").exists()


def test_kmeans_config_asks_the_reported_questions(monkeypatch, tmp_path):
    mod = _module("kmeans_baselines")
    active = mod._active_module()
    monkeypatch.setattr(mod, "_active_module", lambda: active)
    _stand_ins(monkeypatch, active)
    calls = []

    def fake(X, y, strategy, budget, step, n_init, n_estimators, seed, echo=print, label=""):
        calls.append((np.asarray(X).round(10).tobytes(), strategy, budget, step, n_init, n_estimators, seed))
        return [{"name": f"PCKMeans + {strategy}", "clusterer": "PCKMeans", "history": [{"n_queries": 0}]}]

    monkeypatch.setattr(mod, "strategy_runs", fake)
    monkeypatch.setattr(mod, "_plot", lambda *a: None)
    for s in ("general", "bio-fine", "bio-top"):  # the reported commands, one set each
        mod.main(["--sets", s, "--out", str(tmp_path)])
    script = sorted(calls)
    calls.clear()
    for run in plan(REPO / "experiments" / "configs" / "verbs_kmeans_baselines.toml")[2]:
        mod.run_one(**run.params)
    assert sorted(calls) == script and len(script) == 9


def _fake_system_result(system, splits, docs, gold, *, gamma, thresholds, **kw):
    def sc(x):
        return {"conll_f1": x, "conll_f1_no_singletons": x / 2, "muc": [x, x, x]}

    if system == "l3m":
        by_t = {
            s: {str(float(t)): sc(round(100 * gamma * t * (1 - t), 4)) for t in thresholds}
            for s in ("dev", "test")
        }
        return {"gamma": float(gamma), "scores_by_threshold": by_t}
    if system == "baselines":
        return {
            "scores": {
                "exact_match": {"dev": sc(1.0), "test": sc(2.0)},
                "singletons": {"dev": sc(3), "test": sc(4)},
            }
        }
    out = {"scores": {"dev": sc(5.0), "test": sc(6.0)}}
    return {**out, "threshold": 0.4} if system == "pairwise" else out


@pytest.mark.parametrize(
    ("config", "command"),
    [
        ("l3m_litbank.toml", "--dataset litbank --epochs 15"),
        ("l3m_gum.toml", "--dataset gum --epochs 10 --gammas 0.1,0.5,1.0"),
    ],
)
def test_l3m_configs_train_the_reported_models_and_summarise_like_the_script(
    config, command, monkeypatch, tmp_path
):
    mod = _module("l3m_coref")
    calls = []

    def record(system, *args, **kw):
        calls.append(json.dumps([system, {k: v for k, v in kw.items() if k != "echo"}], sort_keys=True))
        return _fake_system_result(system, *args, **kw)

    monkeypatch.setattr(mod, "prepare", lambda dataset, window, quick, cache: ({}, {}, {}))
    monkeypatch.setattr(mod, "system_result", record)
    script_result = mod.main([*command.split(), "--out", str(tmp_path / "script")])
    script = sorted(calls)
    calls.clear()
    cfg = REPO / "experiments" / "configs" / config
    run_grid(cfg, tmp_path / "grid", progress=False)
    assert sorted(calls) == script
    name = "litbank" if "litbank" in config else "gum"
    grid_result = json.loads((tmp_path / "grid" / f"{name}.json").read_text())
    assert grid_result["tuning"] == script_result["tuning"]  # the same gamma and t chosen on dev
    assert grid_result["scores"] == script_result["scores"]
    assert (tmp_path / "grid" / f"{name}_gamma_t.png").is_file()


def test_fast_configs_run_quick_and_reproduce_the_reported_numbers(data_dir, tmp_path):
    report = run_grid(
        REPO / "experiments" / "configs" / "dataset_signal.toml", tmp_path / "ds", quick=True, progress=False
    )
    assert report.ran == 5 and not report.failed
    rows = {r["dataset"]: r for r in json.loads((tmp_path / "ds" / "signal.json").read_text())["results"]}
    # experiments/README.md: quick mode gives verbs balanced 0.232 / 0.435, biomedical top 0.349 (k-means purity)
    assert rows["verbs_general balanced / root_class"]["kmeans"]["purity"] == pytest.approx(0.232, abs=5e-4)
    assert rows["verbs_general balanced / root_class"]["kmeans"]["nmi"] == pytest.approx(0.435, abs=5e-4)
    assert rows["verbs_biomed / top"]["kmeans"]["purity"] == pytest.approx(0.349, abs=5e-4)
    assert (tmp_path / "ds" / "signal.png").stat().st_size > 1000
    report = run_grid(
        REPO / "experiments" / "configs" / "metrics_baselines.toml",
        tmp_path / "mb",
        quick=True,
        progress=False,
    )
    assert report.ran == 2 and not report.failed
    mb = json.loads((tmp_path / "mb" / "metrics_baselines.json").read_text())
    gold = next(r for r in mb["partition"]["rows"] if r["kind"] == "split" and r["param"] == 1)
    assert gold["v_beta"] == pytest.approx(1.0) and gold["n_clusters"] == 46


SLOW = [p for p in CONFIGS if p.stem not in ("dataset_signal", "metrics_baselines")]


@pytest.mark.slow
@pytest.mark.parametrize("path", SLOW, ids=lambda p: getattr(p, "stem", None))
def test_config_runs_quick(path, data_dir, tmp_path):
    report = run_grid(path, tmp_path, quick=True, progress=False)
    assert report.failed == [] and report.ran == report.total
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["n_finished"] == report.total and summary["missing"] == []
    files = summary["kinds"][load_config(path).kind]["files"]
    assert files and all((tmp_path / f).is_file() for f in files)
    assert any(re.search(r"\.png$", f) for f in files)


def test_readme_example_config_is_valid(tmp_path):
    text = (REPO / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```toml\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    cfg = tmp_path / "example.toml"
    cfg.write_text(block)
    _, _, runs, _ = plan(cfg)
    got = [(r.params["dataset"], r.params["strategy"]) for r in runs]
    assert got == [
        ("general", "batch"),
        ("general", "random"),
        ("bio-top", "batch"),
        ("general-full", "batch"),
    ]
    assert [r.params["dataset"] for r in plan(cfg, quick=True)[2]] == ["bio-top", "general-full"]


def test_noisy_annotators_result_with_an_explicit_prior_is_json(monkeypatch):
    """A run whose DPMM has an explicit prior (the verb sets' empirical-Bayes one) must store as JSON: the
    prior object is named, not dropped silently and not passed to json (which failed every general-set run)."""
    import json

    from sklearn.datasets import make_blobs

    from jaxclust.apps.experiment.registry import load_target
    from jaxclust.dpmm import NormalGamma

    run_one = load_target("@experiments/noisy_annotators.py:run_one")
    X, y = make_blobs(n_samples=30, n_features=2, centers=3, random_state=0)
    monkeypatch.setitem(run_one.__globals__, "load", lambda *a: (X, y, NormalGamma.from_data(X, scale=0.03)))
    result = run_one(
        "general",
        flip_rate=0.1,
        n_queries=4,
        batch_size=2,
        n_chains=1,
        n_burnin=2,
        n_samples=2,
        thin=1,
        warm_burnin=1,
    )
    stored = json.loads(json.dumps(result))
    assert stored["meta"]["model"]["prior"] == "empirical Bayes, scale 0.03"
    assert stored["run"]["history"][-1]["n_constraints"] == 4
