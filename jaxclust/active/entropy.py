"""Co-clustering probabilities and link entropies from posterior samples of a partition.

Given ``S`` sampled partitions ``z^(s)`` of ``n`` items (rows of ``samples``), the co-clustering probability
of a pair is ``p_ij = sum_s w_s 1[z_i^(s) = z_j^(s)] / sum_s w_s`` (uniform weights by default) and its link
entropy is the binary entropy ``H_ij = -p ln p - (1 - p) ln(1 - p)`` in nats (Vlachos, Ghahramani & Briscoe
2010, Eq. 2). Both are invariant to label switching, so samples from different chains can be pooled.

``coclustering`` and ``link_entropy`` return full ``(n, n)`` matrices and are meant for moderate ``n``.
``top_entropy_pairs`` never holds more than one ``(block, n)`` float32 block: it sweeps the rows in blocks
(``lax.scan``), masks known pairs with the must-link group ids and the group-level cannot-link table, and
keeps a running top-k. Sample weights are a 0/1 mask in the batch method (samples that disagree with an answer
are dropped), which keeps every array shape static so one compiled function serves a whole session.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import entr

from jaxclust.constraints import _next_pow2
from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_array

__all__ = ["coclustering", "link_entropy", "agreeing_samples", "top_entropy_pairs", "binary_entropy"]


def binary_entropy(p: jax.Array) -> jax.Array:
    """Binary entropy in nats, ``0 log 0 = 0``; ``p`` of any shape."""
    return entr(p) + entr(1.0 - p)


def _as_samples(samples) -> np.ndarray:
    arr = check_array(samples, name="samples", min_rows=1, min_cols=2, dtype=np.float64)
    if not np.all(arr == np.round(arr)):
        raise InvalidInputError("samples: expected integer component labels")
    return arr.astype(np.int32)


def _as_weights(weights, n_samples: int) -> jax.Array:
    if weights is None:
        return jnp.ones((n_samples,), jnp.float32)
    w = check_array(weights, name="weights", min_rows=1, ndim=1)
    if w.shape[0] != n_samples:
        raise InvalidInputError(f"weights: expected {n_samples} entries (one per sample), got {w.shape[0]}")
    if (w < 0).any() or w.sum() <= 0:
        raise InvalidInputError("weights: must be non-negative with a positive sum")
    return jnp.asarray(w, jnp.float32)


def _row_counts(samples: jax.Array, weights: jax.Array, rows: jax.Array) -> jax.Array:
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


def _total(weights: jax.Array) -> jax.Array:
    return jnp.maximum(weights.sum(), jnp.finfo(jnp.float32).tiny)


def _entropy_from_counts(counts: jax.Array, total: jax.Array) -> jax.Array:
    # H(p) = H(1 - p): evaluate at the smaller of the two counts so that p and 1 - p give bit-identical
    # entropies (exact ties, hence a deterministic order among equally uncertain pairs)
    q = jnp.minimum(counts, total - counts) / total
    return binary_entropy(q)


@jax.jit
def _coclustering(samples: jax.Array, weights: jax.Array) -> jax.Array:
    return _row_counts(samples, weights, jnp.arange(samples.shape[1])) / _total(weights)


@jax.jit
def _link_entropy(samples: jax.Array, weights: jax.Array) -> jax.Array:
    counts = _row_counts(samples, weights, jnp.arange(samples.shape[1]))
    return _entropy_from_counts(counts, _total(weights))


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
        ``p_ij``; the diagonal is 1. Materialises ``n x n``: use :func:`top_entropy_pairs` for large ``n``.

    Every integer is a component id, negative ones included: ``-1`` is a label like any other (two items
    labelled ``-1`` in a sample share a component in it), so the diagonal is exactly 1 whatever the labels.
    """
    z = _as_samples(samples)
    return _coclustering(jnp.asarray(z), _as_weights(weights, z.shape[0]))


