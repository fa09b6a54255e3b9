"""TeamSession: questions handed out from a pool to several annotators, second opinions, disputed answers made
soft with the measured error rates, undo, restart from the store, refits in the background."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from jaxclust.active import ActiveLearner, AnswerStore
from jaxclust.active.agreement import PRIOR_AGREEMENT, PRIOR_WEIGHT, error_rates
from jaxclust.active.team import TeamSession
from jaxclust.errors import InvalidInputError, QuestionError, StoreMismatchError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _standin import StandInSampler, blobs  # noqa: E402


def team(tmp_path, double=0.0, name="a.sqlite", X=None, **kw):
    if X is None:
        X, _ = blobs(n_per=10)
    store = AnswerStore(tmp_path / name, shared=name.endswith(".sqlite"))
    learner = ActiveLearner(StandInSampler(), None, progress=False)
    return TeamSession(learner, X, store, double=double, **kw), store


def gold_answer(y, q):
    return "must" if y[q.i] == y[q.j] else "cannot"


def test_each_pair_goes_to_one_annotator_and_every_answer_is_stored_before_answer_returns(tmp_path):
    _, y = blobs(n_per=10)
    t, store = team(tmp_path)
    t.refit()
    seen = set()
    for step in range(15):
        qa, qb = t.question("alice"), t.question("bob")
        assert (qa.i, qa.j) != (qb.i, qb.j)
        assert t.question("alice") == qa  # asked again (a reload): the same pair
        for q in (qa, qb):
            assert (q.i, q.j) not in seen and t.state.constraints.status(q.i, q.j) is None
        for who, q in (("alice", qa), ("bob", qb)):
            rec = t.answer(who, q.i, q.j, gold_answer(y, q))
            seen.add((q.i, q.j))
            assert store.records[-1] == rec and rec["annotator"] == who
        if step % 5 == 4:
            t.refit()
    assert len(store.records) == 30 == len(t.state.answers)
    assert {(r["i"], r["j"]) for r in store.records} == seen


def test_a_held_pair_that_others_answers_settle_is_replaced_at_the_next_look(tmp_path):
    t, _ = team(tmp_path)
    t.refit()
    qa = t.question("alice")
    k = next(k for k in range(t.n) if k not in (qa.i, qa.j))
    for who, (a, b) in (("bob", (qa.i, k)), ("carol", (qa.j, k))):
        t._hold(who, (min(a, b), max(a, b)), "new")  # as if the pool had given them these
        t.answer(who, a, b, "must")
    assert t.state.constraints.status(qa.i, qa.j) == "must"
    q = t.question("alice")
    assert (q.i, q.j) != (qa.i, qa.j) and t.state.constraints.status(q.i, q.j) is None


def test_an_answer_about_a_pair_not_held_is_refused_and_nothing_is_stored(tmp_path):
    t, store = team(tmp_path)
    q = t.question("alice")
    with pytest.raises(
        QuestionError, match=r"bob was not asked about the pair .* \(the pair they hold: none\)"
    ):
        t.answer("bob", q.i, q.j, "must")
    with pytest.raises(InvalidInputError, match="answer: expected one of must, cannot, unknown"):
        t.answer("alice", q.i, q.j, "maybe")
    t.answer("alice", q.j, q.i, "must")  # either order
    with pytest.raises(QuestionError) as sent_twice:
        t.answer("alice", q.i, q.j, "must")
    assert sent_twice.value.already and len(store.records) == 1


def test_second_opinions_go_to_another_annotator_first(tmp_path):
    t, store = team(tmp_path, double=1.0)
    q = t.question("alice")
    t.answer("alice", q.i, q.j, "must")
    assert t.question("alice").kind == "new"  # never her own pair again
    second = t.question("bob")
    assert (second.kind, second.i, second.j) == ("second", q.i, q.j) and "alice: must" in second.reason
    t.answer("bob", q.i, q.j, "must")
    assert t.status()["n_second_owed"] == 0
    assert [r["annotator"] for r in store.records] == ["alice", "bob"]
    assert t.state.constraints.status(q.i, q.j) == "must"


def test_the_share_of_pairs_asked_twice_follows_double(tmp_path):
    t, _ = team(tmp_path, double=0.3)
    pairs = [(i, j) for i in range(30) for j in range(i + 1, 30)]
    share = np.mean([t._doubled(i, j) for i, j in pairs])
    assert abs(share - 0.3) < 4 * np.sqrt(0.3 * 0.7 / len(pairs))


def test_a_disputed_pair_becomes_two_observations_with_the_measured_error_rates(tmp_path):
    t, store = team(tmp_path, double=1.0)
    q = t.question("alice")
    t.answer("alice", q.i, q.j, "must")
    assert t.state.constraints.status(q.i, q.j) == "must"  # hard until disputed
    t.question("bob")
    t.answer("bob", q.i, q.j, "cannot")
    # one shared pair, answered both ways: agree = (0 + 0.9 * 10) / (1 + 10), e = (1 - agree) / 2
    e = (1 - PRIOR_AGREEMENT * PRIOR_WEIGHT / (1 + PRIOR_WEIGHT)) / 2
    assert error_rates(store.records) == pytest.approx({"alice": e, "bob": e})
    assert t.state.constraints.status(q.i, q.j) is None
    got = sorted(t.state.constraints.answers)
    assert [a[:3] for a in got] == [(q.i, q.j, "cannot"), (q.i, q.j, "must")]
    assert [a[3] for a in got] == pytest.approx([e, e])
    assert len(store.records) == 2 and all(r["kept"] for r in store.records)


def test_undo_keeps_the_answer_in_the_history_rebuilds_and_gives_the_pair_back(tmp_path):
    t, store = team(tmp_path)
    q1 = t.question("alice")
    t.answer("alice", q1.i, q1.j, "must")
    q2 = t.question("alice")
    t.answer("alice", q2.i, q2.j, "cannot")
    undone = t.undo("alice")
    assert (undone["i"], undone["j"], undone["answer"]) == (q2.i, q2.j, "cannot")
    assert [a["undone"] for a in store.all_answers] == [False, True]
    assert t.state.constraints.status(q2.i, q2.j) is None and t.state.constraints.status(q1.i, q1.j) == "must"
    again = t.question("alice")
    assert (again.i, again.j) == (q2.i, q2.j)
    assert t.undo("bob") is None


def test_a_restarted_session_rebuilds_the_constraints_and_the_second_opinions_owed(tmp_path):
    X, y = blobs(n_per=10)
    t, store = team(tmp_path, double=0.5, X=X)
    t.refit()
    for _ in range(12):
        for who in ("alice", "bob"):
            q = t.question(who)
            t.answer(who, q.i, q.j, gold_answer(y, q) if who == "alice" else "cannot")
    before = (sorted(t.state.constraints.pairs), sorted(t.state.constraints.answers), list(t._second))
    store.close()
    t2, _ = team(tmp_path, double=0.5, X=X)
    assert (
        sorted(t2.state.constraints.pairs),
        sorted(t2.state.constraints.answers),
        list(t2._second),
    ) == before


def test_the_store_of_other_data_is_refused(tmp_path):
    t, store = team(tmp_path)
    store.close()
    X, _ = blobs(n_per=10, seed=5)
    with pytest.raises(StoreMismatchError, match="fingerprint"):
        team(tmp_path, X=X)


def test_the_background_thread_refits_after_answers_without_blocking_them(tmp_path):
    _, y = blobs(n_per=10)
    t, _ = team(tmp_path)
    t.start()
    try:
        deadline = time.monotonic() + 30
        while t.n_fits == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert t.n_fits == 1 and t.labels_ is not None
        q = t.question("alice")
        assert q.p_same is not None and "model" in q.reason
        t.answer("alice", q.i, q.j, gold_answer(y, q))
        while t.status()["fitting_behind"] != 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert t.n_fits >= 2 and t.status()["fitting_behind"] == 0
    finally:
        t.close()


def test_n_queries_stops_new_pairs_but_not_owed_second_opinions(tmp_path):
    t, _ = team(tmp_path, double=1.0, n_queries=1)
    q = t.question("alice")
    t.answer("alice", q.i, q.j, "must")
    assert t.done and t.question("alice") is None
    assert t.question("bob").kind == "second"


def test_bad_settings_are_named(tmp_path):
    with pytest.raises(
        InvalidInputError, match=r"^double: expected a share of the pairs in \[0, 1\], got 1.5"
    ):
        team(tmp_path, double=1.5)
    with pytest.raises(InvalidInputError, match="^pool_size: expected an int >= 1, got 0"):
        team(tmp_path, name="b.sqlite", pool_size=0)


@pytest.mark.parametrize("seed", range(6))
def test_replay_gives_the_state_of_applying_the_answers_one_by_one(seed):
    from jaxclust.active.state import SessionState, apply_answer, replay
    from jaxclust.constraints import Constraints

    rng = np.random.default_rng(seed)
    n = 9  # few items: many answers contradict earlier ones, some repeat
    records, rates = [], []
    for k in range(40):
        i, j = rng.choice(n, 2, replace=False).tolist()
        records.append(
            {
                "i": i,
                "j": j,
                "answer": rng.choice(["must", "cannot", "unknown"], p=[0.45, 0.45, 0.1]),
                "annotator": f"a{k % 3}",
            }
        )
        rates.append(0.0 if rng.random() < 0.8 else 0.1)
    one, bulk = (SessionState.start(Constraints.from_answers(n, (), on_conflict="drop")) for _ in range(2))
    for rec, rate in zip(records, rates, strict=True):
        apply_answer(one, dict(rec), rate)
    replay(bulk, records, rates)
    assert bulk.answers == one.answers and bulk.dropped == one.dropped and bulk.conflicts == one.conflicts
    assert (bulk.unknown, bulk.soft, bulk.asked) == (one.unknown, one.soft, one.asked)
    assert (
        bulk.constraints.pairs == one.constraints.pairs
        and bulk.constraints.answers == one.constraints.answers
    )
    assert np.array_equal(bulk.constraints.group_of, one.constraints.group_of) and one.dropped


class BrokenSampler(StandInSampler):
    def fit(self, X, constraints=None, init_labels=None, n_burnin=None):
        raise FloatingPointError("the sampler diverged")


def test_a_failing_fit_is_reported_and_questions_go_on(tmp_path):
    X, _ = blobs(n_per=10)
    store = AnswerStore(tmp_path / "a.sqlite", shared=True)
    t = TeamSession(ActiveLearner(BrokenSampler(), None, progress=False), X, store).start()
    try:
        deadline = time.monotonic() + 30
        while t.fit_error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert t.status()["fit_error"] == "FloatingPointError: the sampler diverged" and t.n_fits == 0
        q = t.question("alice")
        assert q is not None and "random pair" in q.reason
        t.answer("alice", q.i, q.j, "must")
        assert len(store.records) == 1
    finally:
        t.close()
        store.close()


def test_two_team_servers_and_a_terminal_session_never_hand_out_the_same_pair(tmp_path):
    """One claim protocol for every session on a shared store: each new pair a team session hands out is claimed
    in the store, so another team session (another ``serve`` process) and an ``annotate --shared`` session skip
    it, and it skips theirs."""
    path = tmp_path / "team.sqlite"
    with (
        AnswerStore(path, shared=True) as s1,
        AnswerStore(path, shared=True) as s2,
        AnswerStore(path, shared=True) as s3,
    ):
        X, _ = blobs(n_per=10)
        learner = ActiveLearner(StandInSampler(), None, progress=False)
        t1, t2 = (TeamSession(learner, X, s, double=0.0, pool_size=64) for s in (s1, s2))
        terminal = (0, 1) if (0, 1) in t1._pool else t1._pool[0]
        assert s3.claim(*terminal, "carol")  # a terminal session holds this one
        handed = []
        for k in range(6):
            for team, who in ((t1, f"alice{k}"), (t2, f"bob{k}")):
                q = team.question(who)
                handed.append((q.i, q.j))
        assert len(set(handed)) == len(handed) and terminal not in handed
        held = {(p["i"], p["j"]): p["annotator"] for p in s3.pending()}
        assert held[terminal] == "carol" and all(held[p].startswith(("alice", "bob")) for p in handed)
        q = t1.question("alice0")  # asking again gives the same pair: still one claim per annotator
        t1.skip("alice0")  # skipped: its claim goes back to the store
        assert (q.i, q.j) not in {(p["i"], p["j"]) for p in s3.pending()}
        assert s3.claim(q.i, q.j, "carol")  # and another session may take it
