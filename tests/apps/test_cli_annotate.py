"""The command line: every bad option or file is one line on stderr with exit code 2, naming the culprit as typed,
and nothing is created first; what ``annotate`` says before, during and after a session.
"""

from __future__ import annotations

import io
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score
from typer.testing import CliRunner

from jaxclust.active import AnswerStore
from jaxclust.apps.annotate import run_annotate
from jaxclust.apps.cli import app

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
STANDIN = HERE.parent / "active"  # _standin.py, the stand-in sampler the session tests share
sys.path.insert(0, str(STANDIN))
from _standin import StandInSampler, blobs, write_items_csv  # noqa: E402


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder with a CSV, a text file, a folder and a corrupt SQLite file; the command runs inside it."""
    X, y = blobs()
    write_items_csv(tmp_path / "items.csv", X, y)
    (tmp_path / "bad.csv").write_text("word,f1,f2\na,1,2\nb,3,oops\nc,5,6\n")
    (tmp_path / "latin1.csv").write_bytes("word,f1\ncaf\xe9,1\nthé,2\n".encode("latin-1"))
    (tmp_path / "notes.jsonl").write_text("my notes\nmore notes\n")
    (tmp_path / "corrupt.sqlite").write_bytes(b"SQLite format 2\x00" + bytes(range(256)) * 8)
    (tmp_path / "folder").mkdir()
    (tmp_path / "afile").write_text("x")
    foreign = sqlite3.connect(tmp_path / "foreign.db")
    foreign.execute("CREATE TABLE users (name TEXT)")
    foreign.commit()
    foreign.close()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>") for p in root.rglob("*")}


BAD = [
    (["demo", "--n-queries", "-5"], "--n-queries: expected an int >= 1, got -5"),
    (["demo", "--n-queries", "0"], "--n-queries: expected an int >= 1, got 0"),
    (["demo", "--n-queries", "abc"], "'--n-queries'"),
    (["demo", "--seed", "-1"], "--seed: expected an int >= 0"),
    (["demo", "--out", "afile"], "--out: afile is a file"),
    (["demo", "--out", "afile/sub"], "--out: cannot create afile/sub: afile is a file"),
    (["demo", "--bogus"], "--bogus"),
    (["annotate"], "Missing argument 'data'"),
    (["annotate", "missing.csv"], "data file 'missing.csv' not found"),
    (["annotate", "."], "data file '.' is a folder, not a file: pass the file of items in it"),
    (["annotate", "items.csv", "--frobnicate"], "--frobnicate"),
    (
        ["annotate", "items.csv", "--strategy", "greedy"],
        "--strategy: expected one of 'explore', 'batch', 'entropy', 'naive_batch', 'random', got 'greedy'",
    ),
    (["annotate", "items.csv", "--batch-size", "0"], "--batch-size: expected an int >= 1, got 0"),
    (["annotate", "items.csv", "--n-queries", "-1"], "--n-queries: expected an int >= 0, got -1"),
    (["annotate", "items.csv", "--n-queries", "many"], "'--n-queries'"),
    (["annotate", "items.csv", "--stop-entropy", "2"], "--stop-entropy: expected a number of nats"),
    (["annotate", "items.csv", "--stop-entropy", "-0.1"], "--stop-entropy: expected a number of nats"),
    (["annotate", "items.csv", "--n-chains", "0"], "--n-chains: expected an int >= 1, got 0"),
    (["annotate", "items.csv", "--model", "gmm"], "--model: expected one of 'dpmm', 'nested', got 'gmm'"),
    (["annotate", "items.csv", "--n-samples", "0"], "--n-samples: expected an int >= 1"),
    (["annotate", "items.csv", "--n-burnin", "-1"], "--n-burnin: expected an int >= 0"),
    (["annotate", "items.csv", "--seed", "-3"], "--seed: expected an int >= 0"),
    (["annotate", "items.csv", "--store", "folder"], "answer store folder: is a folder"),
    (["annotate", "items.csv", "--store", "nope/a.sqlite"], "the folder nope does not exist"),
    (["annotate", "items.csv", "--store", "items.csv"], "--store: items.csv is the data file"),
    (["annotate", "items.csv", "--store", "corrupt.sqlite"], "corrupt.sqlite: is not an SQLite database"),
    (
        ["annotate", "items.csv", "--store", "foreign.db"],
        "foreign.db: is an SQLite database but not a jaxclust",
    ),
    (
        ["annotate", "items.csv", "--store", "notes.jsonl"],
        "notes.jsonl: does not look like a jaxclust answer store",
    ),
    (["annotate", "items.csv", "--labels-out", "nope/l.csv"], "--labels-out: the folder nope does not exist"),
    (
        ["annotate", "items.csv", "--labels-out", "items.csv"],
        "--labels-out: items.csv would overwrite the data",
    ),
    (["annotate", "items.csv", "--labels-out", "folder"], "--labels-out: folder is a folder"),
    (["annotate", "items.csv", "--name-column", "nope"], "--name-column: no column 'nope'"),
    (["annotate", "items.csv", "--ignore-column", "nope"], "--ignore-column: no column 'nope'"),
    (["annotate", "notes.jsonl", "--ignore-column", "x"], "--ignore-column: notes.jsonl is JSON lines"),
    (["annotate", "bad.csv"], "bad.csv: line 3, column 'f2': 'oops' is not a number"),
    (["annotate", "latin1.csv"], "latin1.csv: is not UTF-8 text"),
]


@pytest.mark.parametrize(("args", "culprit"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_option_or_file_is_one_line_exit_2_and_creates_nothing(workdir, args, culprit):
    before = _listing(workdir)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert culprit in lines[0]
    assert "Traceback" not in result.output and result.stdout == ""
    assert _listing(workdir) == before  # no output folder, no store, no lock or side file, nothing changed


def test_the_installed_command_prints_one_line_and_creates_no_folder(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for module in ("jaxclust.apps.cli", "jaxclust.apps.cli_active"):
        res = subprocess.run(
            [sys.executable, "-m", module, "demo", "--n-queries", "-5", "--out", str(tmp_path / "out")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr == "error: --n-queries: expected an int >= 1, got -5\n"
    assert list(tmp_path.iterdir()) == []


def test_python_callers_see_parameter_names(workdir):
    from jaxclust.apps.demo import run_demo
    from jaxclust.errors import DatasetNotFoundError, InvalidInputError, StoreError

    with pytest.raises(InvalidInputError, match="^n_queries: expected an int >= 1, got -5"):
        run_demo(out_dir=workdir / "demo_out", n_queries=-5)
    with pytest.raises(InvalidInputError, match="^batch_size: expected an int >= 1"):
        run_annotate("items.csv", "s.jsonl", batch_size=0)
    with pytest.raises(StoreError, match="is a folder"):
        run_annotate("items.csv", "folder")
    with pytest.raises(InvalidInputError, match="^model: expected one of 'dpmm', 'nested', got 'gmm'"):
        run_annotate("items.csv", "s.jsonl", sampler_options={"model": "gmm"})
    with pytest.raises(DatasetNotFoundError, match="missing.csv"):
        run_annotate("missing.csv", "s.jsonl")
    assert not (workdir / "demo_out").exists() and not (workdir / "s.jsonl").exists()


# --- what a session says -----------------------------------------------------------------------------------

ITEM = re.compile(r"^  (?!\[y\] same)(\S.*)$")  # an item's line: its name (the reply prompt excepted)


def _session(data, store, replies=None, **kw):
    """Run annotate in-process with the stand-in model, answering from the names (or ``replies``)."""
    names = [line.split(",")[0] for line in Path(data).read_text().splitlines()[1:]]
    out = io.StringIO()
    replies = iter(replies) if replies is not None else None

    def reply(_prompt):
        if replies is not None:
            r = next(replies, None)
            if r is None:
                raise EOFError
            return r
        i, j = [names.index(m.group(1)) for m in map(ITEM.match, out.getvalue().splitlines()) if m][-2:]
        return "y" if names[i][0] == names[j][0] else "n"

    opts = {"model": StandInSampler(), "stop_entropy": None, **kw}
    summary = run_annotate(data, store, input_fn=reply, output=out, **opts)
    return summary, out.getvalue()


def test_messages_count_in_the_singular_and_say_when_the_target_is_reached(workdir):
    summary, text = _session("items.csv", "s.jsonl", n_queries=1)
    assert summary["stop_reason"] == "done" and summary["n_new"] == 1
    assert "Done: the target of 1 question is reached." in text
    assert "1 answer stored in s.jsonl (1 constraint, 0 don't know" in text
    assert (
        "run again with a larger n_queries" in text and "Run the same command again to continue" not in text
    )
    # a second run with the same target asks nothing and says so, instead of "run again to continue"
    summary, text = _session("items.csv", "s.jsonl", n_queries=1)
    assert summary["n_new"] == 0 and "Question" not in text
    assert "(resuming: 1 answer already stored)" in text
    assert "The target of 1 question was already reached in an earlier session: nothing to ask." in text
    assert "continue" not in text
    # a target of 0 on a new store does not speak of an earlier session
    summary, text = _session("items.csv", "new.jsonl", n_queries=0)
    assert summary["n_answers"] == 0 and "earlier session" not in text
    assert "Nothing asked (n_queries 0): the clusters are the model's alone." in text


def test_a_stopped_session_says_how_to_continue_and_numbers_questions_across_sessions(workdir):
    summary, text = _session("items.csv", "s.sqlite", replies=["y", "n", "q"], n_queries=10)
    assert summary["stop_reason"] == "stopped" and summary["n_answers"] == 2
    assert "Session stopped (quit).\n2 answers stored in s.sqlite" in text
    assert text.rstrip().endswith("Run the same command again to continue.")
    summary, text = _session("items.csv", "s.sqlite", replies=["d"], n_queries=10)
    assert (
        "(resuming: 2 answers already stored)" in text and "Question 3:" in text and "Question 1:" not in text
    )
    assert "3 answers stored in s.sqlite (2 constraints, 1 don't know" in text


def test_the_first_fit_is_announced_before_it_runs(workdir):
    _, text = _session("items.csv", "s.jsonl", n_queries=1)
    lines = text.splitlines()
    assert lines[0] == "24 items, 2 features; answers go to s.jsonl"
    assert lines[1].startswith("Fitting the model to 24 items") and lines[2].startswith("Model ready (")
    assert lines.index(next(x for x in lines if x.startswith("Question 1"))) > 2


def test_a_confident_model_stops_on_separated_blobs(workdir):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 8)
    X = np.array([[0.0, 0.0], [30.0, 0.0], [0.0, 30.0]])[y] + rng.normal(size=(24, 2))
    write_items_csv(workdir / "far.csv", X, y)
    sharp = StandInSampler(temperature=0.05)
    summary, text = _session("far.csv", "far.jsonl", n_queries=20, stop_entropy=0.2, model=sharp)
    assert summary["stop_reason"] == "confident" and summary["n_new"] < 20
    assert summary["max_entropy"] < 0.2
    assert "The model is confident about every remaining pair" in text and "stop_entropy" in text
    # with the stop switched off the same session asks up to its target
    summary, _ = _session("far.csv", "far2.jsonl", n_queries=20, stop_entropy=0, model=sharp)
    assert summary["n_new"] == 20 and summary["stop_reason"] == "done"


def test_resuming_reports_a_damaged_store_as_a_warning_line(workdir, monkeypatch):
    summary, _ = _session("items.csv", "s.jsonl", n_queries=2)
    damaged_line = len(Path("s.jsonl").read_text().splitlines()) + 1
    with open("s.jsonl", "ab") as fh:
        fh.write(b"this line is damaged\n")
    # the command's model, swapped for the stand-in (no compilation)
    monkeypatch.setattr("jaxclust.dpmm.DPMM", lambda **kw: StandInSampler(random_state=kw["random_state"]))
    result = CliRunner().invoke(
        app, ["annotate", "items.csv", "--store", "s.jsonl", "--n-queries", "2", "--n-chains", "1"], input=""
    )
    assert result.exit_code == 0, result.output
    warning = [x for x in result.stderr.splitlines() if x.startswith("warning: ")]
    assert (
        len(warning) == 1
        and f"line {damaged_line} (not valid JSON" in warning[0]
        and "s.jsonl.corrupt" in warning[0]
    )
    assert "The target of 2 questions was already reached" in result.stdout
    assert len(AnswerStore("s.jsonl").records) == 2


def test_model_nested_gives_the_session_classes_sampled_inside_the_model(workdir, monkeypatch):
    built = []

    def nested(**kw):
        built.append(kw)
        return StandInSampler(random_state=kw["random_state"])

    monkeypatch.setattr("jaxclust.dpmm.nested_model.NestedDPMM", nested)
    monkeypatch.setattr("jaxclust.dpmm.DPMM", lambda **kw: pytest.fail("--model nested built a DPMM"))
    args = ["annotate", "items.csv", "--store", "s.jsonl", "--n-queries", "1", "--model", "nested"]
    result = CliRunner().invoke(app, [*args, "--n-chains", "3", "--seed", "5"], input="y\n")
    assert result.exit_code == 0, result.output
    # its own burn-in (100) unless --n-burnin is given, the other options as given
    assert built == [{"n_chains": 3, "n_burnin": 100, "n_samples": 10, "random_state": 5}]


def _three_blobs(path) -> np.ndarray:
    """Three separated blobs of 8 items written to ``path``; returns their classes."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 8)
    write_items_csv(path, np.array([[0.0, 0.0], [8.0, 0.0], [0.0, 8.0]])[y] + rng.normal(size=(24, 2)), y)
    return y


