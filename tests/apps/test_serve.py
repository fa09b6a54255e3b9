"""The web annotator's pages and API through Starlette's test client: escaping, the token, bounded bodies, 4xx
with a message (never a trace), undo, agreement and the exports. The browser, load and kill -9 tests start a real
server: test_serve_browser.py and test_serve_load.py."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from jaxclust.active import ActiveLearner, AnswerStore  # noqa: E402
from jaxclust.active.team import TeamSession  # noqa: E402
from jaxclust.apps.items import items_from_array  # noqa: E402
from jaxclust.apps.serve import make_app  # noqa: E402
from jaxclust.apps.serve_access import is_loopback  # noqa: E402
from jaxclust.metrics.agreement import krippendorff_alpha  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "active"))
from _standin import StandInSampler, blobs  # noqa: E402

EVIL = "<script>alert('x')</script>"


@pytest.fixture
def served(tmp_path):
    X, y = blobs(n_per=8)
    names = [f"{EVIL} {k}" if k == 0 else f"item {k}" for k in range(len(X))]
    texts = [f"text {k} & <b>bold</b>" for k in range(len(X))]
    items = items_from_array(X, names, texts)
    store = AnswerStore(tmp_path / "a.sqlite", shared=True)
    team = TeamSession(ActiveLearner(StandInSampler(), None, progress=False), X, store, double=1.0)
    team.refit()
    yield team, items, y, store
    store.close()


def client(team, items, headers=None, **kw) -> TestClient:
    return TestClient(make_app(team, items, **kw), raise_server_exceptions=False, headers=headers)


def signed_in(team, items, who="alice") -> TestClient:
    c = client(team, items)
    r = c.post("/signin", data={"annotator": who}, follow_redirects=False)
    assert r.status_code == 303
    return c


def no_trace(r) -> None:
    assert "Traceback" not in r.text and 'File "' not in r.text


def test_items_are_escaped_and_pages_allow_only_the_servers_own_scripts(served):
    team, items, _, _ = served
    c = signed_in(team, items)
    team._hold("alice", (0, 1), "new")  # the item whose name is a script
    r = c.get("/")
    assert r.status_code == 200
    assert EVIL not in r.text and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; 0" in r.text
    assert "<b>bold</b>" not in r.text and "&lt;b&gt;bold&lt;/b&gt;" in r.text
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "<script>" not in r.text.replace("<script src=/static/keys.js></script>", "")


def test_answer_and_undo_through_the_page_keep_the_history_in_the_store(served):
    team, items, y, store = served
    c = signed_in(team, items)
    for _ in range(3):
        q = team.question("alice")
        r = c.post("/answer", data={"i": q.i, "j": q.j, "answer": "must" if y[q.i] == y[q.j] else "cannot"})
        assert r.status_code == 200  # redirected to the next question
    r = c.post("/undo")
    assert "Undone:" in r.text and "Here is the pair again" in r.text
    assert [a["undone"] for a in store.all_answers] == [False, False, True]
    assert len(store.records) == 2 and {a["annotator"] for a in store.all_answers} == {"alice"}


def test_a_form_sent_twice_stores_one_answer(served):
    team, items, _, store = served
    c = signed_in(team, items)
    q = team.question("alice")
    for _ in range(2):
        assert c.post("/answer", data={"i": q.i, "j": q.j, "answer": "must"}).status_code == 200
    assert len(store.records) == 1


@pytest.mark.parametrize(
    ("method", "path", "kw", "status", "message"),
    [
        ("get", "/api/question", {}, 401, "no annotator"),
        ("get", "/api/question", {"headers": {"X-Annotator": " x"}}, 400, "annotator: expected a name"),
        ("post", "/api/answer", {"headers": {"X-Annotator": "bob"}, "content": b"{"}, 400, "expected a JSON"),
        ("post", "/api/answer", {"headers": {"X-Annotator": "bob"}, "json": {"i": "a", "j": 1}}, 400, "i, j"),
        (
            "post",
            "/api/answer",
            {"headers": {"X-Annotator": "bob"}, "json": {"i": 0, "j": 1, "answer": "yes"}},
            400,
            "answer: expected one of must, cannot, unknown",
        ),
        (
            "post",
            "/api/answer",
            {"headers": {"X-Annotator": "bob"}, "json": {"i": 0, "j": 1, "answer": "must"}},
            409,
            "bob was not asked about the pair 0-1",
        ),
        ("post", "/answer", {"data": {"i": "1"}}, 401, "no annotator"),
        ("get", "/item/0/image", {}, 404, "item 0 has no image"),
        ("get", "/nowhere", {}, 404, "Not Found"),
        (
            "post",
            "/api/answer",
            {"headers": {"X-Annotator": "bob"}, "content": b"x" * 20000},
            413,
            "too large",
        ),
        # no length given (chunked): counted as it arrives
        (
            "post",
            "/api/answer",
            {"headers": {"X-Annotator": "bob"}, "content": iter([b"x" * 9000] * 3)},
            413,
            "too large",
        ),
        (
            "post",
            "/signin",
            {"data": {"annotator": "x" * 101}},
            400,
            "annotator: expected a name of 1 to 100",
        ),
        (
            "post",
            "/signin",
            {"content": b"{}", "headers": {"Content-Type": "application/json"}},
            415,
            "expected a form",
        ),
    ],
)
def test_bad_requests_get_a_4xx_with_a_message_and_no_trace(served, method, path, kw, status, message):
    team, items, _, store = served
    r = getattr(client(team, items), method)(path, **kw)
    assert r.status_code == status and message in r.text
    no_trace(r)
    assert len(store.records) == 0


def test_a_token_guards_every_page_and_is_kept_in_a_cookie(served):
    team, items, _, _ = served
    c = client(team, items, token="s3cret-token")
    assert c.get("/").status_code == 401 and c.get("/api/status").status_code == 401
    assert c.get("/?token=wrong").status_code == 401
    r = c.get("/clusters?token=s3cret-token", follow_redirects=False)
    assert (
        r.status_code == 303
        and r.headers["location"] == "/clusters"
        and "httponly" in r.headers["set-cookie"].lower()
    )
    assert c.get("/clusters").status_code == 200  # the cookie
    bare = client(team, items, token="s3cret-token")
    assert bare.get("/api/status", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("0.0.0.0")


def test_agreement_page_and_exports(served):
    team, items, y, store = served
    api = {who: client(team, items, headers={"X-Annotator": who}) for who in ("alice", "bob")}
    for _ in range(
        6
    ):  # double=1: bob gets alice's pairs as second opinions, and answers the opposite half the time
        q = api["alice"].get("/api/question").json()["question"]
        truth = "must" if y[q["i"]] == y[q["j"]] else "cannot"
        assert api["alice"].post("/api/answer", json={**q, "answer": truth}).status_code == 200
        q2 = api["bob"].get("/api/question").json()["question"]
        assert q2["kind"] == "second" and (q2["i"], q2["j"]) == (q["i"], q["j"])
        flip = {"must": "cannot", "cannot": "must"}[truth] if q["i"] % 2 else truth
        assert api["bob"].post("/api/answer", json={**q2, "answer": flip}).status_code == 200
        team.skip("bob")  # the reply handed him a new pair: he gives it back, to take alice's next one
    by_pair = {}
    for r in store.records:
        by_pair.setdefault((r["i"], r["j"]), []).append(r["answer"])
    alpha = krippendorff_alpha(list(by_pair.values()))
    page = api["alice"].get("/agreement").text
    assert f"<b id=alpha>{alpha:.3f}</b>" in page and "6 pairs answered by two or more" in page
    assert api["alice"].post("/api/undo").json()["undone"]["annotator"] == "alice"
    lines = api["alice"].get("/export/answers.jsonl").text.splitlines()
    assert [json.loads(x) for x in lines] == store.export_rows() and len(lines) == 11
    every = [json.loads(x) for x in api["alice"].get("/export/answers.jsonl?all=1").text.splitlines()]
    assert sum(r["undone"] for r in every) == 1 and {r["annotator"] for r in every} == {"alice", "bob"}
    team.refit()
    rows = list(csv.reader(io.StringIO(api["alice"].get("/export/labels.csv").text)))
    assert rows[0] == ["name", "cluster"] and [r[0] for r in rows[1:]] == items.names
    assert [int(r[1]) for r in rows[1:]] == np.unique(team.labels_, return_inverse=True)[1].tolist()
    assert api["alice"].get("/clusters.png").headers["content-type"] == "image/png"


def test_image_items_are_served_from_the_files_they_name(tmp_path):
    from jaxclust.apps.items import Items

    X, _ = blobs(n_per=4)
    png = tmp_path / "cat.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 16)
    contexts = ["cat.png"] + ["not an image"] * (len(X) - 1)
    items = Items(
        "numbers", [f"i{k}" for k in range(len(X))], contexts=contexts, X=X, source=tmp_path / "x.csv"
    )
    store = AnswerStore(tmp_path / "a.sqlite", shared=True)
    try:
        team = TeamSession(ActiveLearner(StandInSampler(), None, progress=False), X, store)
        c = signed_in(team, items)
        team._hold("alice", (0, 1), "new")
        assert "<img class=item src='/item/0/image'" in c.get("/").text
        r = c.get("/item/0/image")
        assert (
            r.status_code == 200
            and r.content == png.read_bytes()
            and r.headers["content-type"] == "image/png"
        )
        assert c.get("/item/1/image").status_code == 404
    finally:
        store.close()


def test_serve_command_checks_its_options_before_starting(tmp_path):
    from typer.testing import CliRunner

    from jaxclust.apps.cli import app

    data = tmp_path / "items.txt"
    data.write_text("one\ntwo\nthree\n")
    runner = CliRunner()
    for args, message in (
        (["--double", "2"], "--double: expected a share of the pairs in [0, 1], got 2.0"),
        (["--port", "70000"], "--port: expected a port number"),
        (["--token", "short"], "--token: expected 8 to 256 characters"),
        (["--token", "tökén-long-enough"], "--token: expected 8 to 256 characters"),
        (["--strategy", "best"], "--strategy: expected one of"),
    ):
        r = runner.invoke(app, ["serve", str(data), "--store", str(tmp_path / "a.sqlite"), *args])
        assert r.exit_code == 2 and message in r.output, r.output
    assert not (tmp_path / "a.sqlite").exists()


def test_the_pages_keys_are_the_terminals(served):
    import json as _json
    import re as _re

    from jaxclust.active.replies import KEYS, read_reply

    team, items, _, _ = served
    c = signed_in(team, items)
    script = c.get("/static/keys.js").text
    shortcuts = _json.loads(_re.search(r"var keys = (\{.*?\});", script).group(1))
    want = {k: meaning for meaning in ("must", "cannot", "unknown", "undo") for k in KEYS[meaning]}
    assert shortcuts == want and all(read_reply(k) == m for k, m in shortcuts.items())
    assert shortcuts["n"] == "cannot" and shortcuts["d"] == "unknown"  # as typed at the terminal
    team._hold("alice", (2, 3), "new")
    page = c.get("/").text
    for meaning in ("must", "cannot", "unknown"):  # each button shows the first key of its meaning
        assert f"data-key={meaning}>" in page and f"<kbd>{KEYS[meaning][0]}</kbd>" in page
