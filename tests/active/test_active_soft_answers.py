"""The active loop with answers that may be wrong (``error_rate``): answers are weighted observations."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from jaxclust import DPMM
from jaxclust.active import ActiveLearner, GoldOracle
from jaxclust.errors import InvalidInputError

RNG = np.random.default_rng(0)
X = np.concatenate([RNG.normal(c, 0.3, size=(10, 2)) for c in (-4.0, 0.0, 4.0)])
Y = np.repeat([0, 1, 2], 10)
SMALL = dict(n_chains=2, n_burnin=10, n_samples=5, thin=2, random_state=0)


def test_a_wrong_answer_is_outvoted_by_the_data_when_soft_and_forced_when_hard():
    """A wrong must-link across two separated blobs: hard, it joins the two items in every sample; with an
    error rate of 0.1 the data (10 points per blob) outvote it and the blobs stay apart."""
    from jaxclust import Constraints

    wrong = Constraints(30, must_link=[(0, 10)])
    hard = DPMM(**SMALL).fit(X, wrong)
    assert np.all(hard.samples_[:, 0] == hard.samples_[:, 10])
    soft = DPMM(**SMALL).fit(X, Constraints.from_answers(30, [(0, 10, "must", 0.1)]))
    assert np.mean(soft.samples_[:, 0] == soft.samples_[:, 10]) < 0.1
    assert adjusted_rand_score(Y, soft.labels_) == 1.0


def test_soft_answers_are_all_kept_and_never_asked_twice():
    learner = ActiveLearner(
        DPMM(**SMALL),
        GoldOracle(Y),
        strategy="random",
        batch_size=3,
        progress=False,
        error_rate=0.2,
        random_state=1,
    )
    learner.run(X, 9, eval_labels=Y)
    pairs = [(a["i"], a["j"]) for a in learner.answers_]
    assert len(pairs) == 9 == len(set(pairs))
    assert all(a["kept"] for a in learner.answers_) and learner.dropped_ == []
    assert len(learner.constraints_.answers) == 9 and learner.constraints_.must_link == ()
    assert {e for _, _, _, e in learner.constraints_.answers} == {0.2}


def test_conflicting_answers_are_evidence_not_dropped():
    """Initial answers from two people who disagree on (0, 1), with error rates: both are kept (the posterior
    weighs them), the pair is never asked again, and the session's own answers add to them."""
    from jaxclust import Constraints

    initial = Constraints.from_answers(30, [(0, 1, "must", 0.1), (0, 1, "cannot", 0.3), (2, 3, "must")])
    learner = ActiveLearner(
        DPMM(**SMALL), GoldOracle(Y), strategy="entropy", batch_size=2, progress=False, error_rate=0.1
    )
    learner.run(X, 4, eval_labels=Y, constraints=initial)
    kept = learner.constraints_.answers
    assert kept[:2] == ((0, 1, "must", 0.1), (0, 1, "cannot", 0.3)) and len(kept) == 6
    assert (0, 1) not in [(a["i"], a["j"]) for a in learner.answers_]
    assert learner.constraints_.must_link == ((2, 3),)


def test_error_rate_is_validated_and_per_annotator_rates_need_every_annotator():
    with pytest.raises(
        InvalidInputError,
        match=r"^ActiveLearner\(error_rate=.*\): expected a finite number >= 0.0 and <= 0.5 or an object with "
        r"error_rate\(answer\) \(e.g. MachineRates\), or a dict of them per",
    ):
        ActiveLearner(DPMM(**SMALL), GoldOracle(Y), error_rate=0.7, progress=False).run(X, 1)
    learner = ActiveLearner(
        DPMM(**SMALL), GoldOracle(Y), error_rate={"alice": 0.1}, annotator="bob", progress=False
    )
    with pytest.raises(InvalidInputError, match=r"error_rate: no rate for annotator 'bob'"):
        learner.run(X, 1)


def test_batch_method_keeps_disagreeing_samples_with_likelihood_weights():
    """With soft answers the batch method's sample weights are eps/(1-eps) for samples against an answer, so
    a wrong answer does not empty the sample set (no refit forced by one answer)."""
    learner = ActiveLearner(
        DPMM(**SMALL),
        GoldOracle(Y),
        strategy="batch",
        batch_size=4,
        min_samples=2,
        progress=False,
        error_rate=0.2,
    )
    history = learner.run(X, 4, eval_labels=Y)
    assert sum(r["n_queries"] for r in history[-1:]) == 4
    assert all(a["kept"] for a in learner.answers_)
