"""Co-clustering probabilities and link entropies of pairs of items under sampled partitions.

Given ``S`` sampled partitions ``z^(s)`` of ``n`` items (rows of ``samples``) and sample weights ``w_s``
(uniform by default), the co-clustering probability of a pair is
``p_ij = sum_s w_s 1[z_i^(s) = z_j^(s)] / sum_s w_s`` and its link entropy the binary entropy
``H_ij = -p ln p - (1 - p) ln(1 - p)`` in nats. Both are invariant to label switching, so samples from different
chains can be pooled. This module is below both the sampler (:mod:`jaxclust.dpmm`, whose ``coclustering_``
it computes) and active learning (:mod:`jaxclust.active.entropy`, whose pair selection builds on its counts);
:func:`coclustering` and :func:`link_entropy` return full ``(n, n)`` matrices, for moderate ``n``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import entr

from jaxclust.errors import InvalidInputError
from jaxclust.transfer import to_device
from jaxclust.validation import check_array

__all__ = ["binary_entropy", "coclustering", "link_entropy", "least_squares_sample"]


def binary_entropy(p: jax.Array) -> jax.Array:
    """Binary entropy in nats, ``0 log 0 = 0``; ``p`` of any shape."""
    return entr(p) + entr(1.0 - p)


def relabel(labels) -> np.ndarray:
    """Integer labels (n,) or (R, n) renumbered 0, 1, ... in order of first appearance along each row, so
    that two labellings of the same partition become identical (any integers, negative ones included)."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return labels.astype(np.int64)
    rows = labels.reshape(-1, labels.shape[-1])
    R, n = rows.shape
    if np.issubdtype(rows.dtype, np.integer) and rows.min() >= 0 and rows.max() < n:
        ids = rows.astype(np.int64)  # a sampler's slots: already in 0..n-1, no sort needed
    else:  # each row's values ranked 0..K-1 (K <= n per row, whatever the labels' range)
        order = np.argsort(rows, axis=1, kind="stable")
        ordered = np.take_along_axis(rows, order, axis=1)
        rank = np.cumsum(np.concatenate([np.zeros((R, 1), bool), ordered[:, 1:] != ordered[:, :-1]], 1), 1)
        ids = np.empty((R, n), np.int64)
        np.put_along_axis(ids, order, rank, axis=1)
    K = int(ids.max()) + 1
    first = np.full((R, K), n, dtype=np.int64)
    np.minimum.at(first, (np.repeat(np.arange(R), n), ids.ravel()), np.tile(np.arange(n), R))
    rank = np.empty_like(first)
    np.put_along_axis(rank, np.argsort(first, axis=1, kind="stable"), np.arange(K)[None, :], axis=1)
    return np.take_along_axis(rank, ids, axis=1).reshape(labels.shape)


def least_squares_sample(samples) -> int:
    """The index of the sampled partition (a row of ``samples`` (S, n)) whose Binder loss to the others (the
    number of item pairs one puts together and the other apart), summed over them, is least: Dahl's (2006)
    least-squares clustering restricted to the samples, a point estimate that follows what the samples agree on
    rather than one sample's log joint. Ties go to the first."""
    z = relabel(np.atleast_2d(np.asarray(samples)))
    S = z.shape[0]
    if S == 1:
        return 0
    # pairs together in a partition = (sum of squared sizes - n) / 2; in both = the same over their intersections
    squares = np.array([float((np.bincount(row).astype(np.float64) ** 2).sum()) for row in z])
    loss = np.zeros(S)
    for s in range(S):
        for t in range(s + 1, S):
            both = np.bincount(z[s] * (int(z[t].max()) + 1) + z[t]).astype(np.float64)
            d = (squares[s] + squares[t]) / 2.0 - float((both**2).sum())
            loss[s] += d
            loss[t] += d
    return int(np.argmin(loss))


