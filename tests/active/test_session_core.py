"""The session core: one state machine (answer, rebuild, refit, rank) that both drivers run through.

Checked against closed forms (the seed rule, the warm start, the error rates), against applying answers one by
one, and against the drivers: the one-person session and the team session fit with exactly the seeds and warm
starts the core gives, and the learner holds exactly what the session hands it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from jaxclust import Constraints
from jaxclust.active import ActiveLearner, AnswerStore, GoldOracle, TeamSession
from jaxclust.active.core import FIT_SEED_STRIDE, SessionCore, SessionSettings
from jaxclust.active.session import Session
from jaxclust.errors import InvalidInputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _standin import StandInSampler  # noqa: E402

GOLD = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])
X = np.random.default_rng(0).normal(size=(10, 2)) + 6.0 * GOLD[:, None]


class Recording(StandInSampler):
    """The stand-in sampler, remembering the seed and the warm start of every fit."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.calls = []

    def fit(self, X, constraints=None, init_labels=None, n_burnin=None):
        self.calls.append(
            {
                "seed": self.random_state,
                "init": None if init_labels is None else np.array(init_labels),
                "burn": n_burnin,
            }
        )
        return super().fit(X, constraints=constraints, init_labels=init_labels, n_burnin=n_burnin)


def _core(settings=None, base_seed=11):
    model = Recording()
    return SessionCore(settings or SessionSettings(), model, X, Constraints(len(X)), base_seed), model


def test_the_kth_fit_is_seeded_base_plus_stride_k_and_warm_from_the_last_chains():
    core, model = _core(SessionSettings(warm_burnin=3))
    fits = []
    for _ in range(3):
        fit = core.draw()
        core.install(fit)
        fits.append(fit)
    assert [c["seed"] for c in model.calls] == [11 + FIT_SEED_STRIDE * k for k in range(3)]
    assert [f.seed for f in fits] == [11, 11 + FIT_SEED_STRIDE, 11 + 2 * FIT_SEED_STRIDE]
    assert model.calls[0]["init"] is None and not fits[0].warm and fits[0].n_burnin is None
    for k in (1, 2):  # warm from the chains of the fit before, with the warm burn-in
        np.testing.assert_array_equal(model.calls[k]["init"], fits[k - 1].final)
        assert fits[k].warm and fits[k].n_burnin == 3 == model.calls[k]["burn"]
    assert core.state.n_fits == 3


def test_a_fit_not_counted_leaves_the_seed_of_the_next():
    core, model = _core()
    core.install(core.draw(), count=False)
    core.install(core.draw())
    assert [c["seed"] for c in model.calls] == [11, 11]


def test_draw_leaves_the_state_alone_and_install_makes_its_samples_current():
    core, _ = _core()
    fit = core.draw()
    assert core.fit is None and core.state.samples is None and core.labels is None
    core.install(fit)
    assert core.state.samples is fit.samples and core.labels is fit.labels
    # the clustering is the sample of least Binder loss to the others
    z = fit.samples
    loss = [sum(int(((a[:, None] == a[None]) != (b[:, None] == b[None])).sum()) for b in z) for a in z]
    np.testing.assert_array_equal(fit.labels, z[int(np.argmin(loss))])


def test_rebuild_equals_the_answers_applied_one_by_one():
    records = [
        {"i": 0, "j": 1, "answer": "must", "annotator": "a"},
        {"i": 1, "j": 2, "answer": "must", "annotator": "b"},
        {"i": 0, "j": 2, "answer": "cannot", "annotator": "b"},  # contradicts the two before: dropped
        {"i": 3, "j": 4, "answer": "unknown", "annotator": "a"},
        {"i": 5, "j": 6, "answer": "cannot", "annotator": "a"},
    ]
    one, _ = _core()
    for rec in records:
        one.answer(rec)
    other, _ = _core()
    other.answer({"i": 8, "j": 9, "answer": "must", "annotator": "z"})  # rebuilt away
    other.rebuild(records)
    for core in (one, other):
        assert sorted(core.state.constraints.pairs) == [(0, 1, "must"), (1, 2, "must"), (5, 6, "cannot")]
        assert core.state.dropped == [(0, 2, "cannot")] and core.state.unknown == {(3, 4)}
        assert [c["answer"]["number"] for c in core.state.conflicts] == [3]
    assert one.state.answers == other.state.answers


