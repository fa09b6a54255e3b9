"""Partition-comparison metrics on the host (NumPy): V-measure, V-beta, VI, purity, ARI, NMI, pair accuracy.

All functions take two 1-D integer label arrays of equal length (any integer ids: negative, sparse or unused
ids are fine) and build a *sparse* contingency table with ``np.unique`` over combined codes, so memory is
O(non-empty cells) and time O(N log N) even for 1e6 all-singleton labelings. Natural logarithms throughout.

Edge cases follow scikit-learn 1.9 (``sklearn/metrics/cluster/_supervised.py``): empty input gives
h = c = V = 1, NMI = 1, ARI = 1; a labeling with zero entropy gives h (resp. c) = 1; NMI is 1 when both sides
have a single cluster and 0 when the mutual information is 0; ARI is 1 when the two partitions are identical.

Notation (docs/algorithms/metrics.md): n_ck counts items of class c in cluster k, a_c = Σ_k n_ck, b_k = Σ_c n_ck,
N = Σ n_ck.

Examples
--------
>>> from jaxclust.metrics import v_measure, purity
>>> round(v_measure([0, 0, 1, 1], [5, 5, 7, 7]), 6)
1.0
>>> purity([0, 0, 1, 1], [0, 0, 0, 0])
0.5
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_labels, check_positive

__all__ = [
    "Contingency",
    "contingency",
    "entropy",
    "mutual_info",
    "homogeneity_completeness_v_measure",
    "homogeneity",
    "completeness",
    "v_measure",
    "v_beta",
    "variation_of_information",
    "purity",
    "inverse_purity",
    "adjusted_rand_index",
    "normalized_mutual_info",
    "pairwise_link_accuracy",
    "pair_confusion",
]


class Contingency(NamedTuple):
    """Sparse contingency table of two labelings.

    Attributes
    ----------
    counts : ndarray, shape (nnz,), int64
        The non-zero cells n_ck.
    rows, cols : ndarray, shape (nnz,), int64
        Class index (0..C-1) and cluster index (0..K-1) of each non-zero cell.
    class_sizes : ndarray, shape (C,), int64
        a_c, for the classes that occur (unused ids are dropped).
    cluster_sizes : ndarray, shape (K,), int64
        b_k, for the clusters that occur.
    n : int
        Number of items N.
    """

    counts: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    class_sizes: np.ndarray
    cluster_sizes: np.ndarray
    n: int

    @property
    def n_classes(self) -> int:
        return int(self.class_sizes.shape[0])

    @property
    def n_clusters(self) -> int:
        return int(self.cluster_sizes.shape[0])


def _check_pair(labels_true: Any, labels_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    y = check_labels(labels_true, name="labels_true")
    z = check_labels(labels_pred, n=y.shape[0], name="labels_pred")
    return y, z


def contingency(labels_true: Any, labels_pred: Any) -> Contingency:
    """Sparse contingency table of ``labels_true`` (rows) against ``labels_pred`` (columns).

    Parameters
    ----------
    labels_true, labels_pred : array-like of int, shape (n,)

    Returns
    -------
    Contingency
    """
    y, z = _check_pair(labels_true, labels_pred)
    return _contingency(y, z)


def _contingency(y: np.ndarray, z: np.ndarray) -> Contingency:
    ci = np.unique(y, return_inverse=True)[1].ravel().astype(np.int64)
    ki = np.unique(z, return_inverse=True)[1].ravel().astype(np.int64)
    n_classes = int(ci.max()) + 1 if ci.size else 0
    n_clusters = int(ki.max()) + 1 if ki.size else 0
    # one int64 code per cell; C*K <= N^2 < 2^63 for any N that fits in memory
    codes, counts = np.unique(ci * n_clusters + ki, return_counts=True)
    rows, cols = np.divmod(codes, max(n_clusters, 1))
    return Contingency(
        counts=counts.astype(np.int64),
        rows=rows.astype(np.int64),
        cols=cols.astype(np.int64),
        class_sizes=np.bincount(ci, minlength=n_classes).astype(np.int64),
        cluster_sizes=np.bincount(ki, minlength=n_clusters).astype(np.int64),
        n=int(y.shape[0]),
    )


def _entropy_of_sizes(sizes: np.ndarray) -> float:
    """H = log N - Σ s log s / N for positive sizes s summing to N (natural log)."""
    if sizes.size <= 1:
        return 0.0
    s = sizes.astype(np.float64)
    total = s.sum()
    return float(max(0.0, -np.sum((s / total) * (np.log(s) - math.log(total)))))


def _mutual_info(t: Contingency) -> float:
    """I(C;K) = Σ (n_ck/N) log(N n_ck / (a_c b_k)); 0 when either side has a single label."""
    if t.n_classes <= 1 or t.n_clusters <= 1:
        return 0.0
    n = float(t.n)
    nck = t.counts.astype(np.float64)
    # products in float64: a_c * b_k <= N^2, exact below 2^53
    outer = t.class_sizes[t.rows].astype(np.float64) * t.cluster_sizes[t.cols].astype(np.float64)
    terms = (nck / n) * (np.log(nck) + math.log(n) - np.log(outer))
    return float(max(0.0, terms.sum()))


def entropy(labels: Any) -> float:
    """Shannon entropy (natural log) of a labeling; 0 for one label, and (like scikit-learn) 1 for empty
    input.

    Parameters
    ----------
    labels : array-like of int, shape (n,)
    """
    y = check_labels(labels, name="labels")
    if y.size == 0:
        return 1.0
    return _entropy_of_sizes(np.unique(y, return_counts=True)[1])


def mutual_info(labels_true: Any, labels_pred: Any) -> float:
    """Mutual information I(C;K) in nats (scikit-learn's ``mutual_info_score``)."""
    y, z = _check_pair(labels_true, labels_pred)
    if y.size == 0:
        return 0.0
    return _mutual_info(_contingency(y, z))


def _hcv(t: Contingency, beta: float) -> tuple[float, float, float]:
    if t.n == 0:
        return 1.0, 1.0, 1.0
    h_c = _entropy_of_sizes(t.class_sizes)
    h_k = _entropy_of_sizes(t.cluster_sizes)
    mi = _mutual_info(t)
    h = mi / h_c if h_c else 1.0
    c = mi / h_k if h_k else 1.0
    # I <= min(H(C), H(K)) mathematically; rounding can overshoot by an ulp
    h, c = min(h, 1.0), min(c, 1.0)
    if h + c == 0.0:
        return h, c, 0.0
    return h, c, (1.0 + beta) * h * c / (beta * h + c)


def homogeneity_completeness_v_measure(
    labels_true: Any, labels_pred: Any, beta: float = 1.0
) -> tuple[float, float, float]:
    """Homogeneity, completeness and V-measure (Rosenberg & Hirschberg 2007).

    h = I/H(C), c = I/H(K), V_β = (1+β) h c / (β h + c); β > 1 weights completeness more.

    Parameters
    ----------
    labels_true, labels_pred : array-like of int, shape (n,)
    beta : float
        Weight of completeness; must be >= 0.

    Returns
    -------
    (h, c, v) : tuple of float
    """
    y, z = _check_pair(labels_true, labels_pred)
    beta = _check_beta(beta)
    return _hcv(_contingency(y, z), beta)


def _check_beta(beta: Any) -> float:
    return check_positive(beta, "beta", strict=False)


def homogeneity(labels_true: Any, labels_pred: Any) -> float:
    """Homogeneity h = I(C;K)/H(C) (1 when H(C) = 0)."""
    return homogeneity_completeness_v_measure(labels_true, labels_pred)[0]


def completeness(labels_true: Any, labels_pred: Any) -> float:
    """Completeness c = I(C;K)/H(K) (1 when H(K) = 0)."""
    return homogeneity_completeness_v_measure(labels_true, labels_pred)[1]


def v_measure(labels_true: Any, labels_pred: Any, beta: float = 1.0) -> float:
    """V-measure V_β (``homogeneity_completeness_v_measure(...)[2]``)."""
    return homogeneity_completeness_v_measure(labels_true, labels_pred, beta)[2]


def v_beta(labels_true: Any, labels_pred: Any) -> float:
    """V-beta (Vlachos, Korhonen & Ghahramani 2009): V_β with β = #clusters / #classes (distinct labels).

    Over-splitting (more clusters than classes) raises β and so weights completeness more. Empty input gives
    1.
    """
    y, z = _check_pair(labels_true, labels_pred)
    t = _contingency(y, z)
    if t.n == 0:
        return 1.0
    return _hcv(t, t.n_clusters / t.n_classes)[2]


def variation_of_information(labels_true: Any, labels_pred: Any) -> float:
    """Variation of information VI = H(C|K) + H(K|C) in nats (Meilă 2003); 0 iff the partitions are equal.

    Computed as -Σ (n_ck/N) [log(n_ck/b_k) + log(n_ck/a_c)], a sum of non-negative terms (no cancellation).
    Empty input gives 0.
    """
    y, z = _check_pair(labels_true, labels_pred)
    t = _contingency(y, z)
    if t.n == 0:
        return 0.0
    nck = t.counts.astype(np.float64)
    a = t.class_sizes[t.rows].astype(np.float64)
    b = t.cluster_sizes[t.cols].astype(np.float64)
    return float(np.sum((nck / t.n) * (np.log(a) + np.log(b) - 2.0 * np.log(nck))))


def _purity(t: Contingency) -> float:
    if t.n == 0:
        return 1.0
    best = np.zeros(t.n_clusters, dtype=np.int64)
    np.maximum.at(best, t.cols, t.counts)
    return int(best.sum()) / t.n


def purity(labels_true: Any, labels_pred: Any) -> float:
    """Purity (1/N) Σ_k max_c n_ck (Manning, Raghavan & Schütze §16.3).

    All-singleton clusterings get purity 1: report it with inverse purity or V/V-beta. Empty input gives 1.
    """
    y, z = _check_pair(labels_true, labels_pred)
    return _purity(_contingency(y, z))


def inverse_purity(labels_true: Any, labels_pred: Any) -> float:
    """Inverse purity (1/N) Σ_c max_k n_ck: purity with the roles of classes and clusters swapped."""
    y, z = _check_pair(labels_true, labels_pred)
    return _purity(_contingency(z, y))


def _pair_confusion(t: Contingency) -> tuple[int, int, int, int]:
    """Ordered-pair counts (tn, fp, fn, tp) as scikit-learn's ``pair_confusion_matrix``, in exact Python
    ints."""
    n = t.n
    # int64 is exact here: every sum below is <= N^2 < 2^63 for N < 3e9; products are taken in Python ints
    sum_sq = int(np.sum(t.counts * t.counts))
    sum_a = int(np.sum(t.class_sizes * t.class_sizes))
    sum_b = int(np.sum(t.cluster_sizes * t.cluster_sizes))
    tp = sum_sq - n
    fp = sum_b - sum_sq  # same cluster, different class
    fn = sum_a - sum_sq  # same class, different cluster
    tn = n * n - tp - fp - fn - n
    return tn, fp, fn, tp


def pair_confusion(labels_true: Any, labels_pred: Any) -> tuple[int, int, int, int]:
    """Pair counts ``(tn, fp, fn, tp)`` over ordered pairs of distinct items (each unordered pair counted
    twice).

    Same convention as ``sklearn.metrics.cluster.pair_confusion_matrix``: tp = same class and same cluster,
    fp = same cluster only, fn = same class only, tn = neither. Exact integers (no overflow).
    """
    y, z = _check_pair(labels_true, labels_pred)
    return _pair_confusion(_contingency(y, z))


def adjusted_rand_index(labels_true: Any, labels_pred: Any) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985), exact integer pair counts; 1 for identical partitions."""
    y, z = _check_pair(labels_true, labels_pred)
    tn, fp, fn, tp = _pair_confusion(_contingency(y, z))
    if fn == 0 and fp == 0:
        return 1.0
    return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))


def pairwise_link_accuracy(labels_true: Any, labels_pred: Any) -> float:
    """Fraction of the N(N-1)/2 item pairs whose same/different-cluster status agrees (the Rand index).

    Computed from the contingency table in O(cells) with exact integers; 1 when N < 2.
    """
    y, z = _check_pair(labels_true, labels_pred)
    tn, fp, fn, tp = _pair_confusion(_contingency(y, z))
    total = tn + fp + fn + tp
    if total == 0 or tn + tp == total:
        return 1.0
    return (tn + tp) / total


def normalized_mutual_info(labels_true: Any, labels_pred: Any, average_method: str = "arithmetic") -> float:
    """Normalised mutual information I / avg(H(C), H(K)); ``average_method`` in min, geometric, arithmetic,
    max.

    With the default arithmetic mean this equals the V-measure (β = 1). 1 when both sides have one cluster
    (or are empty), 0 when I = 0.
    """
    y, z = _check_pair(labels_true, labels_pred)
    if average_method not in ("min", "geometric", "arithmetic", "max"):
        raise InvalidInputError(
            f"average_method: expected 'min', 'geometric', 'arithmetic' or 'max', got {average_method!r}"
        )
    t = _contingency(y, z)
    if t.n_classes == t.n_clusters and t.n_classes <= 1:
        return 1.0
    mi = _mutual_info(t)
    if mi == 0.0:
        return 0.0
    h_c, h_k = _entropy_of_sizes(t.class_sizes), _entropy_of_sizes(t.cluster_sizes)
    if average_method == "min":
        norm = min(h_c, h_k)
    elif average_method == "max":
        norm = max(h_c, h_k)
    elif average_method == "geometric":
        norm = math.sqrt(h_c * h_k)
    else:
        norm = (h_c + h_k) / 2.0
    return float(mi / max(norm, np.finfo(np.float64).eps))
