"""Chains carried across a change of answers: reweighted by the answers' likelihood ratio, then resampled.

Checked against the answers' likelihood written out by hand, against the closed-form expected copies of
systematic resampling, against the exact posterior after an answer (enumerated over every partition of four
items), and through the session core: the next fit starts from the chains the answers now favour.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from jaxclust import Constraints
from jaxclust.active import ActiveLearner, AnswerStore, GoldOracle, TeamSession
from jaxclust.active.core import SessionCore, SessionSettings
from jaxclust.active.resample import (
    DEAD,
    answers_log_likelihood,
    carry,
    effective_number,
    systematic,
    weighted_rows,
)


def _partitions(n: int) -> np.ndarray:
    """Every partition of ``n`` items as canonical labels (first appearance order), (B_n, n)."""
    out = set()
    for z in itertools.product(range(n), repeat=n):
        seen: dict[int, int] = {}
        out.add(tuple(seen.setdefault(v, len(seen)) for v in z))
    return np.array(sorted(out))


def test_the_answers_log_likelihood_is_the_product_of_their_factors():
    rows = np.array([[0, 0, 1, 1], [0, 1, 1, 2], [0, 0, 0, 0]])
    cons = Constraints.from_answers(4, [(0, 1, "must", 0.1), (1, 2, "cannot", 0.25), (0, 3, "cannot", 0.2)])
    by_hand = []
    for z in rows:
        f = (0.9 if z[0] == z[1] else 0.1) * (0.75 if z[1] != z[2] else 0.25) * (0.8 if z[0] != z[3] else 0.2)
        by_hand.append(np.log(f))
    np.testing.assert_allclose(answers_log_likelihood(rows, cons), by_hand, rtol=1e-12)
    hard = Constraints.from_answers(4, [(0, 1, "must"), (1, 3, "cannot")])
    np.testing.assert_array_equal(answers_log_likelihood(rows, hard), [0.0, -np.inf, -np.inf])


def test_systematic_resampling_copies_each_chain_its_weight_times_on_average():
    w = np.array([0.05, 0.5, 0.3, 0.15])
    M = 4000
    counts = np.array([np.bincount(systematic(w, (m + 0.5) / M), minlength=4) for m in range(M)])
    np.testing.assert_allclose(counts.mean(0), 4 * w, atol=1e-3)  # an average over a grid of u: exact
    assert np.all((counts >= np.floor(4 * w)) & (counts <= np.ceil(4 * w)))
    np.testing.assert_array_equal(systematic(np.ones(4), 0.999), [0, 1, 2, 3])


@pytest.mark.parametrize("hard", [False, True])
def test_carried_chains_follow_the_posterior_after_the_new_answers(hard):
    """Chains drawn from a posterior before new answers, carried over (weighted, or resampled when a hard
    answer rules some out), are draws of the exact posterior after them (every partition of four items
    enumerated); the change is far larger than the tolerance, so weights of the wrong size or sign fail."""
    parts = _partitions(4)
    rng = np.random.default_rng(0)
    before = Constraints.from_answers(4, [(0, 2, "cannot", 0.3)])
    prior = np.exp(rng.normal(size=len(parts)))
    p_old = prior * np.exp(answers_log_likelihood(parts, before))
    p_old /= p_old.sum()
    new = [(0, 2, "cannot", 0.3), (0, 1, "must", 0.15)]  # weights uneven, not enough to resample
    if hard:  # a hard answer rules some partitions out: their chains are dead, all are resampled
        new += [(1, 3, "must", 0.2), (2, 3, "cannot")]
    after = Constraints.from_answers(4, new)
    p_new = p_old * np.exp(answers_log_likelihood(parts, after) - answers_log_likelihood(parts, before))
    p_new /= p_new.sum()
    C, reps = 2000, 40  # many chains: a finite set's self-normalised weights are biased by O(1/C)
    hits = np.zeros(len(parts))
    for r in range(reps):
        idx = rng.choice(len(parts), size=C, p=p_old)
        chains, log_w = carry(parts[idx], None, before, after, seed=r)
        assert (chains is not None) == hard and (log_w is None) == hard  # resampled only when chains died
        kept = idx if chains is None else idx[chains]
        w = np.ones(C) if log_w is None else np.exp(log_w)
        hits += np.bincount(kept, weights=w / w.sum(), minlength=len(parts))
    tv = 0.5 * np.abs(hits / hits.sum() - p_new).sum()
    assert tv < 0.012  # sampling error of 80,000 draws over 15 partitions: about 0.006
    assert 0.5 * np.abs(p_old - p_new).sum() > 0.2


def test_nothing_changes_where_the_answers_tell_no_chain_from_another():
    rows = np.array([[0, 0, 1, 1], [0, 0, 1, 2], [0, 0, 0, 1]])
    before = Constraints(4)
    agreed = Constraints.from_answers(4, [(0, 1, "must", 0.1), (0, 1, "must")])  # every chain has 0 with 1
    assert carry(rows, None, before, agreed, seed=0) == (None, None)
    broken_by_all = Constraints.from_answers(4, [(0, 1, "cannot")])  # the model's start repairs them
    assert carry(rows, None, before, broken_by_all, seed=0) == (None, None)
    log_w = np.log([1.0, 0.5, 0.25])
    chains, carried = carry(rows, log_w, agreed, agreed, seed=0)  # weights carried as they were
    assert chains is None and np.allclose(carried, log_w)


def test_an_undone_answer_gives_back_the_weight_it_took():
    rows = np.array([[0, 0], [0, 1]])  # chain 1 says "different" where the answer said "same"
    said = Constraints.from_answers(2, [(0, 1, "must", 0.1)])
    chains, log_w = carry(rows, None, Constraints(2), said, seed=0)
    assert chains is None and np.allclose(log_w, [0.0, np.log(0.1 / 0.9)])
    assert carry(rows, log_w, said, Constraints(2), seed=0) == (None, None)  # undone: equal again


def test_chains_are_resampled_once_their_weights_are_too_uneven():
    rows = np.array([[0, 0, 1], [0, 0, 1], [0, 1, 1], [0, 1, 1]])
    against = [(1, 2, "must", 0.1)]  # chains 0 and 1 say "different"
    log_w, cons = None, Constraints(3)
    for k in range(1, 6):
        after = Constraints.from_answers(3, against * k)
        chains, log_w = carry(rows, log_w, cons, after, seed=k)
        cons = after
        if chains is not None:
            break
        # two chains of four keep the effective number at 2 or more: they go on until the others are dead
        assert effective_number(log_w) >= 2.0 and np.exp(log_w).min() >= DEAD
    assert k == 4 and 9.0**-4 < DEAD  # the fourth answer against them leaves 9^-4 of the others' weight
    assert set(chains) == {2, 3} and log_w is None
    chains, log_w = carry(
        rows[[0, 2, 2, 2]], None, Constraints(3), Constraints.from_answers(3, against), seed=0
    )
    assert chains is None  # one chain against three: 3.2 effective chains, all go on
    # three against one: the effective number falls below 2 before they are dead (9^-3 of the one's weight)
    chains, _ = carry(
        rows[[0, 0, 0, 2]], None, Constraints(3), Constraints.from_answers(3, against * 3), seed=0
    )
    assert chains is not None and np.sum(chains == 3) >= 3  # 4 x 0.996 copies of the one


def test_weighted_rows_copy_each_chains_samples_at_its_weight():
    w = np.array([0.05, 0.5, 0.3, 0.15])
    rows = weighted_rows(40, np.log(w), seed=0)  # 10 rows per chain
    per_chain = np.bincount(rows // 10, minlength=4)
    assert np.all(np.abs(per_chain - 40 * w) < 1.0) and per_chain.sum() == 40
    assert weighted_rows(40, None, seed=0) is None
    np.testing.assert_array_equal(weighted_rows(8, np.zeros(4), seed=3), np.arange(8))


class Fixed:
    """A model whose every fit ends in the same chain states ``rows`` (C, n), remembering where each started."""

    samples_classes = True

    def __init__(self, rows):
        self.rows, self.starts, self.random_state = np.asarray(rows), [], 0

    def get_params(self, deep=True):
        return {"random_state": self.random_state}

    def set_params(self, **params):
        self.random_state = params.get("random_state", self.random_state)
        return self

    def fit(self, X, constraints=None, init_labels=None, n_burnin=None):
        self.starts.append(None if init_labels is None else np.array(init_labels))
        self.final_labels_ = self.rows.copy()
        self.samples_ = getattr(self, "all_samples", self.rows).copy()
        self.labels_ = self.rows[0]
        return self


@pytest.mark.parametrize("propagation", ["pairs", "classes"])
def test_the_next_fit_starts_from_the_chains_a_new_hard_answer_leaves(propagation):
    rows = np.array([[0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2], [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1]])
    model = Fixed(rows)
    X = np.arange(12.0).reshape(6, 2)
    core = SessionCore(SessionSettings(propagation=propagation), model, X, Constraints(6), 3)
    core.install(core.draw())
    core.answer({"i": 1, "j": 2, "answer": "cannot", "annotator": "a"})  # chains 2 and 3 put 1 with 2
    fit = core.draw()
    if propagation == "pairs":  # the model samples the classes the answers are about
        assert set(fit.chains) <= {0, 1} and len(fit.chains) == 4
        np.testing.assert_array_equal(model.starts[-1], rows[fit.chains])
    else:  # the class layer reads the answers outside the model: every chain keeps its own state
        assert fit.chains is None
        np.testing.assert_array_equal(model.starts[-1], rows)


def test_a_soft_answer_weighs_the_chains_and_the_samples_are_read_at_their_weights():
    rows = np.array([[0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2], [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1]])
    model = Fixed(rows)
    model.all_samples = np.repeat(rows, 5, axis=0)  # 5 samples per chain, chain-major
    X = np.arange(12.0).reshape(6, 2)
    core = SessionCore(SessionSettings(propagation="pairs", error_rate=0.1), model, X, Constraints(6), 3)
    core.install(core.draw())
    core.answer({"i": 1, "j": 2, "answer": "cannot", "annotator": "a"})  # wrong with chance 0.1
    fit = core.draw()
    assert fit.chains is None  # 2.4 effective chains of 4: each goes on from its own state
    np.testing.assert_allclose(fit.log_weights, [0, 0, np.log(1 / 9), np.log(1 / 9)], atol=1e-12)
    np.testing.assert_array_equal(model.starts[-1], rows)
    from_chain = np.bincount(fit.samples[:, 2] == fit.samples[:, 1], minlength=2)  # chains 2, 3: 1 with 2
    assert from_chain.tolist() == [18, 2]  # 20 rows: 0.9 and 0.1 of them


def test_a_team_session_carries_the_chains_over_as_the_core_does(tmp_path):
    rows = np.array([[0, 0, 1, 1, 2, 2], [0, 0, 0, 0, 1, 1], [0, 0, 1, 1, 2, 2], [0, 0, 0, 0, 1, 1]])
    learner = ActiveLearner(
        Fixed(rows), GoldOracle(rows[0]), strategy="entropy", propagation="pairs", progress=False
    )
    with AnswerStore(tmp_path / "team.jsonl") as store:
        team = TeamSession(learner, np.arange(12.0).reshape(6, 2), store, random_state=1)
        team.refit()  # the first fit (the pool before it is random pairs)
        q = team.question("a")  # the chains disagree only on pairs of 0 or 1 with 2 or 3
        assert {q.i, q.j} <= {0, 1, 2, 3} and (q.i < 2) != (q.j < 2)
        team.answer("a", q.i, q.j, "cannot")  # chains 1 and 3 put the two together
        assert team.refit()
        assert set(team.core.fit.chains) <= {0, 2}
        np.testing.assert_array_equal(team.core.model.starts[-1], rows[team.core.fit.chains])
