"""The chat-model annotator end to end against a fake OpenAI-compatible server on 127.0.0.1: replies read as
verdicts, votes and unanimity, retries on 429/503 and timeouts, the key, the budget, garbled replies, and the
machine's two error rates (Beta posteriors, closed form)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from jaxclust.active import ActiveLearner, AnswerStore, GoldOracle, SessionStopped
from jaxclust.active.chat import (
    CHECK,
    ChatEndpoint,
    ChatOracle,
    MachineFirst,
    MachineRates,
    check_shares,
    read_verdict,
)
from jaxclust.active.chat_fake import FakeChatServer
from jaxclust.active.oracles import Answer
from jaxclust.errors import ChatError, InvalidInputError

LABELS = [0, 0, 0, 1, 1, 1, 2, 2]
TEXTS = [f"text number {k} about topic {y}" for k, y in enumerate(LABELS)]


def _oracle(server, **kw) -> ChatOracle:
    endpoint_kw = {
        k: kw.pop(k) for k in list(kw) if k in ("timeout", "max_retries", "max_requests", "api_key_env")
    }
    endpoint_kw.setdefault("api_key_env", None)
    sleeps = []
    endpoint = ChatEndpoint(server.url, "fake-model", backoff=0.5, sleep=sleeps.append, **endpoint_kw)
    oracle = ChatOracle(TEXTS, endpoint, **kw)
    oracle.sleeps = sleeps
    return oracle


@pytest.mark.parametrize(
    "text, verdict",
    [
        ("Yes", "must"),
        ("yes.", "must"),
        ("  **Yes** - same topic", "must"),
        ("Same", "must"),
        ("No", "cannot"),
        ("no, they differ", "cannot"),
        ("Different.", "cannot"),
        ("I am not sure", None),
        ("", None),
        (None, None),
        ("Maybe yes", None),
    ],
)
def test_a_reply_is_read_from_its_first_word(text, verdict):
    assert read_verdict(text) == verdict


def test_right_answers_are_gold_and_each_pair_is_asked_once():
    with FakeChatServer(TEXTS, LABELS) as server:
        oracle = _oracle(
            server, n_replies=3, instructions="Items are grouped by topic.", examples=[("a", "b", True)]
        )
        pairs = [(0, 1), (0, 3), (4, 5), (6, 2), (7, 6)]
        assert [oracle.answer(i, j) for i, j in pairs] == [
            "must" if LABELS[i] == LABELS[j] else "cannot" for i, j in pairs
        ]
        assert oracle.votes(1, 0) == (3, 0, 0)  # the pair either way round, from the cache
        assert len(server.requests) == len(pairs)  # one request per pair, all replies in it
        prompt = server.requests[0]["messages"][0]["content"]
        assert prompt.startswith(
            "Items are grouped by topic.\n\nExample: Item A: a | Item B: b | Answer: yes\n"
        )
        assert server.requests[0]["n"] == 3 and server.requests[0]["model"] == "fake-model"
        assert oracle.endpoint.usage.requests == 5 and oracle.endpoint.usage.completion_tokens == 15


def test_split_replies_are_unknown_and_garbled_ones_abstain(caplog):
    with FakeChatServer(TEXTS, LABELS, noise=0.15, seed=3) as server:
        oracle = _oracle(server, n_replies=3)
        for i in range(len(TEXTS)):
            for j in range(i + 1, len(TEXTS)):
                same, different, abstained = oracle.votes(i, j)
                assert same + different == 3 and abstained == 0
                want = "unknown" if same and different else ("must" if same else "cannot")
                assert oracle.answer(i, j) == want
        assert {oracle.answer(i, j) for i in range(8) for j in range(i + 1, 8)} == {
            "must",
            "cannot",
            "unknown",
        }
    with FakeChatServer(TEXTS, LABELS, garble=1.0) as server, caplog.at_level(logging.INFO):
        oracle = _oracle(server, n_replies=2)
        assert oracle.answer(0, 1) == "unknown" and oracle.votes(0, 1) == (0, 0, 2)
        assert "pair (0, 1): reply" in caplog.text and "read as an abstention" in caplog.text


def test_a_server_that_returns_fewer_choices_is_asked_again():
    with FakeChatServer(TEXTS, LABELS, max_choices=2) as server:
        oracle = _oracle(server, n_replies=5)
        assert oracle.votes(3, 4) == (5, 0, 0)
        assert [r["n"] for r in server.requests] == [5, 3, 1]


def test_rate_limits_and_outages_are_retried_with_backoff():
    with FakeChatServer(TEXTS, LABELS, rate_limit_every=2, fail_first=2) as server:
        oracle = _oracle(server, n_replies=1, max_retries=3)
        # requests 1, 2: 503; 3: answered; 4: 429 (Retry-After 0); 5: answered
        assert oracle.answer(0, 1) == "must" and oracle.answer(0, 7) == "cannot"
        usage = oracle.endpoint.usage
        assert (usage.requests, usage.retries, usage.failures) == (5, 3, 0)
        assert oracle.sleeps == [0.5, 1.0, 0.0]  # backoff * 2**attempt; the server's Retry-After
    with FakeChatServer(TEXTS, LABELS, fail_first=10) as server:
        oracle = _oracle(server, max_retries=2)
        with pytest.raises(ChatError, match=r"/v1/chat/completions: 503 overloaded, after 3 attempts"):
            oracle.answer(0, 1)
        assert oracle.endpoint.usage.failures == 1 and (0, 1) not in oracle._votes  # nothing cached


def test_a_slow_server_times_out_with_a_named_error():
    with FakeChatServer(TEXTS, LABELS, delay=0.5) as server:
        oracle = _oracle(server, timeout=0.05, max_retries=1)
        with pytest.raises(ChatError, match=r"no response within 0.05 s, after 2 attempts"):
            oracle.answer(0, 1)


def test_the_key_comes_from_the_named_variable(monkeypatch):
    with FakeChatServer(TEXTS, LABELS, key="sk-right") as server:
        monkeypatch.delenv("JAXCLUST_TEST_KEY", raising=False)
        with pytest.raises(ChatError, match="the environment variable JAXCLUST_TEST_KEY is not set"):
            _oracle(server, api_key_env="JAXCLUST_TEST_KEY").answer(0, 1)
        monkeypatch.setenv("JAXCLUST_TEST_KEY", "sk-wrong")
        with pytest.raises(
            ChatError, match=r"refused the key \(401 Incorrect API key provided\); check the variable"
        ):
            _oracle(server, api_key_env="JAXCLUST_TEST_KEY").answer(0, 1)
        monkeypatch.setenv("JAXCLUST_TEST_KEY", "sk-right")
        assert _oracle(server, api_key_env="JAXCLUST_TEST_KEY").answer(0, 1) == "must"


def test_a_spent_budget_ends_the_session():
    with FakeChatServer(TEXTS, LABELS) as server:
        oracle = _oracle(server, max_requests=2)
        oracle.answer(0, 1)
        oracle.answer(0, 2)
        with pytest.raises(SessionStopped, match=r"request budget \(2 requests\) is spent"):
            oracle.answer(0, 3)


def test_bad_settings_are_named():
    with pytest.raises(InvalidInputError, match="base_url: expected an http"):
        ChatEndpoint("127.0.0.1:8080", "m")
    with pytest.raises(InvalidInputError, match="max_retries"):
        ChatEndpoint("http://127.0.0.1:1/v1", "m", max_retries=-1)
    endpoint = ChatEndpoint("http://127.0.0.1:1/v1", "m", api_key_env=None)
    with pytest.raises(InvalidInputError, match=r"examples\[0\]: expected \(item a, item b, same\?\)"):
        ChatOracle(TEXTS, endpoint, examples=[("only one",)])
    with pytest.raises(InvalidInputError, match="n_replies"):
        ChatOracle(TEXTS, endpoint, n_replies=0)
    closed = ChatEndpoint("http://127.0.0.1:9/v1", "m", api_key_env=None, max_retries=0)  # nobody listens
    with pytest.raises(
        ChatError, match=r"127.0.0.1:9/v1/chat/completions: cannot connect .*after 1 attempts"
    ):
        ChatOracle(TEXTS, closed).answer(0, 1)


def test_machine_rates_are_beta_posterior_means_and_give_likelihood_ratios():
    rates = MachineRates(prior=(1.0, 9.0))
    assert rates.false_same == pytest.approx(0.1) and rates.false_different == pytest.approx(0.1)
    # the machine said "same" 10 times (7 right), "different" 20 times (18 right); 2 "unknown" say nothing
    for machine, person, times in [
        ("must", "must", 7),
        ("must", "cannot", 3),
        ("cannot", "cannot", 18),
        ("cannot", "must", 2),
        ("unknown", "must", 1),
        ("must", "unknown", 1),
    ]:
        for _ in range(times):
            rates.add(machine, person)
    assert rates.n_checked == 30
    fs = (1 + 3) / (10 + 3 + 18)  # wrong "same"s among the 21 pairs people call different
    fd = (1 + 2) / (10 + 2 + 7)  # wrong "different"s among the 9 pairs people call the same
    assert rates.false_same == pytest.approx(fs) and rates.false_different == pytest.approx(fd)
    # the soft answer's odds (1 - eps) / eps are the reply's likelihood ratio
    eps = rates.error_rate("must")
    assert (1 - eps) / eps == pytest.approx((1 - fd) / fs)
    eps = rates.error_rate("cannot")
    assert (1 - eps) / eps == pytest.approx((1 - fs) / fd)
    with pytest.raises(InvalidInputError, match="answer: expected 'must' or 'cannot'"):
        rates.error_rate("unknown")


def _rates_by_quadrature(ss, sd, dd, ds, us, ud, a, b, m=160):
    """Posterior means of (false same, false different) by a midpoint sum over (false same, false different,
    share of same pairs) in [0, 1]^3, from the likelihood written out: the checked pairs' four cells and the
    unchecked answers' two."""
    g = (np.arange(m) + 0.5) / m
    fs, fd, p = np.meshgrid(g, g, g, indexing="ij")
    log = (a - 1) * (np.log(fs) + np.log(fd)) + (b - 1) * (np.log1p(-fs) + np.log1p(-fd))
    log += (
        ss * np.log(p * (1 - fd))
        + sd * np.log((1 - p) * fs)
        + ds * np.log(p * fd)
        + dd * np.log((1 - p) * (1 - fs))
    )
    log += us * np.log(p * (1 - fd) + (1 - p) * fs) + ud * np.log(p * fd + (1 - p) * (1 - fs))
    w = np.exp(log - log.max())
    return float((w * fs).sum() / w.sum()), float((w * fd).sum() / w.sum())


