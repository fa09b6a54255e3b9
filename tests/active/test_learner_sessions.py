"""The learner as a generator (answers pushed in, as a notebook does), undo that resumes exactly, who answered,
and contradictory answers named with the answers they contradict and who gave them.
"""

from __future__ import annotations

import getpass
import sys
from pathlib import Path

import pytest

from jaxclust.active import ActiveLearner, AnswerStore, GoldOracle
from jaxclust.errors import InvalidInputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _standin import StandInSampler, blobs  # noqa: E402

X, Y = blobs()
N_Q = 12


def _learner(store=None, oracle=None, **kw):
    opts = {"strategy": "batch", "batch_size": 3, "min_samples": 4, "random_state": 3, "progress": False}
    return ActiveLearner(StandInSampler(), oracle, store=store, **{**opts, **kw})


def _uninterrupted(**kw) -> list[tuple[int, int, str]]:
    learner = _learner(oracle=GoldOracle(Y), **kw)
    return [tuple(q) for h in learner.run(X, N_Q)[1:] for q in h["queries"]]


def _stored(path) -> list[tuple[int, int, str]]:
    with AnswerStore(path) as s:
        return [(r["i"], r["j"], r["answer"]) for r in s.records]


def test_pushing_answers_into_the_generator_asks_what_run_asks(tmp_path):
    gold = GoldOracle(Y)
    session = _learner(tmp_path / "a.jsonl", annotator="ann").iter_questions(X, N_Q)
    asked = []
    try:
        pair = next(session)
        while True:
            asked.append((*pair, gold(*pair)))
            pair = session.send(gold(*pair))
    except StopIteration as end:
        history = end.value
    assert asked == _uninterrupted() and len(history) > 1
    assert _stored(tmp_path / "a.jsonl") == asked


def test_the_arguments_are_checked_when_the_generator_is_made(tmp_path):
    with pytest.raises(InvalidInputError, match="n_queries"):
        _learner(tmp_path / "a.jsonl").iter_questions(X, -1)
    with pytest.raises(InvalidInputError, match="^annotator: expected a name"):
        _learner(tmp_path / "a.jsonl", annotator="").iter_questions(X, 3)
    assert not (tmp_path / "a.jsonl").exists()  # nothing created before the first question is asked for


@pytest.mark.parametrize("strategy", ["batch", "entropy"])
@pytest.mark.parametrize("wrong_at", [1, 2, 4])  # with 3 questions per round, answer 3 ends a round (refit)
def test_an_undone_wrong_answer_resumes_as_if_it_had_never_been_given(tmp_path, wrong_at, strategy):
    want = _uninterrupted(strategy=strategy)
    path = tmp_path / "a.sqlite"
    gold = GoldOracle(Y)
    session = _learner(path, annotator="ann", strategy=strategy).iter_questions(X, N_Q)
    pair = next(session)
    for _ in range(wrong_at):
        pair = session.send(gold(*pair))
    wrong = pair
    session.send("cannot" if gold(*wrong) == "must" else "must")  # a slip ...
    session.close()
    with AnswerStore(path) as s:
        assert s.undo("ann")["i"] == min(wrong)  # ... undone: an undo record, the answer stays in the file
    session = _learner(path, annotator="ann", strategy=strategy).iter_questions(X, N_Q)
    pair = next(session)
    assert pair == wrong  # asked again
    try:
        while True:
            pair = session.send(gold(*pair))
    except StopIteration:
        pass
    assert _stored(path) == want  # exactly the uninterrupted session's questions and answers
    with AnswerStore(path) as s:
        assert sum(a["undone"] for a in s.all_answers) == 1 and len(s.all_answers) == N_Q + 1


def test_new_answers_record_the_os_user_unless_an_annotator_is_named(tmp_path):
    _learner(tmp_path / "a.jsonl", oracle=GoldOracle(Y)).run(X, 2)
    _learner(tmp_path / "a.jsonl", oracle=GoldOracle(Y), annotator="bea").run(X, 4)
    with AnswerStore(tmp_path / "a.jsonl") as s:
        assert [r["annotator"] for r in s.records] == [getpass.getuser()] * 2 + ["bea"] * 2


def _store_with(path, answers) -> None:
    with AnswerStore(path, meta={"n": len(X)}) as s:
        for i, j, a, who in answers:
            s.append(i, j, a, round=1, annotator=who)