@pytest.mark.slow
def test_model_nested_finds_three_separated_blobs(workdir):
    y = _three_blobs(workdir / "blobs.csv")
    options = {"model": "nested", "n_chains": 2, "n_burnin": 20, "n_samples": 3}
    summary, _ = _session(
        "blobs.csv", "b.jsonl", n_queries=3, model=None, sampler_options=options, labels_out="l.csv"
    )
    found = np.loadtxt(workdir / "l.csv", delimiter=",", skiprows=1, usecols=1, dtype=int)
    assert summary["n_new"] == 3 and adjusted_rand_score(y, found) == 1.0


@pytest.mark.slow
def test_the_dpmm_is_confident_on_three_separated_blobs(workdir):
    from jaxclust.dpmm import DPMM

    _three_blobs(workdir / "blobs.csv")
    model = DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3, random_state=0)  # annotate's default
    summary, text = _session("blobs.csv", "b.jsonl", n_queries=20, model=model, stop_entropy=0.2)
    assert summary["stop_reason"] == "confident" and summary["n_new"] <= 6 and summary["n_clusters"] == 3


def test_the_readme_csv_example_is_what_annotate_reads(tmp_path):
    from jaxclust.apps.annotate import read_items_csv

    readme = (REPO / "README.md").read_text()
    block = readme.split("## Annotating your own data", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    (tmp_path / "words.csv").write_text(block)
    X, names, contexts, features = read_items_csv(tmp_path / "words.csv", context_column="context")
    assert names == ["bank", "shore", "lender"] and features == ["f1", "f2", "f3"]
    assert contexts[1] == "we walked along the shore"
    np.testing.assert_allclose(X[2], [0.10, 3.10, -0.90])


CTRL_C_DRIVER = """
import signal
import sys
# a test run started in the background (nohup ... &) inherits SIGINT ignored, and Python then keeps it ignored;
# a user's terminal never does, so the driver restores Python's own handler
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {here!r})
import jaxclust.dpmm
from _standin import StandInSampler
jaxclust.dpmm.DPMM = lambda **kw: StandInSampler(random_state=kw["random_state"])  # no compilation
from jaxclust.apps.cli import app
app(sys.argv[1:], prog_name="jaxclust")
"""


def test_ctrl_c_says_the_answers_are_saved_without_a_traceback(workdir):
    import signal

    driver = workdir / "driver.py"
    driver.write_text(CTRL_C_DRIVER.format(here=str(STANDIN)))
    proc = subprocess.Popen(
        [sys.executable, str(driver), "annotate", "items.csv", "--store", "s.jsonl", "--n-queries", "10"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"},
    )
    questions = 0
    for line in proc.stdout:
        if line.startswith("Question"):
            questions += 1
            if questions == 3:  # two answers given, the third question on screen
                break
            proc.stdin.write("y\n")
            proc.stdin.flush()
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert (
        err
        == "interrupted: every answer given so far is saved in s.jsonl; run the same command again to continue\n"
    )
    assert len(AnswerStore(workdir / "s.jsonl").records) == 2


def test_u_undoes_the_last_answer_at_the_terminal_and_asks_it_again(workdir):
    summary, text = _session("items.csv", "s.jsonl", replies=["y", "u", "n", "n"], n_queries=2)
    assert "[u] undo" in text and "Undone: " in text and "(same cluster); asking again from there." in text
    assert text.count("Question 1:") == 2 and "Question 2:" in text
    with AnswerStore("s.jsonl") as s:
        in_effect = [r["answer"] for r in s.records]
        assert in_effect == ["cannot", "cannot"]  # the undone "y" is not in effect; the undo record is kept
    assert summary["n_new"] == 3 and summary["n_answers"] == 2  # three asked in this run, two in effect