@pytest.mark.parametrize(
    "counts",
    [
        (7, 3, 18, 2, 0, 0),
        (7, 3, 18, 2, 40, 25),
        (2, 1, 1, 0, 30, 5),
        (0, 0, 0, 0, 12, 3),
        (5, 0, 4, 1, 0, 20),
    ],
)
def test_machine_rates_with_unchecked_answers_are_the_exact_posterior_means(counts):
    """Checked pairs (right and wrong "same"s, right and wrong "different"s) and unchecked answers: the closed
    form sum over the unchecked pairs' truths against a quadrature of the joint written out."""
    ss, sd, dd, ds, us, ud = counts
    rates = MachineRates(prior=(1.0, 9.0))
    for machine, person, times in [("must", "must", ss), ("must", "cannot", sd), ("cannot", "cannot", dd),
                                   ("cannot", "must", ds)]:  # fmt: skip
        for _ in range(times):
            rates.add(machine, person)
    for _ in range(us):
        rates.saw("must")
    for _ in range(ud):
        rates.saw("cannot")
    rates.saw("unknown")  # says nothing
    assert rates.unchecked == {"must": us, "cannot": ud} and rates.n_unchecked == us + ud
    fs, fd = _rates_by_quadrature(ss, sd, dd, ds, us, ud, 1.0, 9.0)
    assert rates.false_same == pytest.approx(fs, abs=2e-4) and rates.false_different == pytest.approx(
        fd, abs=2e-4
    )
    rates.reset()
    assert (rates.false_same, rates.false_different) == (pytest.approx(0.1), pytest.approx(0.1))


