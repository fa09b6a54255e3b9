"""ActiveLearner on a store: an interrupted session resumes with exactly the questions an uninterrupted one asks;
the confidence stop; the first-fit status line.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from jaxclust import NestedDPMM
from jaxclust.active import ActiveLearner, AnswerStore, GoldOracle, SessionStopped
from jaxclust.errors import InvalidInputError, JaxclustWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _standin import StandInSampler, blobs  # noqa: E402

X, Y = blobs()
N_Q = 18


class Crash(BaseException):  # like a kill: not an Exception, nothing catches it on the way out
    pass


class CrashingSampler(StandInSampler):
    """Crashes in its ``crash_at``-th fit (counted across the clones the learner makes)."""

    calls = 0
    crash_at = -1

    def fit(self, X, constraints=None, init_labels=None, n_burnin=None):
        CrashingSampler.calls += 1
        if CrashingSampler.calls == CrashingSampler.crash_at:
            raise Crash
        return super().fit(X, constraints, init_labels, n_burnin)


def _learner(oracle, store=None, model=None, **kw):
    opts = {
        "strategy": "batch",
        "propagation": "pairs",
        "batch_size": 3,
        "min_samples": 5,
        "random_state": 3,
        "progress": False,
    }
    return ActiveLearner(model or StandInSampler(), oracle, store=store, **{**opts, **kw})


def _asked(history) -> list[tuple[int, int, str]]:
    return [tuple(q) for h in history[1:] for q in h["queries"]]


def _stored(path) -> list[tuple[int, int, str]]:
    with AnswerStore(path) as s:
        return [(r["i"], r["j"], r["answer"]) for r in s.records]


def _crash_after(k: int):
    gold, count = GoldOracle(Y), [0]

    def oracle(i, j):
        if count[0] == k:
            raise Crash
        count[0] += 1
        return gold(i, j)

    return oracle


STRATEGIES = [("batch", 3), ("batch", 1), ("entropy", 1), ("naive_batch", 4), ("random", 3)]


@pytest.mark.parametrize(("strategy", "batch_size"), STRATEGIES)
@pytest.mark.parametrize("suffix", [".jsonl", ".sqlite"])
def test_a_session_crashed_anywhere_resumes_with_the_uninterrupted_questions(
    tmp_path, strategy, batch_size, suffix
):
    opts = {"strategy": strategy, "batch_size": batch_size}
    want = _asked(_learner(GoldOracle(Y), **opts).run(X, N_Q))
    assert len(want) == N_Q
    store = tmp_path / f"a{suffix}"
    rng = np.random.default_rng(1)
    crashes = 0
    while True:  # crash while asking, or inside a fit, at random points; every run resumes the same store
        CrashingSampler.calls, CrashingSampler.crash_at = 0, -1
        if rng.random() < 0.5:
            oracle = _crash_after(int(rng.integers(0, 4)))
        else:
            oracle, CrashingSampler.crash_at = GoldOracle(Y), int(rng.integers(1, 4))
        try:
            learner = _learner(oracle, store, CrashingSampler(), **opts)
            learner.run(X, N_Q)
            break
        except Crash:
            crashes += 1
            got = _stored(store)
            assert got == want[: len(got)]  # nothing lost, nothing twice, the same order
    assert crashes >= 5
    assert _stored(store) == want and learner.stop_reason_ == "done"


def test_a_user_who_quits_resumes_where_an_uninterrupted_session_would_be(tmp_path):
    want = _asked(_learner(GoldOracle(Y)).run(X, N_Q))
    store = tmp_path / "a.jsonl"
    gold = GoldOracle(Y)
    for k in (2, 4, 5):  # quit ("q") mid-round, twice, then finish
        replies = iter(range(k))

        def oracle(i, j, replies=replies):
            if next(replies, None) is None:
                raise SessionStopped("quit")
            return gold(i, j)

        learner = _learner(oracle, store)
        learner.run(X, N_Q)
        assert learner.stopped_ and learner.stop_reason_ == "stopped"
    learner = _learner(GoldOracle(Y), store)
    learner.run(X, N_Q)
    assert _stored(store) == want


def test_without_fit_records_resuming_keeps_every_answer_and_asks_none_again(tmp_path):
    store = tmp_path / "a.jsonl"
    with AnswerStore(store) as s:  # a store written before fit records existed
        for i, j in [(0, 1), (8, 9), (0, 8)]:
            s.append(i, j, "must" if Y[i] == Y[j] else "cannot", round=1)
    asked = []
    gold = GoldOracle(Y)

    def oracle(i, j):
        asked.append((min(i, j), max(i, j)))
        return gold(i, j)

    hist = _learner(oracle, store).run(X, 9)
    assert [tuple(q[:2]) for q in hist[0]["queries"]] == [(0, 1), (8, 9), (0, 8)]  # replayed, not asked
    assert len(asked) == 6 and not {(0, 1), (8, 9), (0, 8)} & set(asked)
    assert [r[:2] for r in _stored(store)] == [(0, 1), (8, 9), (0, 8), *asked]


def test_changed_settings_apply_every_stored_answer_and_ask_only_new_pairs(tmp_path):
    store = tmp_path / "a.sqlite"
    with pytest.raises(Crash):
        _learner(_crash_after(7), store, batch_size=3).run(X, N_Q)
    assert len(_stored(store)) == 7
    asked = []
    gold = GoldOracle(Y)

    def oracle(i, j):
        asked.append((min(i, j), max(i, j)))
        return gold(i, j)

    learner = _learner(oracle, store, batch_size=2, strategy="entropy")  # other settings: a fresh fit
    learner.run(X, N_Q)
    stored = _stored(store)
    assert len(stored) == N_Q and len({s[:2] for s in stored}) == N_Q
    assert [s[:2] for s in stored[7:]] == asked and len(asked) == N_Q - 7


def test_a_stored_answer_about_another_pair_is_kept_with_a_warning(tmp_path):
    store = tmp_path / "a.jsonl"
    with pytest.raises(Crash):
        _learner(_crash_after(4), store).run(X, N_Q)
    with AnswerStore(store) as s:  # a hand-written answer after the last fit, about a pair nobody would ask
        asked = {(r["i"], r["j"]) for r in s.records}
        i, j = next(
            (i, j) for i in range(24) for j in range(i + 1, 24) if Y[i] != Y[j] and (i, j) not in asked
        )
        s.append(i, j, "cannot", round=s.fits[-1]["round"])
        edited = [(r["i"], r["j"], r["answer"]) for r in s.records]
    with pytest.warns(JaxclustWarning, match="not about the pair this session would ask"):
        learner = _learner(GoldOracle(Y), store)
        learner.run(X, N_Q)
    stored = _stored(store)
    assert stored[: len(edited)] == edited and len(stored) == N_Q
    assert len({s[:2] for s in stored}) == N_Q


def test_a_refit_that_does_not_reproduce_the_stored_chains_warns_and_keeps_every_answer(tmp_path):
    store = tmp_path / "a.jsonl"
    with pytest.raises(Crash):
        _learner(_crash_after(5), store).run(X, N_Q)
    before = _stored(store)
    lines = store.read_text().splitlines()
    last_fit = max(k for k, x in enumerate(lines) if x.startswith('{"fit"'))
    fit = json.loads(lines[last_fit])
    fit["fit"]["final_labels"] = [[(v + 1) % 3 for v in row] for row in fit["fit"]["final_labels"]]
    lines[last_fit] = json.dumps(fit)
    store.write_text("\n".join(lines) + "\n")
    with pytest.warns(JaxclustWarning, match="did not reproduce the stored chain states"):
        _learner(GoldOracle(Y), store).run(X, N_Q)
    stored = _stored(store)
    assert stored[: len(before)] == before and len(stored) == N_Q


# --- the confidence stop ----------------------------------------------------------------------------------


class FixedSamples:
    """Samples given up front (the "posterior" never changes)."""

    def __init__(self, samples):
        self.samples = samples

    def fit(self, X, constraints=None, init_labels=None, n_burnin=None):
        self.samples_ = np.asarray(self.samples)
        self.final_labels_ = self.samples_[:1]
        self.labels_ = self.samples_[0]
        return self


def _samples(n_disagree: int, S: int = 40) -> np.ndarray:
    """Gold partitions of 24 items; in ``n_disagree`` samples item 0 joins cluster 1."""
    z = np.tile(Y, (S, 1))
    z[:n_disagree, 0] = 1
    return z


@pytest.mark.parametrize("strategy", ["batch", "entropy", "naive_batch", "random"])
def test_a_confident_model_stops_instead_of_asking_obvious_pairs(strategy):
    # one sample in 40 disagrees: the highest link entropy is H(1/40) = 0.117 nats
    learner = _learner(GoldOracle(Y), model=FixedSamples(_samples(1)), strategy=strategy, stop_entropy=0.2)
    hist = learner.run(X, 10)
    assert learner.stop_reason_ == "confident" and hist[-1]["n_queries"] == 0
    assert learner.max_entropy_ == pytest.approx(0.1169, abs=1e-3)
    # the same model with a threshold below its uncertainty asks its questions
    learner = _learner(GoldOracle(Y), model=FixedSamples(_samples(1)), strategy=strategy, stop_entropy=0.1)
    assert learner.run(X, 3)[-1]["n_queries"] == 3 and learner.stop_reason_ == "done"
    learner = _learner(GoldOracle(Y), model=FixedSamples(_samples(1)), strategy=strategy)  # None: never stops
    assert learner.run(X, 3)[-1]["n_queries"] == 3


def test_the_batch_method_judges_confidence_on_a_fresh_fit_not_on_filtered_samples():
    # after the first answer the agreeing samples are unanimous (entropy 0), which alone proves nothing:
    # the learner refits, finds the model still unsure and goes on asking
    fits = []

    class Unsure(FixedSamples):
        def fit(self, X, constraints=None, init_labels=None, n_burnin=None):
            fits.append(len(constraints))
            return super().fit(X)

    learner = _learner(GoldOracle(Y), model=Unsure(_samples(20)), batch_size=3, stop_entropy=0.2)
    hist = learner.run(X, 3)
    assert hist[-1]["n_queries"] == 3 and learner.stop_reason_ == "done"
    assert fits[:3] == [0, 1, 2]  # a refit after each answer that left the filtered samples unanimous


def test_stop_entropy_and_status_are_validated():
    for bad in (-0.1, 0.7, "0.1", True):
        with pytest.raises(
            InvalidInputError,
            match=r"^ActiveLearner\(stop_entropy=.*\): expected a number of nats between 0 \(never stop early\)",
        ):
            _learner(GoldOracle(Y), stop_entropy=bad).run(X, 1)
    with pytest.raises(InvalidInputError, match=r"^ActiveLearner\(status=.*\): expected None or a callable"):
        _learner(GoldOracle(Y), status="print").run(X, 1)


def test_the_first_fit_is_announced_before_it_starts():
    events = []

    class Slow(StandInSampler):
        def fit(self, *args, **kwargs):
            events.append("fit")
            return super().fit(*args, **kwargs)

    _learner(GoldOracle(Y), model=Slow(), status=events.append).run(X, 2)
    assert events[0].startswith("Fitting the model to 24 items") and events[1] == "fit"
    assert events[2].startswith("Model ready (") and events.count("fit") >= 2


def test_no_warning_on_an_exact_resume(tmp_path):
    store = tmp_path / "a.jsonl"
    with pytest.raises(Crash):
        _learner(_crash_after(5), store).run(X, N_Q)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a reproduced refit does not warn
        _learner(GoldOracle(Y), store).run(X, N_Q)


def test_a_nested_session_resumes_from_its_stored_components(tmp_path):
    """A model of classes of components warm-starts from both; the store keeps the components and which chains
    were carried over, so a resumed session refits exactly (no warning) and asks what the uninterrupted one
    asks."""

    def nested():
        return NestedDPMM(n_chains=2, n_burnin=10, n_samples=4, thin=1, n_split_merge=2, random_state=0)

    opts = {"strategy": "explore", "batch_size": 1}
    want = _asked(_learner(GoldOracle(Y), model=nested(), **opts).run(X, 6))
    store = tmp_path / "a.jsonl"
    with pytest.raises(Crash):
        _learner(_crash_after(3), store, nested(), **opts).run(X, 6)
    with AnswerStore(store) as s:
        last = s.fits[-1]
        assert last["warm"] and len(last["final_components"]) == 2  # one row per chain
        # its chains were carried over from the fit before: both from the one the answer since favours
        assert last["warm_chains"] == [1, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the refit reproduced the stored chains, components included
        _learner(GoldOracle(Y), store, nested(), **opts).run(X, 6)
    assert _stored(store) == want


def test_a_session_resumes_with_its_chains_weights(tmp_path):
    """Soft answers leave the chains weighted (a weight each, carried from fit to fit); the fit records keep the
    weights, so a resumed session reads its samples at them and asks what the uninterrupted one asks."""
    opts = {"strategy": "entropy", "batch_size": 1, "error_rate": 0.1}
    want = _asked(_learner(GoldOracle(Y), **opts).run(X, 10))
    store = tmp_path / "a.jsonl"
    with pytest.raises(Crash):
        _learner(_crash_after(5), store, **opts).run(X, 10)
    with AnswerStore(store) as s:
        assert s.fits[-1]["n_answers"] == 5 and s.fits[-1]["log_weights"] is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _learner(GoldOracle(Y), store, **opts).run(X, 10)
    assert _stored(store) == want
