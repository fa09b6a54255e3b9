"""Iterative constrained clustering (ICC; Akkaya, Wiebe & Mihalcea, EACL 2014, Algorithm 1).

::

    C = cluster(I)                        # unconstrained complete link
    I_L = labelprototypes(C)              # the member closest to each cluster centre
    while |I_L| < stop:
        Con = createconstraints(I_L)      # cannot-links between opposing labels (must-links optional)
        Dist = learnmetric(I, Con)        # ITML (optional)
        C = constrainedcluster(Dist, Con) # Klein et al. constrained complete link
        L = labelmostinformative(C)       # lowest silh_const (or random)
        I_L = I_L + L
    propagatelabels(I_L, C)

Deviations, all optional and documented: ``batch_size`` labels per iteration (the seed: 1); features are
reduced to ``n_components`` dimensions by (truncated) SVD before metric learning (ITML is O(d^2) per
constraint); at most ``max_constraints`` constraint pairs feed ITML (a fixed random subset; the constrained
clustering uses them all); the clustering is redone with all labels before the labels are propagated (so the
last answers count). Ties in silh_const (all 1 while no opposing label has been seen, common with skewed
labels) go to the instance with the largest own-cluster term ``x`` (farthest from its cluster's labelled
members, the explorative behaviour the seed describes), then at random.

Example
-------
>>> from sklearn.datasets import load_iris
>>> from jaxclust.icc import ICC
>>> X, y = load_iris(return_X_y=True)
>>> icc = ICC(n_clusters=3, budget=12, max_iter=20).fit(X, y)
>>> icc.labels_.shape
(150,)
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from tqdm import tqdm

from jaxclust.errors import InvalidInputError, NotFittedError
from jaxclust.icc.agglomerative import (
    complete_link,
    constrained_complete_link,
    cut_by_merge_count,
    euclidean_distances,
    klein_active_queries,
)
from jaxclust.icc.itml import ITML
from jaxclust.icc.silhouette import silh_const_scores, silh_const_weights
from jaxclust.validation import (
    Int,
    Options,
    check_array,
    check_int,
    check_labels,
    reject_constraints_as_y,
    seed_from,
    sklearn_seed,
    validate_params,
)

__all__ = ["ICC", "prototypes", "propagate_labels", "label_constraints"]

_STRATEGIES = ("silh_const", "random", "klein")


def prototypes(X: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """(k,) index of the member closest (Euclidean) to each cluster's mean, clusters in id order."""
    out = []
    for c in np.unique(clusters):
        mb = np.flatnonzero(clusters == c)
        ctr = X[mb].mean(axis=0)
        out.append(int(mb[np.argmin(((X[mb] - ctr) ** 2).sum(axis=1))]))
    return np.asarray(out, dtype=np.int64)


def propagate_labels(
    clusters: np.ndarray, labeled_idx: np.ndarray, label_codes: np.ndarray, D: np.ndarray
) -> np.ndarray:
    """(n,) label codes: own label if labelled, else the cluster's majority label (ties -> smallest code);
    members of clusters without any labelled instance take the label of their nearest labelled instance under
    ``D``."""

    clusters = check_labels(clusters, name="clusters", min_length=1)
    n = clusters.shape[0]
    idx = check_labels(labeled_idx, name="labeled_idx", min_length=1)
    codes = check_labels(label_codes, n=idx.shape[0], name="label_codes")
    if idx.min() < 0 or idx.max() >= n:
        bad = int(idx[(idx < 0) | (idx >= n)][0])
        raise InvalidInputError(f"labeled_idx: index {bad} is out of range for {n} items (valid: 0..{n - 1})")
    if codes.min() < 0:
        raise InvalidInputError(f"label_codes: codes must be >= 0, got {int(codes.min())}")
    if np.shape(D) != (n, n):
        raise InvalidInputError(f"D: expected an ({n}, {n}) distance matrix, got shape {np.shape(D)}")
    q = int(codes.max()) + 1
    _, cl = np.unique(clusters, return_inverse=True)
    H = np.zeros((cl.max() + 1, q), np.int64)
    np.add.at(H, (cl[idx], codes), 1)
    out = H.argmax(axis=1)[cl]
    empty = H.sum(axis=1)[cl] == 0
    if empty.any():
        near = idx[np.argmin(D[np.ix_(np.flatnonzero(empty), idx)], axis=1)]
        lab_of = np.zeros(n, np.int64)
        lab_of[idx] = codes
        out[empty] = lab_of[near]
    out[idx] = codes
    return out


