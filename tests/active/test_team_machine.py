"""A chat model in a team session, against a fake OpenAI-compatible server on 127.0.0.1: it answers pool pairs
under its name as soft answers with its calibrated rates, hands people the pairs its replies split on or the
model doubts, owes people checks that calibrate it (rebuilt from the store after a restart), and a person can
review its answers in order of doubt and overrule them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from jaxclust.active import ActiveLearner, AnswerStore
from jaxclust.active.chat import ChatEndpoint, ChatOracle, MachineRates
from jaxclust.active.chat_fake import FakeChatServer
from jaxclust.active.team import TeamSession
from jaxclust.active.team_machine import TeamMachine
from jaxclust.errors import InvalidInputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _standin import StandInSampler, blobs  # noqa: E402

X, Y = blobs(n_per=8)
TEXTS = [f"item {k}" for k in range(len(Y))]


def truth(i, j):
    return "must" if Y[i] == Y[j] else "cannot"


def machine_team(tmp_path, server, n_replies=3, check=0.0, max_requests=None, max_retries=4, **kw):
    endpoint = ChatEndpoint(
        server.url,
        "fake",
        api_key_env=None,
        max_requests=max_requests,
        max_retries=max_retries,
        backoff=0.0,
    )
    machine = TeamMachine(ChatOracle(TEXTS, endpoint, n_replies=n_replies), check=check, random_state=0)
    store = AnswerStore(tmp_path / "a.sqlite", shared=True)
    learner = ActiveLearner(StandInSampler(), None, progress=False)
    return TeamSession(learner, X, store, double=0.0, machine=machine, **kw), store


def test_the_machine_answers_pool_pairs_by_its_kind_and_hands_tied_pairs_to_people(tmp_path):
    """Four replies: unanimous ones stored under its name, a majority under its split name (checked at its own
    share, each kind learning its own rates), a tie (2 against 2) handed to people."""
    with FakeChatServer(TEXTS, Y, noise=0.3, seed=3) as server:
        t, store = machine_team(tmp_path, server, n_replies=4)
        m = t.machine
        t.refit()
        for _ in range(40):
            assert t.machine_step()
        t.refit()  # the rates learned from its answers; every answer of its weighs what they say now
    assert m.split_name == m.oracle.split_annotator and m.names == (m.name, m.split_name)
    mine = [r for r in store.records if r["annotator"] == m.name]
    majority = [r for r in store.records if r["annotator"] == m.split_name]
    assert len(mine) == m.routed["machine"] > 0 and len(majority) == m.routed["majority"] > 0
    assert m.routed["tie"] > 0
    for rec in mine:  # each unanimous
        same, different, _ = m.oracle.votes(rec["i"], rec["j"])
        assert rec["answer"] == ("must" if same else "cannot") and (same == 0 or different == 0)
    for rec in majority:  # each the majority of split replies
        same, different, _ = m.oracle.votes(rec["i"], rec["j"])
        assert same and different and rec["answer"] == ("must" if same > different else "cannot")
    assert m.split_rates.unchecked == {
        k: sum(r["answer"] == k for r in majority) for k in ("must", "cannot")
    }  # no checks (check=0): every majority answer counted once, by its kind
    assert m.rates.unchecked == {k: sum(r["answer"] == k for r in mine) for k in ("must", "cannot")}
    soft = {(i, j): eps for i, j, _, eps in t.state.constraints.answers}
    for rec in majority:
        assert soft[(rec["i"], rec["j"])] == pytest.approx(m.split_rates.error_rate(rec["answer"]))
    for p, reason in m.for_people.items():  # tied pairs wait for people, nothing stored about them
        same, different, _ = m.oracle.votes(*p)
        assert same == different and reason.startswith("the chat model's replies tie")
        assert p not in {(r["i"], r["j"]) for r in store.records}
    first = next(iter(m.for_people))
    q = t.question("alice")
    assert (q.i, q.j) == first and q.reason == m.for_people[first]
    t.answer("alice", q.i, q.j, truth(q.i, q.j))
    assert t.question("bob") is not None and first not in m.for_people  # answered: handed out no more
    with pytest.raises(InvalidInputError, match="the chat model's name"):
        t.question(m.split_name)


def test_a_check_of_a_majority_answer_is_owed_and_teaches_the_split_rates(tmp_path):
    with FakeChatServer(TEXTS, Y, noise=0.3, seed=3) as server:
        endpoint = ChatEndpoint(server.url, "fake", api_key_env=None, backoff=0.0)
        machine = TeamMachine(ChatOracle(TEXTS, endpoint, n_replies=3), check=0.0, split_check=1.0)
        store = AnswerStore(tmp_path / "a.sqlite", shared=True)
        t = TeamSession(ActiveLearner(StandInSampler(), None, progress=False), X, store, double=0.0,
                        machine=machine)  # fmt: skip
        t.refit()
        while not machine.routed["majority"]:
            assert t.machine_step()
        rec = next(r for r in store.records if r["annotator"] == machine.split_name)
        q = t.question("alice")  # the majority answer's check comes first
        assert (q.kind, q.i, q.j) == ("second", rec["i"], rec["j"])
        t.answer("alice", q.i, q.j, truth(q.i, q.j))
    wrong = int(truth(q.i, q.j) != rec["answer"])
    assert machine.split_rates.checked[rec["answer"]] == [1 - wrong, wrong] and machine.rates.n_checked == 0
    assert t.status()["machine"]["split"]["n_checked"] == 1


def test_machine_answers_are_soft_with_its_rate_for_what_it_said(tmp_path):
    with FakeChatServer(TEXTS, Y, false_same=0.3, seed=1) as server:
        t, store = machine_team(tmp_path, server, n_replies=1)
        t.refit()
        for _ in range(12):
            t.machine_step()
        t.refit()  # the rates learned from its answers; every answer of its weighs what they say now
    m = t.machine
    soft = {(i, j): eps for i, j, _, eps in t.state.constraints.answers}
    mine = [r for r in store.records if r["annotator"] == m.name]
    assert {r["answer"] for r in mine} == {"must", "cannot"}
    rates = (
        MachineRates()
    )  # no check: the rates from what it said (a pair handed to people counts once answered)
    for rec in mine:
        rates.saw(rec["answer"])
    assert m.rates.unchecked == rates.unchecked and m.rates.checked == rates.checked
    assert rates.false_same != MachineRates().false_same  # not the prior's any more
    for rec in mine:
        assert soft[(rec["i"], rec["j"])] == pytest.approx(rates.error_rate(rec["answer"]))


def test_checks_are_owed_to_people_calibrate_the_rates_and_survive_a_restart(tmp_path):
    with FakeChatServer(TEXTS, Y, false_same=0.4, seed=2) as server:
        t, store = machine_team(tmp_path, server, n_replies=1, check=0.5)
        m = t.machine
        t.refit()
        for _ in range(20):
            t.machine_step()
        mine = {(r["i"], r["j"]): r["answer"] for r in store.records if r["annotator"] == m.name}
        owed = {p for p, said in mine.items() if m.checked(*p, said)}
        assert t.status()["n_second_owed"] == len(owed)
        assert 0 < len(owed) < len(mine)
        checked = {"must": [0, 0], "cannot": [0, 0]}
        while True:
            q = t.question("alice")
            if q is None or q.kind != "second":
                break
            assert (q.i, q.j) in owed and "a check of the chat model's answers" in q.reason
            t.answer("alice", q.i, q.j, truth(q.i, q.j))
            checked[mine[(q.i, q.j)]][mine[(q.i, q.j)] != truth(q.i, q.j)] += 1
        assert m.rates.checked == checked and m.rates.n_checked == len(owed)
        assert checked["must"][1] > 0  # the fake server's false "same"s were caught
        q = t.review("bob")  # a reviewed answer is no check: the review picks the doubtful ones
        assert (q.i, q.j) in mine and (q.i, q.j) not in owed
        t.answer("bob", q.i, q.j, "cannot" if mine[(q.i, q.j)] == "must" else "must")
        assert m.rates.checked == checked
        soft = {(i, j): eps for i, j, _, eps in t.state.constraints.answers}
        for p, said in mine.items():
            if sum((r["i"], r["j"]) == p for r in store.records) == 1:
                assert soft[p] == pytest.approx(m.rates.error_rate(said))
        store.close()
        t2, store2 = machine_team(tmp_path, server, n_replies=1, check=0.5)
        assert t2.machine.rates.checked == checked and t2.status()["n_second_owed"] == 0
        store2.close()


def test_review_hands_out_the_most_doubted_machine_answer_and_an_overruling_is_listed(tmp_path):
    with FakeChatServer(TEXTS, Y, false_same=0.5, false_different=0.3, seed=4) as server:
        t, store = machine_team(tmp_path, server, n_replies=1)
        t.refit()
        for _ in range(15):
            t.machine_step()
        t.refit()
    m, samples = t.machine, t.state.samples
    mine = {(r["i"], r["j"]): r["answer"] for r in store.records if r["annotator"] == m.name}
    together = {p: np.mean(samples[:, p[0]] == samples[:, p[1]]) for p in mine}
    doubt = {p: 1 - together[p] if a == "must" else together[p] for p, a in mine.items()}
    q = t.review("alice")
    assert q.kind == "review" and doubt[(q.i, q.j)] == max(doubt.values())
    assert q.reason.startswith("the chat model said") and t.review("alice") == q  # held until answered
    other = t.review("bob")
    assert (other.i, other.j) != (q.i, q.j)
    opposite = "cannot" if mine[(q.i, q.j)] == "must" else "must"
    t.answer("alice", q.i, q.j, opposite)
    assert m.overruled(store.records) == [
        {"i": q.i, "j": q.j, "machine": mine[(q.i, q.j)], "people": {"alice": opposite}}
    ]
    assert len(store.records) == len(mine) + 1  # both answers stay
    assert t.review("alice") is not None and (t.review("alice").i, t.review("alice").j) != (q.i, q.j)


def test_a_spent_budget_stops_the_machine_and_an_outage_is_reported_while_people_go_on(tmp_path):
    with FakeChatServer(TEXTS, Y, seed=0) as server:
        t, store = machine_team(tmp_path, server, n_replies=1, max_requests=2)
        t.refit()
        assert t.machine_step() and t.machine_step()
        assert not t.machine_step() and "request budget (2 requests) is spent" in t.machine.stopped
        assert not t._holder and t.question("alice") is not None and len(store.records) == 2
        store.close()
    with FakeChatServer(TEXTS, Y, fail_first=100, seed=0) as server:
        (tmp_path / "b").mkdir()
        t, store = machine_team(tmp_path / "b", server, max_retries=0)
        t.refit()
        assert not t.machine_step() and "503" in t.machine.error and t.machine.stopped is None
        assert not t._holder and not store.records  # the pair is free again
        assert t.question("alice") is not None and t.status()["machine"]["error"] == t.machine.error
        store.close()


def test_the_machines_name_is_not_a_persons_and_bad_settings_are_named(tmp_path):
    with FakeChatServer(TEXTS, Y) as server:
        t, store = machine_team(tmp_path, server)
        with pytest.raises(InvalidInputError, match="is the chat model's name here"):
            t.question(t.machine.name)
        with pytest.raises(InvalidInputError, match="machine: expected a TeamMachine"):
            TeamSession(ActiveLearner(StandInSampler(), None, progress=False), X, store, machine="gpt")
        with pytest.raises(InvalidInputError, match="check"):
            TeamMachine(t.machine.oracle, check=1.5)
        store.close()


def test_the_background_threads_answer_with_the_machine_and_refit(tmp_path):
    with FakeChatServer(TEXTS, Y, seed=0) as server:
        t, store = machine_team(tmp_path, server, n_replies=1, n_queries=10)
        t.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (t.done and t.n_fits >= 2):
            time.sleep(0.05)
        t.close()
    assert t.done and len(t.state.answers) == 10 and t.n_fits >= 2
    assert {r["annotator"] for r in store.records} == {t.machine.name}
    assert all(r["answer"] == truth(r["i"], r["j"]) for r in store.records)
    store.close()
