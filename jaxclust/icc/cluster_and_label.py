"""Cluster-and-label downstream: train a classifier on ICC's generated labels; active-learning baselines.

Generated training data weights asked instances 1 and propagated ones by silh_const mapped to [0, 1] (the
seed, Section 4.3.2). Baselines: random sampling and uncertainty sampling with the simple-margin rule (Tong &
Koller 2001: ask the instance closest to the current linear SVM's boundary). :func:`labels_needed` finds the
smallest label fraction whose accuracy reaches a target (e.g. training on all gold labels).

Example
-------
>>> import numpy as np
>>> labels_needed([0.1, 0.2, 0.3], [0.70, 0.81, 0.80], 0.8)
0.2
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxclust.errors import InvalidInputError
from jaxclust.icc.loop import ICC
from jaxclust.validation import Int

__all__ = [
    "make_classifier",
    "train_on_generated",
    "random_sampling_curve",
    "uncertainty_sampling_curve",
    "icc_curve",
    "labels_needed",
]


def make_classifier(kind: str = "svm", C: float = 1.0, random_state: int = 0):
    """A scikit-learn linear classifier: ``"svm"`` (LinearSVC) or ``"logreg"`` (LogisticRegression)."""
    if kind == "svm":
        from sklearn.svm import LinearSVC

        return LinearSVC(C=C, random_state=random_state)
    if kind == "logreg":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=C, max_iter=2000, random_state=random_state)
    raise InvalidInputError(f"kind: expected 'svm' or 'logreg', got {kind!r}")


def train_on_generated(
    X, labels, sample_weight=None, kind: str = "svm", C: float = 1.0, random_state: int = 0
):
    """Fit a classifier on (generated) labels with optional per-instance weights. One-class data gives a
    constant predictor (a fitted ``DummyClassifier``)."""
    labels = np.asarray(labels)
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise InvalidInputError(f"labels: expected {n} labels (one per row of X), got shape {labels.shape}")
    if sample_weight is not None and np.shape(sample_weight) != (n,):
        raise InvalidInputError(
            f"sample_weight: expected {n} weights (one per row of X), got shape {np.shape(sample_weight)}"
        )
    if np.unique(labels).size < 2:
        from sklearn.dummy import DummyClassifier

        return DummyClassifier(strategy="most_frequent").fit(X, labels)
    return make_classifier(kind, C, random_state).fit(X, labels, sample_weight=sample_weight)


def _acc(clf, X, y) -> float:
    return float(np.mean(clf.predict(X) == y))


def _check_budgets(budgets, n):
    msg = f"budgets: expected increasing label counts in [1, {n}], got {budgets!r}"
    if isinstance(budgets, str | bytes) or not hasattr(budgets, "__iter__"):
        raise InvalidInputError(msg)
    try:
        b = [Int(1, n).check(v) for v in budgets]
    except ValueError:
        raise InvalidInputError(msg) from None
    if not b or b != sorted(b):
        raise InvalidInputError(msg)
    return b


def random_sampling_curve(
    X, y, X_test, y_test, budgets: Sequence[int], kind="svm", random_state=0
) -> list[float]:
    """Accuracy after training on the first ``b`` instances of one random order, for each budget ``b``."""
    y = np.asarray(y)
    b = _check_budgets(budgets, len(y))
    order = np.random.default_rng(random_state).permutation(len(y))
    return [_acc(train_on_generated(X[order[:m]], y[order[:m]], kind=kind), X_test, y_test) for m in b]


def uncertainty_sampling_curve(
    X, y, X_test, y_test, budgets: Sequence[int], kind="svm", n_initial=10, batch_size=10, random_state=0
) -> list[float]:
    """Simple-margin active learning: start from ``n_initial`` random labels, then repeatedly ask the
    ``batch_size`` unlabelled instances with the smallest ``|decision_function|`` (binary) or smallest gap
    between the two best class scores (multiclass). Returns the accuracy at each budget."""
    y = np.asarray(y)
    b = _check_budgets(budgets, len(y))
    rng = np.random.default_rng(random_state)
    labeled = list(rng.choice(len(y), min(n_initial, b[0]), replace=False))
    out = []
    for m in b:
        while len(labeled) < m:
            clf = train_on_generated(X[labeled], y[labeled], kind=kind)
            unl = np.setdiff1d(np.arange(len(y)), labeled)
            if hasattr(clf, "decision_function"):
                f = clf.decision_function(X[unl])
                if f.ndim == 1:
                    margin = np.abs(f)
                else:
                    top = np.sort(f, axis=1)
                    margin = top[:, -1] - top[:, -2]
                pick = unl[np.argsort(margin, kind="stable")[: min(batch_size, m - len(labeled))]]
            else:  # one class so far: no boundary yet, sample at random
                pick = rng.choice(unl, min(batch_size, m - len(labeled)), replace=False)
            labeled += [int(i) for i in pick]
        out.append(_acc(train_on_generated(X[labeled], y[labeled], kind=kind), X_test, y_test))
    return out


def icc_curve(
    X_cluster, X, y, X_test, y_test, budgets: Sequence[int], kind="svm", weighted=True, **icc_params
) -> tuple[list[float], list[float]]:
    """ICC labels ``X_cluster`` (same rows as ``X``) with gold ``y`` as the oracle; at each budget a
    classifier is trained on the generated labels (weights: 1 asked, silh_const in [0, 1] propagated).

    Returns
    -------
    (accuracies, purities of the generated labels) per budget.
    """

    y = np.asarray(y)
    b = _check_budgets(budgets, len(y))
    icc = ICC(budget=max(b), checkpoints=b, **icc_params).fit(X_cluster, y)
    accs, pur = [], []
    for m in b:
        gen = icc.history_[m]
        w = icc.history_weights_[m] if weighted else None
        accs.append(_acc(train_on_generated(X, gen, w, kind=kind), X_test, y_test))
        pur.append(float(np.mean(gen == y)))
    return accs, pur


def labels_needed(fractions: Sequence[float], accuracies: Sequence[float], target: float) -> float | None:
    """Smallest fraction whose accuracy is ``>= target`` (None if never reached)."""
    fractions, accuracies = list(fractions), list(accuracies)
    if len(fractions) != len(accuracies):
        raise InvalidInputError(
            f"accuracies: expected {len(fractions)} values (one per fraction), got {len(accuracies)}"
        )
    for f, a in zip(fractions, accuracies, strict=True):
        if a >= target:
            return float(f)
    return None