def label_constraints(labeled_idx: np.ndarray, label_codes: np.ndarray, must_link: bool):
    """Constraints from labels: (E, 2) cannot-link pairs between different labels, and (if ``must_link``) one
    must-link group per label (the labelled instances sharing it)."""
    idx = np.asarray(labeled_idx, np.int64)
    codes = np.asarray(label_codes, np.int64)
    a, b = np.triu_indices(idx.size, k=1)
    diff = codes[a] != codes[b]
    cl = np.stack([idx[a[diff]], idx[b[diff]]], axis=1)
    ml = np.stack([idx[a[~diff]], idx[b[~diff]]], axis=1)
    groups = [idx[codes == c] for c in np.unique(codes)] if must_link else []
    return cl, ml, groups


def _reduce(X, n_components, seed):
    """Dense float64 features, reduced by (truncated) SVD when wider than ``n_components``."""
    import scipy.sparse as sp

    if sp.issparse(X):
        from sklearn.decomposition import TruncatedSVD

        k = min(n_components or 100, X.shape[1] - 1, X.shape[0] - 1)
        return TruncatedSVD(k, random_state=sklearn_seed(seed)).fit_transform(X)

    X = check_array(X, name="X", min_rows=2)
    if n_components is not None and X.shape[1] > n_components:
        Xc = X - X.mean(axis=0)
        U, s, _ = np.linalg.svd(Xc, full_matrices=False)
        return U[:, :n_components] * s[:n_components]
    return X


