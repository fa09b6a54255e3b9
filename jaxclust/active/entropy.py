"""The most uncertain pairs: link entropies of sampled partitions, and the unknown pairs that maximise them.

The co-clustering probability ``p_ij`` of a pair and its link entropy ``H_ij`` (Vlachos, Ghahramani & Briscoe
2010, Eq. 2) are defined in :mod:`jaxclust.coclustering`, which also computes the full ``(n, n)`` matrices
(:func:`coclustering` and :func:`link_entropy` are re-exported here).

:func:`top_entropy_pairs` never builds anything ``n x n``. A pair has positive entropy only if it shares a
component in some but not all samples, so it works on distinct label vectors ("signatures": items labelled
alike in every retained sample are interchangeable) and on the pairs inside sampled components: a sparse
co-occurrence product whose cost is ``sum_s sum_C m_C^2`` over components ``C`` holding ``m_C`` signatures,
or, when that is larger than sweeping all signature pairs (very uncertain samples), a blockwise jitted sweep
over signature pairs (compare-and-add on a CPU, one-hot matrix products on an accelerator) that keeps a running
top-k. The pairs are then taken in entropy order, ties by index, skipping known and excluded pairs: exactly the
pairs of the dense ``O(n^2)`` sweep over all item pairs (``_dense_select``). Sample weights are any
non-negative numbers: the batch strategy multiplies a sample's weight by how well it agrees with each answer
(0 or 1 for a hard answer, ``eps`` or ``1 - eps`` for one given with error rate ``eps``). Shapes are bucketed
so a session compiles the sweep a few times at most.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxclust.active.signatures import components, from_levels, signatures, zero_fill
from jaxclust.coclustering import (
    as_sample_weights,
    as_samples,
    binary_entropy,
    coclustering,
    entropy_from_counts,
    link_entropy,
    row_counts,
    total_weight,
)
from jaxclust.constraints import as_constraints
from jaxclust.errors import InvalidInputError
from jaxclust.partner_tables import partner_capacity
from jaxclust.shapes import next_pow2
from jaxclust.transfer import to_device
from jaxclust.validation import check_index, check_int

__all__ = ["coclustering", "link_entropy", "agreeing_samples", "top_entropy_pairs", "binary_entropy"]


def check_pairs(pairs, n: int, name: str) -> list[tuple[int, int]]:
    """``pairs`` as a list of (i, j) index pairs into ``n`` items, or InvalidInputError naming the bad one."""
    out = []
    for p in pairs:
        if isinstance(p, str | bytes) or np.ndim(p) != 1 or len(p) != 2:
            raise InvalidInputError(f"{name}: entry {p!r} is not a pair (i, j)")
        out.append(
            (check_index(p[0], n, f"{name} {tuple(p)!r}"), check_index(p[1], n, f"{name} {tuple(p)!r}"))
        )
    return out


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
    total = total_weight(weights)
    group_pad = jnp.concatenate([group_of, jnp.full((n_blocks * block - n,), -1, group_of.dtype)])
    kk = min(k, block * n)

    def scan_block(carry, b):
        best_h, best_r, best_c = carry
        rows = b * block + jnp.arange(block)
        valid_row = rows < n
        safe_rows = jnp.where(valid_row, rows, 0)
        h = entropy_from_counts(row_counts(samples, weights, safe_rows), total)  # (block, n) float32
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


def group_arrays(constraints, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Static-shape group ids ``(n,)`` and group-level cannot-link partners ``(n, c)``.

    Rows beyond the number of groups are padding (-1), so shapes depend on ``n`` and ``c`` only; ``c`` is
    :func:`~jaxclust.partner_tables.partner_capacity` of the largest degree (the mask costs ``O(block * n * c)``
    bytes).
    """
    cap = partner_capacity(0 if constraints is None else constraints.max_degree)
    if constraints is None or len(constraints) == 0:
        return np.arange(n, dtype=np.int32), np.full((n, cap), -1, np.int32)
    group_of = np.asarray(constraints.group_of, np.int32)
    out = constraints.cannot_partners(capacity=cap, n_rows=n)
    return group_of, out


