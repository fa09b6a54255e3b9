"""Second-order context vectors of word instances and the mixed representation (Akkaya, Wiebe & Mihalcea
2014).

* additive (Schütze 1998): the mean of the PPMI rows of the context words;
* multiplicative (Mitchell & Lapata 2010; Akkaya et al. 2012): their element-wise product;
* mixed: each block unit-normalised row-wise, then concatenated.

Context words are the tokens at most ``window`` positions from the target (``None``: the whole context), the
target itself excluded, lower-cased, and only those with a row in the space. Both compositions are computed
with sparse matrix products: additive = ``W @ M / |context|``; multiplicative = ``exp(W @ log M)`` on the
columns where every context word has a non-zero value (``W @ (M != 0)`` counts them), zero elsewhere.

Example
-------
>>> import scipy.sparse as sp
>>> from jaxclust.text.dsm import DistributionalSpace
>>> S = DistributionalSpace({"a": 0, "b": 1}, ["x", "y"], sp.csr_matrix([[1.0, 2.0], [3.0, 0.0]]))
>>> context_vectors([(["a", "T", "b"], 1)], S, mode="mul").toarray()
array([[3., 0.]])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize

from jaxclust.errors import InvalidInputError
from jaxclust.text.dsm import DistributionalSpace

__all__ = ["context_vectors", "mixed"]


def _context_matrix(instances, space: DistributionalSpace, window: int | None) -> sp.csr_matrix:
    """(n, V) counts of in-space context words per instance."""
    rows, cols = [], []
    count = 0
    for r, (tokens, head) in enumerate(instances):
        lo = 0 if window is None else max(0, head - window)
        hi = len(tokens) if window is None else min(len(tokens), head + window + 1)
        for j in range(lo, hi):
            if j != head:
                c = space.rows.get(tokens[j].lower())
                if c is not None:
                    rows.append(r)
                    cols.append(c)
        count = r + 1
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(count, space.matrix.shape[0]))


def context_vectors(
    instances: Iterable[tuple[Sequence[str], int]],
    space: DistributionalSpace,
    mode: str = "add",
    window: int | None = 5,
) -> sp.csr_matrix:
    """(n, C) second-order vectors of ``(tokens, head_index)`` instances.

    Parameters
    ----------
    instances : iterable of (tokens, index of the target).
    space : the PPMI space.
    mode : "add" (mean of rows) or "mul" (element-wise product of rows).
    window : context words at most this far from the target (None: all).

    Notes
    -----
    Instances without any in-space context word get a zero row.
    """
    W = _context_matrix(list(instances), space, window)
    M = space.matrix.tocsr()
    n_words = np.asarray(W.sum(axis=1)).ravel()
    if mode == "add":
        out = W @ M
        scale = 1.0 / np.maximum(n_words, 1.0)
        return sp.csr_matrix(sp.diags(scale) @ out)
    if mode == "mul":
        nz = M.copy()
        nz.data = np.ones_like(nz.data)
        logm = M.copy()
        logm.data = np.log(logm.data)
        hits = (W @ nz).tocsr()  # how many context words are non-zero in each column (with multiplicity)
        logs = (W @ logm).tocsr()
        full = hits.multiply(1.0 / np.maximum(n_words, 1.0)[:, None]).tocsr()
        full.data = (np.abs(full.data - 1.0) < 1e-9).astype(np.float64)  # 1 where every word is non-zero
        full.eliminate_zeros()
        mask = full.multiply((n_words > 0)[:, None]).tocoo()
        vals = np.asarray(logs[mask.row, mask.col]).ravel()  # log of the product on the kept columns
        return sp.csr_matrix((np.exp(vals), (mask.row, mask.col)), shape=(W.shape[0], M.shape[1]))
    raise InvalidInputError(f"mode: expected 'add' or 'mul', got {mode!r}")


def mixed(*blocks) -> sp.csr_matrix:
    """Row-wise unit-normalised blocks concatenated side by side (the seed's ``mix rep``)."""
    if not blocks:
        raise InvalidInputError("blocks: need at least one representation")
    n = blocks[0].shape[0]
    for i, b in enumerate(blocks):
        if b.shape[0] != n:
            raise InvalidInputError(f"blocks: block {i} has {b.shape[0]} rows, block 0 has {n}")
    return sp.hstack([normalize(sp.csr_matrix(b, dtype=np.float64)) for b in blocks]).tocsr()
