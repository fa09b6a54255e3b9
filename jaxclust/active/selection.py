"""Choosing which pairs to ask about: link-entropy (uncertainty) selection and the random baseline.

Strategies (Vlachos, Ghahramani & Briscoe 2010, Sections 3 and 5):

* ``"entropy"``: the pair(s) with the highest link entropy among pairs whose status is unknown (neither
  given nor implied by transitivity); with ``batch_size > 1`` this is the same as ``"naive_batch"``.
* ``"naive_batch"``: the top-B pairs by entropy from one set of samples (the paper's "active 10").
* ``"random"``: pairs drawn uniformly among the unknown pairs (rejection sampling from all pairs).
* ``"batch"``: the paper's batch method; it needs the oracle's answers between picks, so it lives in
  :class:`~jaxclust.active.ActiveLearner` (it uses :func:`~jaxclust.active.entropy.agreeing_samples` and
  :func:`~jaxclust.active.entropy.top_entropy_pairs` with sample weights).
* ``"explore"``: first the beliefs no answer has tested: under a model that samples classes, two groups of
  answered items its sample joins with no answer between them
  (:func:`~jaxclust.active.classes.joined_answer_groups`); two components the model holds in different classes,
  asked through their representatives, nearest first; a component's join to its class; a large component's
  unity (:func:`~jaxclust.active.classes.component_questions`); when every such belief has been tested, the
  highest link entropy. It needs the data and the model's
  components, so it runs through :func:`pick` (as :class:`~jaxclust.active.ActiveLearner` does).

:func:`pick` is the one place a strategy that chooses a round's pairs in one pass is dispatched: a new strategy
is one function of a :class:`Round` added to ``_PICKERS``.

No function here returns a pair that is known or implied under the given constraints, nor one in ``exclude``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from jaxclust.active.classes import component_questions
from jaxclust.active.entropy import check_pairs, top_entropy_pairs
from jaxclust.active.rules import SESSION_RULES
from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_int, check_rule, prng_key

__all__ = ["select_queries", "random_pairs", "Round", "pick"]

_ENUMERATE_MAX_N = 4096  # below this, fall back to enumerating the unknown pairs when rejection keeps failing


def random_pairs(key, n: int, k: int, constraints=None, exclude=()) -> list[tuple[int, int]]:
    """Up to ``k`` distinct pairs ``i < j`` drawn uniformly without replacement among the unknown pairs.

    Rejection sampling (uniform ordered pairs, canonicalised) is uniform over the accepted set; when almost
    every pair is known it falls back to enumerating the unknown pairs (``n <= 4096``).

    Parameters
    ----------
    key : PRNG key or int
    n : int
        Number of items.
    k : int
        Number of pairs wanted; fewer are returned only when fewer unknown pairs exist.
    constraints : Constraints, optional
    exclude : iterable of (i, j)
    """
    n = check_int(n, "n", minimum=1)
    k = check_int(k, "k", minimum=0)
    if constraints is not None and constraints.n != n:
        raise InvalidInputError(f"constraints: built for {constraints.n} items, n is {n}")
    exclude = check_pairs(exclude, n, "exclude")
    # host-side draws from a NumPy generator seeded by the key's bits: rejection needs many small draws, and
    # per-draw JAX dispatch would dominate (the key still fixes every draw)
    rng = np.random.default_rng(np.asarray(jax.random.key_data(prng_key(key))).ravel().tolist())
    seen = {(min(a, b), max(a, b)) for a, b in exclude}
    chosen: list[tuple[int, int]] = []
    m = 4 * k + 64
    for _ in range(16):
        cand = rng.integers(0, n, size=(m, 2))
        i, j = cand.min(axis=1), cand.max(axis=1)
        ok = i != j
        if constraints is not None:
            ok &= ~constraints.is_known(i, j)
        for a, b in zip(i[ok].tolist(), j[ok].tolist(), strict=True):
            if (a, b) not in seen:
                seen.add((a, b))
                chosen.append((a, b))
                if len(chosen) == k:
                    return chosen
    if n > _ENUMERATE_MAX_N:
        return chosen
    a, b = np.triu_indices(n, k=1)
    ok = np.ones(a.shape, bool) if constraints is None else ~constraints.is_known(a, b)
    if seen:
        s = np.array(sorted(seen), dtype=np.int64)
        ok &= ~np.isin(a.astype(np.int64) * n + b, s[:, 0] * n + s[:, 1])
    a, b = a[ok], b[ok]
    if len(a) == 0:
        return chosen
    pick = rng.choice(len(a), size=min(k - len(chosen), len(a)), replace=False)
    return chosen + list(zip(a[pick].tolist(), b[pick].tolist(), strict=True))


def select_queries(
    samples,
    constraints=None,
    batch_size: int = 1,
    strategy: str = "entropy",
    key=0,
    exclude=(),
    weights=None,
    block: int | None = None,
) -> list[tuple[int, int]]:
    """Pairs to ask about next, best first.

    Parameters
    ----------
    samples : array-like of int, shape (S, n)
        Partitions sampled from the (constrained) model.
    constraints : Constraints, optional
        What is known so far; known and implied pairs are never returned.
    batch_size : int
        Number of pairs.
    strategy : {"entropy", "naive_batch", "random"}
        ``"batch"`` needs answers between picks: use :class:`~jaxclust.active.ActiveLearner`.
    key : PRNG key or int
        Randomness for ``"random"``.
    exclude : iterable of (i, j)
        Pairs never to return (e.g. answered "don't know").
    weights : array-like, shape (S,), optional
        Sample weights for the entropy strategies.
    block : int, optional
        Row block of the entropy sweep when it runs over all pairs of distinct signatures (memory
        ``O(block * m)``, ``m <= n``; see :func:`~jaxclust.active.entropy.top_entropy_pairs`).

    Returns
    -------
    list of (i, j) with i < j
    """
    check_rule(SESSION_RULES["strategy"], strategy, "strategy")
    if strategy == "batch":
        raise InvalidInputError(
            "strategy: 'batch' needs the oracle between picks; use ActiveLearner(strategy='batch')"
        )
    if strategy == "explore":
        raise InvalidInputError(
            "strategy: 'explore' needs the data and the model's components; use ActiveLearner(strategy="
            "'explore') or jaxclust.active.selection.pick"
        )
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    n = np.shape(samples)[1] if np.ndim(samples) == 2 else None
    if n is None:
        raise InvalidInputError(
            f"samples: expected a 2-D array (samples x items), got shape {np.shape(samples)}"
        )
    if strategy == "random":
        return random_pairs(key, n, int(batch_size), constraints, exclude)
    return [
        (i, j)
        for i, j, _ in top_entropy_pairs(samples, int(batch_size), constraints, weights, exclude, block)
    ]


class Round(NamedTuple):
    """What a one-pass strategy sees when it chooses a round's pairs.

    ``samples`` (S, n) the partitions questions are about (class level when answers are propagated);
    ``components`` (n,) the model's best sample of components; ``X`` (n, D) the data; ``exclude`` pairs never
    to ask; ``key`` the round's PRNG key (random strategy); ``need_entropy`` whether the caller wants the
    highest link entropy back (a confidence stop); ``split`` whether answers split components
    (``propagation="classes"``; see :func:`~jaxclust.active.classes.component_questions`); ``classes`` (n,)
    the classes of ``components``' sample when the model samples classes of components (else None: the
    questions derive classes from the answers).
    """

    samples: Any
    constraints: Any
    exclude: Any
    key: Any = None
    X: Any = None
    components: Any = None
    block: int | None = None
    need_entropy: bool = False
    split: bool = True
    classes: Any = None


def _top(r: Round, k: int, exclude=None):
    ex = r.exclude if exclude is None else exclude
    return top_entropy_pairs(r.samples, k, r.constraints, None, ex, r.block)


def _pick_entropy(r: Round, k: int):
    top = _top(r, k)
    return [(i, j) for i, j, _ in top], (top[0][2] if top else None)


def _pick_random(r: Round, k: int):
    n = np.shape(r.samples)[1]
    pairs = random_pairs(r.key, n, k, r.constraints, r.exclude)
    if not r.need_entropy:
        return pairs, None
    top = _top(r, 1)
    return pairs, (top[0][2] if top else None)


def _pick_explore(r: Round, k: int):
    pairs = component_questions(
        r.X, r.components, r.constraints, k, r.exclude, split=r.split, classes=r.classes
    )
    if len(pairs) >= k:
        return pairs, None  # untested beliefs remain: never "confident"
    top = _top(r, k - len(pairs), set(r.exclude) | set(pairs))
    h = None if pairs else (top[0][2] if top else None)
    return pairs + [(i, j) for i, j, _ in top], h


_PICKERS = {
    "entropy": _pick_entropy,
    "naive_batch": _pick_entropy,
    "random": _pick_random,
    "explore": _pick_explore,
}


def pick(strategy: str, r: Round, k: int) -> tuple[list[tuple[int, int]], float | None]:
    """Up to ``k`` pairs to ask this round, best first, and the highest link entropy among the unknown pairs
    when the strategy knows it (None otherwise, and always None while ``"explore"`` has untested beliefs).
    """
    if strategy not in _PICKERS:
        raise InvalidInputError(f"strategy: expected one of {tuple(_PICKERS)}, got {strategy!r}")
    return _PICKERS[strategy](r, k)
