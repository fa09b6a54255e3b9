"""The bad-input corpus: every public estimator and function, the DPMM included, given bad or edge inputs (the
answer store and the CLI have their own test files).

* Bad inputs raise the exact named jaxclust exception (all of them ``JaxclustError``) and the message names the
  culprit as the user spelled it: the parameter, the row/column, the index, the file and line.
* Valid edge cases (one cluster, n == k, duplicate points, extreme scales, label -1, ...) give the right answer,
  never a NaN, an inf or a dropped argument.
* The same seed gives identical results for every estimator, and nothing changes JAX's global configuration.

Arrays are tiny (12 x 2) and shared so the whole file runs in well under a minute.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
import subprocess
import sys
import warnings

import jax
import numpy as np
import pytest

from jaxclust import datasets as D
from jaxclust import metrics as M
from jaxclust import validation as V
from jaxclust.active import (
    GoldOracle,
    NoisyOracle,
    agreeing_samples,
    coclustering,
    link_entropy,
    random_pairs,
    select_queries,
    top_entropy_pairs,
)
from jaxclust.active.oracles import ask
from jaxclust.constraints import Constraints, as_constraints
from jaxclust.dpmm import DPMM, NormalGamma
from jaxclust.errors import (
    ConstraintConflictError,
    ConstraintError,
    DatasetNotFoundError,
    InfeasibleConstraintsError,
    InvalidInputError,
    InvalidInputTypeError,
    JaxclustError,
    NotFittedError,
    NumericalError,
)
from jaxclust.icc import ICC, ITML, ConstrainedAgglomerative, propagate_labels, silh_const_scores
from jaxclust.icc import cluster_and_label as CAL
from jaxclust.kmeans import KMeans
from jaxclust.kmeans.constrained import COPKMeans, PCKMeans
from jaxclust.kmeans.mixture import GaussianMixture
from jaxclust.kmeans.query_baselines import NPU, ExploreConsolidate, MinMax, constraints_from_queries
from jaxclust.l3m import L3M
from jaxclust.metrics import jax_partition as JP

# two well separated blobs of 6 points: rows 0-5 near (0, 0), rows 6-11 near (5, 5)
X = np.vstack([np.zeros((6, 2)), np.full((6, 2), 5.0)]) + np.random.default_rng(0).normal(0.0, 0.3, (12, 2))
Y = np.repeat([0, 1], 6)
S = np.array([[0, 0, 1, 1], [0, 1, 1, 1]])  # two sampled partitions of 4 items
DOC = np.zeros((3, 3, 2))  # an L3M document: 3 items, 2 pair features
C12 = Constraints(12, must_link=[(0, 1)], cannot_link=[(0, 6)])
SOFT12 = Constraints.from_answers(
    12, [(0, 1, "must", 0.1), (0, 6, "cannot")]
)  # one answer with an error rate


@functools.cache
def fitted(name: str):
    """Small fitted estimators, built once per session (shared compiles)."""
    return {
        "kmeans": lambda: KMeans(2, n_init=1).fit(X),
        "gmm": lambda: GaussianMixture(2).fit(X),
        "cop": lambda: COPKMeans(2, n_init=2).fit(X),
        "itml": lambda: ITML().fit(X, [[0, 1], [0, 6]], [1, -1]),
    }[name]()


def _sparse(a):
    import scipy.sparse

    return scipy.sparse.csr_matrix(a)


def _learner(model=None, **kw):
    from jaxclust.active import ActiveLearner

    return ActiveLearner(
        model or DPMM(n_chains=1, n_burnin=2, n_samples=2), GoldOracle(Y), progress=False, **kw
    )


def _enable_cache(path):
    from jaxclust import enable_compilation_cache

    return enable_compilation_cache(path)


def B(fn, cls, match, id):  # one short name: the corpus below reads as a table, one case per line
    """A corpus case: ``fn()`` must raise exactly ``cls`` with a message matching ``match``."""
    return pytest.param(fn, cls, match, id=id)


# fmt: off
CORPUS = [
    # ---- KMeans -------------------------------------------------------------------------------------------
    B(lambda: KMeans(2).fit(np.zeros((0, 2))), InvalidInputError, r"^X: Found array with 0 sample", "km-empty"),
    B(lambda: KMeans(2).fit(np.zeros(5)), InvalidInputError, r"^X: Expected 2D array, got 1D", "km-1d"),
    B(lambda: KMeans(2).fit(np.zeros((5, 2, 2))), InvalidInputError, r"^X: Found array with dim 3", "km-3d"),
    B(lambda: KMeans(2).fit(np.where(np.eye(12, 2) > 0, np.nan, X)), InvalidInputError, r"X: row 0 has NaN in column 0", "km-nan"),
    B(lambda: KMeans(2).fit(np.where(np.eye(12, 2, -3) > 0, np.inf, X)), InvalidInputError, r"X: row 3 has inf in column 0", "km-inf"),
    B(lambda: KMeans(2).fit(X + 1j), InvalidInputError, r"^X: Complex data not supported", "km-complex"),
    B(lambda: KMeans(2).fit(np.array([["a", "b"]] * 4, dtype=object)), InvalidInputError, r"^X: could not convert string to float: 'a'", "km-object-str"),
    B(lambda: KMeans(2).fit(_sparse(X)), InvalidInputTypeError, r"^X: Sparse data was passed", "km-sparse"),
    B(lambda: KMeans(2).fit(X, sample_weight=np.r_[np.ones(11), -1.0]), InvalidInputError, r"^sample_weight: weights must be >= 0; index 11 is -1.0", "km-weight-negative"),
    B(lambda: KMeans(2).fit(X, sample_weight=np.r_[np.nan, np.ones(11)]), InvalidInputError, r"^sample_weight: NaN at index \(0,\)", "km-weight-nan"),
    B(lambda: KMeans(2).fit(X, sample_weight=np.ones(11)), InvalidInputError, r"^sample_weight: expected 12 weights \(one per row of X\), got shape \(11,\)", "km-weight-length"),
    B(lambda: KMeans(2).fit(X, sample_weight=np.zeros(12)), InvalidInputError, r"^sample_weight: every weight is 0", "km-weight-zero"),
    B(lambda: KMeans(3).fit(X, sample_weight=np.r_[1.0, 1.0, np.zeros(10)]), InvalidInputError, r"^sample_weight: only 2 rows weigh, fewer than n_clusters=3$", "km-weight-too-few"),
    B(lambda: KMeans(2).fit(X, sample_weight=[1e300] + [1e-300] * 11), InvalidInputError, r"^sample_weight: only 1 rows weigh, fewer than n_clusters=2 \(11 positive weights are too small to count beside the largest, index 0, in float64", "km-weight-underflow"),
    B(lambda: KMeans(2).fit(X.astype(np.float32), sample_weight=np.array([1e30] + [1e-20] * 11, np.float32)), InvalidInputError, r"^sample_weight: only 1 rows weigh, fewer than n_clusters=2 \(11 positive weights are too small to count beside the largest, index 0, in float32", "km-weight-underflow-f32"),
    B(lambda: KMeans(2).fit(X, sample_weight="heavy"), InvalidInputError, r"^sample_weight: expected None, a number or 12 numbers, got 'heavy'", "km-weight-str"),
    B(lambda: KMeans(20).fit(X), InvalidInputError, r"n_samples=12 should be >= n_clusters=20", "km-k-gt-n"),
    B(lambda: KMeans(0).fit(X), InvalidInputError, r"^KMeans\(n_clusters=0\): expected an int >= 1", "km-k0"),
    B(lambda: KMeans("3").fit(X), InvalidInputError, r"^KMeans\(n_clusters='3'\): expected an int >= 1", "km-k-str"),
    B(lambda: KMeans(True).fit(X), InvalidInputError, r"^KMeans\(n_clusters=True\): expected an int >= 1", "km-k-bool"),
    B(lambda: KMeans(2, n_init=0).fit(X), InvalidInputError, r"^KMeans\(n_init=0\): expected an int >= 1", "km-n-init0"),
    B(lambda: KMeans(2, n_init=True).fit(X), InvalidInputError, r"^KMeans\(n_init=True\): expected an int >= 1", "km-n-init-bool"),
    B(lambda: KMeans(2, max_iter=1.5).fit(X), InvalidInputError, r"^KMeans\(max_iter=1\.5\): expected an int >= 1", "km-max-iter-float"),
    B(lambda: KMeans(2, tol="x").fit(X), InvalidInputError, r"^KMeans\(tol='x'\): expected a finite number >= 0\.0", "km-tol-str"),
    B(lambda: KMeans(2, tol=-1e-3).fit(X), InvalidInputError, r"^KMeans\(tol=\-0\.001\): expected a finite number >= 0\.0", "km-tol-neg"),
    B(lambda: KMeans(2, tol=np.nan).fit(X), InvalidInputError, r"^KMeans\(tol=nan\): expected a finite number >= 0\.0", "km-tol-nan"),
    B(lambda: KMeans(2, init="foo").fit(X), InvalidInputError, r"^init: expected 'k-means\+\+', 'random' or an .* got 'foo'", "km-init-str"),
    B(lambda: KMeans(2, init=np.zeros((3, 2))).fit(X), InvalidInputError, r"^init: array has shape \(3, 2\), expected \(2, 2\)", "km-init-shape"),
    B(lambda: KMeans(2, init=np.array([[0.0, 0.0], [np.nan, 1.0]])).fit(X), InvalidInputError, r"^init: row 1 has a non-finite value in column 0", "km-init-nan"),
    B(lambda: KMeans(2, random_state="a").fit(X), InvalidInputError, r"^random_state: expected None, an int", "km-seed-str"),
    B(lambda: KMeans(2, random_state=-1).fit(X), InvalidInputError, r"^random_state: must be >= 0, got -1", "km-seed-neg"),
    B(lambda: KMeans(2).fit(X, C12), ConstraintError, r"^y: KMeans.fit got constraints \(Constraints\) as y.*COPKMeans", "km-constraints-as-y"),
    B(lambda: KMeans(2).fit(X, {"must_link": [(0, 1)]}), ConstraintError, r"^y: KMeans.fit got constraints \(dict\)", "km-constraint-dict-as-y"),
    B(lambda: KMeans(2).fit_predict(X, ([(0, 1)], [(0, 6)])), ConstraintError, r"^y: KMeans.fit got constraints \(tuple\)", "km-fit-predict-constraints"),
    B(lambda: KMeans(2).predict(X), NotFittedError, r"^KMeans.predict: this KMeans instance is not fitted yet", "km-predict-unfitted"),
    B(lambda: KMeans(2).transform(X), NotFittedError, r"^KMeans.transform: this KMeans instance is not fitted", "km-transform-unfitted"),
    B(lambda: KMeans(2).score(X), NotFittedError, r"^KMeans.score: this KMeans instance is not fitted", "km-score-unfitted"),
    B(lambda: fitted("kmeans").predict(np.zeros((3, 3))), InvalidInputError, r"X has 3 features, but KMeans is expecting 2", "km-predict-width"),
    B(lambda: fitted("kmeans").transform(np.zeros((3, 1))), InvalidInputError, r"X has 1 features, but KMeans is expecting 2", "km-transform-width"),
    B(lambda: fitted("kmeans").predict(np.zeros(2)), InvalidInputError, r"^X: Expected 2D array", "km-predict-1d"),
    B(lambda: KMeans(2, n_init=1).fit(np.array([[1e308, 0], [5e307, 0], [-1e308, 0], [-5e307, 0]])), NumericalError, r"^KMeans: the inertia is about 1e61\d, beyond the float64 range, for X with max \|x\| = 1e\+308", "km-inertia-overflow"),
    # ---- GaussianMixture ----------------------------------------------------------------------------------
    B(lambda: GaussianMixture(2).fit(np.zeros((0, 2))), InvalidInputError, r"^X: Found array with 0 sample", "gmm-empty"),
    B(lambda: GaussianMixture(2).fit(np.zeros(4)), InvalidInputError, r"^X: Expected 2D array", "gmm-1d"),
    B(lambda: GaussianMixture(2).fit(np.zeros((4, 2, 1))), InvalidInputError, r"^X: Found array with dim 3", "gmm-3d"),
    B(lambda: GaussianMixture(20).fit(X), InvalidInputError, r"n_samples=12 should be >= n_components=20", "gmm-k-gt-n"),
    B(lambda: GaussianMixture(0).fit(X), InvalidInputError, r"^GaussianMixture\(n_components=0\): expected an int >= 1", "gmm-k0"),
    B(lambda: GaussianMixture(2, covariance_type="tied").fit(X), InvalidInputError, r"^GaussianMixture\(covariance_type='tied'\): expected one of 'full', 'diag', 'spherical'", "gmm-cov-type"),
    B(lambda: GaussianMixture(2, init_params="x").fit(X), InvalidInputError, r"^GaussianMixture\(init_params='x'\): expected one of 'kmeans', 'random'", "gmm-init-params"),
    B(lambda: GaussianMixture(2, reg_covar="a").fit(X), InvalidInputError, r"^GaussianMixture\(reg_covar='a'\): expected a finite number >= 0\.0", "gmm-reg-str"),
    B(lambda: GaussianMixture(2, reg_covar=-1.0).fit(X), InvalidInputError, r"^GaussianMixture\(reg_covar=\-1\.0\): expected a finite number >= 0\.0", "gmm-reg-neg"),
    B(lambda: GaussianMixture(2, tol=np.nan).fit(X), InvalidInputError, r"^GaussianMixture\(tol=nan\): expected a finite number >= 0\.0", "gmm-tol-nan"),
    B(lambda: GaussianMixture(2, max_iter=0).fit(X), InvalidInputError, r"^GaussianMixture\(max_iter=0\): expected an int >= 1", "gmm-max-iter0"),
    B(lambda: GaussianMixture(2, n_init=True).fit(X), InvalidInputError, r"^GaussianMixture\(n_init=True\): expected an int >= 1", "gmm-n-init-bool"),
    B(lambda: GaussianMixture(2, means_init=np.zeros((2, 2))).fit(X), InvalidInputError, r"means_init given without precisions_init", "gmm-means-only"),
    B(lambda: GaussianMixture(2, weights_init=[0.5, 0.5]).fit(X), InvalidInputError, r"weights_init given without means_init and precisions_init", "gmm-weights-only"),
    B(lambda: GaussianMixture(2, means_init=np.zeros((3, 2)), precisions_init=np.stack([np.eye(2)] * 2)).fit(X), InvalidInputError, r"means_init has shape \(3, 2\), expected \(2, 2\)", "gmm-means-shape"),
    B(lambda: GaussianMixture(2, means_init=np.zeros((2, 2)), precisions_init=np.zeros((2, 2, 2))).fit(X), InvalidInputError, r"precisions_init\[0\] must be symmetric positive definite", "gmm-prec-singular"),
    B(lambda: GaussianMixture(2, covariance_type="diag", means_init=np.zeros((2, 2)), precisions_init=np.array([[1.0, 1], [1, -1]])).fit(X), InvalidInputError, r"precisions_init\[1\] must be positive", "gmm-prec-diag-neg"),
    B(lambda: GaussianMixture(2, means_init=np.array([[np.nan, 0], [0, 0]]), precisions_init=np.stack([np.eye(2)] * 2)).fit(X), InvalidInputError, r"means_init has a non-finite value at index \(0, 0\)", "gmm-means-nan"),
    B(lambda: GaussianMixture(2, means_init=np.zeros((2, 2)), precisions_init=np.stack([np.eye(2)] * 2), weights_init=[0.2, 0.2]).fit(X), InvalidInputError, r"weights_init must be \(n_components,\) non-negative, summing to 1", "gmm-weights-sum"),
    B(lambda: GaussianMixture(2, reg_covar=0.0).fit(np.repeat(X[[0, 6]], 6, axis=0)), NumericalError, r"ill-defined empirical covariance.*increase reg_covar \(got 0.0\)", "gmm-singular-cov"),
    B(lambda: GaussianMixture(2).fit(X * 1e200), NumericalError, r"X has values up to 5\.\d+e\+200, too large for float64", "gmm-huge-x"),
    B(lambda: GaussianMixture(2).fit(X, C12), ConstraintError, r"^y: GaussianMixture.fit got constraints", "gmm-constraints-as-y"),
    B(lambda: GaussianMixture(2).predict(X), NotFittedError, r"^GaussianMixture.predict: this GaussianMixture instance is not fitted", "gmm-predict-unfitted"),
    B(lambda: GaussianMixture(2).score(X), NotFittedError, r"^GaussianMixture.score_samples: .* not fitted", "gmm-score-unfitted"),
    B(lambda: fitted("gmm").predict(np.zeros((2, 3))), InvalidInputError, r"X has 3 features, but GaussianMixture is expecting 2", "gmm-predict-width"),
    B(lambda: fitted("gmm").predict_proba(X * 1e200), NumericalError, r"^GaussianMixture.predict_proba: X row 0 has a non-finite log-likelihood", "gmm-predict-huge"),
    # ---- COPKMeans / PCKMeans: fit(X, constraints) ---------------------------------------------------------
    B(lambda: COPKMeans(2).fit(X, Y), ConstraintError, r"^constraints: COPKMeans.fit got an array of shape \(12,\) where it takes constraints.*Constraints.from_labels", "cop-labels-positional"),
    B(lambda: COPKMeans(2).fit(X, list(Y)), ConstraintError, r"^constraints: COPKMeans.fit got an array of shape \(12,\)", "cop-label-list-positional"),
    B(lambda: COPKMeans(2).fit(X, 5), ConstraintError, r"^constraints: COPKMeans.fit expected a jaxclust.Constraints, .* got int", "cop-constraints-int"),
    B(lambda: COPKMeans(2).fit(X, Constraints(10)), ConstraintError, r"^constraints: built for 10 items but X has 12 rows \(COPKMeans.fit\)", "cop-constraints-n"),
    B(lambda: COPKMeans(2).fit(X, {"must": [(0, 1)]}), ConstraintError, r"^constraints: unknown keys \['must'\] given to COPKMeans.fit", "cop-dict-key"),
    B(lambda: COPKMeans(2).fit(X, {"must_link": [(0, 12)]}), ConstraintError, r"^must-link \(0, 12\): index 12 is out of range for 12 items", "cop-dict-oob"),
    B(lambda: COPKMeans(2).fit(X, ([(0, 1)], [(0, 1)])), ConstraintConflictError, r"items 0 and 1 are cannot-linked but must-links join them", "cop-tuple-conflict"),
    B(lambda: COPKMeans(2).fit(np.zeros(5)), InvalidInputError, r"^X: Expected 2D array", "cop-1d"),
    B(lambda: COPKMeans(2, n_init=0).fit(X), InvalidInputError, r"^COPKMeans\(n_init=0\): expected an int >= 1", "cop-n-init0"),
    B(lambda: COPKMeans(2, n_init=2).fit(X, Constraints(12, cannot_link=[(0, 1), (1, 2), (0, 2)])), InfeasibleConstraintsError, r"^COPKMeans: item 2 .* has no feasible cluster", "cop-infeasible"),
    B(lambda: COPKMeans(2).predict(X), NotFittedError, r"^COPKMeans.predict: this COPKMeans instance is not fitted", "cop-predict-unfitted"),
    B(lambda: fitted("cop").predict(np.zeros((2, 3))), InvalidInputError, r"X has 3 features, but COPKMeans is expecting 2", "cop-predict-width"),
    B(lambda: PCKMeans(2).fit(X, Y), ConstraintError, r"^constraints: PCKMeans.fit got an array of shape \(12,\)", "pck-labels-positional"),
    B(lambda: PCKMeans(2, capacity="big").fit(X), InvalidInputError, r"^PCKMeans\(capacity='big'\): expected an int >= 1", "pck-capacity-str"),
    B(lambda: PCKMeans(2, capacity=0).fit(X), InvalidInputError, r"^PCKMeans\(capacity=0\): expected an int >= 1", "pck-capacity0"),
    B(lambda: PCKMeans(2, w="abc").fit(X), InvalidInputError, r"^PCKMeans\(w='abc'\): expected a finite number >= 0\.0", "pck-w-str"),
    B(lambda: PCKMeans(2, w=-1.0).fit(X), InvalidInputError, r"^PCKMeans\(w=\-1\.0\): expected a finite number >= 0\.0", "pck-w-neg"),
    B(lambda: PCKMeans(2, w_bar=np.nan).fit(X), InvalidInputError, r"^PCKMeans\(w_bar=nan\): expected None or a finite number >= 0\.0", "pck-w-bar-nan"),
    B(lambda: PCKMeans(2).fit(X, Constraints(13)), ConstraintError, r"^constraints: built for 13 items but X has 12 rows \(PCKMeans.fit\)", "pck-constraints-n"),
    B(lambda: PCKMeans(2).fit_predict(X, "c"), ConstraintError, r"^constraints: PCKMeans.fit expected a jaxclust.Constraints", "pck-fit-predict-str"),
    B(lambda: PCKMeans(2).predict(X), NotFittedError, r"^PCKMeans.predict: .* not fitted", "pck-predict-unfitted"),
    # ---- query baselines --------------------------------------------------------------------------------------
    B(lambda: ExploreConsolidate(2).fit([1, 2, 3], GoldOracle(Y)), InvalidInputError, r"^X: expected a 2-D array, got shape \(3,\)", "ec-1d"),
    B(lambda: ExploreConsolidate(2).fit(X, None), InvalidInputError, r"^oracle: ExploreConsolidate.fit expected a callable oracle", "ec-oracle-none"),
    B(lambda: ExploreConsolidate(2).fit(X, C12), InvalidInputError, r"^oracle: ExploreConsolidate.fit got constraints where it takes the oracle", "ec-constraints-as-oracle"),
    B(lambda: ExploreConsolidate(0).fit(X, GoldOracle(Y)), InvalidInputError, r"^ExploreConsolidate\(n_clusters=0\): expected an int >= 1", "ec-k0"),
    B(lambda: MinMax(2, max_queries=-1).fit(X, GoldOracle(Y)), InvalidInputError, r"^MinMax\(max_queries=\-1\): expected an int >= 0", "minmax-queries-neg"),
    B(lambda: MinMax(2).fit(X, GoldOracle(Y), Constraints(3)), ConstraintError, r"^constraints: built for 3 items but X has 12 rows \(MinMax.fit\)", "minmax-constraints-n"),
    B(lambda: ExploreConsolidate(2, max_queries=3).fit(X, lambda i, j: "maybe"), InvalidInputError, r"^oracle: answered 'maybe' for pair", "ec-oracle-answer"),
    B(lambda: NPU(2, n_estimators=0).fit(X, GoldOracle(Y)), InvalidInputError, r"^NPU\(n_estimators=0\): expected an int >= 1", "npu-estimators0"),
    B(lambda: constraints_from_queries([(0, 1)], 3), InvalidInputError, r"^queries: entry \(0, 1\) is not \(i, j, answer\)", "cfq-pair"),
    B(lambda: constraints_from_queries([(0, 1, "maybe")], 3), InvalidInputError, r"^queries: entry \(0, 1, 'maybe'\) has answer 'maybe'", "cfq-answer"),
    B(lambda: constraints_from_queries([(0, 5, "must")], 3), ConstraintError, r"^must-link \(0, 5\): index 5 is out of range for 3 items", "cfq-oob"),
    B(lambda: constraints_from_queries([], 3, budget=-1), InvalidInputError, r"^budget: expected an int >= 0, got -1", "cfq-budget"),
    # ---- ITML ----------------------------------------------------------------------------------------------------
    B(lambda: ITML(gamma="abc").fit(X, [[0, 1]], [1]), InvalidInputError, r"^ITML\(gamma='abc'\): expected a number > 0\.0", "itml-gamma-str"),
    B(lambda: ITML(gamma=0.0).fit(X, [[0, 1]], [1]), InvalidInputError, r"^ITML\(gamma=0\.0\): expected a number > 0\.0", "itml-gamma0"),
    B(lambda: ITML(gamma=np.nan).fit(X, [[0, 1]], [1]), InvalidInputError, r"^ITML\(gamma=nan\): expected a number > 0\.0", "itml-gamma-nan"),
    B(lambda: ITML(tol=np.nan).fit(X, [[0, 1]], [1]), InvalidInputError, r"^ITML\(tol=nan\): expected a finite number >= 0\.0", "itml-tol-nan"),
    B(lambda: ITML(tol="x").fit(X, [[0, 1]], [1]), InvalidInputError, r"^ITML\(tol='x'\): expected a finite number >= 0\.0", "itml-tol-str"),
    B(lambda: ITML(max_iter=0).fit(X, [[0, 1]], [1]), InvalidInputError, r"^ITML\(max_iter=0\): expected an int >= 1", "itml-max-iter0"),
    B(lambda: ITML(max_iter=True).fit(X, [[0, 1]], [1]), InvalidInputError, r"^ITML\(max_iter=True\): expected an int >= 1", "itml-max-iter-bool"),
    B(lambda: ITML(padding="x").fit(X, [[0, 1]], [1]), InvalidInputError, r"^ITML\(padding='x'\): expected one of 'fine', 'pow2'", "itml-padding"),
    B(lambda: ITML(prior="x").fit(X, [[0, 1]], [1]), InvalidInputError, r"^prior: expected 'identity', 'covariance' or a \(d, d\) matrix, got 'x'", "itml-prior-str"),
    B(lambda: ITML(prior=np.eye(3)).fit(X, [[0, 1]], [1]), InvalidInputError, r"^prior: expected shape \(2, 2\), got \(3, 3\)", "itml-prior-shape"),
    B(lambda: ITML(prior=-np.eye(2)).fit(X, [[0, 1]], [1]), InvalidInputError, r"^prior: matrix must be symmetric positive definite", "itml-prior-neg"),
    B(lambda: ITML(bounds=(1,)).fit(X, [[0, 1]], [1]), InvalidInputError, r"^bounds: expected two finite non-negative numbers", "itml-bounds"),
    B(lambda: ITML().fit(X, [[0.5, 1]], [1]), InvalidInputError, r"^pairs: expected an \(m, 2\) integer array .* dtype float64", "itml-pairs-float"),
    B(lambda: ITML().fit(X, [[0, 99]], [1]), InvalidInputError, r"^pairs: pair 0 = \(0, 99\) has an index outside \[0, 12\)", "itml-pairs-oob"),
    B(lambda: ITML().fit(X, [[0, 1]], [2]), InvalidInputError, r"^y: entry 0 is 2, expected \+1 or -1", "itml-y-value"),
    B(lambda: ITML().fit(X, [[0, 1]], [1, 1]), InvalidInputError, r"^y: length 2 does not match 1 pairs", "itml-y-len"),
    B(lambda: ITML().fit(X, [[0, 1]]), InvalidInputError, r"^y: required \(\+1 similar / -1 dissimilar\)", "itml-y-missing"),
    B(lambda: ITML().fit(X, C12, [1, -1]), InvalidInputError, r"^y: ITML.fit got constraints as pairs and also y \(list\)", "itml-constraints-and-y"),
    B(lambda: ITML().fit(X, [[0, 1]], C12), ConstraintError, r"^y: ITML.fit got constraints as y", "itml-constraints-as-y"),
    B(lambda: ITML().fit(X, Constraints(5, must_link=[(0, 1)])), ConstraintError, r"^constraints: built for 5 items but X has 12 rows \(ITML.fit\)", "itml-constraints-n"),
    B(lambda: ITML().fit(np.ones((4, 2)), [[0, 1]], [1]), InvalidInputError, r"^X: all rows are identical", "itml-identical-rows"),
    B(lambda: ITML().transform(X), NotFittedError, r"^ITML: call fit", "itml-unfitted"),
    B(lambda: fitted("itml").pairwise_distances(np.zeros((3, 3))), InvalidInputError, r"^X: has 3 features, ITML was fitted with 2 \(pairwise_distances\)", "itml-pd-width"),
    B(lambda: fitted("itml").transform(np.zeros((3, 1))), InvalidInputError, r"^X: has 1 features, ITML was fitted with 2 \(transform\)", "itml-transform-width"),
    # ---- ConstrainedAgglomerative ----------------------------------------------------------------------------
    B(lambda: ConstrainedAgglomerative(2).fit(X, Y), ConstraintError, r"^constraints: ConstrainedAgglomerative.fit got an array of shape \(12,\)", "agglo-labels-positional"),
    B(lambda: ConstrainedAgglomerative(2).fit(X, Constraints(6)), ConstraintError, r"^constraints: built for 6 items but X has 12 rows", "agglo-constraints-n"),
    B(lambda: ConstrainedAgglomerative(0).fit(X), InvalidInputError, r"^n_clusters: expected an int in \[1, 12\], got 0", "agglo-k0"),
    B(lambda: ConstrainedAgglomerative(True).fit(X), InvalidInputError, r"^n_clusters: expected an int in \[1, 12\], got True", "agglo-k-bool"),
    B(lambda: ConstrainedAgglomerative(2, metric="cosine").fit(X), InvalidInputError, r"^metric: expected 'euclidean' or 'precomputed', got 'cosine'", "agglo-metric"),
    B(lambda: ConstrainedAgglomerative(2, metric="precomputed").fit(np.ones((3, 2))), InvalidInputError, r"^X: metric='precomputed' needs a square matrix, got shape \(3, 2\)", "agglo-precomputed-shape"),
    B(lambda: ConstrainedAgglomerative(2, metric="precomputed").fit(np.array([[0, 1], [2, 0.0]])), InvalidInputError, r"^X: precomputed distances must be symmetric", "agglo-precomputed-asym"),
    B(lambda: ConstrainedAgglomerative(2, metric="precomputed").fit(-np.ones((2, 2))), InvalidInputError, r"^X: precomputed distances must be non-negative", "agglo-precomputed-neg"),
    B(lambda: ConstrainedAgglomerative(2).fit(np.ones((1, 2))), InvalidInputError, r"^X: 1 sample\(s\) .* minimum of 2 is required", "agglo-one-row"),
    # ---- ICC, silh_const, cluster-and-label --------------------------------------------------------------------
    B(lambda: ICC(2, strategy="x").fit(X, Y), InvalidInputError, r"^ICC\(strategy='x'\): expected one of 'silh_const', 'random', 'klein'", "icc-strategy"),
    B(lambda: ICC(1).fit(X, Y), InvalidInputError, r"^ICC\(n_clusters=1\): expected an int >= 2", "icc-k1"),
    B(lambda: ICC(2, budget=4).fit(X, np.where(np.arange(12) == 3, np.nan, Y)), InvalidInputError, r"^oracle: the gold label at row 3 is NaN", "icc-nan-label"),
    B(lambda: ICC(2, budget=4).fit(X, lambda ids: [np.nan] * len(ids)), InvalidInputError, r"^oracle: the label of item \d+ is NaN", "icc-nan-callable"),
    B(lambda: ICC(20, budget=4).fit(X, Y), InvalidInputError, r"^n_clusters: 20 exceeds the number of rows \(12\)", "icc-k-gt-n"),
    B(lambda: ICC(2, budget=100).fit(X, Y), InvalidInputError, r"^budget: expected a fraction in \(0, 1\] or an int in \[2, 12\]", "icc-budget"),
    B(lambda: ICC(2, batch_size=0).fit(X, Y), InvalidInputError, r"^ICC\(batch_size=0\): expected an int >= 1", "icc-batch0"),
    B(lambda: ICC(2, max_constraints="a").fit(X, Y), InvalidInputError, r"^ICC\(max_constraints='a'\): expected an int >= 1", "icc-max-constraints"),
    B(lambda: ICC(2, n_components=0).fit(X, Y), InvalidInputError, r"^ICC\(n_components=0\): expected None or an int >= 1", "icc-n-components"),
    B(lambda: ICC(2, checkpoints=[2.5]).fit(X, Y), InvalidInputError, r"^checkpoints: expected an int >= 1, got 2.5", "icc-checkpoints"),
    B(lambda: ICC(2, budget=4).fit(X, Y[:3]), InvalidInputError, r"^oracle: expected a callable or \(12,\) gold labels, got shape \(3,\)", "icc-oracle-len"),
    B(lambda: ICC(2, budget=4).fit(X, C12), ConstraintError, r"^oracle: ICC.fit got constraints \(Constraints\) as oracle", "icc-constraints-as-oracle"),
    B(lambda: ICC(2, budget=4).fit(X, Y, C12), ConstraintError, r"^y: ICC.fit got constraints \(Constraints\) as y", "icc-constraints-as-y"),
    B(lambda: ICC(2, budget=4, metric_learning=False).fit(X, lambda ids: [0]), InvalidInputError, r"^oracle: returned 1 labels for 2 indices", "icc-oracle-short"),
    B(lambda: silh_const_scores(np.zeros((3, 2)), [0, 1, 1], [0], [0]), InvalidInputError, r"^D: expected a square \(n, n\) distance matrix, got shape \(3, 2\)", "silh-d-shape"),
    B(lambda: silh_const_scores(np.zeros((3, 3)), [0, 1], [0], [0]), InvalidInputError, r"^clusters: expected 3 cluster ids", "silh-clusters-len"),
    B(lambda: silh_const_scores(np.zeros((3, 3)), [0, 1, 1], [5], [0]), InvalidInputError, r"^labeled_idx: index 5 is out of range for 3 items", "silh-idx-oob"),
    B(lambda: silh_const_scores(np.zeros((3, 3)), [0, 1, 1], [0, 1], [0]), InvalidInputError, r"^labels: expected 2 labels \(one per labelled index\)", "silh-labels-len"),
    B(lambda: propagate_labels(np.zeros(3, int), [5], [0], np.zeros((3, 3))), InvalidInputError, r"^labeled_idx: index 5 is out of range for 3 items", "propagate-oob"),
    B(lambda: propagate_labels(np.zeros(3, int), [0], [0], np.zeros((2, 2))), InvalidInputError, r"^D: expected an \(3, 3\) distance matrix, got shape \(2, 2\)", "propagate-d"),
    B(lambda: CAL.make_classifier("x"), InvalidInputError, r"^kind: expected 'svm' or 'logreg', got 'x'", "cal-kind"),
    B(lambda: CAL.random_sampling_curve(X, Y, X, Y, [0]), InvalidInputError, r"^budgets: expected increasing label counts in \[1, 12\], got \[0\]", "cal-budget0"),
    B(lambda: CAL.random_sampling_curve(X, Y, X, Y, ["a"]), InvalidInputError, r"^budgets: expected increasing label counts .* got \['a'\]", "cal-budget-str"),
    B(lambda: CAL.random_sampling_curve(X, Y, X, Y, [6, 3]), InvalidInputError, r"^budgets: .* got \[6, 3\]", "cal-budget-order"),
    B(lambda: CAL.train_on_generated(X, Y[:3]), InvalidInputError, r"^labels: expected 12 labels \(one per row of X\), got shape \(3,\)", "cal-labels-len"),
    B(lambda: CAL.train_on_generated(X, Y, sample_weight=np.ones(3)), InvalidInputError, r"^sample_weight: expected 12 weights", "cal-weights-len"),
    B(lambda: CAL.labels_needed([0.1], [0.5, 0.6], 0.5), InvalidInputError, r"^accuracies: expected 1 values \(one per fraction\), got 2", "cal-labels-needed-len"),
    # ---- L3M ---------------------------------------------------------------------------------------------------------
    B(lambda: L3M().fit([]), InvalidInputError, r"^documents is empty", "l3m-empty"),
    B(lambda: L3M().fit(DOC), InvalidInputError, r"^documents must be a list of documents", "l3m-single-doc"),
    B(lambda: L3M().fit(5), InvalidInputError, r"^documents: expected a list \(one entry per document\), got int", "l3m-docs-int"),
    B(lambda: L3M().fit([np.zeros((3, 2, 2))], [[0, 0, 1]]), InvalidInputError, r"^document 0: expected a Document or an \(m, m, F\) pair-feature array, got shape \(3, 2, 2\)", "l3m-doc-shape"),
    B(lambda: L3M().fit([DOC]), InvalidInputError, r"^document 0 \('0'\) has no gold clusters", "l3m-no-gold"),
    B(lambda: L3M().fit([DOC], [[0, 0]]), InvalidInputError, r"document '0': clusters must be 3 integer ids, got shape \(2,\)", "l3m-clusters-len"),
    B(lambda: L3M().fit([DOC], C12), ConstraintError, r"^clusters: got constraints where L3M takes gold cluster labels", "l3m-constraints-as-clusters"),
    B(lambda: L3M().fit([DOC], [[0, 0, 1]], constraints=Constraints(3)), ConstraintError, r"^constraints: expected a list with one Constraints \(or None\) per document, got one Constraints", "l3m-constraints-unwrapped"),
    B(lambda: L3M().fit([DOC], [[0, 0, 1]], constraints=[Constraints(5)]), ConstraintError, r"^constraints: built for 5 items but the document has 3 items \(L3M, document 0\)", "l3m-constraints-n"),
    B(lambda: L3M().fit([DOC], [[0, 0, 1]], constraints=[None, None]), InvalidInputError, r"^got 1 documents but 1 cluster lists and 2 constraint sets", "l3m-constraints-count"),
    B(lambda: L3M(gamma="a").fit([DOC], [[0, 0, 1]]), InvalidInputError, r"^L3M\(gamma='a'\): expected a finite number >= 0\.0", "l3m-gamma-str"),
    B(lambda: L3M(threshold=2.0).fit([DOC], [[0, 0, 1]]), InvalidInputError, r"^L3M\(threshold=2\.0\): expected a finite number >= 0\.0 and <= 1\.0", "l3m-threshold"),
    B(lambda: L3M(n_epochs=0).fit([DOC], [[0, 0, 1]]), InvalidInputError, r"^L3M\(n_epochs=0\): expected an int >= 1", "l3m-epochs0"),
    B(lambda: L3M(scorer="mlp", hidden=0).fit([DOC], [[0, 0, 1]]), InvalidInputError, r"^L3M\(hidden=0\): expected an int >= 1", "l3m-hidden0"),
    B(lambda: L3M(decoding="x").fit([DOC], [[0, 0, 1]]), InvalidInputError, r"^L3M\(decoding='x'\): expected one of 'greedy', 'best_link'", "l3m-decoding"),
    B(lambda: L3M(n_epochs=1).fit([np.full((3, 3, 2), np.nan)], [[0, 0, 1]]), InvalidInputError, r"document '0': features contain NaN/inf at item 1", "l3m-features-nan"),
    B(lambda: L3M().predict(DOC), NotFittedError, r"^this L3M instance is not fitted yet", "l3m-unfitted"),
    # ---- Constraints ------------------------------------------------------------------------------------------------
    B(lambda: Constraints(0), InvalidInputError, r"^n: expected an int >= 1, got 0", "c-n0"),
    B(lambda: Constraints("5"), InvalidInputError, r"^n: expected an int >= 1, got '5'", "c-n-str"),
    B(lambda: Constraints(3, must_link=[(0, 3)]), ConstraintError, r"^must-link \(0, 3\): index 3 is out of range for 3 items", "c-ml-oob"),
    B(lambda: Constraints(3, cannot_link=[(0, -1)]), ConstraintError, r"^cannot-link \(0, -1\): index -1 is out of range", "c-cl-neg"),
    B(lambda: Constraints(3, must_link=[(0, 1.0)]), ConstraintError, r"^must-link \(0, 1.0\): index 1.0 is not an integer", "c-ml-float"),
    B(lambda: Constraints(3, cannot_link=[(1, 1)]), ConstraintError, r"^cannot-link \(1, 1\): an item cannot be cannot-linked to itself", "c-cl-self"),
    B(lambda: Constraints(4, must_link=[(2, 2)]), ConstraintError, r"^must-link \(2, 2\): a must-link needs two different items", "c-ml-self"),
    B(lambda: Constraints(4).with_answer(2, 2, "must"), ConstraintError, r"^must-link \(2, 2\): a must-link needs two different items", "c-with-answer-ml-self"),
    B(lambda: Constraints(4).with_must_link(1, 1), ConstraintError, r"^must-link \(1, 1\): a must-link needs two different items", "c-with-ml-self"),
    B(lambda: Constraints(3, must_link=[(0, 1, 2)]), ConstraintError, r"^must-link \(0, 1, 2\): expected a pair \(i, j\)", "c-triple"),
    B(lambda: Constraints(3, must_link=None), ConstraintError, r"^must_link: expected a list of pairs \(i, j\), got NoneType", "c-ml-none"),
    B(lambda: Constraints(3, cannot_link=5), ConstraintError, r"^cannot_link: expected a list of pairs \(i, j\), got int", "c-cl-int"),
    B(lambda: Constraints(3, must_link=[(0, 1), (1, 2)], cannot_link=[(0, 2)]), ConstraintConflictError, r"items 0 and 2 are cannot-linked but must-links join them \(chain 0 -> 1 -> 2\)", "c-conflict-chain"),
    B(lambda: Constraints(3, on_conflict="x"), InvalidInputError, r"^on_conflict: expected 'raise' or 'drop', got 'x'", "c-on-conflict"),
    B(lambda: Constraints.from_pairs(3, [(0, 1, "maybe")]), ConstraintError, r"^constraint \(0, 1, 'maybe'\): kind must be 'must' or 'cannot'", "c-from-pairs-kind"),
    B(lambda: Constraints.from_pairs(4, [(0, 1, np.array([1, 0]))]), ConstraintError, r"^constraint \(0, 1, array\(\[1, 0\]\)\): kind must be 'must' or 'cannot' \(or True / False\), got array", "c-from-pairs-kind-array"),
    B(lambda: Constraints.from_pairs(4, [(0, 1, 1)]), ConstraintError, r"^constraint \(0, 1, 1\): kind must be 'must' or 'cannot' \(or True / False\), got 1", "c-from-pairs-kind-int"),
    B(lambda: Constraints(4).with_answer(0, 1, None), ConstraintError, r"^answer \(0, 1\): kind None means \"don't know\", which is not a constraint", "c-with-answer-none"),
    B(lambda: Constraints(4).with_answer(0, 1, "no", error_rate=0.1), ConstraintError, r"^answer \(0, 1\): kind must be 'must' or 'cannot' \(or True / False\), got 'no'", "c-with-answer-word"),
    B(lambda: Constraints(4).with_constraint(0, 1, "yes"), ConstraintError, r"^constraint \(0, 1\): kind must be 'must' or 'cannot' \(or True / False\), got 'yes'", "c-with-constraint-word"),
    B(lambda: Constraints.from_answers(4, [(0, 1, None)]), ConstraintError, r"^answer \(0, 1, None\): kind None means \"don't know\"", "c-from-answers-none"),
    B(lambda: Constraints(4).status_codes([1.9], [2.2]), ConstraintError, r"^i: index 1.9 is not an integer", "c-status-codes-float"),
    B(lambda: Constraints(4).status_codes([np.nan], [1]), ConstraintError, r"^i: index nan is not an integer", "c-status-codes-nan"),
    B(lambda: V.seed_from(2**64), InvalidInputError, r"^random_state: must be below 2\*\*64, got 18446744073709551616", "v-seed-too-big"),
    B(lambda: Constraints.from_labels([0, 1], [5]), ConstraintError, r"^from_labels: index 5 is out of range for 2 items", "c-from-labels-oob"),
    B(lambda: Constraints.from_labels(["a", "b"], [0, 1]), InvalidInputError, r"^labels: expected integer labels, got dtype <U1", "c-from-labels-str"),
    B(lambda: Constraints(3).status(0, 3), ConstraintError, r"^status: index 3 is out of range for 3 items", "c-status-oob"),
    B(lambda: Constraints(3).status_codes([0], [7]), ConstraintError, r"^j: index 7 is out of range for 3 items", "c-status-codes-oob"),
    B(lambda: Constraints(3).with_cannot_link(0, 9), ConstraintError, r"^cannot-link \(0, 9\): index 9 is out of range", "c-with-oob"),
    B(lambda: Constraints(3).check_assignment([0, 1]), InvalidInputError, r"^labels: expected 3 labels, got 2", "c-check-assignment-len"),
    B(lambda: Constraints(3, cannot_link=[(0, 1), (0, 2)]).cannot_partners(capacity=1), InvalidInputError, r"^capacity: 1 is below the largest number of cannot-link partners of one group \(2\)", "c-partners-capacity"),
    B(lambda: Constraints.from_dict({}), ConstraintError, r"^from_dict: no 'n'", "c-from-dict-n"),
    B(lambda: Constraints.from_dict({"n": 3, "extra": 1}), ConstraintError, r"^from_dict: unknown keys \['extra'\]", "c-from-dict-extra-key"),
    B(lambda: Constraints.from_dict({"n": 3, "constraints": [[0, 1]]}), ConstraintError, r"^constraints: entry \[0, 1\] is not \[i, j, 'must' \| 'cannot'\]", "c-from-dict-entry"),
    B(lambda: Constraints.from_json("{"), ConstraintError, r"^from_json: not valid JSON", "c-from-json"),
    B(lambda: as_constraints(np.zeros((3, 2)), 3, where="DPMM-like fit"), ConstraintError, r"^constraints: DPMM-like fit got an array of shape \(3, 2\)", "c-as-constraints-array"),
    # ---- validation helpers ----------------------------------------------------------------------------------------
    B(lambda: V.check_array("abc"), InvalidInputError, r"^X: expected numeric values, got dtype <U3", "v-array-str"),
    B(lambda: V.check_array([[1, 2], [3]]), InvalidInputError, r"^X: cannot be converted to an array", "v-array-ragged"),
    B(lambda: V.check_array(np.zeros((3, 0))), InvalidInputError, r"^X: 0 feature\(s\) \(shape=\(3, 0\)\)", "v-array-no-cols"),
    B(lambda: V.check_array(_sparse(X), name="features"), InvalidInputError, r"^features: sparse input is not supported here; pass features.toarray\(\)", "v-array-sparse"),
    B(lambda: V.check_labels(np.zeros((2, 2))), InvalidInputError, r"^labels: expected a 1-D array of labels, got shape \(2, 2\)", "v-labels-2d"),
    B(lambda: V.check_labels([0, 0.5], name="y"), InvalidInputError, r"^y: entry 1 is 0.5, labels must be integers", "v-labels-frac"),
    B(lambda: V.check_labels([0, 1], n=3), InvalidInputError, r"^labels: expected 3 labels, got 2", "v-labels-len"),
    B(lambda: V.check_index(True, 3, "i"), InvalidInputError, r"^i: True is not an integer index", "v-index-bool"),
    B(lambda: V.check_index(3, 3, "j"), InvalidInputError, r"^j: 3 is out of range for 3 items \(valid: 0..2\)", "v-index-oob"),
    B(lambda: V.check_positive("x", "alpha"), InvalidInputError, r"^alpha: expected a number, got 'x'", "v-positive-str"),
    B(lambda: V.check_positive(0, "alpha"), InvalidInputError, r"^alpha: must be > 0 and finite, got 0", "v-positive-zero"),
    B(lambda: V.check_int(2.0, "n_chains", minimum=1), InvalidInputError, r"^n_chains: expected an int >= 1, got 2.0", "v-int-float"),
    B(lambda: V.check_float(np.inf, "rate", minimum=0.0), InvalidInputError, r"^rate: expected a finite number >= 0.0, got inf", "v-float-inf"),
    B(lambda: V.seed_from("a"), InvalidInputError, r"^random_state: expected None, an int or a NumPy RNG, got str", "v-seed-str"),
    B(lambda: V.prng_key(1.5), InvalidInputError, r"^random_state: expected None, an int or a NumPy RNG, got float", "v-prng-float"),
    # ---- metrics -------------------------------------------------------------------------------------------------------
    B(lambda: M.v_measure([0, 1], [0]), InvalidInputError, r"^labels_pred: expected 2 labels, got 1", "m-v-len"),
    B(lambda: M.v_measure(["a", "b"], [0, 1]), InvalidInputError, r"^labels_true: expected integer labels, got dtype <U1", "m-v-str"),
    B(lambda: M.adjusted_rand_index([0, np.nan], [0, 1]), InvalidInputError, r"^labels_true: entry 1 is nan, labels must be integers", "m-ari-nan"),
    B(lambda: M.v_beta([[0]], [[0]]), InvalidInputError, r"^labels_true: expected a 1-D array of labels, got shape \(1, 1\)", "m-vbeta-2d"),
    B(lambda: M.v_measure([0, 1], [0, 1], beta=-1), InvalidInputError, r"^beta: must be >= 0 and finite, got -1", "m-beta-neg"),
    B(lambda: M.normalized_mutual_info([0, 1], [0, 1], average_method="x"), InvalidInputError, r"^average_method: expected 'min', 'geometric', 'arithmetic' or 'max', got 'x'", "m-nmi-method"),
    B(lambda: M.purity(None, None), InvalidInputError, r"^labels_true: expected a 1-D array of labels, got shape \(\)", "m-purity-none"),
    B(lambda: M.muc(5, 5), InvalidInputError, r"^key: expected a sequence of entities \(sets of mention ids\), got int", "m-muc-int"),
    B(lambda: M.b_cubed([[1, 2], [2, 3]], [[1]]), InvalidInputError, r"^key: mention 2 appears in entity 0 and in entity 1", "m-b3-overlap"),
    B(lambda: M.clusters_from_labels([0, 1], ids=[1]), InvalidInputError, r"^ids: expected 2 mention ids \(one per label\), got 1", "m-clusters-ids"),
    B(lambda: M.corpus_scores([[[1]]], []), InvalidInputError, r"^responses: expected 1 documents \(one per key document\), got 0", "m-corpus-len"),
    B(lambda: M.parse_conll("#begin document (d); part 000\nd 0 0 w (1\n#end document\n"), InvalidInputError, r"^<text>:2: document '\(d\); part 000': mention of entity 1 opened at token 0 never closes", "m-conll-unclosed"),
    B(lambda: M.read_conll("/nonexistent/x.conll"), InvalidInputError, r"^source: no such file '/nonexistent/x.conll'", "m-conll-missing"),
    B(lambda: M.read_conll(5), InvalidInputError, r"^source: expected a path or an open text file, got int", "m-conll-int"),
    B(lambda: JP.v_measure(np.array([0, 1]), np.array([0, 1]), n_classes="2"), InvalidInputError, r"^n_classes: expected an int >= 1, got '2'", "m-jax-capacity-str"),
    B(lambda: JP.purity(np.array([0, 1]), np.array([0, 1]), n_classes=2, n_clusters=0), InvalidInputError, r"^n_clusters: expected an int >= 1, got 0", "m-jax-capacity0"),
    # ---- active: entropy, selection, oracles ----------------------------------------------------------------------------
    B(lambda: agreeing_samples(S, 0, 99, True), InvalidInputError, r"^j: 99 is out of range for 4 items \(valid: 0..3\)", "a-agree-oob"),
    B(lambda: agreeing_samples(S, -1, 2, False), InvalidInputError, r"^i: -1 is out of range for 4 items", "a-agree-neg"),
    B(lambda: agreeing_samples(S, 0, 1.0, True), InvalidInputError, r"^j: 1.0 is not an integer", "a-agree-float"),
    B(lambda: agreeing_samples(S, 0, 1, "yes"), InvalidInputError, r"^must: expected a bool .* got 'yes'", "a-agree-must"),
    B(lambda: agreeing_samples(S[0], 0, 1, True), InvalidInputError, r"^samples: expected a 2-D array \(samples x items\), got shape \(4,\)", "a-agree-1d"),
    B(lambda: coclustering([0, 1, 1]), InvalidInputError, r"^samples: expected a 2-D array, got shape \(3,\)", "a-cocl-1d"),
    B(lambda: coclustering([[0.5, 1]]), InvalidInputError, r"^samples: expected integer component labels", "a-cocl-float"),
    B(lambda: coclustering(S, [-1, 2]), InvalidInputError, r"^weights: must be non-negative with a positive sum", "a-cocl-weights-neg"),
    B(lambda: coclustering(S, [1, 1, 1]), InvalidInputError, r"^weights: expected 2 entries \(one per sample\), got 3", "a-cocl-weights-len"),
    B(lambda: link_entropy([["a", "b"]]), InvalidInputError, r"^samples: expected numeric values, got dtype <U1", "a-entropy-str"),
    B(lambda: top_entropy_pairs(S, 0), InvalidInputError, r"^k: expected an int >= 1, got 0", "a-top-k0"),
    B(lambda: top_entropy_pairs(S, 2.7), InvalidInputError, r"^k: expected an int >= 1, got 2.7", "a-top-k-float"),
    B(lambda: top_entropy_pairs(S, None), InvalidInputError, r"^k: expected an int >= 1, got None", "a-top-k-none"),
    B(lambda: top_entropy_pairs(S, np.nan), InvalidInputError, r"^k: expected an int >= 1, got nan", "a-top-k-nan"),
    B(lambda: top_entropy_pairs(S, 1, exclude=[(0, 1, 2)]), InvalidInputError, r"^exclude: entry \(0, 1, 2\) is not a pair", "a-top-exclude-triple"),
    B(lambda: top_entropy_pairs(S, 1, Constraints(5)), ConstraintError, r"^constraints: built for 5 items but the samples have 4 \(top_entropy_pairs\)", "a-top-constraints-n"),
    B(lambda: top_entropy_pairs(S, 1, block=0), InvalidInputError, r"^block: must be >= 1, got 0", "a-top-block0"),
    B(lambda: _learner(KMeans(2)).run(X, 1), InvalidInputError, r"^model: KMeans cannot be refitted under answers \(its fit takes no 'constraints'\)", "a-learner-kmeans"),
    B(lambda: _learner(block_size=0).run(X, 1), InvalidInputError, r"^ActiveLearner\(block_size=0\): expected None or an int >= 1", "a-learner-block0"),
    B(lambda: _learner(block_size="a").run(X, 1), InvalidInputError, r"^ActiveLearner\(block_size='a'\): expected None or an int >= 1", "a-learner-block-str"),
    B(lambda: _learner().run(X, 1, constraints={"must_link": [(0, 99)]}), ConstraintError, r"^must-link \(0, 99\): index 99 is out of range for 12 items", "a-learner-constraints-dict"),
    B(lambda: COPKMeans(2).fit(X, SOFT12), ConstraintError, r"^constraints: COPKMeans.fit takes hard constraints only, and 1 answer\(s\) with an error rate were given \(the first: must \(0, 1\) with error_rate=0.1\)", "soft-copkmeans"),
    B(lambda: PCKMeans(2, w=1e6).fit(X, SOFT12), ConstraintError, r"^constraints: PCKMeans.fit takes hard constraints only", "soft-pckmeans"),
    B(lambda: ConstrainedAgglomerative(2).fit(X, SOFT12), ConstraintError, r"^constraints: ConstrainedAgglomerative.fit takes hard constraints only", "soft-agglomerative"),
    B(lambda: ITML().fit(X, SOFT12), ConstraintError, r"^constraints: ITML.fit takes hard constraints only", "soft-itml"),
    B(lambda: L3M(n_epochs=1).fit([DOC], [[0, 0, 1]]).predict(DOC, constraints=Constraints.from_answers(3, [(0, 1, "must", 0.2)])), ConstraintError, r"^constraints: L3M, document 0 takes hard constraints only", "soft-l3m-predict"),
    B(lambda: ConstrainedAgglomerative(2).predict(X), InvalidInputError, r"^ConstrainedAgglomerative has no predict: agglomerative clustering labels only the items it was fitted on", "agg-no-predict"),
    B(lambda: DPMM().predict(X), NotFittedError, r"^DPMM.predict_proba: call fit before predict_proba", "dp-predict-unfitted"),
    B(lambda: Constraints(4, cannot_link=[(2, 3)]).colouring(n_rows=1), InvalidInputError, r"^n_rows: expected at least the 4 groups, got 1", "c-colouring-rows"),
    B(lambda: NormalGamma(mean="a"), InvalidInputError, r"^prior.mean: expected a number or an array of numbers, got 'a'", "dp-prior-mean-str"),
    B(lambda: JP.v_measure(np.array([0.0, 1.0]), np.array([0, 1]), 2), InvalidInputError, r"^labels_true: expected a 1-D array of integer labels", "m-jax-float-labels"),
    B(lambda: JP.v_measure(np.array([0, 1, 1]), np.array([0, 1]), 2), InvalidInputError, r"^labels_true and labels_pred: expected the same length, got 3 and 2", "m-jax-lengths"),
    B(lambda: _enable_cache(5), InvalidInputError, r"^path: expected a folder path \(str or os.PathLike\) or None, got 5", "cc-path-int"),
    B(lambda: select_queries(S, strategy="x"), InvalidInputError, r"^strategy: expected one of .* got 'x'", "a-select-strategy"),
    B(lambda: select_queries(S, strategy="batch"), InvalidInputError, r"^strategy: 'batch' needs the oracle between picks", "a-select-batch"),
    B(lambda: select_queries(S, batch_size=0), InvalidInputError, r"^batch_size: expected an int >= 1, got 0", "a-select-batch-size"),
    B(lambda: select_queries([0, 1]), InvalidInputError, r"^samples: expected a 2-D array \(samples x items\), got shape \(2,\)", "a-select-1d"),
    B(lambda: random_pairs(0, "5", 1), InvalidInputError, r"^n: expected an int >= 1, got '5'", "a-random-n-str"),
    B(lambda: random_pairs(0, 5, -1), InvalidInputError, r"^k: expected an int >= 0, got -1", "a-random-k-neg"),
    B(lambda: random_pairs(0, 5, 1, exclude=[(0,)]), InvalidInputError, r"^exclude: entry \(0,\) is not a pair \(i, j\)", "a-random-exclude"),
    B(lambda: random_pairs(0, 5, 1, exclude=[(0, 7)]), InvalidInputError, r"^exclude \(0, 7\): 7 is out of range for 5 items", "a-random-exclude-oob"),
    B(lambda: random_pairs(0, 5, 1, Constraints(4)), InvalidInputError, r"^constraints: built for 4 items, n is 5", "a-random-constraints-n"),
    B(lambda: GoldOracle([0, 1])(0, 5), InvalidInputError, r"^j: 5 is out of range for 2 items", "a-gold-oob"),
    B(lambda: GoldOracle(["a", "b"]), InvalidInputError, r"^labels: expected integer labels, got dtype <U1", "a-gold-str"),
    B(lambda: NoisyOracle([0, 1], flip_rate=2), InvalidInputError, r"^flip_rate: expected a finite number >= 0.0 and <= 1.0, got 2", "a-noisy-rate"),
    B(lambda: NoisyOracle([0, 1], flip_rate="a"), InvalidInputError, r"^flip_rate: expected a finite number .* got 'a'", "a-noisy-rate-str"),
    B(lambda: NoisyOracle([0, 1], random_state="s"), InvalidInputError, r"^random_state: expected None, an int", "a-noisy-seed"),
    B(lambda: ask(lambda i, j: "maybe", 0, 1), InvalidInputError, r"^oracle: answered 'maybe' for pair \(0, 1\)", "a-ask-answer"),
    B(lambda: ask(lambda i, j: np.int64(1), 0, 1), InvalidInputError, r"^oracle: answered np.int64\(1\) for pair \(0, 1\)|^oracle: answered 1 for pair", "a-ask-np-int"),
    # ---- dataset loaders (no data needed: these fail before reading, or read a damaged copy in tmp_path) -------------
    B(lambda: D.load_dataset("nope"), InvalidInputError, r"^unknown dataset 'nope'; known: ", "d-unknown"),
    B(lambda: D.load_dataset("iris", bogus=1), InvalidInputError, r"^bogus: not an option of the 'iris' loader", "d-unknown-option"),
    B(lambda: D.load_litbank(split="x"), InvalidInputError, r"^split='x' is not one of 'train', 'dev', 'test', 'all'", "d-litbank-split"),
    B(lambda: D.load_litbank(fold=11), InvalidInputError, r"^fold=11 is not one of 0, 1", "d-litbank-fold"),
    B(lambda: D.load_gum(split="x"), InvalidInputError, r"^split='x' is not one of 'train', 'dev', 'test', 'test2'", "d-gum-split"),
    B(lambda: D.load_clustering_benchmark("uci", "../x"), InvalidInputError, r"^name='\.\./x' is not a benchmark data set name", "d-bench-name"),
    B(lambda: D.load_clustering_benchmark("nope", "x"), InvalidInputError, r"^battery='nope' is not one of", "d-bench-battery"),
    B(lambda: D.load_verbs_general(subset="x"), InvalidInputError, r"^subset='x' is not one of 'balanced', 'full'", "d-verbs-subset"),
    B(lambda: D.load_newsgroups(remove=["x"]), InvalidInputError, r"^remove='x' is not one of 'headers', 'footers', 'quotes'", "d-newsgroups-remove"),
    B(lambda: D.load_newsgroups(labels="author", min_posts=0), InvalidInputError, r"^min_posts=0 is not an int >= 1", "d-newsgroups-min-posts"),
    B(lambda: D.load_nps_chat(min_posts=0), InvalidInputError, r"^min_posts=0 is not an int >= 1", "d-nps-min-posts"),
    B(lambda: D.load_senseval2(word="x"), InvalidInputError, r"^word='x' is not one of 'hard', 'interest', 'line', 'serve'", "d-senseval-word"),
    B(lambda: D.load_subjectivity(data_dir="/nonexistent"), DatasetNotFoundError, r"data set folder 'pang_lee_subjectivity_v1' \(files: sentences.tsv\) not found: data directory '/nonexistent'", "d-data-dir-missing"),
    # ---- DPMM (validation happens before any sampling: no compile) -----------------------------------------
    B(lambda: DPMM(capacity="big").fit(X), InvalidInputError, r"^capacity: expected None or an int >= 1, got 'big'", "dp-capacity-str"),
    B(lambda: DPMM(capacity=0).fit(X), InvalidInputError, r"^capacity: expected None or an int >= 1, got 0", "dp-capacity-0"),
    B(lambda: DPMM(max_components=0).fit(X), InvalidInputError, r"^max_components: expected an int >= 1, got 0", "dp-max-components-0"),
    B(lambda: DPMM(capacity=8, max_components=16).fit(X), InvalidInputError, r"^capacity=8 and max_components=16", "dp-capacity-twice"),
    B(lambda: DPMM(sampler="gibbs").fit(X), InvalidInputError, r"^sampler: expected one of 'auto', 'collapsed', 'subcluster', got 'gibbs'", "dp-sampler"),
    B(lambda: DPMM(split_merge=-1).fit(X), InvalidInputError, r"^split_merge: expected an int >= 0, got -1", "dp-split-merge"),
    B(lambda: DPMM(n_chains=0).fit(X), InvalidInputError, r"^n_chains: expected None or an int >= 1, got 0", "dp-chains"),
    B(lambda: DPMM(thin=1.5).fit(X), InvalidInputError, r"^thin: expected None or an int >= 1, got 1.5", "dp-thin"),
    B(lambda: DPMM(alpha=0.0).fit(X), InvalidInputError, r"^alpha", "dp-alpha"),
    B(lambda: DPMM(alpha_prior=(1.0, -1.0)).fit(X), InvalidInputError, r"^alpha_prior rate", "dp-alpha-prior"),
    B(lambda: DPMM().fit(X, init_labels=np.zeros(5)), InvalidInputError, r"^init_labels: expected shape \(12,\) or \(n_chains, n\)", "dp-init-shape"),
    B(lambda: DPMM(n_chains=3).fit(X, init_labels=np.zeros((2, 12))), InvalidInputError, r"^init_labels: expected shape \(12,\) or \(n_chains, n\) = \(3, 12\), got \(2, 12\)", "dp-init-chains"),
    B(lambda: DPMM().fit(X, init_labels=np.full(12, 0.5)), InvalidInputError, r"^init_labels", "dp-init-values"),
    B(lambda: DPMM().fit(X, [0] * 12), ConstraintError, r"^constraints: DPMM.fit got an array of shape \(12,\)", "dp-labels-as-constraints"),
    B(lambda: DPMM().fit(X, Constraints(10)), ConstraintError, r"built for 10 items but X has 12 rows \(DPMM.fit\)", "dp-constraints-size"),
    B(lambda: DPMM().fit(np.c_[X[:, :1] * 0, X[:, :1] * 0]), InvalidInputError, r"^X: every column is constant", "dp-all-constant"),
    B(lambda: DPMM(prior="gaussian").fit(X), InvalidInputError, r"^prior: expected None, NormalGamma", "dp-prior-type"),
    B(lambda: DPMM(prior=NormalGamma(rate=[1.0, 2.0, 3.0])).fit(X), InvalidInputError, r"^prior.rate: expected a scalar or shape \(2,\)", "dp-prior-shape"),
    B(lambda: DPMM(prior=NormalGamma(rate=1e-300)).fit(X * 1e200), InvalidInputError, r"^prior.rate: must be positive and finite once X .* is brought to unit scale", "dp-prior-underflow"),
    B(lambda: Constraints(12, must_link=[(0, 1)], error_rate=0.7), ConstraintError, r"^error_rate: expected a probability in \[0, 0.5\], got 0.7", "c-error-rate"),
    B(lambda: Constraints.from_answers(12, [(0, 1, "maybe", 0.1)]), ConstraintError, r"answer \(0, 1, 'maybe', 0.1\): kind must be 'must' or 'cannot'", "c-answer-kind"),
]
# fmt: on


@pytest.mark.parametrize(("fn", "cls", "match"), CORPUS)
def test_bad_input_raises_named_error(fn, cls, match):
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error", RuntimeWarning
        )  # overflow / invalid value warnings would be silent NaNs
        with pytest.raises(JaxclustError, match=match) as info:
            fn()
    assert type(info.value) is cls, f"expected exactly {cls.__name__}, got {type(info.value).__name__}"
    if cls is not DatasetNotFoundError:  # a missing data set is a FileNotFoundError
        assert isinstance(info.value, ValueError)  # what scikit-learn and Python raise for the same problems


def test_corpus_size():
    assert len({p.id for p in CORPUS}) == len(CORPUS) >= 120


# ---- damaged data files ---------------------------------------------------------------------------------------------


def _bbc(tmp_path, lines: bytes):
    folder = tmp_path / "bbc_news"
    folder.mkdir(parents=True)
    (folder / "bbc_news.jsonl").write_bytes(lines)
    return tmp_path


_BBC_OK = {"id": "b/1.txt", "label": 0, "category": "business", "title": "t", "text": "t\n\nbody"}


def test_loader_invalid_utf8_names_file_and_line(tmp_path):
    root = _bbc(tmp_path, json.dumps(_BBC_OK).encode() + b"\n" + b'{"id": "b\xff"}\n')
    with pytest.raises(InvalidInputError, match=r"bbc_news\.jsonl: line 2 is not valid UTF-8") as info:
        D.load_bbc_news(data_dir=root)
    assert type(info.value) is InvalidInputError


def test_loader_damaged_json_line_names_file_and_line(tmp_path):
    root = _bbc(tmp_path, json.dumps(_BBC_OK).encode() + b"\n\n" + b'{"id": \n')
    with pytest.raises(InvalidInputError, match=r"bbc_news\.jsonl: line 3 is not valid JSON"):
        D.load_bbc_news(data_dir=root)


def test_loader_missing_field_names_file_line_and_field(tmp_path):
    rec = dict(_BBC_OK)
    del rec["title"]
    root = _bbc(tmp_path, json.dumps(_BBC_OK).encode() + b"\n" + json.dumps(rec).encode() + b"\n")
    with pytest.raises(InvalidInputError, match=r"bbc_news\.jsonl: line 2 has no field 'title'"):
        D.load_bbc_news(data_dir=root)


def test_loader_extra_field_is_ignored(tmp_path):
    root = _bbc(tmp_path, json.dumps({**_BBC_OK, "extra": [1, 2]}).encode() + b"\n")
    ds = D.load_bbc_news(data_dir=root)
    assert ds.texts == ["t\n\nbody"] and ds.y.tolist() == [0] and ds.label_names["topic"] == ["business"]


def test_loader_gzip_jsonl_invalid_utf8(tmp_path):
    folder = tmp_path / "newsgroups20_bydate"
    folder.mkdir()
    with gzip.open(folder / "20news_bydate.jsonl.gz", "wb") as fh:
        fh.write(b'{"split": "tr\xe9in"}\n')
    with pytest.raises(InvalidInputError, match=r"20news_bydate\.jsonl\.gz: line 1 is not valid UTF-8"):
        D.load_newsgroups(data_dir=tmp_path)


def test_loader_tsv_missing_column(tmp_path):
    folder = tmp_path / "pang_lee_subjectivity_v1"
    folder.mkdir()
    (folder / "sentences.tsv").write_text("id\ttext\n0\thello\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"sentences\.tsv: the header has no column 'label'"):
        D.load_subjectivity(data_dir=tmp_path)


def test_conll_with_a_byte_order_mark_keeps_the_first_document(tmp_path):
    from jaxclust.metrics.conll import parse_conll, read_conll

    text = "#begin document (a); part 000\na\t(1)\nb\t(1)\n#end document\n#begin document (b); part 000\nc\t-\n#end document\n"
    path = tmp_path / "bom.conll"
    path.write_text("\ufeff" + text, encoding="utf-8")
    for docs in (
        parse_conll("\ufeff" + text),
        read_conll(path),
        read_conll(path.open("rb")),
        read_conll(path.open()),
    ):
        assert [d.name for d in docs] == ["(a); part 000", "(b); part 000"]
        assert docs[0].clusters == [[(0, 0), (1, 1)]]  # two one-token mentions of entity 1


def test_read_conll_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.conll"
    path.write_bytes(b"#begin document (d); part 000\nd 0 0 w\xff -\n#end document\n")
    with pytest.raises(InvalidInputError, match=re.escape(f"{path}:2: not valid UTF-8")):
        M.read_conll(path)
    with (
        open(path, "rb") as fh,
        pytest.raises(InvalidInputError, match=re.escape(f"{path}:2: not valid UTF-8")),
    ):
        M.read_conll(fh)
    with open(path, encoding="utf-8") as fh, pytest.raises(InvalidInputError, match=re.escape(str(path))):
        M.read_conll(fh)
    with pytest.raises(InvalidInputError, match=r"is a folder, not a CoNLL file"):
        M.read_conll(tmp_path)


# ---- one convention for constrained estimators: fit(X, constraints), positional or by name ----------------------------

CONSTRAINED = [
    lambda: COPKMeans(2, n_init=2, random_state=0),
    lambda: PCKMeans(2, w=1e6, n_init=2, random_state=0),
    lambda: ConstrainedAgglomerative(2),
]


@pytest.mark.parametrize("make", CONSTRAINED, ids=["COPKMeans", "PCKMeans", "ConstrainedAgglomerative"])
def test_positional_constraints_are_honoured(make):
    # the must-link joins the two blobs and the cannot-link splits the first: unconstrained, both are violated
    c = Constraints(12, must_link=[(0, 6)], cannot_link=[(0, 1)])
    unconstrained = make().fit(X).labels_
    assert c.check_assignment(unconstrained) != []
    positional = make().fit(X, c).labels_
    assert c.check_assignment(positional) == []
    np.testing.assert_array_equal(positional, make().fit(X, constraints=c).labels_)
    np.testing.assert_array_equal(positional, make().fit_predict(X, c))
    # the other accepted spellings give the same constraints, hence the same result
    np.testing.assert_array_equal(
        positional, make().fit(X, {"must_link": [(0, 6)], "cannot_link": [(0, 1)]}).labels_
    )
    np.testing.assert_array_equal(positional, make().fit(X, ([(0, 6)], [(0, 1)])).labels_)


def test_dpmm_follows_the_same_convention():
    from jaxclust.dpmm import DPMM

    # DPMM.fit(X, constraints=None, init_labels=None, ...): an array in the constraints slot is refused up front
    with pytest.raises(ConstraintError, match="constraints"):
        DPMM(n_chains=1, n_burnin=1, n_samples=1).fit(X, Y)


# ---- valid edge cases: right answers, no NaN, no inf ------------------------------------------------------------------


def test_kmeans_one_cluster_is_the_mean():
    m = KMeans(1, n_init=1).fit(X)
    np.testing.assert_allclose(m.cluster_centers_[0], X.mean(0), atol=1e-12)
    assert m.inertia_ == pytest.approx(((X - X.mean(0)) ** 2).sum(), rel=1e-12)
    assert (m.labels_ == 0).all()


def test_kmeans_n_equals_k_puts_each_point_alone():
    m = KMeans(2, n_init=1).fit(X[[0, 6]])
    assert sorted(m.labels_.tolist()) == [0, 1] and m.inertia_ == 0.0
    np.testing.assert_allclose(np.sort(m.cluster_centers_, axis=0), np.sort(X[[0, 6]], axis=0), atol=1e-12)


def test_kmeans_duplicate_points_give_finite_centres():
    m = KMeans(2, n_init=1).fit(np.ones((12, 2)))
    assert np.isfinite(m.cluster_centers_).all() and m.inertia_ == 0.0
    np.testing.assert_allclose(m.predict(np.ones((3, 2))), m.labels_[:3])


@pytest.mark.parametrize("scale", [1e20, 1e-20], ids=["huge", "tiny"])
def test_kmeans_is_scale_equivariant_in_float32(scale):
    Xf = X.astype(np.float32)
    ref = KMeans(2, n_init=1, random_state=3).fit(Xf)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        m = KMeans(2, n_init=1, random_state=3).fit(Xf * np.float32(scale))
    np.testing.assert_array_equal(m.labels_, ref.labels_)
    assert m.cluster_centers_.dtype == np.float32 and np.isfinite(m.cluster_centers_).all()
    np.testing.assert_allclose(m.cluster_centers_ / np.float32(scale), ref.cluster_centers_, atol=1e-4)
    assert m.inertia_ == pytest.approx(ref.inertia_ * scale**2, rel=1e-4)
    np.testing.assert_array_equal(m.predict(Xf * np.float32(scale)), ref.labels_)
    assert m.score(Xf * np.float32(scale)) == pytest.approx(-m.inertia_, rel=1e-4)


def test_kmeans_extreme_float64_magnitudes_cluster_right():
    Xh = np.array([[1e308, 0], [0.99e308, 0], [-1e308, 0], [-0.99e308, 0]])
    with pytest.raises(NumericalError, match="beyond the float64 range"):  # the inertia itself overflows
        KMeans(2, n_init=1).fit(Xh)
    two = np.array([[1e308, 1], [1e308, 1], [-1e308, 1], [-1e308, 1]])  # inertia 0: representable, returned
    m = KMeans(2, n_init=1).fit(two)
    assert m.inertia_ == 0.0 and m.labels_[0] == m.labels_[1] != m.labels_[2] == m.labels_[3]
    np.testing.assert_array_equal(np.sort(m.cluster_centers_[:, 0]), [-1e308, 1e308])
    assert (m.cluster_centers_[:, 1] == 1).all()


def test_constrained_kmeans_rescale_extreme_magnitudes():
    c = Constraints(12, must_link=[(0, 6)], cannot_link=[(0, 1)])
    ref = COPKMeans(2, n_init=2).fit(X, c)
    # squared distances of X * 1e100 would overflow float64 without the internal rescaling
    big = COPKMeans(2, n_init=2).fit(X * 1e100, c)
    np.testing.assert_array_equal(big.labels_, ref.labels_)
    np.testing.assert_allclose(big.cluster_centers_, ref.cluster_centers_ * 1e100, rtol=1e-12)
    assert big.inertia_ == pytest.approx(ref.inertia_ * 1e200, rel=1e-9)
    # tiny data: squared distances would underflow to 0; costs are in the data's units, so w = 1 dominates them
    tiny = PCKMeans(2, w=1.0, n_init=2).fit(X * 1e-100, c)
    assert c.check_assignment(tiny.labels_) == []
    assert tiny.objective_ == pytest.approx(0.5 * tiny.inertia_, rel=1e-9) and 0 < tiny.inertia_ < 1e-190


def test_gaussian_mixture_duplicates_with_reg_covar_are_finite():
    Xd = np.repeat(X[[0, 6]], 6, axis=0)  # two points, six copies each
    g = GaussianMixture(2).fit(Xd)  # default reg_covar keeps the collapsed components well defined
    assert np.isfinite(g.lower_bound_) and np.isfinite(g.precisions_).all()
    assert len(set(g.labels_[:6])) == 1 and len(set(g.labels_[6:])) == 1 and g.labels_[0] != g.labels_[6]
    np.testing.assert_allclose(np.sort(g.means_, axis=0), np.sort(X[[0, 6]], axis=0), atol=1e-9)
    np.testing.assert_allclose(g.predict_proba(Xd).max(axis=1), 1.0)


def test_agglomerative_cut_extremes():
    assert sorted(ConstrainedAgglomerative(12).fit(X).labels_.tolist()) == list(range(12))
    assert ConstrainedAgglomerative(1).fit(X).labels_.tolist() == [0] * 12


def test_itml_constraint_spellings_agree():
    c = Constraints(12, must_link=[(0, 1)], cannot_link=[(0, 6)])
    a = ITML().fit(X, c).get_mahalanobis_matrix()
    b = ITML().fit(X, [[0, 1], [0, 6]], [1, -1]).get_mahalanobis_matrix()
    d = ITML().fit(X, {"must_link": [(0, 1)], "cannot_link": [(0, 6)]}).get_mahalanobis_matrix()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, d)
    assert np.isfinite(a).all()


def test_itml_drops_identical_point_pairs():
    Xd = np.vstack([X, X[:1]])  # row 12 duplicates row 0
    m = ITML().fit(Xd, [[0, 12], [0, 6]], [1, -1])
    assert m.n_pairs_used_ == 1 and np.isfinite(m.mahalanobis_).all()


def test_an_answer_kind_as_a_word_is_read_as_the_word():
    """'cannot' is a cannot-link everywhere an answer's kind is taken (a non-empty string is not True)."""
    c = Constraints(4)
    assert c.with_answer(0, 1, "cannot").pairs == ((0, 1, "cannot"),)
    assert c.with_constraint(0, 1, "cannot").pairs == ((0, 1, "cannot"),)
    assert c.with_answer(0, 1, "cannot", error_rate=0.1).answers == ((0, 1, "cannot", 0.1),)
    assert c.with_answer(0, 1, np.bool_(True)).pairs == ((0, 1, "must"),)
    assert Constraints.from_answers(4, [(0, 1, False, 0.2)]).answers == ((0, 1, "cannot", 0.2),)


