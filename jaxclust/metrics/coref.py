"""Coreference metrics with the semantics of the CoNLL reference scorer (v8.01): MUC, B³, CEAFm, CEAFe,
BLANC, LEA.

A *clustering* of one document is a sequence of entities, each a set (or list) of hashable mention ids (token
spans ``(start, end)``, strings, ints...). Every metric comes in two forms:

- ``metric(key, response) -> (recall, precision, f1)`` for one document;
- ``metric_counts(key, response) -> (recall_num, recall_den, precision_num, precision_den)``, the numbers the
  reference scorer sums over documents; :func:`corpus_scores` micro-averages them
  (R = Σ num / Σ den, as ``scorer.pl`` does), which differs from averaging per-document scores.

Semantics (docs/algorithms/metrics.md; the CoNLL reference scorer, ``lib/CorScorer.pm``):

- Mentions match by identity; response mentions absent from the key ("twinless") and key mentions absent from
  the response are allowed.
- A mention repeated in the response is kept in its first entity only (the reference de-duplicates response
  mentions; it keeps repeated twinless mentions, which we also de-duplicate). A mention in two key entities is
  an error. Empty entities are dropped.
- MUC (Vilain et al. 1995): ``R = Σ_k (|k| - |p(k, R)|) / Σ_k (|k| - 1)`` with missing mentions as their own
  parts; P symmetric. The Cai & Strube (2010) steps the reference applies for MUC (missing key mentions added
  as response singletons, twinless response singletons dropped) do not change these sums.
- B³, CEAFm, CEAFe on the original (de-duplicated) chains; CEAF alignment by
  ``scipy.optimize.linear_sum_assignment``.
- BLANC (Luo et al. 2014 extension to system mentions): coreference links C and non-coreference links N are
  the mention pairs within / across entities of each side; ``R_c = |C_k ∩ C_r| / |C_k|``, etc. If the key
  has no coreference link the score is the non-coreference part alone, if it has no non-coreference link the
  coreference part alone, and 0 if it has neither (reference ``ComputeBLANCFromCounts``).
- LEA (Moosavi & Strube 2016) as in coval: an entity's importance is its size, its resolution the fraction of
  its links found on the other side; a singleton has one self-link, resolved iff its mention is a singleton
  on the other side too.

Precision/recall with a zero denominator are 0; F1 = 2PR/(P+R), 0 when P + R = 0. Scores are fractions in
[0, 1] (the reference prints percentages).

Examples
--------
>>> key = [{"a"}, {"b", "c"}, {"d", "e", "f"}]
>>> response = [{"a"}, {"d", "e"}]
>>> muc(key, response)
(0.3333333333333333, 1.0, 0.5)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_labels

__all__ = [
    "prf",
    "muc",
    "muc_counts",
    "b_cubed",
    "b_cubed_counts",
    "ceaf_m",
    "ceaf_m_counts",
    "ceaf_e",
    "ceaf_e_counts",
    "blanc",
    "blanc_counts",
    "blanc_from_counts",
    "lea",
    "lea_counts",
    "conll_f1",
    "corpus_scores",
    "clusters_from_labels",
    "METRICS",
]

Clustering = Sequence[Iterable[Hashable]]


class _Aligned(NamedTuple):
    """Key and response of one document reduced to entity sizes and their overlap table."""

    key_sizes: np.ndarray  # (K,) int64
    resp_sizes: np.ndarray  # (R,) int64
    rows: np.ndarray  # (nnz,) key entity of each non-empty overlap cell
    cols: np.ndarray  # (nnz,) response entity
    overlap: np.ndarray  # (nnz,) |k ∩ r| > 0
    # for singleton entities: does the mention sit in a singleton on the other side (LEA self-links)
    key_single_resolved: int
    resp_single_resolved: int


def _entities(clustering: Any, name: str) -> list[list[Hashable]]:
    if isinstance(clustering, str | bytes) or not isinstance(clustering, Iterable):
        raise InvalidInputError(
            f"{name}: expected a sequence of entities (sets of mention ids), got {type(clustering).__name__}"
        )
    out = []
    for i, entity in enumerate(clustering):
        if isinstance(entity, str | bytes) or not isinstance(entity, Iterable):
            raise InvalidInputError(
                f"{name}: entity {i} must be a set or list of mention ids, got "
                f"{type(entity).__name__} {entity!r}"
            )
        try:
            members = list(dict.fromkeys(entity))  # de-duplicate, keep order
        except TypeError as exc:
            raise InvalidInputError(f"{name}: entity {i} has an unhashable mention id ({exc})") from exc
        out.append(members)
    return out


def _align(key: Clustering, response: Clustering) -> _Aligned:
    key_e = _entities(key, "key")
    resp_e = _entities(response, "response")
    key_of: dict[Hashable, int] = {}
    key_clean = []
    for i, entity in enumerate(key_e):
        for m in entity:
            if m in key_of:
                raise InvalidInputError(
                    f"key: mention {m!r} appears in entity {key_of[m]} and in entity {i}; key "
                    f"entities must be disjoint"
                )
            key_of[m] = len(key_clean) if entity else -1
        if entity:
            key_clean.append(entity)
    seen: set[Hashable] = set()
    resp_clean = []
    for entity in resp_e:
        kept = [m for m in entity if m not in seen]  # a repeated response mention stays in its first entity
        seen.update(kept)
        if kept:
            resp_clean.append(kept)
    resp_of = {m: j for j, entity in enumerate(resp_clean) for m in entity}
    key_sizes = np.array([len(e) for e in key_clean], dtype=np.int64)
    resp_sizes = np.array([len(e) for e in resp_clean], dtype=np.int64)
    pairs = [(key_of[m], j) for m, j in resp_of.items() if m in key_of]
    n_resp = max(len(resp_clean), 1)
    if pairs:
        codes = np.array([k * n_resp + j for k, j in pairs], dtype=np.int64)
        cells, overlap = np.unique(codes, return_counts=True)
        rows, cols = np.divmod(cells, n_resp)
    else:
        rows = cols = overlap = np.zeros(0, dtype=np.int64)
    key_single_resolved = sum(
        1 for e in key_clean if len(e) == 1 and e[0] in resp_of and resp_sizes[resp_of[e[0]]] == 1
    )
    resp_single_resolved = sum(
        1 for e in resp_clean if len(e) == 1 and e[0] in key_of and key_sizes[key_of[e[0]]] == 1
    )
    return _Aligned(
        key_sizes, resp_sizes, rows, cols, overlap.astype(np.int64), key_single_resolved, resp_single_resolved
    )


def prf(
    recall_num: float, recall_den: float, precision_num: float, precision_den: float
) -> tuple[float, float, float]:
    """(R, P, F1) from counts; a zero denominator gives 0 (as the reference scorer)."""
    r = recall_num / recall_den if recall_den else 0.0
    p = precision_num / precision_den if precision_den else 0.0
    f = 2.0 * p * r / (p + r) if p + r else 0.0
    return float(r), float(p), float(f)


# ---------------------------------------------------------------- MUC


def _muc_counts(t: _Aligned) -> tuple[float, float, float, float]:
    correct = int(t.overlap.sum() - t.overlap.size)  # Σ over non-empty cells of (|k ∩ r| - 1)
    key_links = int(np.sum(t.key_sizes - 1))
    resp_links = int(np.sum(t.resp_sizes - 1))
    return correct, key_links, correct, resp_links


def muc_counts(key: Clustering, response: Clustering) -> tuple[float, float, float, float]:
    """MUC counts ``(correct links, key links, correct links, response links)``."""
    return _muc_counts(_align(key, response))


def muc(key: Clustering, response: Clustering) -> tuple[float, float, float]:
    """MUC (R, P, F1) of one document (Vilain et al. 1995); 0 when every key or response entity is a
    singleton."""
    return prf(*muc_counts(key, response))


# ---------------------------------------------------------------- B³


def _b_cubed_counts(t: _Aligned) -> tuple[float, float, float, float]:
    sq = t.overlap.astype(np.float64) ** 2
    r_num = float(np.sum(sq / t.key_sizes[t.rows])) if sq.size else 0.0
    p_num = float(np.sum(sq / t.resp_sizes[t.cols])) if sq.size else 0.0
    return r_num, int(t.key_sizes.sum()), p_num, int(t.resp_sizes.sum())


def b_cubed_counts(key: Clustering, response: Clustering) -> tuple[float, float, float, float]:
    """B³ counts ``(Σ |k∩r|²/|k|, #key mentions, Σ |k∩r|²/|r|, #response mentions)``."""
    return _b_cubed_counts(_align(key, response))


def b_cubed(key: Clustering, response: Clustering) -> tuple[float, float, float]:
    """B³ (R, P, F1) of one document (Bagga & Baldwin 1998)."""
    return prf(*b_cubed_counts(key, response))


# ---------------------------------------------------------------- CEAF


def _ceaf_similarity(t: _Aligned, entity_based: bool) -> float:
    if t.overlap.size == 0:
        return 0.0
    from scipy.optimize import linear_sum_assignment  # deferred: scipy.optimize costs ~1 s to import

    # only key/response entities that overlap something can gain from the alignment
    krows, kinv = np.unique(t.rows, return_inverse=True)
    rcols, rinv = np.unique(t.cols, return_inverse=True)
    sim = np.zeros((krows.size, rcols.size), dtype=np.float64)
    if entity_based:
        vals = 2.0 * t.overlap / (t.key_sizes[t.rows] + t.resp_sizes[t.cols])
    else:
        vals = t.overlap.astype(np.float64)
    sim[kinv.ravel(), rinv.ravel()] = vals
    r, c = linear_sum_assignment(sim, maximize=True)
    return float(sim[r, c].sum())


def _ceaf_m_counts(t: _Aligned) -> tuple[float, float, float, float]:
    s = _ceaf_similarity(t, entity_based=False)
    return s, int(t.key_sizes.sum()), s, int(t.resp_sizes.sum())


def _ceaf_e_counts(t: _Aligned) -> tuple[float, float, float, float]:
    s = _ceaf_similarity(t, entity_based=True)
    return s, int(t.key_sizes.size), s, int(t.resp_sizes.size)


def ceaf_m_counts(key: Clustering, response: Clustering) -> tuple[float, float, float, float]:
    """CEAFm counts ``(Σ φ3 over the best alignment, #key mentions, same, #response mentions)``, φ3 =
    |k∩r|."""
    return _ceaf_m_counts(_align(key, response))


def ceaf_m(key: Clustering, response: Clustering) -> tuple[float, float, float]:
    """Mention-based CEAF (R, P, F1) of one document (Luo 2005)."""
    return prf(*ceaf_m_counts(key, response))


def ceaf_e_counts(key: Clustering, response: Clustering) -> tuple[float, float, float, float]:
    """CEAFe counts ``(Σ φ4 over the best alignment, #key entities, same, #response entities)``,
    φ4 = 2|k∩r| / (|k| + |r|)."""
    return _ceaf_e_counts(_align(key, response))


def ceaf_e(key: Clustering, response: Clustering) -> tuple[float, float, float]:
    """Entity-based CEAF (R, P, F1) of one document (Luo 2005)."""
    return prf(*ceaf_e_counts(key, response))


# ---------------------------------------------------------------- BLANC


def _pairs(x: np.ndarray | int) -> int:
    x = np.asarray(x, dtype=np.int64)
    return int(np.sum(x * (x - 1) // 2))


def _blanc_counts(t: _Aligned) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    c_k, c_r = _pairs(t.key_sizes), _pairs(t.resp_sizes)
    n_k = _pairs(int(t.key_sizes.sum())) - c_k
    n_r = _pairs(int(t.resp_sizes.sum())) - c_r
    tp_c = _pairs(t.overlap)
    # non-coreference links in both: pairs of common mentions split on both sides (inclusion-exclusion)
    common = int(t.overlap.sum())
    same_k = (
        _pairs(np.bincount(t.rows, weights=t.overlap, minlength=1).astype(np.int64)) if t.overlap.size else 0
    )
    same_r = (
        _pairs(np.bincount(t.cols, weights=t.overlap, minlength=1).astype(np.int64)) if t.overlap.size else 0
    )
    tp_n = _pairs(common) - same_k - same_r + tp_c
    return (tp_c, c_k, tp_c, c_r), (tp_n, n_k, tp_n, n_r)


def blanc_counts(
    key: Clustering, response: Clustering
) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    """BLANC counts: ``((|C_k∩C_r|, |C_k|, |C_k∩C_r|, |C_r|), (|N_k∩N_r|, |N_k|, |N_k∩N_r|, |N_r|))``.

    The first tuple is over coreference links, the second over non-coreference links; each has the
    (recall_num, recall_den, precision_num, precision_den) layout of the other ``*_counts`` functions.
    """
    return _blanc_counts(_align(key, response))


def blanc_from_counts(coref: Sequence[float], non_coref: Sequence[float]) -> tuple[float, float, float]:
    """BLANC (R, P, F) from link counts, with the reference's edge cases (``ComputeBLANCFromCounts``)."""
    r_c, p_c, f_c = prf(*coref)
    r_n, p_n, f_n = prf(*non_coref)
    key_c, key_n = coref[1], non_coref[1]
    if key_c == 0 and key_n == 0:
        return 0.0, 0.0, 0.0
    if key_c == 0:
        return r_n, p_n, f_n
    if key_n == 0:
        return r_c, p_c, f_c
    return (r_c + r_n) / 2.0, (p_c + p_n) / 2.0, (f_c + f_n) / 2.0


def blanc(key: Clustering, response: Clustering) -> tuple[float, float, float]:
    """BLANC (R, P, F) of one document (Recasens & Hovy 2011; Luo et al. 2014 for system mentions)."""
    return blanc_from_counts(*blanc_counts(key, response))


# ---------------------------------------------------------------- LEA


def _lea_side(sizes: np.ndarray, index: np.ndarray, overlap: np.ndarray, singles_resolved: int) -> float:
    """Σ_e |e| · resolved(e) / links(e) for the entities of one side."""
    links = np.where(sizes > 1, sizes * (sizes - 1) / 2.0, 1.0)
    found = np.zeros(sizes.size, dtype=np.float64)
    if overlap.size:
        np.add.at(found, index, overlap * (overlap - 1) / 2.0)  # links of e recovered inside one other entity
    num = float(np.sum(np.where(sizes > 1, sizes * found / links, 0.0)))
    return num + float(singles_resolved)  # a singleton contributes 1·(1/1) when resolved


def _lea_counts(t: _Aligned) -> tuple[float, float, float, float]:
    r_num = _lea_side(t.key_sizes, t.rows, t.overlap, t.key_single_resolved)
    p_num = _lea_side(t.resp_sizes, t.cols, t.overlap, t.resp_single_resolved)
    return r_num, int(t.key_sizes.sum()), p_num, int(t.resp_sizes.sum())


def lea_counts(key: Clustering, response: Clustering) -> tuple[float, float, float, float]:
    """LEA counts ``(Σ_k |k| res(k), Σ_k |k|, Σ_r |r| res(r), Σ_r |r|)``."""
    return _lea_counts(_align(key, response))


def lea(key: Clustering, response: Clustering) -> tuple[float, float, float]:
    """LEA (R, P, F1) of one document (Moosavi & Strube 2016, with coval's singleton self-links)."""
    return prf(*lea_counts(key, response))


# ---------------------------------------------------------------- aggregates


def conll_f1(key: Clustering, response: Clustering) -> float:
    """CoNLL-2012 score of one document: mean of the MUC, B³ and CEAFe F1."""
    return (muc(key, response)[2] + b_cubed(key, response)[2] + ceaf_e(key, response)[2]) / 3.0


_COUNTS = {
    "muc": _muc_counts,
    "b_cubed": _b_cubed_counts,
    "ceaf_m": _ceaf_m_counts,
    "ceaf_e": _ceaf_e_counts,
    "lea": _lea_counts,
}

METRICS = ("muc", "b_cubed", "ceaf_m", "ceaf_e", "lea", "blanc")


def corpus_scores(keys: Sequence[Clustering], responses: Sequence[Clustering]) -> dict[str, Any]:
    """Micro-averaged corpus scores, as the reference scorer totals them.

    Numerators and denominators of recall and precision are summed over documents before dividing; BLANC sums
    its coreference and non-coreference link counts separately and then applies the usual edge cases.

    Parameters
    ----------
    keys, responses : sequences of clusterings, one per document, aligned by position.

    Returns
    -------
    dict
        ``{"muc", "b_cubed", "ceaf_m", "ceaf_e", "lea", "blanc"} -> (R, P, F1)`` and ``"conll_f1"`` -> float,
        the mean of the MUC, B³ and CEAFe corpus F1.
    """
    keys, responses = list(keys), list(responses)
    if len(keys) != len(responses):
        raise InvalidInputError(
            f"responses: expected {len(keys)} documents (one per key document), got {len(responses)}"
        )
    sums = {m: np.zeros(4) for m in _COUNTS}
    blanc_c, blanc_n = np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64)
    for d, (key, response) in enumerate(zip(keys, responses, strict=True)):
        try:
            t = _align(key, response)
        except InvalidInputError as exc:
            raise InvalidInputError(f"document {d}: {exc}") from exc
        for m, fn in _COUNTS.items():
            sums[m] += np.asarray(fn(t), dtype=np.float64)
        c, n = _blanc_counts(t)
        blanc_c += np.asarray(c, dtype=np.int64)
        blanc_n += np.asarray(n, dtype=np.int64)
    out: dict[str, Any] = {m: prf(*s.tolist()) for m, s in sums.items()}
    out["blanc"] = blanc_from_counts(blanc_c.tolist(), blanc_n.tolist())
    out["conll_f1"] = (out["muc"][2] + out["b_cubed"][2] + out["ceaf_e"][2]) / 3.0
    return {m: out[m] for m in (*METRICS, "conll_f1")}


def clusters_from_labels(labels: Any, ids: Sequence[Hashable] | None = None) -> list[set]:
    """Entities (sets of mention ids) from one label per mention; entities ordered by first mention.

    Parameters
    ----------
    labels : array-like of int, shape (n,)
        Entity label of each mention.
    ids : sequence of hashable, length n, optional
        Mention ids (default ``0..n-1``).
    """

    y = check_labels(labels, name="labels")
    if ids is None:
        ids = range(y.shape[0])
    elif len(ids) != y.shape[0]:
        raise InvalidInputError(f"ids: expected {y.shape[0]} mention ids (one per label), got {len(ids)}")
    out: dict[int, set] = {}
    for lab, m in zip(y.tolist(), ids, strict=True):
        out.setdefault(lab, set()).add(m)
    return list(out.values())