def test_unchecked_answers_turn_checks_of_one_answer_into_both_rates():
    """A tenth of the machine's "same"s checked and 3 % of its "different"s: its unchecked answers say how many
    of each it gives, which turns the two answers' checked error shares into the two rates. Many answers (a
    window of the sum, exact to far below the tolerance): the estimates near the truth."""
    rng = np.random.default_rng(1)
    rates = MachineRates()
    for _ in range(3000):  # a third same pairs; wrong on 25 % of the different pairs, 5 % of the same
        same = rng.random() < 1 / 3
        says_same = rng.random() < (0.95 if same else 0.25)
        said = "must" if says_same else "cannot"
        truth = "must" if same else "cannot"
        if rng.random() < (0.1 if says_same else 0.03):
            rates.add(said, truth)
        else:
            rates.saw(said)
    assert rates.n_checked < 250  # the spread over seeds: 0.024 (false same), 0.03 (false different)
    assert abs(rates.false_same - 0.25) < 0.05 and abs(rates.false_different - 0.05) < 0.05


def test_check_shares_are_one_for_both_answers_or_one_for_each():
    assert check_shares(0.3) == {"must": 0.3, "cannot": 0.3}
    assert check_shares({"same": 0.5, "different": 0.1}) == {"must": 0.5, "cannot": 0.1}
    assert check_shares(CHECK) == CHECK and CHECK["must"] > CHECK["cannot"]
    with pytest.raises(InvalidInputError, match=r"check: expected one share, or a share for each answer"):
        check_shares({"must": 0.5})
    with pytest.raises(InvalidInputError, match=r"check: expected one share"):
        check_shares({"must": 0.5, "maybe": 0.1})
    with pytest.raises(InvalidInputError, match=r"check\['cannot'\]"):
        check_shares({"must": 0.5, "cannot": 2.0})
    with pytest.raises(InvalidInputError, match=r"machine_check"):
        check_shares(-1, "machine_check")


