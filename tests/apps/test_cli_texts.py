"""``jaxclust annotate`` on texts and embeddings: a .txt file, a CSV text column, JSON lines, a .npy array; both
texts shown in each question (long ones cut); a changed text file refused in one line naming it; --annotator and
--shared recorded and checked before anything is created.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from jaxclust.active import AnswerStore
from jaxclust.apps.cli import app

HERE = Path(__file__).resolve().parent
STANDIN = HERE.parent / "active"  # _standin.py, the stand-in sampler the session tests share
sys.path.insert(0, str(STANDIN))
from _standin import StandInSampler  # noqa: E402

TOPICS = [
    "match goal team coach season league striker referee stadium score".split(),
    "recipe oven flour butter sauce garlic onion bake simmer pepper".split(),
    "rain storm cloud wind forecast sunny snow thunder humid breeze".split(),
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """texts.txt (15 texts on 3 topics, one very long), texts.csv and texts.jsonl with the same texts, emb.npy."""
    rng = np.random.default_rng(2)
    y = np.repeat(np.arange(3), 5)
    texts = [" ".join(rng.choice(TOPICS[t], size=6)) for t in y]
    texts[4] = " ".join(["goal"] * 200)  # 999 characters
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")
    rows = ["id,body,gold"] + [f"d{k},{t},{g}" for k, (t, g) in enumerate(zip(texts, y, strict=True))]
    (tmp_path / "texts.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "texts.jsonl").write_text(
        "\n".join(json.dumps({"text": t, "id": f"d{k}"}) for k, t in enumerate(texts))
    )
    np.save(tmp_path / "emb.npy", rng.normal(size=(15, 4)) + 3 * y[:, None])
    (tmp_path / "punct.txt").write_text("!!\n? ?\n...\n")
    (tmp_path / "items.tsv").write_text("id\tf1\na\t1\nb\t2\n")
    (tmp_path / "script.py").write_text("print('hello')\n")
    monkeypatch.chdir(tmp_path)
    # the command's model, swapped for the stand-in (no compilation)
    monkeypatch.setattr("jaxclust.dpmm.DPMM", lambda **kw: StandInSampler(random_state=kw["random_state"]))
    return tmp_path, texts


def _run(*args, replies="y\nn\ny\n"):
    return CliRunner().invoke(
        app, ["annotate", *args, "--n-chains", "1", "--stop-entropy", "0"], input=replies
    )


def test_a_text_file_goes_through_annotate_and_each_question_shows_both_texts(workdir):
    tmp, texts = workdir
    res = _run(
        "texts.txt",
        "--store",
        "s.sqlite",
        "--n-queries",
        "3",
        "--labels-out",
        "out.csv",
        "--annotator",
        "eve",
    )
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "15 texts, 256 features (WordLlama embeddings); answers go to s.sqlite" in out
    first = out.split("Question 1:", 1)[1].split("Question 2:", 1)[0]
    shown = [line.strip() for line in first.splitlines() if line.startswith("        ")]
    assert len(shown) == 2 and all(s in texts or s.endswith("...") for s in shown)  # the two texts
    assert max(len(line) for line in out.splitlines()) < 330  # the 999-character text is cut
    with AnswerStore("s.sqlite") as s:
        assert [r["annotator"] for r in s.records] == ["eve"] * 3
        assert s.meta["featurizer"]["featurizer"] == "wordllama" and s.meta["featurizer"]["dim"] == 256
    labels = Path("out.csv").read_text().splitlines()
    assert labels[0] == "name,cluster,text" and labels[1].startswith("line 1,") and len(labels) == 16
    # resumed on the same file: the saved features are used, nothing is asked again
    res = _run("texts.txt", "--store", "s.sqlite", "--n-queries", "3")
    assert (
        res.exit_code == 0
        and "(resuming: 3 answers already stored)" in res.stdout
        and "Question" not in res.stdout
    )


@pytest.mark.parametrize(
    "args",
    [["texts.csv", "--text-column", "body", "--name-column", "id"], ["texts.jsonl", "--name-column", "id"]],
    ids=["csv", "jsonl"],
)
def test_a_csv_text_column_and_json_lines_are_texts_too(workdir, args):
    res = _run(*args, "--store", "s.jsonl", "--n-queries", "2")
    assert res.exit_code == 0, res.output
    assert (
        "15 texts, 256 features" in res.stdout and "\n  d" in res.stdout
    )  # the names from the id column/field


def test_own_embeddings_in_a_npy_file(workdir):
    res = _run("emb.npy", "--store", "s.jsonl", "--n-queries", "2")
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("15 items, 4 features; answers go to s.jsonl")


def test_a_changed_text_file_is_refused_in_one_line_naming_it(workdir):
    tmp, texts = workdir
    assert _run("texts.txt", "--store", "s.sqlite", "--n-queries", "1").exit_code == 0
    (tmp / "texts.txt").write_text("\n".join([texts[1], texts[0], *texts[2:]]) + "\n")  # two lines swapped
    res = _run("texts.txt", "--store", "s.sqlite", "--n-queries", "2")
    assert res.exit_code == 2
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(
        "error: texts.txt: has other texts than those the answer store s.sqlite was started on"
    )
    assert len(AnswerStore("s.sqlite").records) == 1  # untouched


BAD = [
    (
        ["texts.txt", "--text-column", "body"],
        "--text-column: texts.txt is a text file with one text per line",
    ),
    (["texts.csv", "--text-column", "nope"], "--text-column: no column 'nope' in texts.csv"),
    (["emb.npy", "--name-column", "id"], "--name-column: emb.npy is a NumPy array, it has no columns"),
    (
        ["texts.txt", "--store", "s.jsonl", "--shared"],
        "--shared: answer store s.jsonl is JSON lines, which take one",
    ),
    (["texts.txt", "--annotator", " x"], "--annotator: expected a name of 1 to 100 printable characters"),
    (["texts.csv"], "texts.csv: line 2, column 'body': "),
    (["items.tsv"], "items.tsv: a .tsv file is not read; items come from .csv"),
    (["script.py"], "script.py: a .py file is not read"),
    (["punct.txt", "--features", "tfidf"], "texts: no words found in 3 texts"),
    (["texts.txt", "--features", "glove"], "features 'glove': expected one of auto, wordllama, tfidf"),
    (["texts.txt", "--features", "none.npy"], "features none.npy: no such file"),
    (["emb.npy", "--features", "tfidf"], "--features: emb.npy holds numbers, which are their own features"),
]


def test_the_features_option_reaches_the_store_and_a_resumed_store_refuses_others(workdir):
    res = _run("texts.txt", "--store", "t.sqlite", "--n-queries", "1", "--features", "tfidf")
    assert res.exit_code == 0, res.output
    assert "15 texts, 4 features (TF-IDF -> SVD)" in res.stdout
    res = _run("texts.txt", "--store", "t.sqlite", "--n-queries", "2", "--features", "wordllama")
    assert res.exit_code == 2
    assert (
        "made on other features (featurizer 'tfidf-svd-standardised' there, 'wordllama' asked" in res.stderr
    )
    res = _run("texts.txt", "--store", "t.sqlite", "--n-queries", "2")  # nothing asked: the store's own
    assert res.exit_code == 0 and "(resuming: 1 answer already stored)" in res.stdout, res.output


@pytest.mark.parametrize(("args", "culprit"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_option_is_one_line_and_creates_nothing(workdir, args, culprit):
    tmp, _ = workdir
    before = sorted(p.name for p in tmp.iterdir())
    res = _run(*args)
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("error: ") and culprit in line, line
    assert sorted(p.name for p in tmp.iterdir()) == before


def test_shared_sessions_record_their_annotators(workdir):
    res = _run("texts.txt", "--store", "team.sqlite", "--shared", "--annotator", "ann", "--n-queries", "2")
    assert res.exit_code == 0, res.output
    assert "Shared store: you answer as ann" in res.stdout
    res = _run("texts.txt", "--store", "team.sqlite", "--shared", "--annotator", "bo", "--n-queries", "4")
    assert res.exit_code == 0, res.output
    with AnswerStore("team.sqlite") as s:
        assert [r["annotator"] for r in s.records] == ["ann", "ann", "bo", "bo"]


def test_the_readme_three_lines_take_a_text_file_through_annotate(workdir):
    import shlex
    import subprocess

    tmp, _ = workdir
    readme = (HERE.parents[1] / "README.md").read_text()
    block = readme.split("**Texts.**", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    make, annotate, show = block.strip().splitlines()
    assert annotate.startswith("jaxclust annotate texts.txt") and show.startswith("cat clusters.csv")
    subprocess.run(["bash", "-c", make], check=True, cwd=tmp)  # printf ... > texts.txt
    args = shlex.split(annotate.split("#")[0])[1:]
    res = CliRunner().invoke(app, [*args, "--n-chains", "1"], input="n\nn\nn\n")
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("Turning 3 texts into features")
    rows = (tmp / "clusters.csv").read_text().splitlines()
    assert rows[0] == "name,cluster,text" and rows[1].startswith("line 1,") and len(rows) == 4


def test_a_chat_model_answers_first_and_the_person_where_it_matters(workdir):
    from jaxclust.active.chat_fake import FakeChatServer

    tmp, texts = workdir
    labels = np.repeat(np.arange(3), 5)
    with FakeChatServer(texts, labels, noise=0.3, seed=0) as server:  # replies split on most pairs
        # every "same" it says checked by the person, no "different"
        machine = ["--machine-url", server.url, "--machine-model", "fake", "--machine-check", "1,0"]
        res = _run("texts.txt", "--store", "s.sqlite", "--n-queries", "8", "--annotator", "eve", *machine,
                   replies="y\n" * 8)  # fmt: skip
    assert res.exit_code == 0, res.output
    with AnswerStore("s.sqlite") as s:
        records = s.records
    by_machine = [r for r in records if r["annotator"].startswith("fake (prompt ")]
    by_eve = [r for r in records if r["annotator"] == "eve"]
    assert len(records) == 8 and by_machine and by_eve and len(by_machine) + len(by_eve) == 8
    # split replies answer by their majority, under the machine's split name
    assert {r["annotator"].endswith(", split replies") for r in by_machine} == {True, False}
    # each machine answer is a "different" (its "same"s all went to eve), told at the terminal with its votes
    for r in by_machine:
        assert r["answer"] == "cannot" and f": different clusters for {r['i']}-{r['j']} (" in res.stdout
    assert res.stdout.count("Question ") == len(by_eve)  # the person saw only the routed questions


def test_a_resumed_machine_session_learns_the_rates_again_from_its_checks(workdir):
    import re

    from jaxclust.active.chat import is_checked
    from jaxclust.active.chat_fake import FakeChatServer

    tmp, texts = workdir
    labels = np.repeat(np.arange(3), 5)
    with FakeChatServer(texts, labels, seed=0) as server:
        machine = ["--machine-url", server.url, "--machine-model", "fake", "--machine-check", "0.5"]
        for n in (5, 10):
            res = _run(
                "texts.txt", "--store", "s.sqlite", "--n-queries", str(n), *machine, replies="y\n" * 10
            )
            assert res.exit_code == 0, res.output
    assert (tmp / "s.sqlite.chat.jsonl").exists()
    with AnswerStore("s.sqlite") as s:
        people = [r for r in s.records if not r["annotator"].startswith("fake (prompt ")]
    checked = sum(is_checked(0, r["i"], r["j"], 0.5) for r in people)  # --seed 0
    said = re.search(
        r"\(from (\d+) checked pairs, (\d+) answers of its nobody checked and a prior\)", res.stdout
    )
    assert checked >= 1 and said and int(said.group(1)) == checked  # the first run's checks count too
    with AnswerStore("s.sqlite") as s:
        by_machine = sum(r["annotator"].startswith("fake (prompt ") for r in s.records)
    assert (
        int(said.group(2)) >= by_machine >= 1
    )  # its answers nobody checked (and any routed for a contradiction)


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        (
            ["emb.npy", "--machine-url", "http://127.0.0.1:9/v1", "--machine-model", "m"],
            "--machine-url: emb.npy",
        ),
        (
            ["texts.txt", "--machine-url", "ftp://x", "--machine-model", "m"],
            "--machine-url: expected an http",
        ),
        (["texts.txt", "--machine-url", "http://127.0.0.1:9/v1"], "--machine-model: is needed"),
        (
            ["texts.txt", "--machine-url", "http://h/v1", "--machine-model", "m", "--machine-check", "2"],
            "--machine-check",
        ),
        (
            ["texts.txt", "--machine-url", "http://h/v1", "--machine-model", "m", "--machine-check", "0.2,x"],
            "--machine-check: expected SHARE or SAME,DIFFERENT",
        ),
        (
            [
                "texts.txt",
                "--machine-url",
                "http://h/v1",
                "--machine-model",
                "m",
                "--machine-check",
                "0.2,1.5",
            ],
            "--machine-check['cannot']",
        ),
    ],
)
@pytest.mark.parametrize("command", ["annotate", "serve"])
def test_a_bad_machine_option_is_named(workdir, args, culprit, command):
    if command == "serve":
        pytest.importorskip("starlette")
    res = CliRunner().invoke(
        app, [command, *args, "--store", "s.sqlite", "--n-queries", "2", "--n-chains", "1"]
    )
    assert res.exit_code == 2 and culprit in res.output, res.output
    assert not Path("s.sqlite").exists()


def test_machine_check_is_one_share_or_one_for_each_answer():
    from jaxclust.apps.cli_common import machine_options

    assert machine_options("http://h/v1", "m", None, "0.3")["check"] == 0.3
    assert machine_options("http://h/v1", "m", None, "0.2,0.05")["check"] == {"must": 0.2, "cannot": 0.05}
    assert "check" not in machine_options("http://h/v1", "m", None, None)  # the library's default shares
    assert machine_options(None, None, None, "0.3") is None