def test_answers_follow_each_annotators_error_rate():
    core, _ = _core(SessionSettings(error_rate={"alice": 0.1, "*": 0.0}))
    assert core.answer({"i": 0, "j": 1, "answer": "must", "annotator": "alice"}) == (True, True)
    assert core.answer({"i": 2, "j": 3, "answer": "cannot", "annotator": "bob"}) == (True, True)
    assert core.state.constraints.status(0, 1) is None and core.state.soft == {(0, 1)}  # an observation
    assert core.state.constraints.status(2, 3) == "cannot"  # a constraint
    with pytest.raises(InvalidInputError, match="no rate for annotator 'carol'"):
        SessionSettings(error_rate={"alice": 0.1}).rate_of("carol")


def test_agreement_weights_are_one_or_the_error_odds():
    core, _ = _core(SessionSettings(error_rate=0.2))
    core.install(core.draw())
    z = core.state.samples
    w = core.agreement({"i": 0, "j": 3, "answer": "must", "annotator": "a"})
    np.testing.assert_allclose(w, np.where(z[:, 0] == z[:, 3], 1.0, 0.25))


def test_the_learner_holds_what_the_session_hands_it():
    seen = []
    learner = ActiveLearner(Recording(), GoldOracle(GOLD), strategy="entropy", batch_size=2, progress=False)
    settings = learner.session_settings()
    assert settings.batch_size == 2 and settings.strategy == "entropy" and not settings.progress
    session = Session(
        settings, Recording(), X, 4, None, Constraints(len(X)), None, "me", 5, publish=seen.append
    )
    run = session.run()
    q = next(run)
    assert seen[-1].stop_reason is None and seen[-1].labels is session.core.labels
    with pytest.raises(StopIteration) as end:
        while True:
            q = run.send("must" if GOLD[q[0]] == GOLD[q[1]] else "cannot")
    last = seen[-1]
    assert end.value.value is last.history and last.stop_reason == "done" and len(last.answers) == 4
    learner._copy(last)
    assert (
        learner.labels_ is last.labels and learner.stop_reason_ == "done" and learner.answers_ is last.answers
    )
    assert learner.constraints_ is last.constraints and learner.model_ is session.core.model


def test_both_drivers_fit_with_the_cores_seed_rule(tmp_path):
    learner = ActiveLearner(Recording(random_state=4), GoldOracle(GOLD), strategy="entropy", progress=False)
    learner.run(X, 3)
    assert [c["seed"] for c in learner.model_.calls] == [4 + FIT_SEED_STRIDE * k for k in range(4)]
    with AnswerStore(tmp_path / "team.jsonl") as store:
        team = TeamSession(learner, X, store, random_state=4)
        for _ in range(3):
            q = team.question("a")
            team.answer("a", q.i, q.j, "must" if GOLD[q.i] == GOLD[q.j] else "cannot")
            assert team.refit()
        calls = team.core.model.calls
        assert [c["seed"] for c in calls] == [4 + FIT_SEED_STRIDE * k for k in range(3)]
        assert calls[0]["init"] is None and all(c["init"] is not None for c in calls[1:])
        assert team.n_fits == 3 and team.labels_ is team.core.labels


class Proposing(Recording):
    """A stand-in whose ``fit`` takes ``n_split_merge``, as ``NestedDPMM``'s does."""

    def __init__(self, n_split_merge=20, **kw):
        super().__init__(**kw)
        self.n_split_merge = n_split_merge

    def fit(self, X, constraints=None, init_labels=None, n_burnin=None, n_split_merge=None):
        self.calls.append({"split_merge": n_split_merge})
        return super().fit(X, constraints=constraints, init_labels=init_labels, n_burnin=n_burnin)


@pytest.mark.parametrize(("full", "warm"), [(20, 5), (3, 1), (1, 1), (0, 0)])
def test_a_warm_refit_runs_a_quarter_of_the_models_split_merge_proposals(full, warm):
    model = Proposing(n_split_merge=full)
    core = SessionCore(SessionSettings(), model, X, Constraints(len(X)), 11)
    for _ in range(3):
        core.install(core.draw())
    asked = [c["split_merge"] for c in model.calls if "split_merge" in c]
    assert asked == [None, warm, warm]  # the first fit is the model's own
    assert SessionSettings().split_merge_for(Recording()) is None  # a fit without the parameter gets none
    silent = Proposing()
    del silent.n_split_merge  # takes the parameter but does not say its number: its own is kept, not set to 0
    assert SessionSettings().split_merge_for(silent) is None