def link_entropy(samples, weights=None) -> jax.Array:
    """Binary entropy (nats) of the event "i and j share a component" under the samples, shape (n, n).

    The diagonal is 0. See :func:`coclustering` for the arguments.
    """
    z = _as_samples(samples)
    return _link_entropy(jnp.asarray(z), _as_weights(weights, z.shape[0]))


def agreeing_samples(samples, i, j, must) -> jax.Array:
    """Mask of samples that agree with an answer: ``(z_i == z_j) == must``, shape (S,) bool.

    ``samples`` is (S, n); ``i`` and ``j`` must be item indices in ``[0, n)`` (an index out of range raises
    ``InvalidInputError`` naming it, rather than being clamped as JAX indexing would); ``must`` is a bool.
    Traced indices (a caller that jits around this function) are not checked.
    """
    shape = np.shape(samples)
    if len(shape) != 2:
        raise InvalidInputError(f"samples: expected a 2-D array (samples x items), got shape {shape}")
    n = shape[1]
    i, j = _item_index(i, n, "i"), _item_index(j, n, "j")
    if not isinstance(must, bool | np.bool_ | jax.core.Tracer):
        raise InvalidInputError(f"must: expected a bool (True for a must-link answer), got {must!r}")
    return _agreeing_samples(samples, i, j, must)


def _item_index(i, n: int, name: str):
    from jaxclust.validation import check_index

    if isinstance(i, jax.core.Tracer):
        return i
    if isinstance(i, jax.Array | np.ndarray) and i.ndim == 0 and np.issubdtype(i.dtype, np.integer):
        i = int(i)
    return check_index(i, n, name)


@jax.jit
def _agreeing_samples(samples: jax.Array, i, j, must) -> jax.Array:
    samples = jnp.asarray(samples)
    return (samples[:, i] == samples[:, j]) == jnp.asarray(must, bool)


