"""Active constraint selection for clustering models that sample partitions (e.g. the constrained DPMM).

The model picks the pair it is least sure about (link entropy over posterior samples), an oracle (gold labels,
a noisy simulation, or a person at the terminal) answers must-link / cannot-link / don't know, every answer is
made durable in an append-only store, and the model is refitted under the new constraints (Vlachos, Ghahramani
& Briscoe 2010).

>>> from jaxclust.active import ActiveLearner, GoldOracle          # doctest: +SKIP
>>> learner = ActiveLearner(DPMM(), GoldOracle(y), strategy="batch", batch_size=5)   # doctest: +SKIP
>>> history = learner.run(X, n_queries=50, eval_labels=y)           # doctest: +SKIP

Names are imported lazily (PEP 562): ``from jaxclust.active.store import AnswerStore`` does not import JAX.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> module that defines it
_LAZY: dict[str, str] = {
    "ActiveLearner": "jaxclust.active.learner",
    "score_samples": "jaxclust.active.learner",
    "GoldOracle": "jaxclust.active.oracles",
    "NoisyOracle": "jaxclust.active.oracles",
    "InteractiveOracle": "jaxclust.active.oracles",
    "SessionStopped": "jaxclust.active.oracles",
    "AnswerStore": "jaxclust.active.store",
    "coclustering": "jaxclust.active.entropy",
    "link_entropy": "jaxclust.active.entropy",
    "top_entropy_pairs": "jaxclust.active.entropy",
    "agreeing_samples": "jaxclust.active.entropy",
    "select_queries": "jaxclust.active.selection",
    "random_pairs": "jaxclust.active.selection",
    "STRATEGIES": "jaxclust.active.rules",
    "TeamSession": "jaxclust.active.team",
}

__all__ = [
    "ActiveLearner",
    "GoldOracle",
    "NoisyOracle",
    "InteractiveOracle",
    "SessionStopped",
    "AnswerStore",
    "coclustering",
    "link_entropy",
    "top_entropy_pairs",
    "agreeing_samples",
    "select_queries",
    "random_pairs",
    "score_samples",
    "STRATEGIES",
    "TeamSession",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jaxclust.active' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
