"""The samplers against the exact posterior over all set partitions of 6 points (Bell(6) = 203).

The exact law is computed here independently of jaxclust: the marginal likelihood of a block is the chain rule
of one-point Student-t predictives from ``scipy.stats.t``, the partition prior is the CRP, and partitions that
break a constraint get probability zero (constraints as observations). With alpha ~ Gamma(a, b) the CRP factor
is integrated numerically.

The collapsed sampler (Gibbs sweep + split-merge, the default at this size) runs from its default start. The
sub-cluster sampler and split-merge alone start from exact posterior draws and must keep that law (the
definition of invariance), while moving most chains; their mixing from the default start is checked on
separated data in ``test_dpmm_mixing``.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import gammaln

from jaxclust import Constraints
from jaxclust.dpmm import NormalGamma, chains, sample, splitmerge
from jaxclust.dpmm import state as _state
from jaxclust.dpmm.kernels import Kernel
from jaxclust.dpmm.model import prepare_data

X6 = np.array([[-1.9, 0.4], [-1.4, -0.2], [0.0, 0.1], [0.5, 0.6], [1.7, -0.3], [2.4, 0.2]])
PRIOR = dict(mean=0.0, kappa=0.5, shape=2.0, rate=0.6)
N_CHAINS, N_SAMPLES = 4000, 12  # 48k samples per case


def set_partitions(n: int):
    """All set partitions of range(n) as restricted-growth label tuples."""

    def rec(prefix, k):
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for lab in range(k + 1):
            yield from rec(prefix + [lab], max(k, lab + 1))

    yield from rec([0], 1)


def ng_log_marginal_scipy(x: np.ndarray, mean, kappa, shape, rate) -> float:
    """ln p(x_1..x_m) for a Normal-Gamma per dimension: sequential scipy Student-t predictives."""
    total = 0.0
    for d in range(x.shape[1]):
        m, k, a, b = mean, kappa, shape, rate
        for v in x[:, d]:
            scale = math.sqrt(b * (k + 1) / (a * k))
            total += stats.t.logpdf(v, df=2 * a, loc=m, scale=scale)
            # conjugate update with one observation
            b = b + k * (v - m) ** 2 / (2 * (k + 1))
            m = (k * m + v) / (k + 1)
            k, a = k + 1, a + 0.5
    return total


def canonical(labels) -> tuple:
    seen = {}
    return tuple(seen.setdefault(lab, len(seen)) for lab in labels)


def answers_log_likelihood(constraints, z) -> float:
    """ln p(soft answers | z), straight from the model: each answer is right with probability 1 - eps."""
    if constraints is None:
        return 0.0
    total = 0.0
    for i, j, kind, eps in constraints.answers:
        right = (z[i] == z[j]) == (kind == "must")
        total += math.log(1 - eps) if right else math.log(eps)
    return total


def exact_posterior(X, constraints, alpha=None, alpha_prior=None):
    n = len(X)
    parts = list(set_partitions(n))
    if alpha_prior is not None:
        a, b = alpha_prior
        # log of integral over alpha of Gamma(a, b) * alpha^K Gamma(alpha) / Gamma(alpha + n), for each K
        log_ak = {}
        for K in range(1, n + 1):
            f = lambda al, K=K: math.exp(
                stats.gamma.logpdf(al, a, scale=1 / b) + K * math.log(al) + gammaln(al) - gammaln(al + n)
            )
            log_ak[K] = math.log(integrate.quad(f, 0, np.inf, limit=200)[0])
    logp = []
    cache = {}
    for z in parts:
        if constraints is not None and constraints.check_assignment(np.array(z)):
            logp.append(-np.inf)
            continue
        z = np.array(z)
        K = z.max() + 1
        lp = answers_log_likelihood(constraints, z)
        for k in range(K):
            members = tuple(np.flatnonzero(z == k))
            if members not in cache:
                cache[members] = ng_log_marginal_scipy(X[list(members)], **PRIOR)
            lp += cache[members] + gammaln(len(members))
        lp += (
            log_ak[K]
            if alpha_prior is not None
            else K * math.log(alpha) + gammaln(alpha) - gammaln(alpha + n)
        )
        logp.append(lp)
    logp = np.array(logp)
    p = np.exp(logp - logp.max())
    return parts, p / p.sum()


def exact_alpha_mean(X, alpha_prior, parts, probs):
    """E[alpha | X] = sum_z p(z | X) E[alpha | K(z)], the inner expectation by quadrature."""
    a, b = alpha_prior
    n = len(X)

    def moment(K, e):
        f = lambda al: (
            al**e
            * math.exp(
                stats.gamma.logpdf(al, a, scale=1 / b) + K * math.log(al) + gammaln(al) - gammaln(al + n)
            )
        )
        return integrate.quad(f, 0, np.inf, limit=200)[0]

    mean_given_k = {K: moment(K, 1) / moment(K, 0) for K in range(1, n + 1)}
    return sum(pz * mean_given_k[max(z) + 1] for z, pz in zip(parts, probs, strict=True))


def sample_frequencies(samples, parts):
    index = {p: i for i, p in enumerate(parts)}
    flat = samples.reshape(-1, samples.shape[-1])
    counts = np.zeros(len(parts))
    for row in flat:
        counts[index[canonical(row)]] += 1
    return counts / counts.sum()


CASES = {
    "none": None,
    "must": Constraints(6, must_link=[(0, 2), (3, 5)]),
    "cannot": Constraints(6, cannot_link=[(0, 1), (4, 5), (2, 3)]),
    "both": Constraints(6, must_link=[(0, 1), (2, 4)], cannot_link=[(1, 2), (3, 5)]),
    # answers that may be wrong: a strong wrong-looking must (0, 5), two people disagreeing on (1, 4), and
    # soft answers beside hard constraints (the hard must (2, 3) makes the soft (2, 3) a constant)
    "soft": Constraints.from_answers(
        6,
        [
            (0, 5, "must", 0.05),
            (1, 4, "must", 0.2),
            (1, 4, "cannot", 0.3),
            (2, 3, "cannot", 0.1),
            (0, 1, "cannot", 0.25),
        ],
    ),
    "soft+hard": Constraints.from_answers(
        6,
        [(2, 3, "must"), (0, 5, "cannot"), (0, 4, "must", 0.1), (2, 3, "cannot", 0.2), (1, 5, "must", 0.15)],
    ),
}


@pytest.mark.parametrize("alpha_prior", [None, (2.0, 1.5)], ids=["alpha_fixed", "alpha_inferred"])
@pytest.mark.parametrize("case", list(CASES))
def test_sample_frequencies_match_exact_posterior(case, alpha_prior):
    check_against_exact(CASES[case], alpha_prior)


def check_against_exact(constraints, alpha_prior, **kw):
    """Sample 4000 chains x 12 and compare with the exact posterior: total variation <= 0.03, no sample on an
    infeasible partition, E[alpha] within 3 % (or alpha fixed); returns the samples."""
    res = sample(
        7,
        X6,
        constraints,
        NormalGamma(**PRIOR),
        alpha=0.8,
        alpha_prior=alpha_prior,
        n_chains=N_CHAINS,
        n_burnin=10,
        n_samples=N_SAMPLES,
        thin=2,
        **kw,
    )
    parts, exact = exact_posterior(X6, constraints, alpha=0.8, alpha_prior=alpha_prior)
    freq = sample_frequencies(res.samples, parts)
    tv = 0.5 * np.abs(freq - exact).sum()
    assert tv <= 0.03, f"total variation {tv:.4f}"
    # no sample falls on a partition that breaks a constraint
    assert freq[exact == 0].sum() == 0
    if alpha_prior is not None:
        want = exact_alpha_mean(X6, alpha_prior, parts, exact)
        got = res.alpha.mean()
        assert abs(got - want) < 0.03 * want, (got, want)
    else:
        np.testing.assert_allclose(res.alpha, 0.8, rtol=1e-6)
    return res.samples


def exact_draws(parts, probs, n_draws: int, seed: int) -> np.ndarray:
    """``n_draws`` partitions drawn from the exact posterior, as item labels (n_draws, n)."""
    idx = np.random.default_rng(seed).choice(len(parts), size=n_draws, p=probs)
    return np.array(parts)[idx]


def moved_fraction(samples, start) -> float:
    """Fraction of chains whose last sample is a different partition from their start."""
    last = [canonical(z) for z in samples[:, -1]]
    return float(np.mean([a != canonical(b) for a, b in zip(last, start, strict=True)]))


@pytest.mark.parametrize(
    "case, alpha_prior",
    [(c, None) for c in CASES] + [(c, (2.0, 1.5)) for c in ("none", "both", "soft+hard")],
    ids=[f"{c}-alpha_fixed" for c in CASES] + [f"{c}-alpha_inferred" for c in ("none", "both", "soft+hard")],
)
def test_subcluster_sampler_keeps_the_exact_posterior(case, alpha_prior):
    """Started from exact draws, the sub-cluster sampler (split-merge + parallel restricted step) still
    samples the exact posterior after 34 iterations, and most chains have moved."""
    constraints = CASES[case]
    parts, exact = exact_posterior(X6, constraints, alpha=0.8, alpha_prior=alpha_prior)
    start = exact_draws(parts, exact, N_CHAINS, seed=1)
    samples = check_against_exact(constraints, alpha_prior, init_labels=start, sampler="subcluster")
    assert moved_fraction(samples, start) > 0.5


# item 0 a hub of four partners (hard and soft); with a partner table one column wide, three of them are read
# from spill rows, in the Gibbs sweep, the parallel step, the split-merge blocking and weights and the log joint
HUB = Constraints.from_answers(
    6,
    [
        (0, 1, "cannot"),
        (0, 2, "cannot", 0.2),
        (0, 3, "must", 0.1),
        (0, 4, "cannot"),
        (4, 5, "must", 0.3),
        (1, 5, "cannot", 0.25),
    ],
)


@pytest.mark.parametrize("sampler", ["collapsed", "subcluster"])
def test_partners_in_spill_rows_keep_the_exact_posterior(sampler):
    assert HUB.partner_rows(1, n_rows=6).spill_span[0].tolist() == [0, 3]
    kw = {"partner_capacity": 1, "sampler": sampler}
    if sampler == "subcluster":
        parts, exact = exact_posterior(X6, HUB, alpha=0.8)
        kw["init_labels"] = exact_draws(parts, exact, N_CHAINS, seed=1)
    check_against_exact(HUB, None, **kw)


X5 = X6[:5]
CASES5 = {
    "none": None,
    "both": Constraints(5, must_link=[(0, 1)], cannot_link=[(1, 2), (3, 4)]),
    "soft": Constraints.from_answers(5, [(0, 4, "must", 0.05), (1, 2, "cannot", 0.2), (3, 4, "cannot", 0.1)]),
    # a hub (item 0: a cannot-link and three soft answers) read from spill rows (a table one column wide)
    "hub": Constraints.from_answers(
        5,
        [
            (0, 1, "cannot"),
            (0, 2, "must", 0.2),
            (0, 3, "cannot", 0.15),
            (0, 4, "must", 0.3),
            (2, 3, "cannot"),
        ],
    ),
}


@pytest.mark.parametrize("case", list(CASES5))
def test_split_merge_alone_keeps_the_exact_posterior(case):
    """Split-merge rounds with no Gibbs sweep and no restricted step, on 5 points (Bell(5) = 52 partitions):
    from exact draws the law stays exact, and the moves alone change most chains' partitions (each accepted
    move is a whole split or merge)."""
    _split_merge_alone(case, Kernel("collapsed", split_merge=1, gibbs=False))


@pytest.mark.parametrize("case", ["none", "both"])
def test_split_merge_with_a_subsampled_launch_keeps_the_exact_posterior(case, monkeypatch):
    """As above with the launch's 2-means on a random subsample of 2 rows (plus the seeds) instead of all 5: the
    subsample is auxiliary randomness, so the law stays exact whatever its size (large data always takes this
    path). A 2-means of 3 or 2 steps (no other test's) makes a fresh trace, so the patched sizes are compiled."""
    monkeypatch.setattr(splitmerge, "SUBSAMPLE", 2)
    monkeypatch.setattr(splitmerge, "SUBSAMPLE_PER_SLOT", 0)
    traces = chains.TRACE_COUNTER["block"]
    steps = {"none": 3, "both": 2}[case]
    _split_merge_alone(case, Kernel("collapsed", split_merge=1, gibbs=False, kmeans_steps=steps))
    assert chains.TRACE_COUNTER["block"] > traces


def _split_merge_alone(case, spec):
    constraints = CASES5[case]
    parts, exact = exact_posterior(X5, constraints, alpha=0.8)
    start = exact_draws(parts, exact, N_CHAINS, seed=2)
    prepared = prepare_data(X5, NormalGamma(**PRIOR))
    family = prepared.family.astype(np.float32)
    data = _state.prepare(prepared.X, constraints, family, partner_capacity=1 if case == "hub" else None)
    groups = [chains.repair_labels(z, constraints) for z in start]
    labels = np.zeros((N_CHAINS, 5), np.int32)
    labels[:, : len(groups[0])] = np.stack(groups)
    res = chains.run_chains(
        jax.random.key(3),
        data,
        family,
        labels,
        alpha=0.8,
        n_burnin=10,
        n_samples=N_SAMPLES,
        thin=2,
        spec=spec,
    )
    freq = sample_frequencies(res.samples, parts)
    tv = 0.5 * np.abs(freq - exact).sum()
    assert tv <= 0.03, f"total variation {tv:.4f}"
    assert freq[exact == 0].sum() == 0
    assert moved_fraction(res.samples, start) > 0.3
    # without a Gibbs sweep only these moves change the number of components: the counts account for every
    # change of every chain exactly, and each accepted move was proposed
    moves = dict(zip(splitmerge.MOVES, res.split_merge.T, strict=True))
    k_start = np.array([len(np.unique(z)) for z in start])
    k_end = np.array([len(np.unique(z)) for z in res.final_labels])
    np.testing.assert_array_equal(moves["accepted_splits"] - moves["accepted_merges"], k_end - k_start)
    assert np.all(moves["accepted_splits"] <= moves["proposed_splits"])
    assert np.all(moves["accepted_merges"] <= moves["proposed_merges"])
    assert moves["accepted_splits"].sum() > 0 and moves["accepted_merges"].sum() > 0


def test_threshold_has_power_against_wrong_laws():
    """Plausible bugs give laws more than 0.03 away in TV: a CRP over groups instead of items (wrong group
    weight) and a dropped cannot-link mask."""
    c = CASES["both"]
    parts, exact = exact_posterior(X6, c, alpha=0.8)
    logq = np.full(len(parts), -np.inf)
    for i, (z, pz) in enumerate(zip(parts, exact, strict=True)):
        if pz > 0:
            z = np.array(z)
            sizes = np.bincount(z)
            n_groups = [len(set(c.group_of[z == k].tolist())) for k in range(len(sizes))]
            logq[i] = np.log(pz) - gammaln(sizes).sum() + gammaln(np.array(n_groups)).sum()
    q = np.exp(logq - logq.max())
    q /= q.sum()
    assert 0.5 * np.abs(q - exact).sum() > 0.03
    no_mask = Constraints(6, must_link=c.must_link)
    _, exact_no_mask = exact_posterior(X6, no_mask, alpha=0.8)
    assert 0.5 * np.abs(exact_no_mask - exact).sum() > 0.03
    # ignoring the soft answers, or taking them as hard constraints, is far from the law with them
    soft = CASES["soft"]
    _, with_answers = exact_posterior(X6, soft, alpha=0.8)
    _, without = exact_posterior(X6, None, alpha=0.8)
    assert 0.5 * np.abs(with_answers - without).sum() > 0.03
    hard = Constraints(6, must_link=[(0, 5)], cannot_link=[(2, 3), (0, 1)])
    _, as_hard = exact_posterior(X6, hard, alpha=0.8)
    assert 0.5 * np.abs(with_answers - as_hard).sum() > 0.03


def test_partitions_enumeration_is_bell_6():
    parts = list(set_partitions(6))
    assert len(parts) == 203 and len(set(parts)) == 203
    assert all(canonical(p) == p for p in parts)


def test_scipy_chain_rule_matches_closed_form_marginal():
    """The reference marginal likelihood (chain of scipy t's) equals the closed form of docs/algorithms/dpmm.md (a)."""
    x = X6[[0, 2, 5]]
    m0, k0, a0, b0 = PRIOR["mean"], PRIOR["kappa"], PRIOR["shape"], PRIOR["rate"]
    n = len(x)
    kn, an = k0 + n, a0 + n / 2
    xbar = x.mean(0)
    bn = b0 + 0.5 * ((x - xbar) ** 2).sum(0) + k0 * n * (xbar - m0) ** 2 / (2 * kn)
    closed = np.sum(
        gammaln(an)
        - gammaln(a0)
        + a0 * np.log(b0)
        - an * np.log(bn)
        + 0.5 * np.log(k0 / kn)
        - n / 2 * np.log(2 * np.pi)
    )
    assert ng_log_marginal_scipy(x, **PRIOR) == pytest.approx(closed, rel=1e-10)


def test_exact_support_respects_must_links():
    parts, exact = exact_posterior(X6, CASES["must"], alpha=0.8)
    support = [p for p, q in zip(parts, exact, strict=True) if q > 0]
    assert all(p[0] == p[2] and p[3] == p[5] for p in support)
    assert len(support) == 15  # Bell(4): the two pairs act as single items


X5_NIW = np.array([[-1.2, 0.3], [-0.8, 0.5], [0.1, -0.2], [0.9, 0.8], [1.1, 1.2]])
X5_DM = np.array([[3, 0, 1], [2, 1, 0], [0, 3, 1], [0, 2, 2], [1, 1, 1]], dtype=float)
NIW = dict(mean=[0.0, 0.0], kappa=0.5, dof=4.0, scale=[[0.5, 0.1], [0.1, 0.5]])
DM = dict(concentration=[0.7, 0.7, 0.7])


def niw_log_marginal_scipy(x):
    """Chain of scipy multivariate-t predictives under the NIW prior (docs/algorithms/dpmm.md (b))."""
    m, k, nu, psi = np.array(NIW["mean"]), NIW["kappa"], NIW["dof"], np.array(NIW["scale"])
    D, total = x.shape[1], 0.0
    for v in x:
        df = nu - D + 1
        total += stats.multivariate_t.logpdf(v, loc=m, shape=psi * (k + 1) / (k * df), df=df)
        psi = psi + k / (k + 1) * np.outer(v - m, v - m)
        m, k, nu = (k * m + v) / (k + 1), k + 1, nu + 1
    return total


def dm_log_marginal_scipy(x):
    """Chain of scipy Dirichlet-multinomial predictives."""
    conc, total = np.array(DM["concentration"]), 0.0
    for v in x:
        total += stats.dirichlet_multinomial.logpmf(v, conc, int(v.sum()))
        conc = conc + v
    return total


@pytest.mark.parametrize("name", ["niw", "dm"])
def test_other_families_match_exact_posterior(name):
    from jaxclust.dpmm import DirichletMultinomial, NormalInverseWishart

    X, prior, lml = {
        "niw": (X5_NIW, NormalInverseWishart(**NIW), niw_log_marginal_scipy),
        "dm": (X5_DM, DirichletMultinomial(**DM), dm_log_marginal_scipy),
    }[name]
    c = Constraints(5, must_link=[(0, 1)], cannot_link=[(1, 4)])
    res = sample(3, X, c, prior, alpha=1.3, n_chains=2000, n_burnin=10, n_samples=12, thin=2)
    parts = list(set_partitions(5))
    logp = np.full(len(parts), -np.inf)
    for i, z in enumerate(parts):
        z = np.array(z)
        if c.check_assignment(z):
            continue
        K = z.max() + 1
        logp[i] = K * math.log(1.3) + sum(gammaln((z == k).sum()) + lml(X[z == k]) for k in range(K))
    exact = np.exp(logp - logp.max())
    exact /= exact.sum()
    freq = sample_frequencies(res.samples, parts)
    assert 0.5 * np.abs(freq - exact).sum() <= 0.03


def test_growing_from_too_few_slots_keeps_the_exact_law():
    """Every chain starts in one component with 4 slots for 6 items, so the slots must grow (to 6, the number
    of items) while sampling: the retained samples still follow the exact posterior. A growth that truncated the
    sampler (e.g. dropped the "new component" option while full) or mis-copied the state would bias it."""
    res = sample(
        11,
        X6,
        None,
        NormalGamma(**PRIOR),
        alpha=0.8,
        n_chains=N_CHAINS,
        n_burnin=10,
        n_samples=N_SAMPLES,
        thin=2,
        init_labels=np.zeros(6, dtype=int),
        capacity=4,
    )
    assert res.n_capacity_growths >= 1 and res.capacity == 6
    parts, exact = exact_posterior(X6, None, alpha=0.8)
    freq = sample_frequencies(res.samples, parts)
    assert 0.5 * np.abs(freq - exact).sum() <= 0.03
