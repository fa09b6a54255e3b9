"""Documents for L3M and their padded batches.

A document is an ordered stream of ``m`` items. Its pair features are stored in *antecedent-window* layout: a
tensor ``features`` of shape ``(m, A, F)`` whose entry ``[i, a]`` describes the pair (item ``i``, candidate
antecedent ``j = i - 1 - a``), so column 0 is the immediately preceding item. ``A = m - 1`` keeps every
earlier item (the exact model); a smaller ``A`` (``max_antecedents``) keeps only the ``A`` nearest ones, a
standard saving for long documents. With a window, an item whose gold antecedents all lie outside it is
trained to take the dummy link.

:func:`pad_batch` stacks several documents into one :class:`DocBatch` of static shape ``(B, M, A, F)`` (sizes
rounded
up to powers of two so compiled functions are reused) with masks; jitted code only ever sees ``DocBatch``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from jaxclust.errors import InvalidInputError
from jaxclust.shapes import next_pow2

__all__ = ["Document", "DocBatch", "pad_batch", "window_from_full", "antecedent_index"]


def antecedent_index(m: int, n_ante: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidate antecedent indices ``(m, A)`` (``i - 1 - a``, clipped to 0) and their validity mask ``(m,
    A)``."""
    i = np.arange(m)[:, None]
    a = np.arange(n_ante)[None, :]
    j = i - 1 - a
    return np.maximum(j, 0).astype(np.int32), j >= 0


def window_from_full(full: np.ndarray, max_antecedents: int | None = None) -> np.ndarray:
    """Convert a full pair-feature tensor ``(m, m, F)`` (``[i, j]`` = phi(i, j), used for ``j < i``) to
    window layout.

    Returns
    -------
    ndarray (m, A, F)
        ``A = m - 1`` or ``min(m - 1, max_antecedents)``; invalid cells are zero.
    """
    full = np.asarray(full)
    if full.ndim != 3 or full.shape[0] != full.shape[1]:
        raise InvalidInputError(f"pair features must have shape (m, m, F), got {full.shape}")
    m = full.shape[0]
    n_ante = max(m - 1, 1) if max_antecedents is None else max(min(m - 1, int(max_antecedents)), 1)
    j, valid = antecedent_index(m, n_ante)
    out = full[np.arange(m)[:, None], j]
    out[~valid] = 0
    return out


@dataclass(frozen=True)
class Document:
    """One ordered stream of items with window-layout pair features.

    Parameters
    ----------
    features : ndarray (m, A, F)
        Pair features in window layout (see module docstring); any real dtype (uint8 for binary features saves
        memory; it is converted to float32 inside the jitted code).
    clusters : ndarray (m,) of int, optional
        Gold cluster id of every item (needed for training and scoring only).
    codes : ndarray (m, A) of int8, optional
        Constraint code of each (item, candidate) pair: 1 must-link, -1 cannot-link, 0 none (CL3M).
    doc_id : str, optional
        Name, used for caching and reports.
    """

    features: np.ndarray
    clusters: np.ndarray | None = None
    codes: np.ndarray | None = None
    doc_id: str | None = None

    def __post_init__(self):
        f = self.features
        name = f"document {self.doc_id!r}" if self.doc_id is not None else "document"
        if not isinstance(f, np.ndarray) or f.ndim != 3:
            raise InvalidInputError(
                f"{name}: features must be a 3-D array (m, A, F), got {getattr(f, 'shape', type(f))}"
            )
        if not (f.dtype == bool or np.issubdtype(f.dtype, np.integer) or np.issubdtype(f.dtype, np.floating)):
            raise InvalidInputError(
                f"{name}: features must be real numbers (bool/int/float), got dtype {f.dtype}"
            )
        if f.shape[0] < 1:
            raise InvalidInputError(f"{name}: features must have at least one item")
        if np.issubdtype(f.dtype, np.floating) and not np.all(np.isfinite(f)):
            bad = np.argwhere(~np.isfinite(f))[0]
            raise InvalidInputError(
                f"{name}: features contain NaN/inf at item {bad[0]}, antecedent slot {bad[1]}, "
                f"feature {bad[2]}"
            )
        if self.clusters is not None:
            c = np.asarray(self.clusters)
            if c.shape != (f.shape[0],) or not np.issubdtype(c.dtype, np.integer):
                raise InvalidInputError(
                    f"{name}: clusters must be {f.shape[0]} integer ids, got shape {c.shape} dtype {c.dtype}"
                )
        if self.codes is not None and np.asarray(self.codes).shape != f.shape[:2]:
            raise InvalidInputError(
                f"{name}: constraint codes must have shape {f.shape[:2]}, got {np.asarray(self.codes).shape}"
            )

    @property
    def n_items(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_antecedents(self) -> int:
        return int(self.features.shape[1])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[2])

    @classmethod
    def from_pairwise(cls, full, clusters=None, *, max_antecedents=None, codes_full=None, doc_id=None):
        """Build from a full ``(m, m, F)`` pair tensor (``[i, j]`` for ``j < i``) and optional ``(m, m)``
        codes."""
        feats = window_from_full(full, max_antecedents)
        codes = None
        if codes_full is not None:
            codes = window_from_full(np.asarray(codes_full)[..., None], max_antecedents)[..., 0].astype(
                np.int8
            )
        return cls(feats, None if clusters is None else np.asarray(clusters), codes, doc_id)

    @classmethod
    def from_function(cls, items, pair_features, clusters=None, *, max_antecedents=None, doc_id=None):
        """Build from items and a vectorised ``pair_features(items, i, j) -> (P, F)`` over index arrays ``i,
        j``."""
        m = len(items)
        n_ante = max(m - 1, 1) if max_antecedents is None else max(min(m - 1, int(max_antecedents)), 1)
        j, valid = antecedent_index(m, n_ante)
        ii = np.broadcast_to(np.arange(m)[:, None], j.shape)
        flat = np.asarray(pair_features(items, ii[valid], j[valid]))
        feats = np.zeros((m, n_ante, flat.shape[-1] if flat.ndim == 2 else 1), flat.dtype)
        feats[valid] = flat.reshape(int(valid.sum()), -1)
        return cls(feats, None if clusters is None else np.asarray(clusters), None, doc_id)

    def gold_links(self) -> tuple[np.ndarray, np.ndarray]:
        """Admissible gold left-links: ``gold (m, A)`` (same cluster, inside the window) and ``new (m,)``."""
        if self.clusters is None:
            raise InvalidInputError(f"document {self.doc_id!r} has no gold clusters")
        c = np.asarray(self.clusters)
        j, valid = antecedent_index(self.n_items, self.n_antecedents)
        gold = valid & (c[j] == c[:, None])
        return gold, ~gold.any(axis=1)


