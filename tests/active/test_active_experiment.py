"""The verb experiment's empirical-Bayes choice of the component prior (``experiments/active_dpmm.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from jaxclust.dpmm import DPMM, NormalGamma
from jaxclust.errors import InvalidInputError

_PATH = Path(__file__).resolve().parents[2] / "experiments" / "active_dpmm.py"


@pytest.fixture(scope="module")
def exp():
    spec = importlib.util.spec_from_file_location("active_dpmm_experiment", _PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _reference_logpred(prior, X, z, alpha, x):
    """ln p(x | X, z, alpha) from the textbook Normal-Gamma predictive (scipy Student-t), loop form."""
    p = prior.check(X)
    m0, k0, a0, b0 = np.asarray(p.mean), float(p.kappa), float(p.shape), np.asarray(p.rate)
    terms = []
    for k in np.unique(z):
        Xk = X[z == k]
        n = len(Xk)
        xbar = Xk.mean(0)
        kn, an = k0 + n, a0 + n / 2
        mn = (k0 * m0 + n * xbar) / kn
        bn = b0 + 0.5 * ((Xk - xbar) ** 2).sum(0) + k0 * n * (xbar - m0) ** 2 / (2 * kn)
        sd = np.sqrt(bn * (kn + 1) / (an * kn))
        terms.append(np.log(n) + stats.t.logpdf(x, df=2 * an, loc=mn, scale=sd).sum())
    sd0 = np.sqrt(b0 * (k0 + 1) / (a0 * k0))
    terms.append(np.log(alpha) + stats.t.logpdf(x, df=2 * a0, loc=m0, scale=sd0).sum())
    return logsumexp(terms) - np.log(len(X) + alpha)


def test_heldout_logpred_matches_student_t_reference(exp):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 3))
    X_test = rng.normal(size=(4, 3)) * 2
    # labels with a gap (label 2 unused) and different cluster counts per sample
    samples = np.array([rng.choice([0, 1, 3], size=30), rng.integers(0, 2, size=30)])
    alphas = np.array([0.7, 2.5])
    prior = NormalGamma(mean=np.array([0.1, -0.2, 0.0]), kappa=0.3, shape=2.5, rate=np.array([0.4, 1.0, 2.0]))
    got = exp._ng_heldout_logpred(prior, X, samples, alphas, X_test)
    want = np.array(
        [
            [_reference_logpred(prior, X, z, a, x) for x in X_test]
            for z, a in zip(samples, alphas, strict=True)
        ]
    )
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # the score is the mean over rows of the log of the sample-averaged predictive density
    score = exp.heldout_score(prior, X, samples, alphas, X_test)
    assert score == pytest.approx(np.mean(logsumexp(want, axis=0) - np.log(2)), abs=1e-4)


def test_select_prior_scale_recovers_generating_width(exp):
    # 12 blobs of 8 points, within-blob sd 0.5 in a +-10 box: a component's variance is ~0.7% of the data's,
    # which is what scale = sd^2 / var(X) encodes (expected component variance = scale x data variance).
    # Small blobs make the prior matter: wider components merge blobs, narrower ones predict new points badly.
    rng = np.random.default_rng(1)
    centres = rng.uniform(-10, 10, size=(12, 2))
    X = np.repeat(centres, 8, axis=0) + 0.5 * rng.normal(size=(96, 2))
    X = X[rng.permutation(96)]
    true = 0.25 / X.var(0).mean()
    model = DPMM(n_chains=2, n_burnin=20, n_samples=5, thin=2, alpha_prior=(1.0, 1.0), random_state=0)
    grid = (1.0, 0.1, true, 0.001)
    best, rows = exp.select_prior_scale(X, model, grid=grid, n_folds=2, seed=0, echo=lambda s: None)
    assert best == true and not exp.at_grid_edge(rows)
    score = {r["scale"]: r["heldout_logpred"] for r in rows}
    # clearly better than both ends of the grid (measured margins 0.77 and 0.25 nats per item)
    assert score[true] > score[1.0] + 0.1 and score[true] > score[0.001] + 0.1


def test_at_grid_edge_flags_a_monotone_score(exp):
    def rows(scores):
        return [
            {"scale": sc, "heldout_logpred": v} for sc, v in zip((0.5, 0.1, 0.03, 0.01), scores, strict=True)
        ]

    assert not exp.at_grid_edge(rows([-3.0, -2.0, -1.0, -1.5]))  # interior optimum (general verbs)
    assert exp.at_grid_edge(rows([1.0, 2.0, 3.0, 4.0]))  # still rising at the finest scale (bio verbs)
    assert exp.at_grid_edge(rows([4.0, 3.0, 2.0, 1.0]))
    assert not exp.at_grid_edge(rows([1.0, 2.0, 3.0, 4.0])[:1])  # a single scale is a choice, not an edge


def test_select_prior_scale_rejects_bad_grid_and_folds(exp):
    X = np.zeros((10, 2))
    with pytest.raises(InvalidInputError, match="eb grid"):
        exp.select_prior_scale(X, DPMM(), grid=(0.1, -1.0))
    with pytest.raises(InvalidInputError, match="eb folds"):
        exp.select_prior_scale(X, DPMM(), n_folds=6, test_frac=0.2)


def test_prior_scale_cli_argument(exp):
    assert exp._scale_arg("auto") == "auto" and exp._scale_arg("0.03") == 0.03
    with pytest.raises(Exception, match="prior-scale"):
        exp._scale_arg("0")
