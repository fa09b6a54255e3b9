"""Compile once: after an active session's first question, new answers compile nothing, counted with
``jax.monitoring`` (a group whose partners outgrow the table's width: tests/dpmm/test_dpmm_sampler.py)."""

from __future__ import annotations

import jax
import numpy as np

from jaxclust import DPMM
from jaxclust.active import ActiveLearner, GoldOracle
from jaxclust.dpmm import chains

_COMPILES: list[int] = []  # one entry per backend compile in this process


def _count(event: str, seconds: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _COMPILES.append(1)


jax.monitoring.register_event_duration_secs_listener(_count)


def test_answers_after_the_first_question_compile_nothing():
    rng = np.random.default_rng(0)
    centres = rng.normal(0.0, 4.0, size=(4, 3))
    y = np.repeat(np.arange(4), 15)
    X = centres[y] + rng.normal(size=(60, 3))
    oracle = GoldOracle(y)
    model = DPMM(n_chains=2, n_burnin=10, n_samples=4, thin=2, random_state=0)
    learner = ActiveLearner(model, oracle, progress=False)
    session = learner.iter_questions(X, 12)
    pair = next(session)  # the first fit: every program compiles here
    pair = session.send(oracle.answer(*pair))  # the first warm refit (its shapes are the session's)
    compiles, traces, asked = len(_COMPILES), chains.TRACE_COUNTER["block"], 2
    try:
        while True:
            pair = session.send(oracle.answer(*pair))
            asked += 1
    except StopIteration:
        pass
    assert asked >= 10
    assert chains.TRACE_COUNTER["block"] == traces, "the sampler was traced again during the session"
    assert len(_COMPILES) == compiles, (
        f"{len(_COMPILES) - compiles} programs compiled after the second question"
    )