class ICC(BaseEstimator):
    """Iterative constrained clustering with active label selection, then cluster-and-label propagation.

    Parameters
    ----------
    n_clusters : int
        Clusters of every (constrained) complete-link cut (the seed: 7).
    strategy : {"silh_const", "random", "klein"}
        Which instance to ask next: lowest silh_const, uniformly at random, or Klein et al.'s single-pass root
        queries (then one constrained clustering with all answers).
    metric_learning : bool
        Learn an ITML metric from the constraints each iteration (else Euclidean).
    budget : int or float
        Total labels to ask (prototypes included); a float in (0, 1] is a fraction of n.
    batch_size : int
        Labels asked per iteration (the seed: 1).
    must_link : bool
        Also add must-links between equal labels (the seed: cannot-links only).
    gamma, max_iter : ITML slack and maximum sweeps.
    n_components : int or None
        SVD dimension before clustering / metric learning (None: keep X as is; sparse X is always reduced).
    max_constraints : int
        Most pairs given to ITML per iteration.
    checkpoints : sequence of int or None
        Label counts at which the propagated labels are recorded in ``history_``.
    random_state : int or None
    progress : bool
        Show a tqdm bar over the labels asked.

    Attributes
    ----------
    labels_ : (n,) generated labels (original label values).
    clusters_ : (n,) final cluster ids.
    queried_ : (Q,) indices asked, in order; ``query_labels_`` their labels.
    silh_const_ : (n,) final silh_const scores; ``sample_weight_`` : (n,) 1 for asked, ``(s + 1) / 2``
    otherwise. history_ : dict {labels asked: (n,) generated labels} at each checkpoint reached.
    history_weights_ : dict {labels asked: (n,) sample weights} at the same checkpoints.
    n_iter_ : int, clustering iterations run.
    """

    _parameter_constraints = {
        "strategy": Options(_STRATEGIES),
        "n_clusters": Int(2),
        "batch_size": Int(1),
        "max_iter": Int(1),
        "max_constraints": Int(1),
        "n_components": Int(1, none=True),
    }

    def __init__(
        self,
        n_clusters=7,
        strategy="silh_const",
        metric_learning=True,
        budget=0.25,
        batch_size=1,
        must_link=False,
        gamma=1.0,
        max_iter=100,
        n_components=50,
        max_constraints=2048,
        checkpoints=None,
        random_state=None,
        progress=False,
    ):
        self.n_clusters = n_clusters
        self.strategy = strategy
        self.metric_learning = metric_learning
        self.budget = budget
        self.batch_size = batch_size
        self.must_link = must_link
        self.gamma = gamma
        self.max_iter = max_iter
        self.n_components = n_components
        self.max_constraints = max_constraints
        self.checkpoints = checkpoints
        self.random_state = random_state
        self.progress = progress

    # -- pieces ------------------------------------------------------------------------------------------
    def _distances(self, X, cl, ml, rng):
        if not self.metric_learning or (len(cl) + len(ml)) == 0:
            return euclidean_distances(X)

        pairs = np.vstack([ml, cl]) if len(ml) else cl
        y = np.concatenate([np.ones(len(ml), np.int64), -np.ones(len(cl), np.int64)])
        if len(pairs) > self.max_constraints:
            keep = np.sort(rng.choice(len(pairs), self.max_constraints, replace=False))
            pairs, y = pairs[keep], y[keep]
        itml = ITML(gamma=self.gamma, max_iter=self.max_iter, tol=1e-3, padding="pow2").fit(X, pairs, y)
        return itml.pairwise_distances(X)

    def _cluster(self, X, idx, codes, rng):
        cl, ml, groups = label_constraints(idx, codes, self.must_link)
        D = self._distances(X, cl, ml if self.must_link else np.zeros((0, 2), np.int64), rng)
        clusters, _, _, _ = constrained_complete_link(D, self.n_clusters, groups, cl)
        return clusters, D

    # -- fit ---------------------------------------------------------------------------------------------
    def fit(self, X, oracle, y=None):
        """Run ICC.

        Parameters
        ----------
        X : (n, d) array-like or scipy sparse matrix.
        oracle : (n,) array of gold labels (used as a simulated annotator) or a callable
            ``f(indices) -> labels``.
        y : ignored (scikit-learn's convention); ICC asks for labels through ``oracle`` and takes no
            constraints (constraints given here raise ``ConstraintError`` rather than being dropped).
        """

        reject_constraints_as_y(y, "ICC.fit", "ICC builds its constraints from the labels the oracle gives")
        reject_constraints_as_y(
            oracle, "ICC.fit", "ICC's oracle is gold labels or f(indices) -> labels", name="oracle"
        )
        k = validate_params(self)["n_clusters"]
        for c in self.checkpoints or ():
            check_int(c, "checkpoints", minimum=1)
        seed = seed_from(self.random_state)
        rng = np.random.default_rng(seed)
        X = _reduce(X, self.n_components, seed)
        n = X.shape[0]
        if k > n:
            raise InvalidInputError(f"n_clusters: {k} exceeds the number of rows ({n})")
        budget = _budget(self.budget, n, k)
        query = _Coder(_make_oracle(oracle, n))
        checkpoints = sorted(set(int(c) for c in (self.checkpoints or ()) if c <= budget))
        run = _Run(checkpoints)
        if self.strategy == "klein":
            clusters, D = self._klein(X, query, budget, run, rng)
        else:
            clusters, D = self._iterate(X, query, budget, k, run, rng)
        idx, codes = np.asarray(run.idx, np.int64), np.asarray(run.codes, np.int64)
        s = silh_const_scores(D, clusters, idx, codes)
        w = silh_const_weights(s)
        w[idx] = 1.0
        vals = np.asarray(query.values, dtype=object)
        conv = lambda c: _as_array(vals[c])
        self.labels_ = conv(run.gen)
        self.clusters_ = np.asarray(clusters, np.int64)
        self.queried_ = idx
        self.query_labels_ = conv(codes)
        self.silh_const_ = s
        self.sample_weight_ = w
        self.history_ = {c: conv(g) for c, g in sorted(run.history.items())}
        self.history_weights_ = dict(sorted(run.history_w.items()))
        self.n_iter_ = run.n_iter
        return self

    def _klein(self, X, query, budget: int, run: _Run, rng):
        """Klein et al.'s queries, asked once; each checkpoint clusters with a prefix of them."""
        qi, ql = klein_active_queries(euclidean_distances(X), lambda i: query([i])[0], budget)
        for c in run.checkpoints:  # single pass: a smaller budget asks a prefix of the same queries
            m = min(c, len(qi))
            run.idx, run.codes = list(qi[:m]), list(ql[:m])
            clusters, D = self._cluster(X, np.asarray(run.idx), np.asarray(run.codes), rng)
            run.history[c] = propagate_labels(clusters, np.asarray(run.idx), np.asarray(run.codes), D)
            run.history_w[c] = run.weights(clusters, D)
            run.n_iter += 1
        run.idx, run.codes = list(qi), list(ql)
        clusters, D = self._cluster(X, np.asarray(run.idx), np.asarray(run.codes), rng)
        run.n_iter += 1
        run.gen = propagate_labels(clusters, np.asarray(run.idx), np.asarray(run.codes), D)
        return clusters, D

    def _iterate(self, X, query, budget: int, k: int, run: _Run, rng):
        """Cluster, label the prototypes, then ask ``batch_size`` more labels per iteration until ``budget``."""
        n = X.shape[0]
        D = euclidean_distances(X)
        protos = prototypes(X, cut_by_merge_count(complete_link(D), n, k))
        run.idx, run.codes = list(protos), query(protos)
        bar = tqdm(total=budget, initial=len(run.idx), desc="ICC labels", disable=not self.progress)
        while True:
            idx, codes = np.asarray(run.idx), np.asarray(run.codes)
            clusters, D = self._cluster(X, idx, codes, rng)
            run.n_iter += 1
            run.record(clusters, D)
            if len(run.idx) >= budget:
                break
            take = min(self.batch_size, budget - len(run.idx))
            unl = np.setdiff1d(np.arange(n), run.idx)
            if self.strategy == "random":
                new = rng.choice(unl, take, replace=False)
            else:
                s, x, _ = silh_const_scores(D, clusters, idx, codes, True)
                # ties (e.g. no opposing label yet: every score is 1) go to the instance farthest from the
                # labelled members of its own cluster (the seed's explorative preference), then at random
                order = np.lexsort((rng.random(unl.size), -x[unl], s[unl]))
                new = unl[order[:take]]
            run.idx += [int(i) for i in new]
            run.codes += query(new)
            bar.update(len(new))
        bar.close()
        return clusters, D

    def fit_predict(self, X, oracle, y=None):
        """``fit`` then return ``labels_``."""
        return self.fit(X, oracle).labels_

    def _check_fitted(self):
        if not hasattr(self, "labels_"):
            raise NotFittedError("ICC: call fit first")


