"""Items labelled alike in every sample ("signatures") and the item pairs behind pairs of signatures.

Two items with one signature are co-clustered in every sample, so link entropies need only be computed per pair of
signatures. These helpers build the signatures of sampled labels, count and list (in index order, without building
anything ``n x n``) the item pairs behind a set of signature pairs, skip the pairs already known or excluded, and
fill up with pairs of zero entropy; :func:`jaxclust.active.entropy.top_entropy_pairs` is built on them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxclust.shapes import next_pow2

__all__ = [
    "ZERO_FILL_PAIRS",
    "Signatures",
    "components",
    "from_levels",
    "level_pairs",
    "n_item_pairs",
    "ranges",
    "signatures",
    "unknown_pairs",
    "zero_fill",
]

ZERO_FILL_PAIRS = 1 << 20  # pairs per chunk of the zero-entropy fill


class Signatures(NamedTuple):
    """Items grouped by their labels over the samples (``m`` signatures of ``n`` items)."""

    sig_of: np.ndarray  # (n,) int64 signature of each item, numbered in order of first occurrence
    labels: np.ndarray  # (m, S+) int32 labels of each signature over the samples with positive weight
    members: np.ndarray  # (n,) int64 items sorted by (signature, item)
    start: np.ndarray  # (m + 1,) int64 offset of each signature's members
    gkey: np.ndarray  # (n,) int64 ``signature * n + item`` of ``members``, ascending

    @property
    def m(self) -> int:
        return len(self.start) - 1

    @property
    def n(self) -> int:
        return len(self.sig_of)


def signatures(z: np.ndarray) -> Signatures:
    """The signatures of the labels ``z`` (S, n) of the samples with positive weight."""
    cols = np.ascontiguousarray(z.T)
    n = cols.shape[0]
    rows = cols.view(np.dtype((np.void, cols.dtype.itemsize * cols.shape[1]))).ravel()
    _, first, inv = np.unique(rows, return_index=True, return_inverse=True)
    by_first = np.argsort(first)
    rank = np.empty(len(first), np.int64)
    rank[by_first] = np.arange(len(first))
    sig_of = rank[inv.ravel()]
    members = np.argsort(sig_of, kind="stable").astype(np.int64)
    start = np.concatenate([[0], np.cumsum(np.bincount(sig_of, minlength=len(first)))]).astype(np.int64)
    return Signatures(sig_of, cols[first[by_first]], members, start, sig_of[members] * n + members)


def components(labels: np.ndarray):
    """Global component ids ``(m, S+)`` of each signature in each sample, component sizes (in signatures)
    and the sample of each component."""
    m, sp = labels.shape
    comp = np.empty((m, sp), np.int64)
    sizes, sample_of, off = [], [], 0
    for s in range(sp):
        _, inv, cnt = np.unique(labels[:, s], return_inverse=True, return_counts=True)
        comp[:, s] = inv.ravel() + off
        sizes.append(cnt)
        sample_of.append(np.full(len(cnt), s))
        off += len(cnt)
    return comp, np.concatenate(sizes), np.concatenate(sample_of)


def ranges(starts, lengths) -> np.ndarray:
    """``concatenate([arange(s, s + l) for s, l in zip(starts, lengths)])`` without a Python loop."""
    lengths = np.asarray(lengths, np.int64)
    if lengths.size == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.repeat(np.asarray(starts, np.int64) - (ends - lengths), lengths) + np.arange(ends[-1])


def level_pairs(sg: Signatures, a: np.ndarray, b: np.ndarray, limit: int):
    """The ``limit`` first item pairs ``i < j`` (index order) among those of signature pairs ``(a, b)``.

    ``a <= b`` (``a == b``: pairs of twins). Only the ``limit`` smallest rows that have a partner at all can
    hold them, and of each such row only its ``limit`` smallest partners in each partner signature.
    """
    n = sg.n
    ne = a != b
    src, dst = np.concatenate([a, b[ne]]), np.concatenate([b, a[ne]])
    o = np.argsort(src, kind="stable")
    src, dst = src[o], dst[o]
    usrc, ustart, udeg = np.unique(src, return_index=True, return_counts=True)
    largest = sg.members[sg.start[1:] - 1]
    lim = np.maximum.reduceat(largest[dst], ustart)  # rows of signature s below lim[s] have a partner
    n_rows = np.searchsorted(sg.gkey, usrc * n + lim, side="left") - sg.start[usrc]
    take = np.minimum(n_rows, limit)
    rows = sg.members[ranges(sg.start[usrc], take)]
    which = np.repeat(np.arange(len(usrc)), take)
    if len(rows) > limit:
        sel = np.argpartition(rows, limit - 1)[:limit]
        rows, which = rows[sel], which[sel]
    x = np.repeat(rows, udeg[which])
    t = dst[ranges(ustart[which], udeg[which])]
    first = np.searchsorted(sg.gkey, t * n + x, side="right")  # first partner of x in t that is above x
    cnt = np.minimum(sg.start[t + 1] - first, limit)
    key = np.repeat(x, cnt) * n + sg.members[ranges(first, cnt)]
    if len(key) > limit:
        key = np.partition(key, limit - 1)[:limit]
    key.sort()
    return key // n, key % n


def n_item_pairs(sg: Signatures, a: np.ndarray, b: np.ndarray) -> int:
    """How many item pairs the signature pairs ``(a, b)`` hold (``a == b``: pairs of twins)."""
    mult = np.diff(sg.start)
    ma, mb = mult[a], mult[b]
    return int(np.where(a == b, ma * (ma - 1) // 2, ma * mb).sum())


def unknown_pairs(i, j, n, constraints, excl_keys) -> np.ndarray:
    """Whether each pair ``(i, j)`` is neither known to ``constraints`` nor among ``excl_keys`` (``i * n + j``,
    sorted)."""
    ok = np.ones(len(i), bool)
    if constraints is not None and len(i):
        ok &= ~constraints.is_known(i, j)
    if len(excl_keys):
        key = i * n + j
        pos = np.minimum(np.searchsorted(excl_keys, key), len(excl_keys) - 1)
        ok &= excl_keys[pos] != key
    return ok


def from_levels(sg, h, a, b, exhaustive, k, constraints, excl_keys):
    """Walk the entropy levels of the signature pairs (sorted by h desc, a, b) down to ``k`` unknown pairs.

    Returns (pairs, done); not done when the last, truncated level (``exhaustive`` False) cannot decide.
    """
    out: list[tuple[int, int, float]] = []
    if len(h) == 0:
        return out, True
    cut = np.flatnonzero(h[1:] != h[:-1]) + 1
    starts, ends = np.r_[0, cut], np.r_[cut, len(h)]
    for t in range(len(starts)):
        s0, s1 = int(starts[t]), int(ends[t])
        need = k - len(out)
        la, lb = a[s0:s1], b[s0:s1]
        truncated = not exhaustive and t == len(starts) - 1
        cap = s1 - s0 if truncated else n_item_pairs(sg, la, lb)  # how many leading item pairs are certain
        limit = min(cap, next_pow2(need + len(excl_keys)))
        while True:
            i, j = level_pairs(sg, la, lb, limit)
            ok = unknown_pairs(i, j, sg.n, constraints, excl_keys)
            if ok.sum() >= need or limit >= cap:
                break
            limit = min(cap, 4 * limit)
        hv = float(h[s0])
        out.extend((int(x), int(y), hv) for x, y in zip(i[ok][:need], j[ok][:need], strict=True))
        if len(out) == k:
            return out, True
        if truncated:
            return out, False
    return out, True


def zero_fill(sg, a, b, need, constraints, excl_keys):
    """The first ``need`` unknown pairs of zero entropy in index order (all positive signature pairs given)."""
    n, m = sg.n, sg.m
    positive = np.sort(a * m + b)
    before = np.arange(n, dtype=np.int64)
    before = before * (n - 1) - before * (before - 1) // 2  # pairs in the rows above each row
    out: list[tuple[int, int, float]] = []
    i0 = 0
    while i0 < n - 1 and len(out) < need:
        i1 = int(np.searchsorted(before, before[i0] + ZERO_FILL_PAIRS, side="right")) - 1
        i1 = min(max(i1, i0 + 1), n - 1)
        rows = np.arange(i0, i1, dtype=np.int64)
        cnt = n - 1 - rows
        i, j = np.repeat(rows, cnt), ranges(rows + 1, cnt)
        sa, sb = sg.sig_of[i], sg.sig_of[j]
        key = np.minimum(sa, sb) * m + np.maximum(sa, sb)
        ok = unknown_pairs(i, j, n, constraints, excl_keys)
        if len(positive):
            pos = np.minimum(np.searchsorted(positive, key), len(positive) - 1)
            ok &= positive[pos] != key
        sel = np.flatnonzero(ok)[: need - len(out)]
        out.extend((int(x), int(y), 0.0) for x, y in zip(i[sel], j[sel], strict=True))
        i0 = i1
    return out