def test_the_checks_take_their_share_of_each_answer():
    """Every "same" checked, no "different": a person answers exactly the machine's unanimous "same"s."""
    with FakeChatServer(TEXTS, LABELS, false_same=0.3, seed=5) as server:
        routed = MachineFirst(
            _oracle(server, n_replies=1), GoldOracle(LABELS), check={"must": 1.0, "cannot": 0.0}
        )
        for a, b in [(i, j) for i in range(8) for j in range(i + 1, 8)]:
            routed.answer(a, b)
    for r in routed.routes:
        assert (r["why"] == "check") == (r["verdict"] == "must")
    assert routed.rates.unchecked["must"] == 0 and routed.rates.unchecked["cannot"] > 0
    assert sum(routed.rates.checked["cannot"]) == 0 and sum(routed.rates.checked["must"]) > 0


def test_rates_estimated_from_the_fake_server_approach_its_rates():
    """Many pairs: the estimates sit near the server's rates (a wide tolerance: a finite sample)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 400)
    texts = [f"item {k}" for k in range(400)]
    with FakeChatServer(texts, labels, false_same=0.25, false_different=0.05, seed=1) as server:
        endpoint = ChatEndpoint(server.url, "fake", api_key_env=None)
        oracle = ChatOracle(texts, endpoint, n_replies=1)
        rates = MachineRates()
        for _ in range(600):
            i, j = (int(v) for v in rng.choice(400, 2, replace=False))
            rates.add(oracle.answer(i, j), "must" if labels[i] == labels[j] else "cannot")
    assert abs(rates.false_same - 0.25) < 0.06 and abs(rates.false_different - 0.05) < 0.04


def test_a_session_stores_the_machine_as_its_annotator(tmp_path):
    X = np.concatenate([np.random.default_rng(0).normal(c, 0.1, (4, 2)) for c in (0.0, 3.0)])
    labels = [0] * 4 + [1] * 4
    texts = [f"point {k}" for k in range(8)]
    with FakeChatServer(texts, labels) as server:
        oracle = ChatOracle(texts, ChatEndpoint(server.url, "fake", api_key_env=None), n_replies=1)
        from jaxclust import DPMM

        learner = ActiveLearner(
            DPMM(n_chains=2, n_burnin=10, n_samples=5, random_state=0),
            oracle,
            strategy="random",
            store=tmp_path / "a.jsonl",
            progress=False,
        )
        learner.run(X, 4)
    with AnswerStore(tmp_path / "a.jsonl") as store:
        rows = store.records
    assert len(rows) == 4 and {r["annotator"] for r in rows} == {oracle.annotator}
    assert oracle.annotator.startswith("fake (prompt ") and len(oracle.annotator) == len(
        "fake (prompt 12345678)"
    )
    assert all(r["answer"] == ("must" if labels[r["i"]] == labels[r["j"]] else "cannot") for r in rows)


@pytest.mark.parametrize("n_replies", [3, 4])
def test_the_machine_answers_first_by_unanimity_or_majority_and_a_person_takes_ties_and_checks(n_replies):
    """Unanimous replies answer under the machine's name, split ones by their majority under its split name, each
    kind checked at its own shares and learning its own rates; a tie (4 replies, 2 against 2) goes to a person."""
    with FakeChatServer(TEXTS, LABELS, noise=0.3, false_same=0.3, seed=5) as server:
        machine = _oracle(server, n_replies=n_replies)
        asked = []

        def person(i, j):
            asked.append((i, j))
            return "must" if LABELS[i] == LABELS[j] else "cannot"

        routed = MachineFirst(
            machine, person, check=0.5, split_check={"must": 1.0, "cannot": 0.3}, random_state=0
        )
        assert routed.error_rates() == {
            "*": 0.0,
            machine.annotator: routed.rates,
            machine.split_annotator: routed.split_rates,
        }
        assert machine.split_annotator == machine.annotator + ", split replies"
        pairs = [(i, j) for i in range(8) for j in range(i + 1, 8)]
        replies = [routed.answer(i, j) for i, j in pairs]
    routes = routed.routes
    assert {r["why"] for r in routes} >= {"check", None} and any(
        r["split"] and r["to"] == "machine" for r in routes
    )
    assert any(r["why"] == "tie" for r in routes) == (n_replies == 4)
    for (i, j), reply, route in zip(pairs, replies, routes, strict=True):
        truth = "must" if LABELS[i] == LABELS[j] else "cannot"
        same, different, _ = route["votes"]
        assert route["split"] == (same > 0 and different > 0)
        assert route["verdict"] == (
            "must" if same > different else "cannot" if different > same else "unknown"
        )
        if route["to"] == "machine":  # not drawn for a check: the machine's, under the name of its kind
            name = machine.split_annotator if route["split"] else machine.annotator
            assert reply == Answer(route["verdict"], name) and route["verdict"] != "unknown"
        else:  # the person's answer is used
            assert reply == truth and (i, j) in asked and route["person"] == truth
        assert (route["why"] == "tie") == (route["verdict"] == "unknown")
        if route["split"] and route["verdict"] == "must":  # split "same"s: every one checked
            assert route["why"] == "check"
    for rates, split in ((routed.rates, False), (routed.split_rates, True)):
        checked, unchecked = {"must": [0, 0], "cannot": [0, 0]}, {"must": 0, "cannot": 0}
        for r in routes:
            if r["split"] == split and r["why"] == "check":
                checked[r["verdict"]][r["verdict"] != r["person"]] += 1
            elif r["split"] == split and r["why"] != "tie":
                unchecked[r["verdict"]] += 1
        assert rates.checked == checked and rates.unchecked == unchecked
    assert routed.split_rates.n_checked > 0 and routed.split_rates.prior == (1.0, 3.0)
    assert len(asked) == sum(r["why"] in ("tie", "check") for r in routes)


def test_every_split_goes_to_a_person_when_split_check_is_one():
    """``split_check=1``: the published recipe's routing, a split never answered by the machine."""
    with FakeChatServer(TEXTS, LABELS, noise=0.3, seed=5) as server:
        routed = MachineFirst(_oracle(server, n_replies=3), GoldOracle(LABELS), check=0.0, split_check=1.0)
        for a, b in [(i, j) for i in range(8) for j in range(i + 1, 8)]:
            routed.answer(a, b)
    assert any(r["split"] for r in routed.routes)
    assert all((r["to"] == "person") == r["split"] for r in routed.routes)


