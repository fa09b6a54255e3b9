"""The web annotator under attack, as requests: files outside the data, DNS rebinding (the Host header), open
redirects, formula injection in the CSV export, holds that never end, undo sent twice, the placeholder annotator
name, indices that are not integers, and names, tokens and bodies that used to give a 500."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from jaxclust.active import ActiveLearner, AnswerStore  # noqa: E402
from jaxclust.active.team import TeamSession  # noqa: E402
from jaxclust.apps.annotate import labels_csv  # noqa: E402
from jaxclust.apps.items import items_from_array  # noqa: E402
from jaxclust.apps.serve import make_app  # noqa: E402
from jaxclust.apps.serve_access import LOOPBACK_HOSTS, allowed_hosts, check_token, is_loopback  # noqa: E402
from jaxclust.errors import InvalidInputError  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "active"))
from _standin import StandInSampler, blobs  # noqa: E402

# the smallest valid PNG (1 x 1, grey)
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010800000000"
    "3a7e9b550000000a49444154789c6360000000020001e221bc330000000049454e44ae426082"
)


def _team(tmp_path, n_per=4, **kw):
    X, y = blobs(n_per=n_per)
    store = AnswerStore(tmp_path / "a.sqlite", shared=True)
    team = TeamSession(ActiveLearner(StandInSampler(), None, progress=False), X, store, **kw)
    team.refit()
    return team, store, X, y


@pytest.fixture
def served(tmp_path):
    team, store, X, y = _team(tmp_path)
    items = items_from_array(X, [f"item {k}" for k in range(len(X))], [f"text {k}" for k in range(len(X))])
    yield team, items, y
    store.close()


def _client(team, items, headers=None, **kw) -> TestClient:
    return TestClient(make_app(team, items, **kw), raise_server_exceptions=False, headers=headers)


# --- files outside the data -------------------------------------------------------------------------------------
@pytest.fixture
def images(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    data.mkdir(), outside.mkdir()
    (outside / "secret.png").write_bytes(PNG)
    (data / "ok.png").write_bytes(PNG)
    (data / "swap.png").write_bytes(PNG)
    (data / "fake.png").write_text("not an image, a text file named .png")
    os.symlink("/etc/passwd", data / "passwd.png")
    os.symlink(outside / "secret.png", data / "link_out.png")
    team, store, X, _ = _team(tmp_path)
    texts = [
        "ok.png",
        "../outside/secret.png",
        str(outside / "secret.png"),
        "swap.png",
        "fake.png",
        "passwd.png",
    ]
    texts += ["link_out.png"] + [f"text {k}" for k in range(7, len(X))]
    items = items_from_array(X, [f"item {k}" for k in range(len(X))], texts)
    c = _client(team, items, headers={"X-Annotator": "alice"}, image_root=data)
    yield c, data
    store.close()


def test_only_regular_image_files_under_the_data_folder_are_served(images):
    c, data = images
    r = c.get("/item/0/image")
    assert r.status_code == 200 and r.content == PNG and r.headers["content-type"] == "image/png"
    for k in (1, 2, 4, 5, 6):  # ../ outside, absolute outside, not an image, symlinks leaving the folder
        r = c.get(f"/item/{k}/image")
        assert r.status_code == 404 and "has no image" in r.text, k
        assert "root:" not in r.text
    assert c.get("/item/3/image").status_code == 200
    os.remove(data / "swap.png")
    os.symlink("/etc/hostname", data / "swap.png")  # replaced after start: checked again at each open
    r = c.get("/item/3/image")
    assert r.status_code == 404 and "has no image" in r.text


# --- the Host header (DNS rebinding) -------------------------------------------------------------------------------
def test_a_loopback_server_answers_only_requests_addressed_to_it(served):
    team, items, _ = served
    hosts = allowed_hosts("127.0.0.1", token=None)
    assert hosts == LOOPBACK_HOSTS
    c = _client(team, items, headers={"X-Annotator": "alice"}, hosts=hosts)
    for host in ("attacker.example", "127.attacker.example", "localhost.attacker.example:8000"):
        for method, path in (
            ("get", "/api/question"),
            ("post", "/api/answer"),
            ("get", "/export/answers.jsonl"),
        ):
            r = getattr(c, method)(path, headers={"Host": host})
            assert r.status_code == 421 and "not addressed to this server" in r.text, (host, path)
    for host in ("127.0.0.1:8000", "localhost:8000", "LOCALHOST", "[::1]:8000", "127.0.0.1"):
        assert c.get("/api/status", headers={"Host": host}).status_code == 200, host
    # a server with a token (any address) is protected by the token, whatever the name it is reached by
    assert allowed_hosts("0.0.0.0", token="t" * 22) is None


def test_loopback_is_decided_from_the_address_not_the_name():
    assert is_loopback("127.0.0.1") and is_loopback("127.8.9.10") and is_loopback("::1")
    for name in (
        "127.attacker.example",
        "localhost.attacker.example",
        "0.0.0.0",
        "10.0.0.1",
        "::",
        "example.org",
    ):
        assert not is_loopback(name), name


# --- open redirects ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path",
    ["//attacker.example/login", "/%2F%2Fattacker.example", "/%5C%5Cattacker.example", "///attacker.example"],
)
def test_the_token_redirect_stays_on_this_server(served, path):
    team, items, _ = served
    c = _client(team, items, token="s3cret-token-s3cret")
    r = c.get(f"http://127.0.0.1{path}?token=s3cret-token-s3cret&x=1", follow_redirects=False)
    assert r.status_code == 303
    where = r.headers["location"]
    assert where.startswith("/") and not where.startswith("//") and "\\" not in where
    assert where.endswith("?x=1") and "token" not in where


# --- formula injection --------------------------------------------------------------------------------------------
def test_the_csv_export_never_starts_a_cell_with_a_formula():
    names = ['=HYPERLINK("http://x")', "+1+2", "-2+3", "@SUM(A1)", "\tx", "plain", "-3", "+4.5"]
    texts = ["=cmd|' /C calc'!A0", "ok", "-1", "x", "y", "z", "w", "v"]
    rows = list(csv.reader(io.StringIO(labels_csv(names, np.arange(8), texts))))[1:]
    for row in rows:
        for cell in (row[0], row[2]):
            assert not cell or cell[0] not in "=+-@\t\r" or _is_number(cell), cell
    assert rows[0][0] == '\'=HYPERLINK("http://x")' and rows[6][0] == "-3" and rows[7][0] == "+4.5"
    assert rows[2][2] == "-1"  # numbers stay numbers


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# --- holds ---------------------------------------------------------------------------------------------------------
def test_holds_expire_so_idle_names_cannot_take_every_pair(tmp_path):
    team, store, X, _ = _team(tmp_path, n_per=3, hold_seconds=0.3)
    items = items_from_array(X, [f"item {k}" for k in range(len(X))])
    bots = [_client(team, items, headers={"X-Annotator": f"bot{k}"}) for k in range(80)]
    held = [b.get("/api/question").json()["question"] for b in bots]
    assert sum(q is not None for q in held) >= 1
    real = _client(team, items, headers={"X-Annotator": "alice"})
    first = real.get("/api/question").json()
    if first["question"] is None:  # every pair held: the reply says why, and when to look again
        assert first["done"] is False and "held by other annotators" in first["waiting"]
    time.sleep(0.5)
    q = real.get("/api/question").json()["question"]
    assert q is not None
    r = real.post("/api/answer", json={"i": q["i"], "j": q["j"], "answer": "must"})
    assert r.status_code == 200
    store.close()


# --- undo sent twice -----------------------------------------------------------------------------------------------
def test_undo_sent_twice_undoes_one_answer(served):
    team, items, y = served
    c = _client(team, items)
    assert c.post("/signin", data={"annotator": "alice"}, follow_redirects=False).status_code == 303
    done = []
    for _ in range(3):
        q = team.question("alice")
        c.post("/answer", data={"i": q.i, "j": q.j, "answer": "must"})
        done.append((q.i, q.j))
    page = c.get("/").text
    i, j = done[-1]
    assert f"<input type=hidden name=undo_i value={i}>" in page
    for _ in range(2):  # a double click, or a retry
        assert c.post("/undo", data={"undo_i": i, "undo_j": j}).status_code == 200
    assert [a["undone"] for a in team.store.all_answers] == [False, False, True]
    api = _client(team, items, headers={"X-Annotator": "alice"})
    i, j = done[-2]
    first = api.post("/api/undo", json={"i": i, "j": j}).json()["undone"]
    again = api.post("/api/undo", json={"i": i, "j": j}).json()
    assert (first["i"], first["j"]) == (i, j) and again["undone"] is None and "already" in again["message"]
    assert len(team.store.records) == 1


# --- names, indices, bodies ----------------------------------------------------------------------------------------
def test_the_placeholder_name_of_unnamed_answers_cannot_sign_in(served):
    team, items, _ = served
    c = _client(team, items)
    r = c.post("/signin", data={"annotator": "(unnamed)"})
    assert r.status_code == 400 and "(unnamed)" in r.text
    r = _client(team, items, headers={"X-Annotator": "(unnamed)"}).get("/api/question")
    assert r.status_code == 400


@pytest.mark.parametrize(
    "body", [{"i": "6", "j": "1_1"}, {"i": 6, "j": "11"}, {"i": 6.0, "j": 11}, {"i": True, "j": 11}, {"i": 6}]
)
def test_indices_are_json_integers(served, body):
    team, items, _ = served
    r = _client(team, items, headers={"X-Annotator": "bob"}).post(
        "/api/answer", json={**body, "answer": "must"}
    )
    assert r.status_code == 400 and "i, j" in r.text
    assert len(team.store.records) == 0


def test_form_indices_are_digits(served):
    team, items, _ = served
    c = _client(team, items)
    c.post("/signin", data={"annotator": "alice"})
    r = c.post("/answer", data={"i": "1_1", "j": "2", "answer": "must"})
    assert r.status_code == 400 and "i, j" in r.text


@pytest.mark.parametrize("name", ["Łukasz", "张伟", "Ольга", "Zoë"])
def test_names_outside_latin_1_sign_in(served, name):
    team, items, _ = served
    c = _client(team, items)
    r = c.post("/signin", data={"annotator": name}, follow_redirects=False)
    assert r.status_code == 303
    page = c.get("/")
    assert page.status_code == 200 and f"answering as <b>{name}</b>" in page.text
    q = team.question(name)
    assert q is not None


def test_a_form_that_is_not_utf8_is_a_400(served):
    team, items, _ = served
    r = _client(team, items).post(
        "/signin", content=b"annotator=%ff%fe", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 400 and "could not be read" in r.text


def test_deeply_nested_json_is_a_400(served):
    team, items, _ = served
    c = _client(team, items, headers={"X-Annotator": "bob"})
    for depth in (2000, 8000):
        r = c.post("/api/answer", content=b"[" * depth + b"]" * depth)
        assert r.status_code in (400, 413) and "Traceback" not in r.text


def test_the_bearer_scheme_is_case_insensitive(served):
    team, items, _ = served
    c = _client(team, items, token="s3cret-token-s3cret")
    for scheme in ("Bearer", "bearer", "BEARER"):
        assert (
            c.get("/api/status", headers={"Authorization": f"{scheme} s3cret-token-s3cret"}).status_code
            == 200
        )


def test_tokens_are_printable_ascii():
    assert check_token("s3cret-token-s3cret") == "s3cret-token-s3cret"
    for bad in ("tökén-long-enough-1234", "has space in it 12345", "short", "semi;colon-token-123"):
        with pytest.raises(InvalidInputError, match="token"):
            check_token(bad)
    with pytest.raises(InvalidInputError, match="--token"):
        check_token("tökén-long-enough-1234", flag="--token")


def test_the_json_api_bodies_are_what_the_docs_say(served):
    """docs/cli.md documents the JSON API's bodies: its example reply parses and names the fields served."""
    team, items, _ = served
    c = _client(team, items, headers={"X-Annotator": "alice"})
    got = c.get("/api/question").json()
    assert set(got) >= {"question", "done"} and set(got["question"]) == {
        "i",
        "j",
        "kind",
        "reason",
        "p_same",
        "items",
    }
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    assert '"question"' in doc and '"undone"' in doc and json.dumps("p_same") in doc


def test_team_answers_take_integer_item_numbers(served):
    team, _, _ = served
    q = team.question("alice")
    with pytest.raises(InvalidInputError, match=r"^i: 3.9 is not an integer"):
        team.answer("alice", 3.9, q.j, "must")
    assert len(team.store.records) == 0
    assert team.answer("alice", np.int64(q.i), q.j, "must")["i"] == q.i
