"""The notebook annotator, driven by code as the buttons drive it: answers and undos go to the durable store, a
session moves from the notebook to the command line and back and asks exactly what an uninterrupted one asks,
the live figure renders, and the library never imports it (nor ipywidgets).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ipywidgets")

from jaxclust.active import AnswerStore  # noqa: E402
from jaxclust.apps.annotate import run_annotate  # noqa: E402
from jaxclust.apps.notebook import NotebookAnnotator  # noqa: E402
from jaxclust.errors import InvalidInputError, MissingDependencyError, StoreLockedError  # noqa: E402
from jaxclust.text import TextFeaturizer

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "active"))
from _standin import StandInSampler  # noqa: E402

TOPICS = [
    "match goal team coach season league striker referee stadium score".split(),
    "recipe oven flour butter sauce garlic onion bake simmer pepper".split(),
    "rain storm cloud wind forecast sunny snow thunder humid breeze".split(),
]
N_Q = 12


@pytest.fixture
def texts(tmp_path):
    """18 short texts on three topics, one per line of texts.txt; returns (path, gold labels)."""
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(3), 6)
    lines = [" ".join(rng.choice(TOPICS[t], size=5)) for t in y]
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, y


def _annotator(data, store, **kw):
    opts = {"model": StandInSampler(), "n_queries": N_Q, "stop_entropy": 0, "annotator": "ann"}
    return NotebookAnnotator(data, store=store, **{**opts, **kw})


def _gold(y, pair) -> str:
    return "must" if y[pair[0]] == y[pair[1]] else "cannot"


def _finish(ann, y) -> None:
    while ann.question is not None:
        ann.answer(_gold(y, ann.question))


def _stored(path) -> list[tuple[int, int, str]]:
    with AnswerStore(path) as s:
        return [(r["i"], r["j"], r["answer"]) for r in s.records]


def _uninterrupted(data, y, tmp_path) -> list[tuple[int, int, str]]:
    with _annotator(data, tmp_path / "reference.sqlite") as ann:
        _finish(ann, y)
    return _stored(tmp_path / "reference.sqlite")


def test_the_annotator_shows_the_pair_and_stores_each_answer_with_who_gave_it(texts, tmp_path):
    data, y = texts
    lines = data.read_text().splitlines()
    with _annotator(data, tmp_path / "a.sqlite", gold=y) as ann:
        i, j = ann.question
        assert ann.describe(i) == f"line {i + 1}: {lines[i]}"  # the text, named by its 1-based line
        assert lines[i] in ann._items_box[0].value and lines[j] in ann._items_box[1].value
        assert "Question 1</b> of 12" in ann._heading.value
        ann._buttons["must"].click()  # a click is an answer
        assert ann._progress.value == 1 and [(r["i"], r["j"], r["answer"]) for r in ann.store.records] == [
            (i, j, "must")
        ]
        ann.answer("different")
        ann.answer(None)  # don't know
        with pytest.raises(StoreLockedError, match="in use by another process"):
            AnswerStore(tmp_path / "a.sqlite")  # held while the annotator is open: close it for the CLI
        assert ann._image.value == b""  # not on screen: no figure drawn
        assert ann.widget.children[-1] is ann._image and ann._image.value[:8] == b"\x89PNG\r\n\x1a\n"
        drawn = ann._image.value
        ann.answer("must")
        assert ann.n_answers == 4 and ann._image.value != drawn  # on screen: the figure follows each answer
        fig = ann.figure()
        assert (
            len(fig.axes) == 2 and fig.axes[1].get_ylabel() == "V-beta (gold labels)"
        )  # gold: the curve too
        with pytest.raises(InvalidInputError, match="^reply: expected one of"):
            ann.answer("maybe")
    with AnswerStore(tmp_path / "a.sqlite") as s:
        assert [(r["answer"], r["annotator"]) for r in s.records] == [
            ("must", "ann"),
            ("cannot", "ann"),
            ("unknown", "ann"),
            ("must", "ann"),
        ]


def test_undo_is_an_undo_record_and_the_session_goes_on_as_if_the_slip_never_happened(texts, tmp_path):
    data, y = texts
    want = _uninterrupted(data, y, tmp_path)
    store = tmp_path / "a.sqlite"
    with _annotator(data, store) as ann:
        for _ in range(6):  # past a refit (5 questions per round)
            ann.answer(_gold(y, ann.question))
        slip = ann.question
        ann.answer("cannot" if _gold(y, slip) == "must" else "must")
        undone = ann.undo()
        assert (undone["i"], undone["j"]) == slip and ann.question == slip  # asked again
        assert ann.message.startswith(f"Undone: {slip[0]}-{slip[1]}")
        with pytest.raises(InvalidInputError, match="reply"):
            ann.answer(3)
        _finish(ann, y)
        assert ann.finished and ann.message.startswith("Done: the target of 12 questions is reached")
        ann._buttons["undo"].click()  # undo reopens a finished session
        assert ann.question is not None and not ann.finished
        _finish(ann, y)
    assert _stored(store) == want
    with AnswerStore(store) as s:
        assert [a["undone"] for a in s.all_answers].count(True) == 2  # both undos are in the file


def test_a_session_moves_from_the_notebook_to_the_command_line_and_back_exactly(texts, tmp_path):
    data, y = texts
    want = _uninterrupted(data, y, tmp_path)
    store = tmp_path / "a.sqlite"
    with _annotator(data, store) as ann:  # 3 answers in the notebook, mid-round
        for _ in range(3):
            ann.answer(_gold(y, ann.question))
    # 5 more at the terminal, then quit mid-round
    out = io.StringIO()
    replies = iter(range(5))

    def person(_prompt):
        if next(replies, None) is None:
            return "q"
        i, j = [
            int(m) - 1 for m in re.findall(r"^  line (\d+)$", out.getvalue(), flags=re.M)[-2:]
        ]  # no blanks
        return "y" if y[i] == y[j] else "n"

    summary = run_annotate(
        data,
        store,
        n_queries=N_Q,
        model=StandInSampler(),
        input_fn=person,
        output=out,
        stop_entropy=0,
        annotator="cli",
    )
    assert summary["stop_reason"] == "stopped" and summary["n_new"] == 5
    assert "(resuming: 3 answers already stored)" in out.getvalue() and "Question 4:" in out.getvalue()
    with _annotator(data, store) as ann:  # and back in the notebook, to the end
        assert ann.n_answers == 8
        _finish(ann, y)
    assert _stored(store) == want
    with AnswerStore(store) as s:
        assert [r["annotator"] for r in s.records] == ["ann"] * 3 + ["cli"] * 5 + ["ann"] * 4


def test_two_notebook_annotators_on_a_shared_store_get_different_questions(texts, tmp_path):
    data, y = texts
    store = tmp_path / "team.sqlite"
    with (
        _annotator(data, store, shared=True, annotator="ann") as a,
        _annotator(data, store, shared=True, annotator="bo") as b,
    ):
        assert a.question != b.question  # the same model wants the same pair: the claim gives bo the next one
        a.answer(_gold(y, a.question))
        b.answer(_gold(y, b.question))
        assert a.question != b.question
    with AnswerStore(store) as s:
        assert {r["annotator"] for r in s.records} == {"ann", "bo"} and len(s) == 2


def test_the_items_are_given_once_and_numbers_are_shown_as_values(tmp_path):
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(
        InvalidInputError, match="give the items once, as data .a file., texts or X; got none"
    ):
        NotebookAnnotator(store=tmp_path / "a.sqlite")
    with pytest.raises(InvalidInputError, match="texts: no words found"):
        NotebookAnnotator(texts=["!", "? ?"], store=tmp_path / "a.sqlite", featurizer=TextFeaturizer())
    assert list(tmp_path.iterdir()) == []  # bad items create no store
    with NotebookAnnotator(X=X, store=tmp_path / "b.jsonl", model=StandInSampler(), n_queries=2) as ann:
        i = ann.question[0]
        assert ann.describe(i).startswith(f"item {i}: column 0={X[i, 0]:.3g}, column 1=")
        assert len(ann.figure().axes) == 1  # no gold labels: the projection only


def test_without_ipywidgets_the_error_names_the_extra_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "jaxclust\[notebooks\]"'):
        NotebookAnnotator(texts=["a bb", "cc dd", "ee ff"], store=tmp_path / "a.jsonl")
    assert not (tmp_path / "a.jsonl").exists()


def test_the_library_never_imports_the_apps_or_ipywidgets():
    code = (
        "import sys, jaxclust, jaxclust.active, jaxclust.active.learner, jaxclust.active.store, jaxclust.text, "
        "jaxclust.constraints, jaxclust.metrics, jaxclust.dpmm, jaxclust.kmeans, jaxclust.icc, jaxclust.l3m\n"
        "print(sorted(m for m in sys.modules if m.startswith(('jaxclust.apps', 'ipywidgets'))))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"},
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]"