def test_a_session_stores_each_answer_under_who_gave_it_with_the_machines_rates(tmp_path):
    from jaxclust import DPMM
    from jaxclust.active.core import SessionSettings

    settings = SessionSettings(error_rate={"*": 0.0, "m": MachineRates(prior=(1.0, 9.0))})
    assert settings.rate_of("m", "must") == pytest.approx(0.1) and settings.rate_of("m", "unknown") == 0.0
    assert settings.rate_of("alice", "must") == 0.0
    with pytest.raises(
        InvalidInputError,
        match=r"error_rate=.*expected a finite number >= 0.0 and <= 0.5 or an object with error_rate\(answer\)",
    ):
        ActiveLearner(DPMM(), None, error_rate={"m": object()}).session_settings()

    X = np.concatenate([np.random.default_rng(0).normal(c, 0.1, (4, 2)) for c in (0.0, 3.0)])
    labels = [0] * 4 + [1] * 4
    texts = [f"point {k}" for k in range(8)]
    with FakeChatServer(texts, labels, noise=0.3, seed=2) as server:
        machine = ChatOracle(texts, ChatEndpoint(server.url, "fake", api_key_env=None), n_replies=3)
        person = GoldOracle(labels)
        rates = MachineRates(prior=(1.0, 4.0))  # no checks: the rates from what the machine said alone
        routed = MachineFirst(machine, person, rates=rates, check=0.0)
        learner = ActiveLearner(
            DPMM(n_chains=2, n_burnin=10, n_samples=5, random_state=0),
            routed,
            strategy="random",
            store=tmp_path / "a.jsonl",
            annotator="alice",
            error_rate=routed.error_rates(),
            progress=False,
        )
        learner.run(X, 10)
    assert routed.samples.shape[1] == 8 and learner.samples_.shape[1] == 8  # the learner passed its samples
    with AnswerStore(tmp_path / "a.jsonl") as store:
        rows = store.records
    kinds = {machine.annotator: rates, machine.split_annotator: routed.split_rates}
    by_machine = [r for r in rows if r["annotator"] in kinds]
    by_alice = [r for r in rows if r["annotator"] == "alice"]
    assert len(by_machine) + len(by_alice) == 10 and by_machine and by_alice
    assert {r["annotator"] for r in by_machine} == set(kinds)  # unanimous and split replies both answered
    assert [(r["i"], r["j"]) for r in by_alice] == [
        (min(r["i"], r["j"]), max(r["i"], r["j"])) for r in routed.routes if r["to"] == "person"
    ]
    # every verdict is counted once by its kind, as nobody checked it (those routed for contradicting the model too)
    for kind, split in ((rates, False), (routed.split_rates, True)):
        said = [r["verdict"] for r in routed.routes if r["verdict"] != "unknown" and r["split"] == split]
        assert kind.unchecked == {k: said.count(k) for k in ("must", "cannot")} and kind.n_checked == 0
    # the machine's answers are soft, with the rate whose odds are the reply's likelihood ratio
    soft = {(a, b): (kind, eps) for a, b, kind, eps in learner.constraints_.answers}
    assert {(r["i"], r["j"]) for r in by_machine} == set(soft)
    for r in by_machine:
        kind, eps = soft[(r["i"], r["j"])]
        assert eps == pytest.approx(kinds[r["annotator"]].error_rate(kind))
    hard = {(min(a, b), max(a, b)) for a, b, _ in learner.constraints_.pairs}
    assert {(r["i"], r["j"]) for r in by_alice if r["answer"] != "unknown"} == hard


