"""The web annotator with a chat model that answers first (a fake OpenAI-compatible server on 127.0.0.1): the
machine's page (its rates, its cost, the answers people overruled, escaped), reviewing its answers in order of
doubt from the page, and ``jaxclust serve --machine-*`` opening the team session with it."""

from __future__ import annotations

import html
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from jaxclust.active import ActiveLearner, AnswerStore  # noqa: E402
from jaxclust.active.chat import ChatEndpoint, ChatOracle  # noqa: E402
from jaxclust.active.chat_fake import FakeChatServer  # noqa: E402
from jaxclust.active.team import TeamSession  # noqa: E402
from jaxclust.active.team_machine import TeamMachine  # noqa: E402
from jaxclust.apps.items import items_from_array  # noqa: E402
from jaxclust.apps.serve import make_app  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "active"))
from _standin import StandInSampler, blobs  # noqa: E402

EVIL = "<script>alert('x')</script>"


@pytest.fixture
def served(tmp_path):
    X, y = blobs(n_per=8)
    names = [f"{EVIL} {k}" for k in range(len(X))]
    texts = [f"text {k}" for k in range(len(X))]
    items = items_from_array(X, names, texts)
    with FakeChatServer(texts, y, false_same=0.5, false_different=0.3, seed=4) as server:
        endpoint = ChatEndpoint(server.url, "fake<b>", api_key_env=None)
        machine = TeamMachine(ChatOracle(texts, endpoint, n_replies=1), check=0.0)
        store = AnswerStore(tmp_path / "a.sqlite", shared=True)
        team = TeamSession(
            ActiveLearner(StandInSampler(), None, progress=False), X, store, double=0.0, machine=machine
        )
        team.refit()
        for _ in range(10):
            team.machine_step()
        team.refit()
        yield team, items, y, store
        store.close()


def signed_in(team, items, who="alice") -> TestClient:
    c = TestClient(make_app(team, items), raise_server_exceptions=False)
    assert c.post("/signin", data={"annotator": who}, follow_redirects=False).status_code == 303
    return c


def test_the_machine_page_shows_its_rates_and_cost_escaped(served):
    team, items, _, _ = served
    r = signed_in(team, items).get("/machine")
    s = team.status()["machine"]
    assert r.status_code == 200 and "<a href=/machine>Machine</a>" in r.text
    assert "fake<b>" not in r.text and html.escape(s["name"]) in r.text
    assert f"<b id=false-same>{s['false_same']:.3f}</b>" in r.text
    assert f"{s['usage']['requests']} requests" in r.text and "Overruled by people (0)" in r.text


def test_a_person_reviews_the_most_doubted_machine_answers_and_overrules_one(served):
    team, items, _, store = served
    c = signed_in(team, items)
    assert c.post("/review", data={"on": "1"}, follow_redirects=False).status_code == 303
    page = c.get("/").text
    q = team.review("alice")  # the pair the page shows (held for alice)
    assert "Reviewing the chat model's answers, most doubtful first" in page
    assert html.escape(q.reason) in page and f"name=i value={q.i}" in page and f"name=j value={q.j}" in page
    said = next(r["answer"] for r in store.records if (r["i"], r["j"]) == (q.i, q.j))
    opposite = "cannot" if said == "must" else "must"
    c.post("/answer", data={"i": q.i, "j": q.j, "answer": opposite})
    r = c.get("/machine")
    assert "Overruled by people (1)" in r.text and "alice: " in r.text
    assert html.escape(items.names[q.i]) in r.text and EVIL not in r.text
    nxt = team.review("alice")
    assert nxt is not None and (nxt.i, nxt.j) != (q.i, q.j)
    api = c.get("/api/question?review=1", headers={"X-Annotator": "bob"}).json()["question"]
    assert api["kind"] == "review" and (api["i"], api["j"]) != (nxt.i, nxt.j)  # alice holds hers
    c.post("/review", data={"on": "0"})
    assert "Reviewing" not in c.get("/").text and team.question("alice").kind == "new"


def test_without_a_machine_its_page_is_a_404_with_a_message(tmp_path):
    X, _ = blobs(n_per=4)
    items = items_from_array(X, [f"n{k}" for k in range(len(X))], None)
    with AnswerStore(tmp_path / "a.sqlite", shared=True) as store:
        team = TeamSession(ActiveLearner(StandInSampler(), None, progress=False), X, store)
        c = signed_in(team, items)
        r = c.get("/machine")
        assert r.status_code == 404 and "no chat model answers in this session" in r.text
        assert c.post("/review", data={"on": "1"}).status_code == 404
        assert "<a href=/machine>" not in c.get("/").text


def test_serve_opens_the_team_session_with_the_machine_of_its_options(tmp_path):
    from jaxclust.apps.serve_run import open_team

    texts = [f"about {w} number {k}" for w in ("cats", "ships", "bread") for k in range(5)]
    (tmp_path / "t.txt").write_text("\n".join(texts) + "\n")
    labels = np.repeat(np.arange(3), 5)
    with FakeChatServer(texts, labels, seed=0) as server:
        machine = {"url": server.url, "model": "fake", "key_env": None, "check": 0.25}
        items, store, team = open_team(
            tmp_path / "t.txt", tmp_path / "a.sqlite", machine=machine, featurizer="tfidf", random_state=3
        )
        try:
            assert team.machine.name.startswith("fake (prompt ")
            assert team.machine.check == {"must": 0.25, "cannot": 0.25}  # one share for both answers
            assert team.machine.oracle.texts == texts and team.machine.seed == 3
            team.refit()
            assert team.machine_step() and store.records[-1]["annotator"] == team.machine.name
        finally:
            store.close()


def test_the_machine_page_shows_the_split_replies_rates_once_it_gave_such_answers():
    from jaxclust.apps.serve_machine import machine_body

    rates = {"false_same": 0.25, "false_different": 0.05, "n_checked": 4, "n_unchecked": 30}
    status = {
        "name": "m", **rates, "routed": {"machine": 30, "majority": 7, "tie": 2, "contradicts": 1},
        "for_people": 0, "usage": {"requests": 40, "retries": 0, "failures": 0, "prompt_tokens": 0,
                                   "completion_tokens": 0}, "error": None, "stopped": None,
        "split": {"false_same": 0.3125, "false_different": 0.1, "n_checked": 1, "n_unchecked": 6},
    }  # fmt: skip
    page = machine_body(status, [], [], False)
    assert (
        "<b id=split-false-same>0.312</b>" in page and "(from 1 checked answers and 6 nobody checked)" in page
    )
    assert (
        "30 pairs answered by the machine, 7 by the majority of its replies where they split, 2 handed"
        in page
    )
    none = machine_body(
        {**status, "split": {**status["split"], "n_checked": 0, "n_unchecked": 0}}, [], [], False
    )
    assert "split-false-same" not in none
