"""Oracles, the append-only answer store and random selection."""

from __future__ import annotations

import io
import itertools
import json

import numpy as np
import pytest
from scipy import stats

from jaxclust.active import AnswerStore, GoldOracle, InteractiveOracle, NoisyOracle, SessionStopped
from jaxclust.active.selection import random_pairs, select_queries
from jaxclust.constraints import Constraints
from jaxclust.errors import InvalidInputError, StoreRecoveryWarning

LABELS = np.array([0, 0, 1, 2, 1, 0, 2, 2, 1, 3])


def test_gold_oracle_answers_are_the_gold_relation_and_consistent():
    oracle = GoldOracle(LABELS)
    n = len(LABELS)
    pairs = list(itertools.combinations(range(n), 2))
    answers = [(i, j, oracle(i, j)) for i, j in pairs]
    assert all((a == "must") == (LABELS[i] == LABELS[j]) for i, j, a in answers)
    assert all(oracle(j, i) == a for i, j, a in answers)  # symmetric
    cons = Constraints.from_pairs(n, answers)  # on_conflict="raise": a consistent set never raises
    assert cons.dropped == ()
    # the must-link groups are exactly the gold classes
    assert sorted(map(tuple, cons.groups)) == sorted(
        tuple(np.flatnonzero(LABELS == c)) for c in np.unique(LABELS)
    )


def test_noisy_oracle_is_deterministic_per_pair_and_flips_at_the_rate():
    labels = np.arange(400) % 7
    gold, noisy = GoldOracle(labels), NoisyOracle(labels, flip_rate=0.2, random_state=3)
    pairs = list(itertools.combinations(range(0, 400, 4), 2))  # 4950 pairs
    flips = np.array([noisy(i, j) != gold(i, j) for i, j in pairs])
    assert all(noisy(j, i) == noisy(i, j) for i, j in pairs[:200])  # order-free
    lo, hi = stats.binom.ppf([1e-4, 1 - 1e-4], len(pairs), 0.2)
    assert lo <= flips.sum() <= hi
    assert all(NoisyOracle(labels, 0.0)(i, j) == gold(i, j) for i, j in pairs[:100])
    assert all(NoisyOracle(labels, 1.0)(i, j) != gold(i, j) for i, j in pairs[:100])
    with pytest.raises(InvalidInputError, match="flip_rate"):
        NoisyOracle(labels, 1.5)


def test_interactive_oracle_parses_replies_and_shows_names_and_context():
    replies = iter(["maybe", "Y", "n", "d", "q"])
    out = io.StringIO()
    oracle = InteractiveOracle(
        names=["cat", "dog", "car"],
        contexts=["a pet", "", "a vehicle"],
        input_fn=lambda _: next(replies),
        output=out,
    )
    assert oracle(0, 1) == "must"  # "maybe" is rejected first, then "Y"
    assert oracle(0, 2) == "cannot"
    assert oracle(1, 2) == "unknown"
    with pytest.raises(SessionStopped):
        oracle(0, 1)
    text = out.getvalue()
    assert "did not understand 'maybe'" in text and "  car\n" in text and "a vehicle" in text


def test_an_item_is_shown_by_its_name_and_by_its_index_only_when_names_repeat():
    from jaxclust.active.oracles import item_label

    names = ["line 1", "line 2", "bank", "bank"]
    assert [item_label(names, i) for i in range(4)] == ["line 1", "line 2", "bank (item 2)", "bank (item 3)"]
    assert item_label(None, 7) == "item 7"

    def eof(_):
        raise EOFError

    with pytest.raises(SessionStopped):
        InteractiveOracle(input_fn=eof, output=io.StringIO())(0, 1)


@pytest.mark.parametrize("suffix", [".jsonl", ".sqlite"])
def test_store_round_trip_and_meta_check(tmp_path, suffix):
    path = tmp_path / f"answers{suffix}"
    with AnswerStore(path, meta={"n": 10}) as store:
        store.append(3, 1, "must", round=1)
        store.append(2, 5, "unknown", round=1)
        store.append(4, 6, "cannot", kept=False, round=2)
    with AnswerStore(path, meta={"n": 10}) as store:
        assert store.records == [
            {"i": 1, "j": 3, "answer": "must", "kept": True, "round": 1, "annotator": None},
            {"i": 2, "j": 5, "answer": "unknown", "kept": True, "round": 1, "annotator": None},
            {"i": 4, "j": 6, "answer": "cannot", "kept": False, "round": 2, "annotator": None},
        ]
    with pytest.raises(InvalidInputError, match="n=10"):
        AnswerStore(path, meta={"n": 11})
    with pytest.raises(InvalidInputError, match="answer"):
        AnswerStore(path).append(0, 1, "yes")