def test_a_verdict_against_what_the_model_is_sure_of_goes_to_a_person():
    with FakeChatServer(TEXTS, LABELS, false_different=1.0) as server:  # "different" about every same pair
        machine = _oracle(server, n_replies=1)
        routed = MachineFirst(machine, GoldOracle(LABELS), check=0.0, sure=0.9)
        assert routed.answer(0, 1) == Answer("cannot", machine.annotator)  # no samples yet: the machine's
        samples = np.array([[0, 0, 0, 1, 1, 1, 2, 2]] * 9 + [[0, 1, 0, 1, 1, 1, 2, 2]])
        routed.observe(samples)  # 0-2 together in all 10 samples, 1-2 in 9, 3-4 in all
        assert routed.answer(0, 2) == "must" and routed.routes[-1]["why"] == "contradicts"
        assert routed.answer(1, 2) == "must" and routed.routes[-1]["why"] == "contradicts"  # 9 of 10 >= 0.9
        samples[:2, 4] = 0  # 3-4 together in 8 of 10: not sure enough
        assert routed.answer(3, 4) == Answer("cannot", machine.annotator)
        assert routed.answer(0, 3) == Answer("cannot", machine.annotator)  # agrees with the model
        never = MachineFirst(machine, GoldOracle(LABELS), check=0.0, sure=None)
        never.observe(samples)
        assert never.answer(0, 2) == Answer("cannot", machine.annotator)  # sure=None: the machine's stands
    assert routed.rates.n_checked == 0  # only random checks calibrate


