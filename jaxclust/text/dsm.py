"""Distributional semantic space: PPMI word-by-word co-occurrence (Mitchell & Lapata 2010 parameters).

Rows are word forms (lower-cased), columns the ``n_columns`` most frequent words of the corpus (the seed uses
lemmas; we have no lemmatiser, so columns are word forms too). Co-occurrence counts every ordered pair of
tokens at most ``window // 2`` positions apart within a sentence (a window of 10 = 5 words either side);
values are positive pointwise mutual information::

    ppmi(w, c) = max(0, log( n(w, c) * N / (n(w) * n(c)) ))
    n(w) = sum_c n(w, c),  n(c) = sum_w n(w, c),  N = sum n

Counting is vectorised (one sparse COO sum per offset). Stop words are kept (Bullinaria & Levy 2007).

Example
-------
>>> space = build_space([["a", "b", "a", "c"], ["b", "c"]], window=2, n_columns=2)
>>> space.matrix.shape
(3, 2)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from jaxclust.errors import InvalidInputError

__all__ = ["DistributionalSpace", "build_space", "ppmi"]


class DistributionalSpace(NamedTuple):
    """A PPMI space.

    Attributes
    ----------
    rows : dict word -> row index.
    columns : list of the column words, most frequent first.
    matrix : (V, C) CSR float64 PPMI values.
    """

    rows: dict
    columns: list
    matrix: sp.csr_matrix

    def vector(self, word: str) -> np.ndarray:
        """(C,) dense PPMI row of ``word`` (zeros when unknown)."""
        r = self.rows.get(word.lower())
        if r is None:
            return np.zeros(self.matrix.shape[1])
        return self.matrix[r].toarray().ravel()


def ppmi(counts: sp.spmatrix) -> sp.csr_matrix:
    """Positive PMI of a (V, C) sparse count matrix (entries with count 0 stay 0)."""
    C = sp.csr_matrix(counts, dtype=np.float64)
    C.eliminate_zeros()
    total = C.sum()
    if total <= 0:
        raise InvalidInputError("counts: no co-occurrences to weight")
    rs = np.asarray(C.sum(axis=1)).ravel()
    cs = np.asarray(C.sum(axis=0)).ravel()
    coo = C.tocoo()
    val = np.log(coo.data * total / (rs[coo.row] * cs[coo.col]))
    keep = val > 0
    return sp.csr_matrix((val[keep], (coo.row[keep], coo.col[keep])), shape=C.shape)


def build_space(
    sentences: Iterable[Sequence[str]],
    window: int = 10,
    n_columns: int = 2000,
    min_count: int = 1,
    max_rows: int | None = None,
) -> DistributionalSpace:
    """Count co-occurrences in ``sentences`` (token lists) and weight them by PPMI.

    Parameters
    ----------
    sentences : iterable of token sequences (lower-cased here).
    window : total window width; pairs at most ``window // 2`` apart co-occur.
    n_columns : number of context words (columns): the most frequent ones.
    min_count : rows need at least this frequency.
    max_rows : keep only the most frequent ``max_rows`` row words (None: all).
    """
    half = int(window) // 2
    if half < 1:
        raise InvalidInputError(f"window: expected >= 2, got {window!r}")
    sents = [[t.lower() for t in s] for s in sentences]
    freq = Counter(t for s in sents for t in s)
    if not freq:
        raise InvalidInputError("sentences: empty corpus")
    ranked = sorted(freq, key=lambda w: (-freq[w], w))  # ties broken alphabetically: deterministic
    columns = ranked[:n_columns]
    row_words = [w for w in ranked if freq[w] >= min_count]
    if max_rows is not None:
        row_words = row_words[:max_rows]
    rows = {w: i for i, w in enumerate(row_words)}
    col_of = {w: i for i, w in enumerate(columns)}
    ids = np.array([rows.get(t, -1) for s in sents for t in s], dtype=np.int64)
    cids = np.array([col_of.get(t, -1) for s in sents for t in s], dtype=np.int64)
    sid = np.repeat(np.arange(len(sents)), [len(s) for s in sents])
    V, C = len(rows), len(columns)
    counts = sp.csr_matrix((V, C), dtype=np.float64)
    for o in range(1, half + 1):
        a, b = np.arange(ids.size - o), np.arange(o, ids.size)
        same = sid[a] == sid[b]
        a, b = a[same], b[same]
        for r, c in ((ids[a], cids[b]), (ids[b], cids[a])):  # both directions
            ok = (r >= 0) & (c >= 0)
            counts = counts + sp.csr_matrix((np.ones(ok.sum()), (r[ok], c[ok])), shape=(V, C))
    return DistributionalSpace(rows, columns, ppmi(counts))
