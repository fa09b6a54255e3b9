"""The annotate session survives SIGKILL and resumes; the CLI commands and the demo run end to end."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from jaxclust.active import AnswerStore
from jaxclust.apps.annotate import read_items_csv
from jaxclust.constraints import Constraints
from jaxclust.errors import InvalidInputError

REPO = Path(__file__).resolve().parents[2]

# A session driver with a cheap stand-in model (k-means restarts as "samples") so the test exercises the
# store / resume path without paying for the DPMM's compilation; the slow test below covers the real CLI.
DRIVER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from sklearn.cluster import KMeans
    from jaxclust.apps.annotate import run_annotate

    class KMeansSamples:
        def fit(self, X, constraints=None, init_labels=None, n_burnin=None):
            self.samples_ = np.array([KMeans(k, n_init=1, random_state=s).fit_predict(X)
                                      for k in (2, 3, 4) for s in range(4)])
            self.final_labels_ = self.samples_[:2]
            self.labels_ = self.samples_[0]
            return self

    run_annotate(sys.argv[1], sys.argv[2], n_queries=int(sys.argv[3]), strategy="entropy",
                 model=KMeansSamples(), stop_entropy=0)
"""
)


def _write_csv(path: Path) -> None:
    rng = np.random.default_rng(0)
    centers = np.array([[0, 0], [4, 0], [0, 4]])
    X = np.repeat(centers, 8, axis=0) + rng.normal(size=(24, 2))
    lines = ["word,f1,f2"] + [f"w{k},{a:.4f},{b:.4f}" for k, (a, b) in enumerate(X)]
    path.write_text("\n".join(lines) + "\n")


def _questions(text: str) -> list[tuple[int, int]]:
    """Pairs asked, from the prompts (the items' lines, '  w<i>', follow each 'Question' line)."""
    out, lines = [], text.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("Question"):
            a = int(lines[k + 1].strip().removeprefix("w"))
            b = int(lines[k + 2].strip().removeprefix("w"))
            out.append((min(a, b), max(a, b)))
    return out