def test_seeds_beyond_32_bits_are_their_own():
    """2**32 + 5 and 5 are different seeds (JAX alone keeps 32 bits of a seed); seeds below 2**32 give the
    keys they always gave."""
    a = KMeans(3, n_init=1, random_state=5).fit(X)
    b = KMeans(3, n_init=1, random_state=2**32 + 5).fit(X)
    assert not np.array_equal(a.cluster_centers_, b.cluster_centers_) or not np.array_equal(
        a.labels_, b.labels_
    )
    np.testing.assert_array_equal(jax.random.key_data(V.prng_key(5)), jax.random.key_data(jax.random.key(5)))
    k1, k2 = (jax.random.key_data(V.prng_key(s)) for s in (5, 2**32 + 5))
    assert not np.array_equal(k1, k2)
    assert V.sklearn_seed(7) == 7 and 0 <= V.sklearn_seed(2**40 + 7) < 2**32


def test_coclustering_labels_and_weights_at_the_limits():
    """Integer labels compare exactly beyond 2**53; weights of 1e39 or 1e-46 are ratios like any other."""
    p = np.asarray(coclustering(np.array([[2**53, 2**53 + 1, 0], [0, 0, 1]])))
    np.testing.assert_allclose(p, [[1, 0.5, 0], [0.5, 1, 0], [0, 0, 1]])
    for w in (1e39, 1e-46):
        q = np.asarray(coclustering(S, [w, 3 * w]))
        np.testing.assert_allclose(np.diag(q), 1.0)
        np.testing.assert_allclose(q[0, 1], 0.25, rtol=1e-6)  # together only in sample 0, of weight 1/4