def _validate(samples, k, constraints, weights, exclude, block):
    z = as_samples(samples)
    n = z.shape[1]
    k = check_int(k, "k", minimum=1)
    constraints = as_constraints(constraints, n, where="top_entropy_pairs", subject="the samples have {n}")
    excl = {(min(a, b), max(a, b)) for a, b in check_pairs(exclude, n, "exclude")}
    block = int(min(n, 256) if block is None else block)
    if block < 1:
        raise InvalidInputError(f"block: must be >= 1, got {block}")
    return z, int(k), constraints, excl, block, as_sample_weights(weights, z.shape[0])


def top_entropy_pairs(samples, k: int, constraints=None, weights=None, exclude=(), block: int | None = None):
    """The ``k`` unknown pairs with the highest link entropy, best first.

    Only pairs that share a component in some but not all (weighted) samples have positive entropy, so the
    candidates come from the sampled components, over distinct *signatures* (items with the same label in
    every retained sample are interchangeable): the cost is about ``sum_s sum_C m_C^2`` for ``m_C`` distinct
    signatures in component ``C`` of sample ``s``, not ``n^2``. When that sum is large (very uncertain
    samples) a blockwise jitted sweep over signature pairs takes over (one-hot matrix products on an
    accelerator). The result is exactly that of the dense ``O(n^2)`` sweep, ties included.

    Parameters
    ----------
    samples : array-like of int, shape (S, n)
        Sampled partitions.
    k : int
        How many pairs to return (fewer if fewer unknown pairs exist).
    constraints : jaxclust.constraints.Constraints, optional
        Pairs whose status is known, directly or by transitivity, are never returned.
    weights : array-like, shape (S,), optional
        Non-negative sample weights (the batch strategy's agreement of each sample with the answers).
    exclude : iterable of (i, j)
        Further pairs never to return (e.g. answered "don't know").
    block : int, optional
        Rows per block of the dense sweep over signature pairs; its memory is ``O(block * m)`` for ``m``
        distinct signatures (default 256).

    Returns
    -------
    list of (i, j, h)
        ``i < j`` Python ints and the entropy ``h`` (float, nats), sorted by decreasing ``h``; ties go to the
        pair with the smaller row, then column, index. When fewer than ``k`` unknown pairs have positive
        entropy, the list goes on with zero-entropy unknown pairs in that index order.
    """
    z, k, constraints, excl, block, w = _validate(samples, k, constraints, weights, exclude, block)
    return _select(z, k, constraints, w, excl, block)