def test_the_votes_kept_on_disk_are_not_asked_again_and_other_prompts_or_texts_are(tmp_path):
    cache = tmp_path / "s.sqlite.chat.jsonl"
    with FakeChatServer(TEXTS, LABELS, noise=0.3, seed=2) as server:
        first = _oracle(server, n_replies=3, cache=cache)
        votes = {(i, j): first.votes(i, j) for i, j in [(0, 1), (2, 5), (3, 7)]}
        asked = len(server.requests)
        again = _oracle(server, n_replies=3, cache=cache)
        assert {p: again.votes(*p) for p in votes} == votes and len(server.requests) == asked
        assert again.known(1, 0) == votes[(0, 1)] and again.known(0, 2) is None
        other = _oracle(server, n_replies=3, cache=cache, instructions="Topics only.")  # another prompt
        assert other.known(0, 1) is None
        changed = ChatOracle(["x"] + TEXTS[1:], ChatEndpoint(server.url, "fake-model", api_key_env=None),
                             n_replies=3, cache=cache)  # fmt: skip
        assert changed.known(0, 1) is None and changed.known(2, 5) == votes[(2, 5)]  # item 0's text changed
        with open(cache, "a") as f:
            f.write('{"i": 4, "j": 6, "prom')  # a torn last line (the process died while appending)
        torn = _oracle(server, n_replies=3, cache=cache)
        assert torn.known(4, 6) is None and torn.known(3, 7) == votes[(3, 7)]
        torn.votes(4, 6)
    assert _oracle(server, n_replies=3, cache=cache).known(4, 6) == torn.votes(4, 6)  # on a line of its own


