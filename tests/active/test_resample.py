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
from jaxclust.active.resample import answers_log_likelihood, carried_chains, systematic


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


def test_resampled_chains_follow_the_posterior_after_the_new_answers():
    """Chains drawn from a posterior before two answers (one soft, one hard), carried over, are draws of the
    exact posterior after them (every partition of four items enumerated); the change is far larger than the
    tolerance, so weights of the wrong size or sign fail."""
    parts = _partitions(4)
    rng = np.random.default_rng(0)
    before = Constraints.from_answers(4, [(0, 2, "cannot", 0.3)])
    prior = np.exp(rng.normal(size=len(parts)))
    p_old = prior * np.exp(answers_log_likelihood(parts, before))
    p_old /= p_old.sum()
    after = Constraints.from_answers(4, [(0, 2, "cannot", 0.3), (0, 1, "must", 0.15), (2, 3, "cannot")])
    p_new = p_old * np.exp(answers_log_likelihood(parts, after) - answers_log_likelihood(parts, before))
    p_new /= p_new.sum()
    C, reps = 2000, 40  # many chains: a finite set's self-normalised weights are biased by O(1/C)
    hits = np.zeros(len(parts))
    for r in range(reps):
        idx = rng.choice(len(parts), size=C, p=p_old)
        chains = carried_chains(parts[idx], before, after, seed=r)
        kept = idx if chains is None else idx[chains]
        hits += np.bincount(kept, minlength=len(parts))
    tv = 0.5 * np.abs(hits / hits.sum() - p_new).sum()
    assert tv < 0.012  # sampling error of 80,000 draws over 15 partitions: about 0.006
    assert 0.5 * np.abs(p_old - p_new).sum() > 0.2


def test_nothing_is_resampled_where_the_answers_tell_no_chain_from_another():
    rows = np.array([[0, 0, 1, 1], [0, 0, 1, 2], [0, 0, 0, 1]])
    before = Constraints(4)
    agreed = Constraints.from_answers(4, [(0, 1, "must", 0.1), (0, 1, "must")])  # every chain has 0 with 1
    assert carried_chains(rows, before, agreed, seed=0) is None
    broken_by_all = Constraints.from_answers(4, [(0, 1, "cannot")])  # the model's start repairs them
    assert carried_chains(rows, before, broken_by_all, seed=0) is None
    assert carried_chains(rows, agreed, agreed, seed=0) is None


def test_an_undone_answer_gives_back_the_chains_it_weighed_down():
    rows = np.array([[0, 0], [0, 1]])  # chain 1 says "different" where the answer said "same"
    said = Constraints.from_answers(2, [(0, 1, "must", 0.1)])
    copies = []
    for seed in range(2000):
        chains = carried_chains(rows, said, Constraints(2), seed)
        copies.append(np.bincount([0, 1] if chains is None else chains, minlength=2))
    # weights 1/0.9 and 1/0.1, i.e. 0.1 and 0.9 of the two new chains: chain 0 kept with chance 0.2
    assert np.mean(copies, axis=0) == pytest.approx([0.2, 1.8], abs=0.04)


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
        self.samples_ = self.final_labels_ = self.rows.copy()
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