def test_active_learner_takes_every_constraint_spelling():
    learner = _learner(strategy="random")
    learner.run(X, 1, constraints={"must_link": [(0, 1)], "cannot_link": [(0, 6)]})
    assert learner.constraints_.pairs[:2] == ((0, 1, "must"), (0, 6, "cannot"))
    learner.run(X, 1, constraints=([(0, 1)], [(0, 6)]))
    assert learner.constraints_.pairs[:2] == ((0, 1, "must"), (0, 6, "cannot"))


def test_top_entropy_pairs_takes_every_constraint_spelling():
    want = top_entropy_pairs(S, 2, Constraints(4, must_link=[(0, 1)]))
    assert top_entropy_pairs(S, 2, {"must_link": [(0, 1)]}) == want
    assert top_entropy_pairs(S, 2, ([(0, 1)], [])) == want


def test_active_coclustering_treats_minus_one_as_a_label():
    p = np.asarray(coclustering(np.array([[-1, 0, -1], [-1, 0, 0]])))
    np.testing.assert_allclose(np.diag(p), 1.0)  # an item always shares its own component
    assert p[0, 2] == pytest.approx(0.5) and p[0, 1] == 0.0


def test_agreeing_samples_keeps_the_agreeing_ones():
    np.testing.assert_array_equal(np.asarray(agreeing_samples(S, 0, 1, True)), [True, False])
    np.testing.assert_array_equal(
        np.asarray(agreeing_samples(S, np.int64(1), 3, np.bool_(False))), [True, False]
    )


