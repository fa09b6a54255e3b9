"""Choosing which pairs to ask about: link-entropy (uncertainty) selection and the random baseline.

Strategies (Vlachos, Ghahramani & Briscoe 2010, Sections 3 and 5):

* ``"entropy"``: the pair(s) with the highest link entropy among pairs whose status is unknown (neither
  given nor implied by transitivity); with ``batch_size > 1`` this is the same as ``"naive_batch"``.
* ``"naive_batch"``: the top-B pairs by entropy from one set of samples (the paper's "active 10").
* ``"random"``: pairs drawn uniformly among the unknown pairs (rejection sampling from all pairs).
* ``"batch"``: the paper's batch method; it needs the oracle's answers between picks, so it lives in
  :class:`~jaxclust.active.ActiveLearner` (it uses :func:`~jaxclust.active.entropy.agreeing_samples` and
  :func:`~jaxclust.active.entropy.top_entropy_pairs` with sample weights).

No function here returns a pair that is known or implied under the given constraints, nor one in ``exclude``.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxclust.active.entropy import top_entropy_pairs
from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_index, check_int, prng_key

__all__ = ["STRATEGIES", "select_queries", "random_pairs"]

STRATEGIES = ("entropy", "naive_batch", "batch", "random")
_ENUMERATE_MAX_N = 4096  # below this, fall back to enumerating the unknown pairs when rejection keeps failing


def _check_pairs(pairs, n: int, name: str) -> list[tuple[int, int]]:
    """``pairs`` as a list of (i, j) index pairs into ``n`` items, or InvalidInputError naming the bad one."""
    out = []
    for p in pairs:
        if isinstance(p, str | bytes) or np.ndim(p) != 1 or len(p) != 2:
            raise InvalidInputError(f"{name}: entry {p!r} is not a pair (i, j)")
        out.append(
            (check_index(p[0], n, f"{name} {tuple(p)!r}"), check_index(p[1], n, f"{name} {tuple(p)!r}"))
        )
    return out


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
    exclude = _check_pairs(exclude, n, "exclude")
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
    if strategy not in STRATEGIES:
        raise InvalidInputError(f"strategy: expected one of {STRATEGIES}, got {strategy!r}")
    if strategy == "batch":
        raise InvalidInputError(
            "strategy: 'batch' needs the oracle between picks; use ActiveLearner(strategy='batch')"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) or batch_size < 1:
        raise InvalidInputError(f"batch_size: expected a positive integer, got {batch_size!r}")
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