def _dense_select(z, k, constraints, w, excl, block):
    """The blockwise sweep over all ``n^2`` pairs: the exact answer at ``O(n^2)`` cost, for the rare weights
    the signature path does not reproduce bit for bit (see :func:`_select`)."""
    n = z.shape[1]
    group_of, partners = group_arrays(constraints, n)
    # ask for enough extra candidates to survive the host-side exclusion; pad to a power of two so k rarely
    # recompiles
    k_dev = min(next_pow2(k + len(excl)), n * (n - 1) // 2)
    h, r, c = _top_pairs(
        to_device(z), w, to_device(group_of), to_device(partners), k=k_dev, block=min(block, n)
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
    return out


# --- selection over distinct signatures -------------------------------------------------------------------
#
# Items with the same label vector over the retained samples ("twins") have p = 1 with each other and the same
# p with everybody else, so p is computed once per pair of distinct signatures (a, b). Signatures are numbered
# by their smallest member, which makes the lexicographic order of signature pairs (a < b) the order of their
# smallest item pairs. Hence the first r item pairs (in index order) of an entropy level are the first r item
# pairs of the level's first r signature pairs (each signature pair holds at least one item pair, its smallest
# comes no later than any other), and the top-K signature pairs by (entropy desc, a, b) determine the exact
# top-k item pairs when K >= k + |exclude| (known pairs among them are skipped, and K grows if too many are).

_SPARSE_WORK = 1 << 22  # co-occurrence updates per row block of the sparse product (bounds its memory)
_SPARSE_SUFFIXES = 8  # column cuts of the sparse product (rows past a cut skip the columns before it)
_SPARSE_UPDATE = 4  # cost of one sparse co-occurrence update, in dense compare-adds (CPU, measured) ...
_SPARSE_PAIR = 80  # ... and of each distinct co-occurring signature pair it finds
_MATMUL_BYTES = 1 << 31  # largest one-hot table the matrix-product sweep builds on an accelerator


def _bucket(x: int) -> int:
    """``x`` rounded up to an eighth of its power of two (few distinct shapes, at most 12.5 % padding)."""
    step = max(1, next_pow2(x) // 8)
    return -(-int(x) // step) * step


@jax.jit
def _entropy_of_counts(counts: jax.Array, weights: jax.Array) -> jax.Array:
    return entropy_from_counts(counts, total_weight(weights))


def _entropies(counts: np.ndarray, weights: jax.Array) -> np.ndarray:
    """Float32 entropies of float32 counts, by the same jitted formula as the sweep (padded shapes)."""
    pad = np.zeros(next_pow2(max(len(counts), 1)), np.float32)
    pad[: len(counts)] = counts
    return np.asarray(_entropy_of_counts(jnp.asarray(pad), weights))[: len(counts)]


def _top_of_block(h, a, b, K: int, m: int):
    """Top-K of one block by (h desc, a, b) in linear time (ties at the K-th value by the smallest ``(a, b)``)."""
    if len(h) <= K:
        return h, a, b
    v, rest = h.max(), h
    for _ in range(4):  # peel the top values (cheap when a few levels hold K pairs, as with integer weights)
        if (h >= v).sum() >= K:
            break
        rest = rest[rest < v]
        v = rest.max()
    else:  # a sort, not np.partition: introselect degrades badly on arrays of few distinct values
        v = np.sort(h)[len(h) - K]  # the K-th largest value
    above = np.flatnonzero(h > v)
    tie = np.flatnonzero(h == v)
    n_tie = K - len(above)
    if len(tie) > n_tie:
        tie = tie[np.argpartition(a[tie] * m + b[tie], n_tie - 1)[:n_tie]]
    sel = np.concatenate([above, tie])
    return h[sel], a[sel], b[sel]


def _merge_top(best, new, K: int):
    h, a, b = (np.concatenate([x, y]) for x, y in zip(best, new, strict=True))
    order = np.lexsort((b, a, -h))[:K]
    return h[order], a[order], b[order]


def _membership(comp, n_comp: int, wpos):
    """Sparse (signature x component) membership matrix and its weighted transpose (co-occurrences are
    ``member @ weighted_t``)."""
    from scipy import sparse

    m, sp = comp.shape
    indptr = np.arange(0, m * sp + 1, sp)
    member = sparse.csr_matrix((np.ones(m * sp), comp.ravel(), indptr), shape=(m, n_comp))
    weighted = sparse.csr_matrix(
        (np.tile(wpos.astype(np.float64), m), comp.ravel(), indptr), shape=(m, n_comp)
    )
    return member, weighted.T.tocsr()


def _sparse_cost(member, weighted_t, work) -> float:
    """Estimated cost of the sparse path in dense compare-adds: updates plus distinct co-occurring pairs, the
    latter estimated from up to 256 rows (fixed seed)."""
    m = member.shape[0]
    rows = np.sort(np.random.default_rng(0).choice(m, min(m, 256), replace=False))
    pairs = ((member[rows] @ weighted_t).nnz - len(rows)) * m / len(rows) / 2
    return _SPARSE_UPDATE * float(work.sum()) + _SPARSE_PAIR * pairs


def _sparse_is_cheaper(member, weighted_t, work, n_samples: int) -> bool:
    """The sparse path's estimated cost against the dense sweep's ``m^2 S / 2`` compare-adds."""
    m = member.shape[0]
    return _sparse_cost(member, weighted_t, work) <= 0.5 * m * m * n_samples


def _sparse_top(member, weighted_t, work, counts_to_h, K: int):
    """Top-K positive-entropy signature pairs ``a < b`` by (h desc, a, b) from the sampled components.

    Co-occurrences are the sparse product ``member @ weighted_t``, in row blocks of about ``_SPARSE_WORK``
    updates (``work``: per signature); its cost is ``sum_s sum_C m_C^2``. Returns (h, a, b, n_positive).
    """
    m = member.shape[0]
    work = np.cumsum(work)
    # only pairs a < b are needed: row blocks past cut c multiply the columns from c on (saves ~45 % of updates)
    cuts = np.unique(np.arange(_SPARSE_SUFFIXES) * m // _SPARSE_SUFFIXES)
    suffix = [weighted_t[:, c:] for c in cuts]
    best = (np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64))
    n_pos, r0 = 0, 0
    while r0 < m:
        r1 = int(np.searchsorted(work, (work[r0 - 1] if r0 else 0) + _SPARSE_WORK, side="right"))
        r1 = min(max(r1, r0 + 1), m)
        t = int(np.searchsorted(cuts, r0, side="right")) - 1
        co = (member[r0:r1] @ suffix[t]).tocoo()
        a, b = co.row.astype(np.int64) + r0, co.col.astype(np.int64) + cuts[t]
        upper = b > a
        a, b = a[upper], b[upper]
        h = counts_to_h(a, b, co.data[upper])
        pos = h > 0
        n_pos += int(pos.sum())
        if len(best[0]) == K:  # rows come in increasing order: a tie with the current K-th pair loses
            pos &= h > best[0][-1]
        best = _merge_top(best, _top_of_block(h[pos], a[pos], b[pos], K, m), K)
        r0 = r1
    return (*best, n_pos)


def _scan_sig_pairs(counts_fn, m_pad, m, total, *, k: int, block: int):
    """Blockwise running top-k of positive entropies over signature pairs ``a < b < m`` (as ``_top_pairs``)."""
    cols = jnp.arange(m_pad)
    kk = min(k, block * m_pad)

    def scan_block(carry, b):
        best_h, best_r, best_c = carry
        rows = b * block + jnp.arange(block)
        h = entropy_from_counts(counts_fn(rows), total)  # (block, m_pad) float32
        ok = (cols[None, :] > rows[:, None]) & (cols[None, :] < m) & (h > 0)
        score = jnp.where(ok, h, -jnp.inf).reshape(-1)
        h_blk, idx = lax.top_k(score, kk)
        h_all = jnp.concatenate([best_h, h_blk])
        r_all = jnp.concatenate([best_r, rows[idx // m_pad]])
        c_all = jnp.concatenate([best_c, idx % m_pad])
        h_top, sel = lax.top_k(h_all, k)
        return (h_top, r_all[sel], c_all[sel]), None

    init = (jnp.full((k,), -jnp.inf, jnp.float32), jnp.zeros((k,), jnp.int32), jnp.zeros((k,), jnp.int32))
    (h, r, c), _ = lax.scan(scan_block, init, jnp.arange(m_pad // block))
    return h, r, c


@functools.partial(jax.jit, static_argnames=("k", "block"))
def _dense_top_compare(labels, weights, m, *, k: int, block: int):
    """labels (S, m_pad) int32 signature labels (rows of zero-weight samples are arbitrary)."""
    counts_fn = functools.partial(row_counts, labels, weights)  # the reference's own accumulation order
    return _scan_sig_pairs(counts_fn, labels.shape[1], m, total_weight(weights), k=k, block=block)


@functools.partial(jax.jit, static_argnames=("k", "block", "dtype"))
def _dense_top_matmul(comp, wcomp, weights, m, *, k: int, block: int, dtype: str):
    """comp (S, m_pad) int32 global component ids, wcomp (C,) their sample's weight (0 for the dummy id 0).

    Counts are ``onehot[rows] * w @ onehot^T``: exact when the weights are integers (float32 accumulation,
    inputs exact in ``dtype``), so the entropies equal the compare-and-add sweep's bit for bit.
    """
    m_pad, dt = comp.shape[1], jnp.dtype(dtype)
    onehot = jnp.zeros((m_pad, wcomp.shape[0]), dt).at[jnp.arange(m_pad)[:, None], comp.T].set(1)
    w = wcomp.astype(dt)

    def counts_fn(rows):
        return jnp.dot(
            onehot[rows] * w, onehot.T, preferred_element_type=jnp.float32, precision=lax.Precision.HIGHEST
        )

    return _scan_sig_pairs(counts_fn, m_pad, m, total_weight(weights), k=k, block=block)


def _dense_top(sg, comp, sample_of, wnp, w, K: int, block: int, method: str):
    """Top-K positive-entropy signature pairs from the jitted dense sweep; returns (h, a, b, exhaustive)."""
    m, pos = sg.m, wnp > 0
    blk = max(1, min(block, _bucket(m)))
    m_pad = -(-_bucket(m) // blk) * blk
    if m_pad >= 512 and m_pad & (m_pad - 1) == 0:  # a power-of-two row stride ran 2-4x slower on a CPU
        m_pad += blk
    if method == "matmul":
        cid = np.zeros((len(wnp), m_pad), np.int32)  # id 0: the dummy component of weight 0
        cid[pos, :m] = comp.T + 1
        wcomp = np.zeros(_bucket(len(sample_of) + 1), np.float32)
        wcomp[1 : len(sample_of) + 1] = wnp[pos][sample_of]
        dtype = "bfloat16" if wnp.max() <= 256 and jax.default_backend() != "cpu" else "float32"
        h, r, c = _dense_top_matmul(
            to_device(cid), to_device(wcomp), w, jnp.int32(m), k=K, block=blk, dtype=dtype
        )
    else:
        labels = np.zeros((len(wnp), m_pad), np.int32)
        labels[pos, :m] = sg.labels.T
        h, r, c = _dense_top_compare(to_device(labels), w, jnp.int32(m), k=K, block=blk)
    h, r, c = np.asarray(h), np.asarray(r).astype(np.int64), np.asarray(c).astype(np.int64)
    fin = np.isfinite(h)
    h, r, c = h[fin], r[fin], c[fin]
    order = np.lexsort((c, r, -h))
    return h[order], r[order], c[order], len(h) < K


def _select(z, k, constraints, w, excl, block, route=None, method=None):
    """The fast path of :func:`top_entropy_pairs`; ``route`` ("sparse", "dense") and ``method`` ("compare",
    "matmul") override the automatic choices (tests)."""
    n = z.shape[1]
    wnp = np.asarray(w, np.float32)
    pos = wnp > 0  # zero-weight samples add nothing to any count
    sg = signatures(z[pos])
    m = sg.m
    integer = bool(np.all(wnp == np.floor(wnp))) and float(wnp.astype(np.float64).sum()) < 2**24
    if not integer and m < n:
        # twins are co-clustered in every sample: with integer weights their count equals the total exactly,
        # otherwise the sweep's in-order float32 sum may miss the total by an ulp and give them a tiny positive
        # entropy; that rare case is left to the dense sweep, which reproduces it
        full = np.float32(0)
        for x in wnp:
            full = np.float32(full + x)
        if _entropies(np.array([full], np.float32), w)[0] > 0:
            return _dense_select(z, k, constraints, w, excl, block)
    wpos = wnp[pos]
    excl_keys = np.array(sorted(i * n + j for i, j in excl if 0 <= i < j < n), np.int64)
    comp, sizes, sample_of = components(sg.labels)
    if integer:
        table = _entropies(np.arange(int(wnp.astype(np.float64).sum()) + 1, dtype=np.float32), w)

        def counts_to_h(a, b, c):
            return table[np.rint(c).astype(np.int64)]
    else:

        def counts_to_h(a, b, c):  # the sweep's in-order float32 accumulation, then its entropy
            acc = np.zeros(len(a), np.float32)
            for s in range(len(wpos)):
                acc += np.where(sg.labels[a, s] == sg.labels[b, s], wpos[s], np.float32(0))
            return _entropies(acc, w)

    work = sizes[comp].sum(axis=1)  # co-occurrence updates per signature
    member = weighted_t = None
    if route != "dense" and m >= 2:
        member, weighted_t = _membership(comp, len(sizes), wpos)
        if route is None:
            route = "sparse" if _sparse_is_cheaper(member, weighted_t, work, len(wnp)) else "dense"
    if not integer:  # the matrix product is exact for integer weights only
        method = "compare"
    elif method is None:
        itemsize = 2 if wnp.max() <= 256 else 4
        big = _bucket(m) * _bucket(len(sizes) + 1) * itemsize > _MATMUL_BYTES
        method = "matmul" if jax.default_backend() != "cpu" and integer and not big else "compare"
    n_sig_pairs = m * (m - 1) // 2
    K = next_pow2(k + len(excl_keys))
    while True:
        K = min(K, max(n_sig_pairs, 1))
        if m < 2:
            h, a, b, exhaustive = np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64), True
        elif route == "sparse":
            h, a, b, n_pos = _sparse_top(member, weighted_t, work, counts_to_h, K)
            exhaustive = n_pos <= K
        else:
            h, a, b, exhaustive = _dense_top(sg, comp, sample_of, wnp, w, K, block, method)
        exhaustive = exhaustive or K >= n_sig_pairs
        out, done = from_levels(sg, h, a, b, exhaustive, k, constraints, excl_keys)
        if done:
            break
        K *= 4
    if len(out) < k:  # every positive-entropy pair is known or excluded: zero-entropy pairs in index order
        out += zero_fill(sg, a, b, k - len(out), constraints, excl_keys)
    return out