def test_a_contradicting_cannot_link_is_kept_and_named_with_the_answers_it_contradicts(tmp_path):
    path = tmp_path / "a.jsonl"
    _store_with(
        path,
        [(0, 1, "must", "alice"), (1, 2, "must", "alice"), (5, 9, "unknown", "bob"), (0, 2, "cannot", "bob")],
    )
    learner = _learner(path, oracle=GoldOracle(Y))
    learner.run(X, 4)  # the target is reached by the stored answers: nothing is asked
    assert learner.dropped_ == [(0, 2, "cannot")]
    (conflict,) = learner.conflicts_
    assert conflict["answer"] == {"number": 4, "i": 0, "j": 2, "answer": "cannot", "annotator": "bob"}
    assert [(c["number"], c["annotator"]) for c in conflict["contradicts"]] == [(1, "alice"), (2, "alice")]
    assert conflict["message"] == (
        "answer 4 (0-2: different clusters, by bob) contradicts answer 1 (0-1: same cluster, by alice), "
        "answer 2 (1-2: same cluster, by alice); it is recorded but not used as a constraint"
    )
    # every answer, with who gave it and whether it became a constraint: the hook for fallible annotators
    assert [(a["annotator"], a["kept"]) for a in learner.answers_] == [
        ("alice", True),
        ("alice", True),
        ("bob", True),
        ("bob", False),
    ]
    assert len(_stored(path)) == 4  # nothing rejected from the store


def test_a_contradicting_must_link_names_the_cannot_link_and_the_must_links_behind_it(tmp_path):
    path = tmp_path / "a.sqlite"
    _store_with(
        path,
        [(0, 1, "must", "alice"), (0, 5, "cannot", "alice"), (5, 6, "must", None), (1, 6, "must", "bob")],
    )
    learner = _learner(path, oracle=GoldOracle(Y))
    learner.run(X, 4)
    (conflict,) = learner.conflicts_
    assert [c["number"] for c in conflict["contradicts"]] == [1, 2, 3]  # 1-0 must, 0-5 cannot, 5-6 must
    assert "answer 3 (5-6: same cluster, by an unknown annotator)" in conflict["message"]
    assert conflict["message"].startswith("answer 4 (1-6: same cluster, by bob) contradicts answer 1 ")


def test_the_same_person_answering_a_pair_twice_differently_is_a_named_conflict(tmp_path):
    path = tmp_path / "a.jsonl"
    _store_with(path, [(3, 4, "must", "carl"), (3, 4, "cannot", "carl")])
    learner = _learner(path, oracle=GoldOracle(Y))
    learner.run(X, 2)
    assert [c["message"] for c in learner.conflicts_] == [
        "answer 2 (3-4: different clusters, by carl) contradicts answer 1 (3-4: same cluster, by carl); "
        "it is recorded but not used as a constraint"
    ]


class _Typist:
    """A person at the terminal who answers from the gold labels, answers question ``wrong_at`` wrong, and at the
    next question types ``u`` (undo) before answering it."""

    def __init__(self, wrong_at: int | None):
        self.wrong_at, self.asked, self.pair = wrong_at, [], None
        self.pending_undo = False

    def read(self, _prompt: str) -> str:
        i, j = self.pair
        k = len(self.asked)
        if self.pending_undo:
            self.pending_undo = False
            return "u"
        right = "y" if Y[i] == Y[j] else "n"
        if k == self.wrong_at:
            self.pending_undo = True
            return "n" if right == "y" else "y"
        return right


def _typed_session(tmp_path, wrong_at, out):
    from jaxclust.active import InteractiveOracle

    typist = _Typist(wrong_at)

    class Recording(InteractiveOracle):
        def answer(self, i, j):
            typist.pair = (i, j)
            typist.asked.append((self.n_asked + 1, min(i, j), max(i, j)))
            return super().answer(i, j)

    oracle = Recording(input_fn=typist.read, output=out)
    _learner(tmp_path / f"s{wrong_at}.jsonl", oracle, annotator="ann").run(X, N_Q)
    return typist.asked, _stored(tmp_path / f"s{wrong_at}.jsonl")


def test_undo_at_the_terminal_goes_on_as_a_session_that_never_got_the_undone_answer(tmp_path):
    import io

    out = io.StringIO()
    clean, clean_stored = _typed_session(tmp_path, None, io.StringIO())
    asked, stored = _typed_session(tmp_path, 4, out)
    # questions 1-4 as the clean session, 4 answered wrong, then 'u' at question 5: question 4 is asked again
    # under its number, and from there every question is the clean session's, numbered the same
    assert asked[:4] == clean[:4] and asked[4][0] == 5
    assert asked[5:] == clean[3:]
    assert stored == clean_stored  # the undone answer is not in effect
    text = out.getvalue()
    assert "[u] undo" in text and f"Undone: {clean[3][1]}-{clean[3][2]} (" in text


def test_undo_without_a_store_asks_the_same_question_again(tmp_path):
    import io

    from jaxclust.active import InteractiveOracle

    replies = iter(["u", "y", "q"])
    out = io.StringIO()
    learner = ActiveLearner(
        StandInSampler(), InteractiveOracle(input_fn=lambda _: next(replies), output=out), progress=False
    )
    learner.run(X, 3)
    assert "Undo needs an answer store" in out.getvalue() and len(learner.answers_) == 1
    assert out.getvalue().count("Question 1:") == 2 and "Question 2:" in out.getvalue()