def test_annotate_session_killed_and_resumed_loses_no_answer(tmp_path):
    data, store = tmp_path / "items.csv", tmp_path / "answers.jsonl"
    _write_csv(data)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    replies = ["y", "n", "d", "n", "y", "n", "n", "y", "n", "n", "y", "n"] * 3
    code = {"y": "must", "n": "cannot", "d": "unknown"}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(data), str(store), "30"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    proc.stdin.write("\n".join(replies) + "\n")
    proc.stdin.flush()
    deadline = time.time() + 120
    while time.time() < deadline:  # kill once a few answers are durable, in the middle of the session
        # answer lines only: the session also writes a fit record after each answer
        if store.exists() and sum('"answer"' in x for x in store.read_text().splitlines()) >= 4:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    first = AnswerStore(store).records
    assert 4 <= len(first) < 30  # killed mid-way
    # every stored answer is the reply typed for that question, in order: nothing lost or reordered
    assert [r["answer"] for r in first] == [code[c] for c in replies[: len(first)]]

    res = subprocess.run(
        [sys.executable, str(script), str(data), str(store), "30"],
        input="y\n",
        capture_output=True,
        env=env,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    asked = _questions(res.stdout)
    stored_pairs = {(r["i"], r["j"]) for r in first}
    assert len(asked) == 2  # one answered, the next one shown before stdin ended
    assert asked[0] not in stored_pairs and asked[1] not in stored_pairs
    after = AnswerStore(store).records
    assert after[: len(first)] == first  # nothing lost, nothing re-asked
    assert len(after) == len(first) + 1 and (after[-1]["i"], after[-1]["j"]) == asked[0]
    assert after[-1]["answer"] == "must"
    # the answers never contradict what earlier answers implied (the pair was unknown when asked)
    cons = Constraints(24)
    for r in after:
        if r["answer"] != "unknown":
            assert cons.status(r["i"], r["j"]) is None
            cons = cons.with_constraint(r["i"], r["j"], r["answer"] == "must")
    assert "Session stopped" in res.stdout


def test_read_items_csv_detects_name_column_and_names_bad_cells(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("f1,name,f2,ctx\n1,a,2,x\n3,b,4,y\n5,c,6,z\n")
    X, names, ctx, feats = read_items_csv(path, context_column="ctx")
    np.testing.assert_array_equal(X, [[1, 2], [3, 4], [5, 6]])
    assert names == ["a", "b", "c"] and ctx == ["x", "y", "z"] and feats == ["f1", "f2"]
    path.write_text("name,f1,f2\na,1,2\nb,3,oops\nc,5,6\n")
    with pytest.raises(InvalidInputError, match="line 3, column 'f2'"):
        read_items_csv(path, name_column="name")
    with pytest.raises(InvalidInputError, match="name_column"):
        read_items_csv(path, name_column="word")


def test_demo_quick_runs_through_the_cli(tmp_path):
    from jaxclust.apps.cli_active import annotate, demo
    from jaxclust.apps.demo import load_wine_standardised

    app = typer.Typer()
    app.command()(demo)
    app.command()(annotate)
    result = CliRunner().invoke(app, ["demo", "--quick", "--out", str(tmp_path), "--n-queries", "10"])
    assert result.exit_code == 0, result.output
    res = json.loads((tmp_path / "demo_quick.json").read_text())
    assert (tmp_path / "demo_quick.png").stat().st_size > 1000
    assert not (tmp_path / "demo.json").exists()  # a quick run leaves the full run's files alone
    _, y = load_wine_standardised()
    assert {r["strategy"] for r in res["runs"]} == {"explore", "random"}
    for run in res["runs"]:
        hist = run["history"]
        assert hist[-1]["n_queries"] == 10
        cons = Constraints(len(y))
        for h in hist:
            for i, j, ans in h["queries"]:  # gold answers, each about a pair unknown when asked
                assert ans == ("must" if y[i] == y[j] else "cannot")
                assert cons.status(i, j) is None
                cons = cons.with_constraint(i, j, ans == "must")
            assert h["n_constraints"] == len(cons)
            assert 0.0 <= h["v_beta"] <= 1.0 and 0.0 <= h["link_accuracy"] <= 1.0
    # several seeds of each strategy (the same model seeds for both), averaged in the printed table
    active = [r for r in res["runs"] if r["strategy"] == "explore"]
    random = [r for r in res["runs"] if r["strategy"] == "random"]
    assert len(active) == len(random) == res["meta"]["repeats"] == 2
    assert [r["model_seed"] for r in active] == [r["model_seed"] for r in random] == [0, 1]
    last = np.mean([r["history"][-1]["v_beta"] for r in active])
    assert f"{last:.4f}" in result.output and "(mean of 2)" in result.output
    assert res["summary"]["v_beta_mean"]["active (explore)"][-1] == pytest.approx(last)
    assert "active is ahead of random at" in result.output


def test_demo_model_nested_fits_classes_inside_the_model(tmp_path, monkeypatch):
    """``--model nested`` gives every session the NestedDPMM, read as it is (the learner's default for a model
    that samples classes), in files of its own; a model the demo does not know is refused by its flag."""
    import jaxclust.apps.demo as demo_mod
    from jaxclust import NestedDPMM
    from jaxclust.apps.cli_active import demo

    seen = []

    def fake_run_curves(X, y, model, strategies, n_queries, min_samples, warm_burnin, progress, propagation):
        seen.append((model, propagation, warm_burnin, [s[4] for s in strategies]))
        hist = [{"n_queries": q, "v_beta": 0.5 + q / 100} for q in range(0, n_queries + 1, 5)]
        return [{"name": s[0], "strategy": s[1], "seed": s[3], "history": hist} for s in strategies]

    monkeypatch.setattr(demo_mod, "run_curves", fake_run_curves)
    monkeypatch.setattr(
        demo_mod, "plot_curves", lambda *a, **k: type("F", (), {"savefig": lambda *a, **k: None})()
    )
    app = typer.Typer()
    app.command()(demo)
    res = CliRunner().invoke(
        app, ["--quick", "--out", str(tmp_path), "--n-queries", "10", "--model", "nested"]
    )
    assert res.exit_code == 0, res.output
    ((model, propagation, warm, seeds),) = seen
    assert type(model) is NestedDPMM and propagation is None and warm is None
    assert (model.n_chains, model.n_burnin, model.n_samples, model.thin) == (2, 30, 10, 2)
    assert seeds == [0, 0, 1, 1]  # the same model seeds for both strategies
    meta = json.loads((tmp_path / "demo_quick_nested.json").read_text())["meta"]
    assert meta["command"] == "jaxclust demo --quick --model nested" and meta["model"]["n_split_merge"] == 20
    assert not (tmp_path / "demo_quick.json").exists()  # the DPMM's files are left alone
    bad = CliRunner().invoke(app, ["--quick", "--out", str(tmp_path), "--model", "Nested"])
    assert bad.exit_code != 0 and "--model" in bad.output and "'Nested'" in bad.output


@pytest.mark.slow
def test_annotate_cli_with_the_dpmm(tmp_path):
    data, store = tmp_path / "items.csv", tmp_path / "answers.sqlite"
    _write_csv(data)
    cmd = [
        sys.executable,
        "-m",
        "jaxclust.apps.cli_active",
        "annotate",
        str(data),
        "--store",
        str(store),
        "--n-queries",
        "3",
        "--n-burnin",
        "5",
        "--n-samples",
        "4",
        "--n-chains",
        "2",
        "--labels-out",
        str(tmp_path / "labels.csv"),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(cmd, input="y\nn\ny\n", capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert len(AnswerStore(store).records) == 3
    res2 = subprocess.run(cmd, input="", capture_output=True, text=True, env=env, timeout=600)
    assert res2.returncode == 0 and _questions(res2.stdout) == []  # all 3 answered: nothing asked again
    assert (tmp_path / "labels.csv").read_text().startswith("name,cluster")


def test_annotate_cli_reports_bad_input_in_one_line(tmp_path):
    from jaxclust.apps.cli_active import annotate

    app = typer.Typer()
    app.command()(annotate)
    app.command()(lambda: None)  # two commands: typer keeps the subcommand name
    args = ["annotate", str(tmp_path / "missing.csv"), "--store", str(tmp_path / "s.db")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "missing.csv" in result.output and "not found" in result.output


def test_help_names_the_extras_a_command_needs():
    from jaxclust.apps.cli import app

    for args in (["--help"], ["serve", "--help"]):
        out = " ".join(CliRunner().invoke(app, args, env={"COLUMNS": "200", "NO_COLOR": "1"}).output.split())
        assert "(needs jaxclust[serve])" in out and "(needs jaxclust)" not in out, args


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["annotate", "--help"], "Usage: jaxclust annotate [OPTIONS] DATA"),
        (["experiment", "run", "--help"], "Usage: jaxclust experiment run [OPTIONS] CONFIG"),
        (["experiment", "--help"], "Usage: jaxclust experiment [OPTIONS] COMMAND [ARGS]..."),
        (["--help"], "Usage: jaxclust [OPTIONS] COMMAND [ARGS]..."),
    ],
)
def test_help_reads_as_a_command_line_tool(args, usage):
    from jaxclust.apps.cli import app

    result = CliRunner().invoke(app, args, env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert usage in " ".join(result.output.split())  # not typer's {data}
    lines = {
        line.split()[1]: line for line in result.output.splitlines() if line.strip("│ ").startswith("--")
    }
    for flag in ("--help", "--shared", "--version", "--quick", "--resume"):
        if flag in lines:  # a flag takes no value: nothing is written after it
            assert "<" not in lines[flag].split(flag, 1)[1].split("  ")[0] and "bool" not in lines[flag], (
                lines[flag]
            )
    if args[0] == "annotate":
        assert (
            "--n-queries" in lines and "<int>" in lines["--n-queries"]
        )  # an option that takes a value says what


@pytest.mark.parametrize("command", ["annotate", "serve", "demo"])
def test_help_at_80_columns_leaves_room_for_the_descriptions(command):
    from jaxclust.apps.cli import app

    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.lstrip("│ *").startswith("--")]
    assert len(rows) > 5
    for row in rows:  # every option's description starts by column 44, so it keeps at least 34 of the 80
        name = row.lstrip("│ *").split()[0]
        assert name.startswith("--") and not name.endswith("…"), row
        described = [m.start() for m in re.finditer(r"\S", row[: len(row.rstrip("│ "))])]
        gaps = [b for a, b in zip(described, described[1:], strict=False) if b - a > 2]
        assert gaps and gaps[-1] <= 44, row