def test_metrics_edge_cases():
    assert M.v_measure([], []) == 1.0 and M.adjusted_rand_index([], []) == 1.0
    assert M.v_measure([3], [-1]) == 1.0 and M.purity([0, 0], [5, 5]) == 1.0
    assert M.v_measure([0, 1, 2], [0, 0, 0]) == 0.0
    assert M.adjusted_rand_index([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0


def test_constraints_duplicates_kept_once_and_roundtrip():
    c = Constraints(4, must_link=[(0, 1), (1, 0), (0, 1)], cannot_link=[(2, 3)])
    assert c.must_link == ((0, 1),) and Constraints.from_json(c.to_json()) == c
    assert as_constraints(None, 4) is None and as_constraints(c, 4) is c


# one-item and two-item documents (batch size 1): also the documents of the same-seed test below
L3M_DOCS = [np.zeros((1, 1, 2)), np.random.default_rng(1).normal(size=(2, 2, 2))]


def test_l3m_one_item_documents():
    m = L3M(n_epochs=2, batch_size=1).fit(L3M_DOCS, [[0], [0, 1]])
    assert m.predict(np.zeros((1, 1, 2))).tolist() == [0] and np.isfinite(m.coef_).all()


# ---- same seed, same result ------------------------------------------------------------------------------------------------

SEEDED = {
    "KMeans": lambda: KMeans(2, n_init=1, random_state=7).fit(X).cluster_centers_,
    "GaussianMixture": lambda: GaussianMixture(2, random_state=7).fit(X).means_,
    "COPKMeans": lambda: COPKMeans(2, n_init=2, random_state=7).fit(X, C12).cluster_centers_,
    "PCKMeans": lambda: PCKMeans(2, n_init=2, random_state=7).fit(X, C12).cluster_centers_,
    "ITML": lambda: ITML().fit(X, C12).mahalanobis_,
    "ConstrainedAgglomerative": lambda: ConstrainedAgglomerative(3).fit(X, C12).linkage_,
    "ICC": lambda: ICC(2, budget=4, n_components=None, random_state=7).fit(X, Y).queried_,
    "L3M": lambda: L3M(n_epochs=2, batch_size=1, random_state=7).fit(L3M_DOCS, [[0], [0, 1]]).coef_,
    "ExploreConsolidate": lambda: (
        ExploreConsolidate(2, max_queries=5, random_state=7).fit(X, GoldOracle(Y)).queries_
    ),
    "MinMax": lambda: MinMax(2, max_queries=5, random_state=7).fit(X, GoldOracle(Y)).queries_,
    "NPU": lambda: NPU(2, max_queries=3, n_estimators=3, random_state=7).fit(X, GoldOracle(Y)).queries_,
    "NoisyOracle": lambda: [NoisyOracle(Y, 0.5, random_state=7)(i, j) for i in range(12) for j in range(i)],
    "random_pairs": lambda: random_pairs(7, 12, 5, C12),
    "select_queries": lambda: select_queries(np.array([[0, 0, 1, 1], [0, 1, 1, 0]]), batch_size=2),
}


@pytest.mark.parametrize("name", list(SEEDED))
def test_same_seed_same_result(name):
    a, b = SEEDED[name](), SEEDED[name]()
    if isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


# ---- no change to JAX's global configuration -------------------------------------------------------------------------------


def test_fits_leave_jax_config_alone():
    before = dict(jax.config.values)
    default = np.float64 if before["jax_enable_x64"] else np.float32
    KMeans(2, n_init=1).fit(X)  # float64 data: scoped x64 inside
    KMeans(2, n_init=1).fit(X.astype(np.float32))
    GaussianMixture(2).fit(X)
    COPKMeans(2, n_init=2).fit(X, C12)
    ITML().fit(X, C12).pairwise_distances(X)
    coclustering(S)
    assert dict(jax.config.values) == before
    assert jax.numpy.zeros(1).dtype == default  # arrays made after the fits get the same default dtype


def test_fits_keep_a_users_global_x64():
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        KMeans(2, n_init=1).fit(X.astype(np.float32))  # float32 data: scoped x64 off inside
        assert jax.config.jax_enable_x64 is True and jax.numpy.zeros(1).dtype == np.float64
    finally:
        jax.config.update("jax_enable_x64", previous)


def test_import_leaves_jax_config_alone():
    code = (
        "import jax; before = dict(jax.config.values); import jaxclust; "
        "[getattr(jaxclust, n) for n in jaxclust.__all__]; "
        "import jaxclust.metrics.jax_partition, jaxclust.active, jaxclust.l3m, jaxclust.icc; "
        "after = dict(jax.config.values); "
        "print(sorted(k for k in before if before[k] != after.get(k)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# ---- DPMM: valid edge cases of magnitude and degenerate columns (issue 13) --------------------------------------
DPMM_SMALL = dict(n_chains=1, n_burnin=10, n_samples=2, thin=1, random_state=0)


@pytest.mark.parametrize(
    "transform",
    [lambda a: a * 1e200, lambda a: a * 1e-200, lambda a: (a * 1e20).astype(np.float32), lambda a: a + 1e12],
    ids=["x1e200", "x1e-200", "float32-x1e20", "offset1e12"],
)
def test_dpmm_finds_the_same_blobs_at_any_magnitude(transform):
    """The sampler runs on power-of-two rescaled data with the prior mapped alike: any finite magnitude gives
    the two blobs (no overflow, no message about an internal prior)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        m = DPMM(**DPMM_SMALL).fit(transform(X))
    assert np.array_equal(m.labels_ == m.labels_[0], Y == 0) and np.isfinite(m.log_joint_).all()


def test_dpmm_constant_column_is_left_out_with_a_warning_naming_it():
    """A constant column (and a near-constant one: 5 + 1e-6 noise) does not decide the clustering: no collapse
    into one component, and no component mixes the two blobs (the near-constant column, a pure-noise column
    once on its own scale, may split a blob of 6 points)."""
    from jaxclust.errors import JaxclustWarning

    near = np.c_[X, 5 + 1e-6 * np.random.default_rng(1).normal(size=12)]
    const = np.c_[X[:, :1], np.full(12, 5.0), X[:, 1:]]
    labels = DPMM(**DPMM_SMALL).fit(near).labels_
    assert len(set(labels[Y == 0]) & set(labels[Y == 1])) == 0 and len(set(labels)) >= 2
    with pytest.warns(JaxclustWarning, match=r"X: columns \[1\] are constant and are left out"):
        m = DPMM(**DPMM_SMALL).fit(const)
    assert np.array_equal(m.labels_ == 0, Y == 0)


def test_dpmm_coclustering_shares_active_semantics_for_label_minus_one():
    from jaxclust.dpmm import coclustering as dp_cocluster

    s = np.array([[-1, 0, -1]])
    np.testing.assert_array_equal(dp_cocluster(s), np.asarray(coclustering(s)))
    assert np.diag(dp_cocluster(s)).tolist() == [1.0, 1.0, 1.0]


def test_one_reading_of_an_answer_everywhere(tmp_path):
    """An oracle's NumPy booleans are read as ``with_answer`` reads them; a store's ``kept`` is a bool, never a
    string that ``bool`` would read as True."""
    from jaxclust.active import AnswerStore

    assert (
        ask(lambda i, j: np.bool_(True), 0, 1) == "must"
        and ask(lambda i, j: np.bool_(False), 0, 1) == "cannot"
    )
    c = Constraints(4)
    assert c.with_answer(0, 1, np.bool_(False)).pairs == ((0, 1, "cannot"),)
    with AnswerStore(tmp_path / "a.jsonl") as store:
        for bad in ("false", "True", 0, None):
            with pytest.raises(InvalidInputError, match=r"^kept: expected True or False, got"):
                store.append(0, 1, "must", kept=bad)
        assert store.append(0, 1, "must", kept=np.bool_(False))["kept"] is False
        assert len(store) == 1


def test_predict_proba_uses_the_data_fit_saw():
    """The caller changes its array after fit: the model's predictions do not change with it."""
    data = np.concatenate([X, X + 20.0])
    model = DPMM(random_state=0, n_chains=1, n_burnin=4, n_samples=2, thin=1).fit(data)
    before = model.predict_proba(data[:3])
    data[:] = 1e6
    np.testing.assert_array_equal(model.predict_proba(np.concatenate([X, X + 20.0])[:3]), before)


class _Sampler:
    """A model that sets ``samples_`` to what the test asks (None: sets none)."""

    def __init__(self, samples=None, random_state=0):
        self.samples, self.random_state = samples, random_state

    def get_params(self, deep=True):
        return {"samples": self.samples, "random_state": self.random_state}

    def set_params(self, **params):
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def fit(self, X, constraints=None, **kwargs):
        if self.samples is not None:
            self.samples_ = self.samples
        self.labels_ = np.zeros(len(X), np.int64)
        return self


class _OneArg:
    def answer(self, i):
        return "must"


class _NotCallable:
    answer = 3


@pytest.mark.parametrize(
    ("model", "oracle", "match"),
    [
        (
            _Sampler(np.zeros((2, 12), int)),
            None,
            r"^oracle: run needs an oracle that answers pairs, got None",
        ),
        (_Sampler(np.zeros((2, 12), int)), _NotCallable(), r"^oracle: _NotCallable.answer is not callable"),
        (
            _Sampler(np.zeros((2, 12), int)),
            _OneArg(),
            r"^oracle: _OneArg.answer cannot be called with a pair",
        ),
        (_Sampler(None), lambda i, j: "must", r"^model: _Sampler.fit set no samples_"),
        (
            _Sampler(np.full((2, 12), np.nan)),
            lambda i, j: "must",
            r"^model: _Sampler.samples_\[0, 0\] is nan, not",
        ),
        (
            _Sampler(np.zeros((0, 12), int)),
            lambda i, j: "must",
            r"^model: _Sampler.samples_ has shape \(0, 12\)",
        ),
        (
            _Sampler(np.full((2, 12), 0.5)),
            lambda i, j: "must",
            r"^model: _Sampler.samples_\[0, 0\] is 0.5, not",
        ),
    ],
)
def test_active_learner_names_a_bad_oracle_or_model(model, oracle, match):
    from jaxclust.active import ActiveLearner

    for strategy in ("random", "explore"):
        with pytest.raises(InvalidInputError, match=match):
            ActiveLearner(model, oracle, strategy=strategy, progress=False).run(X, 2)