def test_a_resumed_session_learns_the_machines_rates_again_from_the_store_and_the_cache(tmp_path):
    cache = tmp_path / "votes.jsonl"
    labels = np.repeat(np.arange(4), 6)
    texts = [f"text {k}" for k in range(24)]
    with FakeChatServer(texts, labels, false_same=0.4, seed=1) as server:
        endpoint = ChatEndpoint(server.url, "fake", api_key_env=None)
        routed = MachineFirst(ChatOracle(texts, endpoint, n_replies=1, cache=cache), GoldOracle(labels),
                              check=0.4, random_state=3)  # fmt: skip
        pairs = [(i, j) for i in range(24) for j in range(i + 1, 24)][::5]
        records = []
        for i, j in pairs:
            said = routed.answer(i, j)
            who = said.annotator if isinstance(said, Answer) else "ana"
            records.append({"i": i, "j": j, "answer": str(getattr(said, "answer", said)), "annotator": who})
        assert routed.rates.n_checked > 5 and routed.rates.checked["must"][1] > 0
        for rec in list(records):  # another person's second opinions on the machine's answers: no checks
            if rec["annotator"] == routed.machine.annotator:
                records.append({**rec, "answer": "must" if labels[rec["i"]] == labels[rec["j"]] else "cannot",
                                "annotator": "bo"})  # fmt: skip
        asked = len(server.requests)
        resumed = MachineFirst(ChatOracle(texts, endpoint, n_replies=1, cache=cache), GoldOracle(labels),
                               check=0.4, random_state=3)  # fmt: skip
        resumed.calibrate(records)
        assert resumed.rates.checked == routed.rates.checked and len(server.requests) == asked
        assert resumed.rates.unchecked == routed.rates.unchecked and sum(routed.rates.unchecked.values()) > 5
        assert resumed.split_rates.n_checked == routed.split_rates.n_checked == 0  # one reply never splits


def test_a_resumed_session_learns_the_split_replies_rates_again(tmp_path):
    cache = tmp_path / "votes.jsonl"
    labels = np.repeat(np.arange(4), 6)
    texts = [f"text {k}" for k in range(24)]
    with FakeChatServer(texts, labels, false_same=0.3, noise=0.3, seed=2) as server:
        endpoint = ChatEndpoint(server.url, "fake", api_key_env=None)

        def routed():
            return MachineFirst(ChatOracle(texts, endpoint, n_replies=3, cache=cache), GoldOracle(labels),
                                check=0.3, split_check=0.5, random_state=1)  # fmt: skip

        first = routed()
        records = []
        for i, j in [(a, b) for a in range(24) for b in range(a + 1, 24)][::4]:
            said = first.answer(i, j)
            who = said.annotator if isinstance(said, Answer) else "ana"
            records.append({"i": i, "j": j, "answer": str(getattr(said, "answer", said)), "annotator": who})
        resumed = routed()
        resumed.calibrate(records)
    assert first.split_rates.n_checked > 3 and first.rates.n_checked > 3
    for kind in ("rates", "split_rates"):
        assert getattr(resumed, kind).checked == getattr(first, kind).checked
        assert getattr(resumed, kind).unchecked == getattr(first, kind).unchecked


@pytest.mark.parametrize(
    "votes, kind",
    [
        ((5, 0, 0), ("must", False)),
        ((0, 3, 2), ("cannot", False)),
        ((3, 2, 0), ("must", True)),
        ((1, 3, 1), ("cannot", True)),
        ((2, 2, 1), ("unknown", True)),
        ((0, 0, 5), ("unknown", True)),
    ],
)
def test_an_answer_is_unanimous_or_the_majority_of_split_replies(votes, kind):
    from jaxclust.active.machine_rates import kind_of, split_name

    assert kind_of(votes) == kind
    assert split_name("m" * 100) == "m" * 85 + ", split replies" and len(split_name("m" * 100)) == 100