def test_jsonl_store_ignores_a_torn_last_line_and_appends_cleanly(tmp_path):
    path = tmp_path / "a.jsonl"
    with AnswerStore(path, meta={"n": 5}) as store:
        store.append(0, 1, "must")
    with open(path, "ab") as fh:  # a crash in the middle of a write
        fh.write(b'{"answer": "cann')
    with pytest.warns(StoreRecoveryWarning, match="line 3 .cut short by a crash"):
        store = AnswerStore(path, meta={"n": 5})
    assert [r["answer"] for r in store.records] == ["must"]
    store.append(2, 3, "cannot")
    lines = path.read_text().splitlines()
    assert [json.loads(x).get("answer") for x in lines] == [None, "must", "cannot"]


def test_random_pairs_are_unknown_distinct_and_uniform():
    n = 6
    cons = Constraints(n, must_link=[(0, 1)], cannot_link=[(1, 2)])  # known: (0,1), (1,2), and implied (0,2)
    i, j = np.triu_indices(n, 1)
    unknown = [(int(a), int(b)) for a, b in zip(i, j, strict=True) if cons.status(int(a), int(b)) is None]
    assert len(unknown) == 12
    everything = random_pairs(0, n, 100, cons, exclude=[(4, 3)])
    assert sorted(everything) == sorted(set(unknown) - {(3, 4)})  # all that is left, each once
    draws = random_pairs(1, 200, 3000, None)
    assert len(set(draws)) == 3000 and all(a < b for a, b in draws)
    # uniform over unknown pairs: first draws of many independent calls
    counts = {p: 0 for p in unknown}
    for seed in range(600):
        counts[random_pairs(seed, n, 1, cons)[0]] += 1
    assert stats.chisquare(list(counts.values())).pvalue > 1e-4


def test_select_queries_validates_strategy_and_batch():
    z = np.zeros((4, 5), int)
    with pytest.raises(InvalidInputError, match="strategy"):
        select_queries(z, strategy="greedy")
    with pytest.raises(InvalidInputError, match="batch"):
        select_queries(z, strategy="batch")
    with pytest.raises(InvalidInputError, match="batch_size"):
        select_queries(z, batch_size=0)
    assert select_queries(z, batch_size=2, strategy="random", key=0) != []


@pytest.mark.parametrize("suffix", [".jsonl", ".sqlite"])
def test_store_checks_items_and_meta_when_appending_not_at_the_next_open(tmp_path, suffix):
    path = tmp_path / f"answers{suffix}"
    with AnswerStore(path, meta={"n": np.int64(12), "scale": np.float32(1.5)}) as store:
        assert store.meta["n"] == 12 and store.meta["scale"] == 1.5  # NumPy scalars are their numbers
        with pytest.raises(
            InvalidInputError, match=r"^j: item 99 is out of range for .*, whose data has 12 items"
        ):
            store.append(0, 99, "must")
        with pytest.raises(InvalidInputError, match=r"^j: item 9223372036854775808 is out of range"):
            store.append(0, 2**63, "must")
        store.append(0, 11, "must")
    with AnswerStore(path, meta={"n": 12}) as store:  # nothing damaged: the next open finds one answer
        assert [(r["i"], r["j"]) for r in store.records] == [(0, 11)]
    with AnswerStore(tmp_path / f"no_meta{suffix}") as store:
        with pytest.raises(InvalidInputError, match=r"^j: item 9223372036854775808 is out of range"):
            store.append(0, 2**63, "must")


def test_store_path_and_meta_are_checked_by_name(tmp_path):
    with pytest.raises(
        InvalidInputError, match=r"^path: expected a file path \(str or os.PathLike\), got b'"
    ):
        AnswerStore(str(tmp_path / "a.jsonl").encode())
    with pytest.raises(
        InvalidInputError, match=r"^path: expected a file path \(str or os.PathLike\), got None"
    ):
        AnswerStore(None)
    with pytest.raises(InvalidInputError, match=r"^meta\['n'\]: expected a JSON value"):
        AnswerStore(tmp_path / "b.jsonl", meta={"n": object()})
    assert not (tmp_path / "b.jsonl").exists()


def test_one_reply_vocabulary_for_the_terminal_the_notebook_and_the_browser():
    from jaxclust.active.replies import ANSWERS, COMMANDS, KEYS, REPLIES, read_reply

    for meaning, keys in KEYS.items():
        for key in keys:
            assert read_reply(f" {key.upper()} ") == meaning
    assert {a for a in REPLIES.values()} == set(ANSWERS) and set(COMMANDS.values()) == {"undo", "quit"}
    assert not set(REPLIES) & set(COMMANDS)
    # the terminal: each key means what it means everywhere
    for meaning, keys in KEYS.items():
        if meaning in ANSWERS:
            for key in keys:
                oracle = InteractiveOracle(input_fn=lambda _, k=key: k, output=io.StringIO())
                assert oracle.answer(0, 1) == meaning