@functools.partial(jax.jit, static_argnames=("k", "block"))
def _top_pairs(samples, weights, group_of, partners, *, k: int, block: int):
    """Blockwise running top-k of link entropy over unknown pairs ``i < j``.

    samples (S, n) int32, weights (S,) float32, group_of (n,) int32, partners (n, c) int32 group-level
    cannot-link partner lists padded with -1 (row g lists the groups cannot-linked to group g).
    Returns (h (k,), rows (k,), cols (k,)); slots with no valid pair have h = -inf.
    """
    n = samples.shape[1]
    n_blocks = -(-n // block)
    cols = jnp.arange(n)
    total = _total(weights)
    group_pad = jnp.concatenate([group_of, jnp.full((n_blocks * block - n,), -1, group_of.dtype)])
    kk = min(k, block * n)

    def scan_block(carry, b):
        best_h, best_r, best_c = carry
        rows = b * block + jnp.arange(block)
        valid_row = rows < n
        safe_rows = jnp.where(valid_row, rows, 0)
        h = _entropy_from_counts(_row_counts(samples, weights, safe_rows), total)  # (block, n) float32
        g_r = group_pad[rows]  # (block,)
        same_group = g_r[:, None] == group_of[None, :]
        p_rows = partners[jnp.clip(g_r, 0, partners.shape[0] - 1)]  # (block, c)
        cannot = jnp.any(p_rows[:, None, :] == group_of[None, :, None], axis=-1)  # padding -1 never matches
        ok = valid_row[:, None] & (cols[None, :] > rows[:, None]) & ~same_group & ~cannot
        score = jnp.where(ok, h, -jnp.inf).reshape(-1)
        h_blk, idx = lax.top_k(score, kk)
        r_blk, c_blk = rows[idx // n], idx % n
        h_all = jnp.concatenate([best_h, h_blk])
        r_all = jnp.concatenate([best_r, r_blk])
        c_all = jnp.concatenate([best_c, c_blk])
        h_top, sel = lax.top_k(h_all, k)
        return (h_top, r_all[sel], c_all[sel]), None

    init = (jnp.full((k,), -jnp.inf, jnp.float32), jnp.zeros((k,), jnp.int32), jnp.zeros((k,), jnp.int32))
    (h, r, c), _ = lax.scan(scan_block, init, jnp.arange(n_blocks))
    return h, r, c


_MIN_PARTNERS = 8  # smallest width of the padded cannot-link table (fewer recompiles as degrees grow)


def group_arrays(constraints, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Static-shape group ids ``(n,)`` and group-level cannot-link partners ``(n, c)``.

    Rows beyond the number of groups are padding (-1), so shapes depend on ``n`` and ``c`` only. ``c`` is a
    power of two and at least ``_MIN_PARTNERS``: a session recompiles the jitted selection only when the
    largest group degree passes 8, 16, 32, ... (at a cost of ``O(block * n * c)`` bytes for the mask).
    """
    cap = _next_pow2(max(_MIN_PARTNERS, 0 if constraints is None else constraints.max_degree))
    if constraints is None or len(constraints) == 0:
        return np.arange(n, dtype=np.int32), np.full((n, cap), -1, np.int32)
    group_of = np.asarray(constraints.group_of, np.int32)
    out = constraints.cannot_partners(capacity=cap, n_rows=n)
    return group_of, out


def top_entropy_pairs(samples, k: int, constraints=None, weights=None, exclude=(), block: int | None = None):
    """The ``k`` unknown pairs with the highest link entropy, best first.

    Parameters
    ----------
    samples : array-like of int, shape (S, n)
        Sampled partitions.
    k : int
        How many pairs to return (fewer if fewer unknown pairs exist).
    constraints : jaxclust.constraints.Constraints, optional
        Pairs whose status is known, directly or by transitivity, are never returned.
    weights : array-like, shape (S,), optional
        Sample weights (the batch method's 0/1 mask of retained samples).
    exclude : iterable of (i, j)
        Further pairs never to return (e.g. answered "don't know").
    block : int, optional
        Rows per block; memory is ``O(block * n)`` (default ``min(n, 256)``).

    Returns
    -------
    list of (i, j, h)
        ``i < j`` Python ints and the entropy ``h`` (float, nats), sorted by decreasing ``h``; ties go to the
        pair with the smaller row, then column, index.
    """
    z = _as_samples(samples)
    n = z.shape[1]
    if int(k) < 1:
        raise InvalidInputError(f"k: must be >= 1, got {k}")
    if constraints is not None and constraints.n != n:
        raise InvalidInputError(f"constraints: built for {constraints.n} items, samples have {n}")
    excl = {(min(a, b), max(a, b)) for a, b in exclude}
    block = int(min(n, 256) if block is None else block)
    if block < 1:
        raise InvalidInputError(f"block: must be >= 1, got {block}")
    group_of, partners = group_arrays(constraints, n)
    # ask for enough extra candidates to survive the host-side exclusion; pad to a power of two so k rarely
    # recompiles
    k_dev = min(_next_pow2(int(k) + len(excl)), n * (n - 1) // 2)
    h, r, c = _top_pairs(
        jnp.asarray(z),
        _as_weights(weights, z.shape[0]),
        jnp.asarray(group_of),
        jnp.asarray(partners),
        k=k_dev,
        block=block,
    )
    h, r, c = np.asarray(h), np.asarray(r), np.asarray(c)
    order = np.lexsort((c, r, -h))  # deterministic tie-break independent of the block layout
    out = []
    for t in order:
        if not np.isfinite(h[t]):
            break
        pair = (int(r[t]), int(c[t]))
        if pair in excl:
            continue
        out.append((pair[0], pair[1], float(h[t])))
        if len(out) == k:
            break
    if constraints is not None and out:  # the exact check, transitivity included (the device mask mirrors it)
        known = np.asarray(constraints.is_known(np.array([p[0] for p in out]), np.array([p[1] for p in out])))
        if known.any():
            bad = [p for p, kn in zip(out, known, strict=True) if kn]
            raise AssertionError(f"internal: known pair selected {bad}")
    return out
