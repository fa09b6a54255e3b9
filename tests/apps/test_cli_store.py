"""``jaxclust store stats | export`` on stores written by several annotators."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jaxclust.active.store import AnswerStore
from jaxclust.apps.cli import app

ANSWERS = [
    (0, 1, "must", "ann"),
    (0, 2, "cannot", "ann"),
    (1, 3, "must", "ann"),
    (0, 1, "must", "bob"),
    (0, 2, "must", "bob"),
    (1, 3, "must", "bob"),
    (4, 5, "unknown", "bob"),
    (2, 3, "cannot", "cy"),
    (0, 1, "cannot", "cy"),  # undone below
]


@pytest.fixture(params=["answers.sqlite", "answers.jsonl"])
def store(tmp_path, request):
    path = tmp_path / request.param
    with AnswerStore(path, {"n": 10}) as s:
        for i, j, answer, who in ANSWERS:
            s.append(i, j, answer, annotator=who)
        s.undo("cy")
    return path


def test_stats_counts_answers_per_annotator_and_agreement(store):
    result = CliRunner().invoke(app, ["store", "stats", str(store), "--disagreements"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{store}: 8 answers in effect (1 undone, 0 dropped as contradicting earlier ones), 10 items",
        "  ann: 2 same, 1 different, 0 don't know",
        "  bob: 3 same, 0 different, 1 don't know",
        "  cy: 0 same, 1 different, 0 don't know",
        # ann and bob share 3 pairs and agree on 2; ann's answers (must, cannot, must) against bob's (must x 3):
        # p_o = 2/3 = p_e, so kappa is 0; cy's undone answer on 0-1 is not counted
        "3 pairs answered by two or more annotators; Krippendorff's alpha 0.000; 1 answered both ways",
        "  ann / bob: 3 pairs, 67% alike, Cohen's kappa 0.000",
        # (1 - (2 + 0.9 * 10) / (3 + 10)) / 2 = 1/13 for ann and bob; cy shares no pair: the prior's 0.05
        "Error rate of a disputed answer (from agreement): ann 0.077, bob 0.077, cy 0.050",
        "  0-2: ann: cannot, bob: must",
    ]
    out = json.loads(CliRunner().invoke(app, ["store", "stats", str(store), "--json"]).output)
    assert (out["answers"], out["undone"], out["doubly_answered"], out["disagreements"]) == (8, 1, 3, 1)
    assert out["pairs"] == [{"annotators": ["ann", "bob"], "n": 3, "agreement": 2 / 3, "kappa": 0.0}]
    assert out["error_rates"] == pytest.approx({"ann": 1 / 13, "bob": 1 / 13, "cy": 0.05})


def test_undefined_agreement_is_said_in_words_and_null_in_json(tmp_path):
    """Two annotators who both said "same" to every shared pair: chance alone gives that, so kappa and alpha are
    undefined; the text says so and the JSON (which has no NaN) holds null."""
    path = tmp_path / "same.sqlite"
    with AnswerStore(path, {"n": 4}) as s:
        for who in ("ann", "bob"):
            s.append(0, 1, "must", annotator=who)
            s.append(2, 3, "must", annotator=who)
    text = CliRunner().invoke(app, ["store", "stats", str(path)]).output
    assert "Krippendorff's alpha undefined" in text and "Cohen's kappa undefined" in text
    out = json.loads(CliRunner().invoke(app, ["store", "stats", str(path), "--json"]).output)
    assert out["alpha"] is None and out["pairs"][0]["kappa"] is None and out["pairs"][0]["agreement"] == 1.0


def test_export_writes_every_answer_with_its_annotator(store, tmp_path):
    out = tmp_path / "answers_out.jsonl"
    result = CliRunner().invoke(app, ["store", "export", str(store), "--answers", str(out)])
    assert result.exit_code == 0 and "8 answers written" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["i"], r["j"], r["answer"], r["annotator"]) for r in rows] == [a for a in ANSWERS[:-1]]
    assert all(r["kept"] for r in rows)
    CliRunner().invoke(app, ["store", "export", str(store), "--answers", str(out), "--all"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["undone"] for r in rows] == [False] * 8 + [True]


def test_bad_input_is_one_line(tmp_path, store):
    result = CliRunner().invoke(app, ["store", "stats", str(tmp_path / "missing.sqlite")])
    assert result.exit_code == 2 and "missing.sqlite is not a file" in result.output
    hard, soft = tmp_path / "hard.jsonl", tmp_path / "soft.jsonl"
    os.link(store, hard)
    os.symlink(store, soft)
    for target in (store, hard, soft, Path(str(store) + "-wal"), Path(str(store) + ".lock")):
        for extra in ([], ["--all"]):
            result = CliRunner().invoke(
                app, ["store", "export", str(store), "--answers", str(target), *extra]
            )
            assert result.exit_code == 2 and "that is the store itself" in result.output, target
    hard.unlink()  # an SQLite store with two names is not opened at all
    with AnswerStore(store) as s:
        assert len(s.all_answers) == len(ANSWERS)  # untouched


STATS = (
    "import sys\n"
    "from typer.testing import CliRunner\n"
    "from jaxclust.apps.cli import app\n"
    "r = CliRunner().invoke(app, ['store', 'stats', sys.argv[1]])\n"
    "print(r.exit_code, r.output.splitlines()[0] if r.output else '')\n"
)


def test_stats_reads_without_writing_or_locking(tmp_path, store):
    """A read-only command writes nothing (an empty JSON-lines file stays empty) and takes no writer's lock:
    four at once all read, beside a session that has the store open for writing."""
    import subprocess
    import sys

    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    result = CliRunner().invoke(app, ["store", "stats", str(empty)])
    assert result.exit_code == 0 and "0 answers in effect" in result.output, result.output
    assert empty.read_bytes() == b"" and not list(tmp_path.glob("empty.jsonl.*"))

    before = store.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with AnswerStore(store, shared=store.suffix == ".sqlite") as writer:  # a session has it open
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", STATS, str(store)], stdout=subprocess.PIPE, text=True, env=env
            )
            for _ in range(4)
        ]
        outs = [p.communicate(timeout=120)[0] for p in procs]
        writer.append(6, 7, "must", annotator="dan")  # and it still writes
    for out in outs:
        assert out.startswith("0 ") and "8 answers in effect" in out, out
    if store.suffix == ".jsonl":
        assert store.read_bytes().startswith(before)
    with AnswerStore(store, readonly=True) as reader:
        assert len(reader) == 9
        with pytest.raises(Exception, match="is open read-only"):
            reader.append(0, 9, "must")