def as_samples(samples) -> np.ndarray:
    """(S, n) labels as int32 ids per row; integer labels are compared exactly (``2**53`` and ``2**53 + 1``
    differ), whatever their size."""
    arr = samples if isinstance(samples, np.ndarray) else None
    exact = arr is not None and arr.dtype != bool and np.issubdtype(arr.dtype, np.integer)
    if not (exact and arr.ndim == 2 and arr.shape[0] >= 1 and arr.shape[1] >= 2):
        arr = check_array(
            samples, name="samples", min_rows=1, min_cols=2, dtype=np.float64
        )  # names the problem
        if not np.all(arr == np.round(arr)):
            raise InvalidInputError("samples: expected integer component labels")
    return relabel(arr).astype(np.int32)


def as_sample_weights(weights, n_samples: int) -> jax.Array:
    if weights is None:
        return jnp.ones((n_samples,), jnp.float32)
    w = check_array(weights, name="weights", min_rows=1, ndim=1)
    if w.shape[0] != n_samples:
        raise InvalidInputError(f"weights: expected {n_samples} entries (one per sample), got {w.shape[0]}")
    if (w < 0).any() or w.sum() <= 0:
        raise InvalidInputError("weights: must be non-negative with a positive sum")
    # only the ratios matter: scaled to a maximum of 1 in float64, so 1e39 or 1e-46 survive float32
    return jnp.asarray(w / w.max(), jnp.float32)


def row_counts(samples: jax.Array, weights: jax.Array, rows: jax.Array) -> jax.Array:
    """``(len(rows), n)`` weighted co-assignment counts; a scan over samples so no ``(S, rows, n)`` tensor
    exists.
    """
    zr = samples[:, rows]  # (S, B)

    def add(acc, xs):
        z, z_rows, w = xs
        return acc + w * (z_rows[:, None] == z[None, :]), None

    counts, _ = lax.scan(
        add, jnp.zeros((rows.shape[0], samples.shape[1]), jnp.float32), (samples, zr, weights)
    )
    return counts


def total_weight(weights: jax.Array) -> jax.Array:
    return jnp.maximum(weights.sum(), jnp.finfo(jnp.float32).tiny)


def entropy_from_counts(counts: jax.Array, total: jax.Array) -> jax.Array:
    # H(p) = H(1 - p): evaluate at the smaller of the two counts so that p and 1 - p give bit-identical
    # entropies (exact ties, hence a deterministic order among equally uncertain pairs)
    q = jnp.minimum(counts, total - counts) / total
    return binary_entropy(q)


@jax.jit
def _coclustering(samples: jax.Array, weights: jax.Array) -> jax.Array:
    return row_counts(samples, weights, jnp.arange(samples.shape[1])) / total_weight(weights)


@jax.jit
def _link_entropy(samples: jax.Array, weights: jax.Array) -> jax.Array:
    counts = row_counts(samples, weights, jnp.arange(samples.shape[1]))
    return entropy_from_counts(counts, total_weight(weights))


def coclustering(samples, weights=None) -> jax.Array:
    """Fraction of (weighted) samples in which each pair of items shares a component.

    Parameters
    ----------
    samples : array-like of int, shape (S, n)
        Sampled partitions, one per row (any integer labels; label switching does not matter).
    weights : array-like, shape (S,), optional
        Non-negative sample weights (0/1 to drop samples); uniform if omitted.

    Returns
    -------
    jax.Array, shape (n, n), float32
        ``p_ij``; the diagonal is 1. Materialises ``n x n``: for large ``n`` use
        :func:`jaxclust.active.entropy.top_entropy_pairs`.

    Every integer is a component id, negative ones included: ``-1`` is a label like any other (two items
    labelled ``-1`` in a sample share a component in it), so the diagonal is exactly 1 whatever the labels.
    """
    z = as_samples(samples)
    return _coclustering(to_device(z), as_sample_weights(weights, z.shape[0]))


def link_entropy(samples, weights=None) -> jax.Array:
    """Binary entropy (nats) of the event "i and j share a component" under the samples, shape (n, n).

    The diagonal is 0. See :func:`coclustering` for the arguments.
    """
    z = as_samples(samples)
    return _link_entropy(to_device(z), as_sample_weights(weights, z.shape[0]))