class DocBatch(NamedTuple):
    """Padded documents, the only input of the jitted L3M code. ``B`` documents, ``M`` items, ``A``
    candidates.

    Attributes
    ----------
    features : (B, M, A, F) pair features (any real dtype)
    cand : (B, M, A) bool, candidate exists (``j = i - 1 - a >= 0``, real item)
    gold : (B, M, A) bool, candidate is a gold antecedent
    gold_new : (B, M) bool, the dummy link is the gold link (first item of its cluster in the window)
    item : (B, M) bool, real (non-padding) item
    codes : (B, M, A) int8 constraint codes (1 must, -1 cannot, 0 none)
    """

    features: np.ndarray
    cand: np.ndarray
    gold: np.ndarray
    gold_new: np.ndarray
    item: np.ndarray
    codes: np.ndarray


def pad_batch(
    docs, n_docs: int | None = None, n_items: int | None = None, n_ante: int | None = None, dtype=None
) -> DocBatch:
    """Stack documents into a :class:`DocBatch`, padding to powers of two (or the sizes given).

    Parameters
    ----------
    docs : sequence of Document
    n_docs, n_items, n_ante : int, optional
        Padded sizes ``B, M, A``; default: the next power of two of the largest document (``B`` = len(docs)).
    dtype : numpy dtype, optional
        Feature dtype of the batch (default: the dtype of the first document's features).
    """
    docs = list(docs)
    if not docs:
        raise InvalidInputError("pad_batch needs at least one document")
    n_feat = docs[0].n_features
    for d in docs:
        if d.n_features != n_feat:
            raise InvalidInputError(f"document {d.doc_id!r} has {d.n_features} features, expected {n_feat}")
    b = len(docs) if n_docs is None else n_docs
    m = n_items or next_pow2(max(d.n_items for d in docs), 8)
    a = n_ante or next_pow2(max(d.n_antecedents for d in docs), 4)
    dtype = docs[0].features.dtype if dtype is None else dtype
    feats = np.zeros((b, m, a, n_feat), dtype)
    cand = np.zeros((b, m, a), bool)
    gold = np.zeros((b, m, a), bool)
    gold_new = np.ones((b, m), bool)
    item = np.zeros((b, m), bool)
    codes = np.zeros((b, m, a), np.int8)
    for k, d in enumerate(docs):
        mi, ai = d.n_items, min(d.n_antecedents, a)
        feats[k, :mi, :ai] = d.features[:, :ai]
        _, valid = antecedent_index(mi, ai)
        cand[k, :mi, :ai] = valid
        item[k, :mi] = True
        if d.clusters is not None:
            c = np.asarray(d.clusters)
            j, _ = antecedent_index(mi, ai)
            g = valid & (c[j] == c[:, None])
            gold[k, :mi, :ai] = g
            gold_new[k, :mi] = ~g.any(axis=1)
        if d.codes is not None:
            codes[k, :mi, :ai] = np.asarray(d.codes)[:, :ai]
    return DocBatch(feats, cand, gold, gold_new, item, codes)