def _budget(budget, n: int, k: int) -> int:
    """``budget`` as a number of labels: a fraction of ``n`` or an int, at least one label per cluster."""
    if isinstance(budget, float) and 0 < budget <= 1:
        return int(round(budget * n))
    if not (isinstance(budget, (int, np.integer)) and not isinstance(budget, bool) and k <= budget <= n):
        raise InvalidInputError(
            f"budget: expected a fraction in (0, 1] or an int in [{k}, {n}] "
            f"(at least one label per cluster), got {budget!r}"
        )
    return int(budget)


class _Coder:
    """Asks the oracle for labels and codes them by first appearance (``values[code]`` is the label)."""

    def __init__(self, ask):
        self.ask, self.values, self.code_of = ask, [], {}

    def __call__(self, indices) -> list[int]:
        labs = self.ask(np.asarray(indices, np.int64))
        if len(labs) != len(indices):
            raise InvalidInputError(
                f"oracle: returned {len(labs)} labels for {len(indices)} indices {list(map(int, indices))}"
            )
        out = []
        for v in labs:
            if v not in self.code_of:
                self.code_of[v] = len(self.values)
                self.values.append(v)
            out.append(self.code_of[v])
        return out


class _Run:
    """One ICC run's labelled items (``idx``, ``codes``), its generated labels ``gen`` and the labels and
    weights kept at each checkpoint."""

    def __init__(self, checkpoints: list[int]):
        self.checkpoints = checkpoints
        self.idx: list[int] = []
        self.codes: list[int] = []
        self.history: dict[int, np.ndarray] = {}
        self.history_w: dict[int, np.ndarray] = {}
        self.gen = None
        self.n_iter = 0

    def weights(self, clusters, D) -> np.ndarray:
        idx, codes = np.asarray(self.idx), np.asarray(self.codes)
        w = silh_const_weights(silh_const_scores(D, clusters, idx, codes))
        w[idx] = 1.0
        return w

    def record(self, clusters, D) -> None:
        self.gen = propagate_labels(clusters, np.asarray(self.idx), np.asarray(self.codes), D)
        due = [c for c in self.checkpoints if c <= len(self.idx) and c not in self.history]
        if due:
            w = self.weights(clusters, D)
            for c in due:
                self.history[c], self.history_w[c] = self.gen, w


def _as_array(v: np.ndarray) -> np.ndarray:
    """Object array of label values -> a typed NumPy array when the values allow it."""
    try:
        return np.asarray(v.tolist())
    except (ValueError, TypeError):
        return v


def _make_oracle(oracle, n: int):
    def no_nan(ids, labels):
        for i, v in zip(ids, labels, strict=False):
            if isinstance(v, float | np.floating) and np.isnan(v):
                raise InvalidInputError(
                    f"oracle: the label of item {int(i)} is NaN (a label must be a class)"
                )
        return labels

    if callable(oracle):
        return lambda ids: no_nan(ids, list(oracle(ids)))
    gold = np.asarray(oracle)
    if gold.ndim != 1 or gold.shape[0] != n:
        raise InvalidInputError(f"oracle: expected a callable or ({n},) gold labels, got shape {gold.shape}")
    if gold.dtype.kind == "f" and np.isnan(gold).any():
        row = int(np.flatnonzero(np.isnan(gold))[0])
        raise InvalidInputError(f"oracle: the gold label at row {row} is NaN (a label must be a class)")
    return lambda ids: gold[ids].tolist()
