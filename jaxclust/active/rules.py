"""The rules an active session's parameters obey, one per parameter, shared by
:class:`~jaxclust.active.ActiveLearner`, :class:`~jaxclust.active.TeamSession`, the selection functions and the
apps' option checks (which run before JAX is imported, so this module imports neither JAX nor the sampler)."""

from __future__ import annotations

import math

from jaxclust.validation import Int, Options, Real

__all__ = ["STRATEGIES", "PROPAGATIONS", "LEARNER_RULES", "SESSION_RULES"]

#: How questions are chosen (see :func:`jaxclust.active.selection.select_queries` and ``ActiveLearner``).
STRATEGIES = ("explore", "batch", "entropy", "naive_batch", "random")

#: How far an answer reaches: ``"classes"`` joins components into classes and splits a component that a
#: "different" answer shows to hold two (:mod:`jaxclust.active.classes`), ``"components"`` only joins whole
#: components, ``"pairs"`` leaves the model's components as they are (an answer constrains its two items only).
PROPAGATIONS = ("classes", "components", "pairs")

#: One rule per :class:`~jaxclust.active.ActiveLearner` setting of the session (the model, the oracle, the error
#: rates and ``status`` are checked by the learner). ``stop_entropy`` is in nats: a link entropy is at most ln 2.
LEARNER_RULES = {
    "strategy": Options(STRATEGIES),
    "batch_size": Int(1),
    "min_samples": Int(1),
    "warm_start": Options((True, False)),
    "warm_burnin": Int(0, none=True),
    "warm_thin": Int(1),
    "block_size": Int(1, none=True),
    "stop_entropy": Real(
        0.0, math.log(2.0), none=True, words="a number of nats between 0 (never stop early) and ln 2 = 0.693"
    ),
    "propagation": Options((None, *PROPAGATIONS)),
    "progress": Options((True, False)),
}

#: One rule per session parameter: the learner's, and those of a run and of a team session.
SESSION_RULES = {
    **LEARNER_RULES,
    "n_queries": Int(0),
    "double": Real(0.0, 1.0, words="a share of the pairs in [0, 1]"),
    "pool_size": Int(1),
}
