"""Active constraint selection for clustering models that sample partitions (e.g. the constrained DPMM).

The model picks the pair it is least sure about (link entropy over posterior samples), an oracle (gold labels,
a noisy simulation, or a person at the terminal) answers must-link / cannot-link / don't know, every answer is
made durable in an append-only store, and the model is refitted under the new constraints (Vlachos, Ghahramani
& Briscoe 2010).

>>> from jaxclust.active import ActiveLearner, GoldOracle          # doctest: +SKIP
>>> learner = ActiveLearner(DPMM(), GoldOracle(y), strategy="batch", batch_size=5)   # doctest: +SKIP
>>> history = learner.run(X, n_queries=50, eval_labels=y)           # doctest: +SKIP
"""

from jaxclust.active.entropy import agreeing_samples, coclustering, link_entropy, top_entropy_pairs
from jaxclust.active.learner import ActiveLearner, score_samples
from jaxclust.active.oracles import GoldOracle, InteractiveOracle, NoisyOracle, SessionStopped
from jaxclust.active.selection import STRATEGIES, random_pairs, select_queries
from jaxclust.active.store import AnswerStore

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
]
