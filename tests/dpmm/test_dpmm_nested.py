"""The two-level mixture (items -> components -> classes): closed forms, an independent log joint, and the sampler
against the exact posterior by enumeration of every (class, component) labelling of tiny data.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats
from sklearn.metrics import adjusted_rand_score

from jaxclust import Constraints, NestedDPMM
from jaxclust.dpmm import NormalGamma, nested_model
from jaxclust.dpmm import nested as N
from jaxclust.dpmm import nested_params as NP
from jaxclust.dpmm import nested_splitmerge as MH
from jaxclust.errors import InvalidInputError

# values rounded to a step of 0.5 (rounding 0.5²/12): every exact check below covers the rounding term
PRIOR = N.NestedPrior(
    mean=jnp.array([0.3]),
    kappa=jnp.array(0.2),
    shape=jnp.array(2.0),
    rate=jnp.array([0.6]),
    rounding=0.25 / 12,
)
X4 = np.array([[-1.2], [-0.7], [0.9], [1.6]])
ALPHA, GAMMA = 0.7, 1.3


def set_partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest):
        for k in range(len(part)):
            yield part[:k] + [[first, *part[k]]] + part[k + 1 :]
        yield [[first], *part]


def labellings(n):
    """Every (class, component) labelling of n items: (z, classes of the components), canonical."""
    out = []
    for comps in set_partitions(list(range(n))):
        for cls in set_partitions(list(range(len(comps)))):
            z = np.zeros(n, int)
            for k, block in enumerate(comps):
                z[block] = k
            classes = np.zeros(len(comps), int)
            for c, block in enumerate(cls):
                classes[block] = c
            out.append((z, classes))
    return out


def canonical(z, classes_of_items):
    comp, cls, out = {}, {}, []
    for k, c in zip(np.asarray(z).tolist(), np.asarray(classes_of_items).tolist(), strict=True):
        out.append((cls.setdefault(c, len(cls)), comp.setdefault(k, len(comp))))
    return tuple(out)


# --- an independent log joint: sequential seating and a numerical integral ----------------------------------------
def seating_log_prior(z, classes, alpha, gamma):
    """The prior by seating the items one by one into components by a CRP(alpha), each new component seated
    into a class by a CRP(gamma) over the components."""
    lp, comp_size, class_comps = 0.0, {}, {}
    for t, k in enumerate(z):
        if k in comp_size:
            lp += math.log(comp_size[k] / (t + alpha))
        else:
            lp += math.log(alpha / (t + alpha))
            c, m = classes[k], len(comp_size)
            lp += math.log((class_comps[c] if c in class_comps else gamma) / (m + gamma))
            class_comps[c] = class_comps.get(c, 0) + 1
        comp_size[k] = comp_size.get(k, 0) + 1
    return lp


def quadrature_component_marginal(x, prior, temper=1.0):
    """ln p(x of one component, D = 1) by integrating the precision numerically over the exact Gaussian given it
    (the mean integrated out: covariance ``I/(τλ) + 11ᵀ/(κλ)``); with ``temper`` τ, of the likelihood raised to
    τ: ``N(x | μ, 1/λ)^τ = (λ/2π)^(τ/2) (2π/(τλ))^(1/2) N(x | μ, 1/(τλ))`` per item; with the prior's rounding
    ``h²/12``, each item's likelihood the geometric mean of its Gaussian over ``x ± h/2`` (the expected log
    density of ``x + U(-h/2, h/2)``: ``ln N(x | μ, 1/λ) - λ h²/24``)."""
    m0, k0 = float(prior.mean[0]), float(prior.kappa)
    a0, b0 = float(prior.shape), float(prior.rate[0])
    h2 = float(np.asarray(prior.rounding).reshape(-1)[0])
    n = len(x)
    cov = np.eye(n) / temper + np.ones((n, n)) / k0

    def integrand(lam):
        power = ((lam / (2 * math.pi)) ** (temper / 2) * (2 * math.pi / (temper * lam)) ** 0.5) ** n
        return (
            power
            * math.exp(-temper * lam * n * h2 / 2)
            * stats.gamma.pdf(lam, a0, scale=1 / b0)
            * stats.multivariate_normal.pdf(x, np.full(n, m0), cov / lam)
        )

    value, _ = integrate.quad(integrand, 0, np.inf, limit=200, epsabs=0, epsrel=1e-10)
    return math.log(value)


def brute_log_joint(X, z, classes, answers, prior, alpha, gamma):
    lp = seating_log_prior(z, classes, alpha, gamma)
    for k in np.unique(z):
        lp += quadrature_component_marginal(X[z == k, 0], prior)
    item_class = classes[z]
    for a in answers:
        i, j, kind = a[:3]
        agree = (item_class[i] == item_class[j]) == (kind == "must")
        if len(a) == 3 and not agree:
            return -math.inf
        if len(a) == 4:
            lp += math.log(1 - a[3]) if agree else math.log(a[3])
    return lp


def _state(z, classes, data, K=None):
    return N.init(z, classes, data, K)


@pytest.fixture(scope="module")
def x64():
    with jax.enable_x64(True):
        yield


def test_a_components_marginal_is_the_normal_gamma_marginal(x64):
    X = np.array([[0.4, -1.0], [1.1, 0.2], [0.7, 0.5]])
    prior = N.NestedPrior(jnp.array([0.1, -0.2]), jnp.array(0.3), jnp.array(1.5), jnp.array([0.7, 1.2]))
    st = _state(np.zeros(3, int), [0], N.prepare(X, dtype=jnp.float64))
    got = N.component_log_marginal(st.count, st.mean, st.scatter, prior)[0]
    ng = NormalGamma(mean=[0.1, -0.2], kappa=0.3, shape=1.5, rate=[0.7, 1.2]).astype(jnp.float64)
    gs = ng.group_stats(X, np.zeros(3, int), 1)
    want = ng.log_marginal(ng.slots_from_groups(jnp.zeros(1, jnp.int32), gs, 1))[0]
    np.testing.assert_allclose(float(got), float(want), rtol=1e-12)
    assert float(N.component_log_marginal(jnp.zeros(()), st.mean[1], st.scatter[1], prior)) == 0.0


@pytest.mark.parametrize("n_items", [0, 1, 4])
def test_an_items_predictive_is_the_student_t_and_the_ratio_of_marginals(x64, n_items):
    rng = np.random.default_rng(n_items)
    X, x = rng.normal(size=(n_items, 2)), np.array([0.8, -1.7])
    prior = N.NestedPrior(jnp.array([0.1, -0.2]), jnp.array(0.3), jnp.array(1.5), jnp.array([0.7, 1.2]))
    count, mean = jnp.asarray(n_items), jnp.asarray(X.mean(0) if n_items else np.zeros(2))
    scatter = jnp.asarray(((X - X.mean(0)) ** 2).sum(0) if n_items else np.zeros(2))
    got = float(N.component_log_predictive(count, mean, scatter, jnp.asarray(x), prior))
    # the Normal-Gamma posterior predictive, per dimension: a Student t with 2 a_n degrees of freedom
    k_n, a_n = 0.3 + n_items, 1.5 + n_items / 2
    mu_n = (0.3 * np.array([0.1, -0.2]) + X.sum(0)) / k_n
    b_n = (
        np.array([0.7, 1.2])
        + 0.5 * np.asarray(scatter)
        + 0.15 * n_items * (np.asarray(mean) - [0.1, -0.2]) ** 2 / k_n
    )
    want = stats.t.logpdf(x, 2 * a_n, mu_n, np.sqrt(b_n * (k_n + 1) / (a_n * k_n))).sum()
    assert got == pytest.approx(want, rel=1e-10)
    # tempered, rounded, and with a shape per dimension: the marginal with the item less the marginal without it
    prior = prior._replace(
        shape=jnp.array([1.5, 3.0]), temper=jnp.float64(0.4), rounding=jnp.array([0.02, 0.3])
    )
    plus = N.welford_add(count, mean, scatter, jnp.asarray(x))
    want = N.component_log_marginal(*plus, prior) - N.component_log_marginal(count, mean, scatter, prior)
    got = N.component_log_predictive(count, mean, scatter, jnp.asarray(x), prior)
    assert float(got) == pytest.approx(float(want), rel=1e-10)


@pytest.mark.parametrize("x", [[-0.4, 0.1, 1.3, 2.2, 2.0, 2.9], [0.7], [1.0, 1.0, 1.0, 1.0]])
@pytest.mark.parametrize("temper", [1.0, 0.1, 0.5])
@pytest.mark.parametrize("rounding", [0.0, 0.25 / 12, 1.5])
def test_a_tempered_component_marginal_integrates_the_likelihood_raised_to_the_power(
    x64, x, temper, rounding
):
    x = np.array(x)
    prior = PRIOR._replace(temper=jnp.float64(temper), rounding=jnp.float64(rounding))
    st = _state(np.zeros(len(x), int), [0], N.prepare(x[:, None], dtype=jnp.float64))
    got = float(N.component_log_marginal(st.count, st.mean, st.scatter, prior)[0])
    assert got == pytest.approx(
        quadrature_component_marginal(x, prior._replace(temper=1.0), temper), rel=1e-7
    )


def test_rounding_bounds_what_a_column_of_one_value_pays_for_a_split(x64):
    """Items of one value: without rounding the Normal-Gamma marginal grows like ``Γ(n/2)``, so splitting them
    costs about ``(n/2) ln 2`` nats, whatever the other columns say; with rounding ``h²/12`` each item's
    likelihood is at most ``(λ/2π)^(1/2) exp(-λh²/24)``, and the split costs what any split of items that fit
    one Gaussian costs, the prior's penalty of order ``ln n``."""
    prior = PRIOR._replace(mean=jnp.zeros(1))

    def log_marginal(n, rounding):
        st = _state(np.zeros(n, int), [0], N.prepare(np.zeros((n, 1)), dtype=jnp.float64))
        return float(
            N.component_log_marginal(st.count, st.mean, st.scatter, prior._replace(rounding=rounding))[0]
        )

    for n in (200, 800):
        split_cost = {r: log_marginal(n, r) - 2 * log_marginal(n // 2, r) for r in (0.0, 1 / 12)}
        assert split_cost[0.0] > 0.3 * n
        assert 0 < split_cost[1 / 12] < 2 * math.log(n)


def test_sampled_parameters_follow_a_slots_posterior_by_quadrature_and_an_empty_slots_prior(x64):
    """:func:`nested_params.component_params` against the posterior of a slot's mean and precision integrated
    numerically (tempered likelihood with its rounding term, D = 1), and the prior for an empty slot."""
    x = np.array([1.6, 2.1, 3.3])  # away from the prior's mean, so that the data's pull is checked
    prior = PRIOR._replace(temper=0.5)
    m0, k0, a0, b0 = float(prior.mean[0]), float(prior.kappa), float(prior.shape), float(prior.rate[0])
    h2, tau = float(prior.rounding), 0.5

    def density(mu, lam):  # unnormalised, in plain floats: the integrator calls it some 10^5 times
        log_lik = sum(0.5 * math.log(lam / (2 * math.pi)) - 0.5 * lam * ((v - mu) ** 2 + h2) for v in x)
        log_prior = (a0 - 0.5) * math.log(lam) - b0 * lam - 0.5 * k0 * lam * (mu - m0) ** 2
        return math.exp(tau * log_lik + log_prior)

    def moment(f):
        return integrate.dblquad(lambda mu, lam: f(mu, lam) * density(mu, lam), 0, 80, -25, 25, epsrel=1e-9)[
            0
        ]

    total = moment(lambda mu, lam: 1.0)
    want = {
        "lam": moment(lambda mu, lam: lam) / total,
        "mu": moment(lambda mu, lam: mu) / total,
        "mu2": moment(lambda mu, lam: mu * mu) / total,
    }
    data = N.prepare(x[:, None], [], dtype=jnp.float64)
    state = N.init(np.zeros(3, int), [0], data, K=2)  # slot 1 empty
    keys = jax.random.split(jax.random.key(0), 200_000)
    lam, mu = jax.jit(jax.vmap(lambda k: NP.component_params(k, state, prior)))(keys)
    lam, mu = np.asarray(lam)[:, :, 0], np.asarray(mu)[:, :, 0]
    empty = {"lam": a0 / b0, "mu": m0, "mu2": m0 * m0 + b0 / (k0 * (a0 - 1))}
    for slot, exact in ((0, want), (1, empty)):
        for name, draws in (("lam", lam[:, slot]), ("mu", mu[:, slot]), ("mu2", mu[:, slot] ** 2)):
            se = draws.std() / math.sqrt(len(draws))
            assert abs(draws.mean() - exact[name]) < 4 * se, (slot, name, draws.mean(), exact[name])


def test_an_items_log_density_given_parameters_is_the_tempered_gaussian_with_its_rounding(x64):
    rng = np.random.default_rng(0)
    x, lam, mu = rng.normal(size=3), rng.gamma(2.0, size=(4, 3)), rng.normal(size=(4, 3))
    h2 = np.array([0.0, 0.02, 0.3])
    prior = N.NestedPrior(jnp.zeros(3), 0.1, 2.0, jnp.ones(3), temper=0.7, rounding=jnp.asarray(h2))
    got = NP.log_density(jnp.asarray(x), jnp.asarray(lam), jnp.asarray(mu), prior)
    want = 0.7 * np.sum(stats.norm.logpdf(x, mu, 1 / np.sqrt(lam)) - lam * h2 / 2, -1)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_burn_in_anneals_from_the_start_to_one_over_its_first_half():
    got = [nested_model._temper(lo, 100, 0.1) for lo in range(0, 150, 10)]
    want = [0.1 ** (1 - lo / 50) for lo in range(0, 50, 10)] + [1.0] * 10
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert [nested_model._temper(lo, 100, None) for lo in (0, 40)] == [1.0, 1.0]
    assert nested_model._temper(0, 15, 0.1) == 1.0  # a burn-in under two blocks has no ramp
    assert nested_model._temper(0, 20, 0.1) == pytest.approx(0.1)


ANSWER_CASES = {
    "none": [],
    "hard must across": [(0, 3, "must")],
    "hard cannot": [(0, 1, "cannot"), (2, 3, "must")],
    "soft": [(0, 3, "must", 0.1), (1, 2, "cannot", 0.3), (0, 1, "must", 0.2)],
}


@pytest.mark.parametrize("case", list(ANSWER_CASES))
def test_log_joint_equals_an_independent_computation(x64, case):
    answers = ANSWER_CASES[case]
    data = N.prepare(X4, answers, dtype=jnp.float64)
    for z, classes in labellings(4):
        got = float(N.log_joint(_state(z, classes, data), data, PRIOR, ALPHA, GAMMA, 4))
        want = brute_log_joint(X4, z, classes, answers, PRIOR, ALPHA, GAMMA)
        if math.isinf(want):
            assert got == -math.inf, (z, classes)
        else:
            assert got == pytest.approx(want, rel=1e-7, abs=1e-9), (z, classes)


def test_the_prior_sums_to_one_over_every_labelling():
    total = sum(math.exp(seating_log_prior(z, c, ALPHA, GAMMA)) for z, c in labellings(5))
    assert total == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("a, b", [(1, 1), (2, 3), (5, 5)])
def test_two_classes_no_answer_keeps_apart_join_with_the_crps_odds(x64, a, b):
    # the odds the docstring of NestedDPMM states: data and answers alike, only the class CRP differs
    X = np.linspace(-2.0, 2.0, a + b)[:, None]
    within = [(k, k + 1, "must") for k in range(a + b - 1) if k != a - 1]
    data = N.prepare(X, within, dtype=jnp.float64)
    z = np.arange(a + b)
    apart = float(N.log_joint(_state(z, np.repeat([0, 1], [a, b]), data), data, PRIOR, ALPHA, GAMMA, a + b))
    one = float(N.log_joint(_state(z, np.zeros(a + b, int), data), data, PRIOR, ALPHA, GAMMA, a + b))
    want = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) - math.log(GAMMA)
    assert one - apart == pytest.approx(want, rel=1e-9)


def _posterior(data):
    table = {}
    n = data.X.shape[0]
    for z, classes in labellings(n):
        lj = float(N.log_joint(_state(z, classes, data), data, PRIOR, ALPHA, GAMMA, n))
        table[canonical(z, classes[z])] = lj
    keys = list(table)
    lj = np.array([table[k] for k in keys])
    p = np.exp(lj - np.max(lj))
    return dict(zip(keys, p / p.sum(), strict=True))


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=() if c == "hard must across" else pytest.mark.slow) for c in ANSWER_CASES]
)
def test_the_sampler_draws_the_exact_posterior(case):
    data = N.prepare(X4, ANSWER_CASES[case])
    exact = _posterior(data)
    n_chains, n_sweeps = 64, 600
    z0, c0 = np.zeros(4, int), [0]  # one class of one component: breaks no must-link
    if case == "hard cannot":
        z0, c0 = np.array([0, 1, 1, 1]), [0, 1]
    start = _state(z0, c0, data)

    def sweep(st, key):
        k1, k2, k3, k4, k5 = jax.random.split(key, 5)
        st, _ = N.item_sweep(k1, st, data, PRIOR, ALPHA, GAMMA, 4)
        st, _ = N.component_sweep(k2, st, data, PRIOR, ALPHA, GAMMA, 4)
        st, _ = MH.class_split_merge(k3, st, data, PRIOR, ALPHA, GAMMA, 4, 2)
        st, _ = MH.component_split_merge(k4, st, data, PRIOR, ALPHA, GAMMA, 4, 2)
        st, _ = MH.group_sweep(k5, st, data, PRIOR, ALPHA, GAMMA, 4, 2)
        return st, (st.z, N.class_labels(st))

    def chain(key):
        _, draws = jax.lax.scan(sweep, start, jax.random.split(key, n_sweeps))
        return draws

    zs, cs = jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(0), n_chains))
    zs, cs = np.asarray(zs)[:, 50:].reshape(-1, 4), np.asarray(cs)[:, 50:].reshape(-1, 4)
    counts: dict = {}
    for z, c in zip(zs, cs, strict=True):
        key = canonical(z, c)
        counts[key] = counts.get(key, 0) + 1
    assert set(counts) <= {k for k, p in exact.items() if p > 0}  # no draw breaks a hard answer
    total = sum(counts.values())
    tv = 0.5 * sum(abs(counts.get(k, 0) / total - p) for k, p in exact.items())
    assert tv < 0.03, tv
    if case == "hard must across":  # the must-linked items share a class, not necessarily a component
        split = sum(p for k, p in exact.items() if k[0][0] == k[3][0] and k[0][1] != k[3][1])
        assert split > 0.05 and sum(v for k, v in counts.items() if k[0][1] != k[3][1]) / total > 0.05


X5 = np.array([[-0.9], [-1.0], [-0.8], [1.4], [1.5]])  # three items close together: components of three


GROUP_OF_THREE = [(0, 3, "must"), (3, 4, "must"), (1, 4, "cannot", 0.2), (2, 3, "must", 0.3)]


def _move_cases():
    # the sharp check of the Gibbs moves is test_each_moves_conditional_is_the_ratio_of_log_joints; the group
    # move is Metropolis-Hastings, and this is its check (a group of three, hard and soft answers, runs by default)
    gibbs = [
        "item_sweep",
        "item_sweep_given_params",
        "component_sweep",
        "class_split_merge",
        "component_split_merge",
    ]
    for move in [*gibbs, "group_sweep"]:
        for case in ["none", "hard must across", "soft", "five items", "group of three"]:
            if case == "group of three" and move != "group_sweep":
                continue
            fast = (move, case) in (("group_sweep", "group of three"), ("item_sweep_given_params", "soft"))
            yield pytest.param(case, move, marks=() if fast else pytest.mark.slow, id=f"{move}-{case}")


@pytest.mark.parametrize(("case", "move"), list(_move_cases()))
def test_each_move_alone_keeps_the_exact_posterior(case, move):
    """Chains started from exact posterior draws stay exact under one move alone (the component move alone cannot
    change the components, so only its invariance can be checked this way, and this is the sharp check)."""
    X = X5 if case in ("five items", "group of three") else X4
    n = len(X)
    answers = GROUP_OF_THREE if case == "group of three" else ANSWER_CASES.get(case, [(0, 4, "cannot", 0.2)])
    data = N.prepare(X, answers)
    exact = _posterior(data)
    states = {canonical(z, c[z]): (z, c) for z, c in labellings(n)}
    keys = list(exact)
    probs = np.array([exact[k] for k in keys])
    draws = np.random.default_rng(1).choice(len(keys), size=40_000, p=probs)
    z0 = np.array([states[keys[d]][0] for d in draws])
    c0 = np.array(
        [np.pad(states[keys[d]][1], (0, n - len(states[keys[d]][1])), constant_values=-1) for d in draws]
    )
    step = getattr(N, move, None) or getattr(NP, move, None) or getattr(MH, move)

    def run(key, z, c):
        st = N.init(z, c, data, n)
        for k in jax.random.split(key, 2):
            st, _ = step(k, st, data, PRIOR, ALPHA, GAMMA, n)
        return st.z, N.class_labels(st)

    zs, cs = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(2), len(draws)), z0, c0)
    counts: dict = {}
    for z, c in zip(np.asarray(zs), np.asarray(cs), strict=True):
        k = canonical(z, c)
        counts[k] = counts.get(k, 0) + 1
    tv = 0.5 * sum(abs(counts.get(k, 0) / len(draws) - p) for k, p in exact.items())
    assert tv < (0.035 if n == 5 else 0.025), tv
    # the number of classes, a coarse statistic with little sampling noise (about 0.005 here)
    n_classes = np.zeros(n + 1)
    for k, p in exact.items():
        n_classes[len({c for c, _ in k})] += p
    drawn = np.zeros(n + 1)
    for k, v in counts.items():
        drawn[len({c for c, _ in k})] += v / len(draws)
    assert 0.5 * np.abs(drawn - n_classes).sum() < 0.012


def _normalised(v):
    v = np.asarray(v, np.float64)
    finite = np.isfinite(v)
    out = np.full(v.shape, -np.inf)
    out[finite] = v[finite] - np.logaddexp.reduce(v[finite])
    return out


@pytest.mark.parametrize(
    ("X", "answers", "width"),
    [
        (X5, [], 8),
        (X4, ANSWER_CASES["hard must across"], 8),
        (X4, ANSWER_CASES["hard cannot"], 8),
        (X4, ANSWER_CASES["soft"], 8),
        (X4, [(0, 1, "cannot"), (0, 2, "must"), (1, 3, "cannot", 0.2)], 1),
    ],
    ids=["five items", "hard must", "hard cannot", "soft", "hubs"],
)
def test_each_moves_conditional_is_the_ratio_of_log_joints(x64, X, answers, width):
    """For every labelling, every item and every component: the move's weights, normalised, equal the log joints of
    the labellings it can move to, normalised; and every option it leaves out breaks a hard answer. In "hubs",
    items 0 and 1 have more answers than their rows hold and read all of them."""
    n = len(X)
    data = N.prepare(X, answers, dtype=jnp.float64, row_width=width)
    assert np.asarray(data.hub).tolist() == ([True, True, False, False] if width == 1 else [False] * n)
    K = C = n
    joint = jax.jit(jax.vmap(lambda st: N.log_joint(st, data, PRIOR, ALPHA, GAMMA, C)))

    @jax.jit
    def item_options(st, i):
        without, scores, _ = N.item_conditional(i, st, data, PRIOR, ALPHA, GAMMA, C)
        moved = jax.vmap(lambda o: N.place_item(i, without, o, data, C))(jnp.arange(K + C + 1))
        live_class = jnp.zeros(C, bool).at[jnp.where(without.u >= 0, without.u, C)].set(True, mode="drop")
        real = jnp.concatenate([without.count > 0, live_class, jnp.ones(1, bool)])
        return scores, joint(moved), real

    @jax.jit
    def component_options(st, k):
        scores, _ = N.component_conditional(k, st, data, PRIOR, ALPHA, GAMMA, C)
        moved = jax.vmap(lambda o: N.place_component(k, st, o, C))(jnp.arange(C + 1))
        u_wo = st.u.at[k].set(-1)
        live_class = jnp.zeros(C, bool).at[jnp.where(u_wo >= 0, u_wo, C)].set(True, mode="drop")
        return scores, joint(moved), jnp.concatenate([live_class, jnp.ones(1, bool)])

    for z, classes in labellings(n):
        st = _state(z, classes, data)
        if not np.isfinite(float(N.log_joint(st, data, PRIOR, ALPHA, GAMMA, C))):
            continue  # a Gibbs move starts from a labelling the answers allow
        checks = [item_options(st, i) for i in range(n)]
        checks += [(*component_options(st, k),) for k in range(len(classes))]
        for scores, lj, real in checks:
            scores, lj, real = np.asarray(scores), np.asarray(lj), np.asarray(real)
            assert np.all(np.isneginf(scores[~real]))
            np.testing.assert_allclose(_normalised(scores[real]), _normalised(lj[real]), rtol=0, atol=1e-9)


def test_the_item_sweeps_draw_the_same_whatever_the_answer_rows_hold():
    """40 items, 120 random answers (hard and soft), up to 12 about one item: rows 1, 8 or 16 wide (most
    items hubs, some, none) give both item sweeps the same draws from the same keys, over 4 chains under vmap
    (where the hubs' branch must stay a branch of the same values)."""
    rng = np.random.default_rng(4)
    n, C = 40, 16
    X = rng.normal(0.0, 1.0, (n, 2)) + 3.0 * rng.integers(0, 3, n)[:, None]
    y = rng.integers(0, 4, n)
    pairs = {tuple(sorted(p)) for p in rng.integers(0, n, (200, 2)) if p[0] != p[1]}
    answers = [
        (a, b, "must" if y[a] == y[b] else "cannot") + ((0.2,) if k % 3 == 0 else ())
        for k, (a, b) in enumerate(sorted(pairs)[:120])
    ]
    prior = N.NestedPrior(jnp.zeros(2), jnp.array(0.05), jnp.array(2.0), jnp.full(2, 0.5))
    keys = jax.random.split(jax.random.key(2), 4)
    out = []
    for width in (1, 8, 16):
        data = N.pad_answers(N.prepare(X, answers, row_width=width), 128)
        start = N.init(jnp.asarray(y, jnp.int32), jnp.arange(4), data, C)

        def sweeps(key, data=data, start=start):
            k1, k2 = jax.random.split(key)
            st, _ = N.item_sweep(k1, start, data, prior, 1.0, 2.0, C)
            st, _ = NP.item_sweep_given_params(k2, st, data, prior, 1.0, 2.0, C)
            return st.z, st.u

        out.append(jax.jit(jax.vmap(sweeps))(keys))
        hubs = int(np.sum(np.asarray(data.hub)))
        assert (hubs > 30) if width == 1 else (0 < hubs < 20) if width == 8 else hubs == 0, (width, hubs)
    for z, u in out[1:]:
        np.testing.assert_array_equal(z, out[0][0])
        np.testing.assert_array_equal(u, out[0][1])
    assert np.any(np.asarray(out[0][0]) != y)  # items moved from their start: not a vacuous sameness


def test_bad_answers_get_the_named_errors_of_constraints():
    from jaxclust.errors import ConstraintConflictError, ConstraintError

    with pytest.raises(ConstraintError, match="index 9 is out of range for 4 items"):
        N.prepare(X4, [(0, 9, "must")])
    with pytest.raises(ConstraintConflictError, match="contradictory constraints"):
        N.prepare(X4, [(0, 1, "must"), (1, 2, "must"), (0, 2, "cannot")])
    with pytest.raises(ConstraintError, match=r"\[0, 0.5\]"):
        N.prepare(X4, [(0, 1, "must", 0.7)])


GAMMA_PRIOR = (2.0, 1.0)


def _class_crp(gamma, n_components, n_classes):
    """The part of the class CRP's log prior that depends on ``gamma`` (K components in C classes)."""
    return math.lgamma(gamma) - math.lgamma(gamma + n_components) + n_classes * math.log(gamma)


@pytest.mark.parametrize(
    ("anneal_from", "warm", "gamma_prior"),
    [(None, False, None), (0.1, False, None), (None, True, None), (None, False, GAMMA_PRIOR)],
)
def test_the_estimators_kept_samples_follow_the_exact_posterior(monkeypatch, anneal_from, warm, gamma_prior):
    """``NestedDPMM.fit`` (its start, its blocks of sweeps, its sample collection; with an annealed burn-in too,
    whose tempered sweeps must not reach the kept samples; from a warm start of one component per class; with
    ``gamma`` inferred under a Gamma prior) on 4 items: the (class, component) labellings kept follow the
    posterior enumerated over every labelling (``gamma`` integrated out by quadrature), TV within sampling error;
    and the kept ``gamma`` draws have the posterior mean of ``gamma``."""
    monkeypatch.setattr(nested_model, "least_squares_sample", lambda samples: 0)  # O(S²): not under test
    x4 = np.array([[-1.2], [-0.7], [0.9], [1.6]])
    params = {"alpha": 0.7, "gamma": 1.3, "kappa": 0.2, "shape": 2.0, "scale": 0.6}
    model = NestedDPMM(
        n_chains=64,
        n_burnin=50,
        n_samples=550,
        thin=1,
        n_split_merge=2,
        anneal_from=anneal_from,
        gamma_prior=gamma_prior,
        random_state=0,
        **params,
    )
    # with gamma inferred, answers that keep classes apart tell gamma something (without answers its posterior is
    # its prior: nothing but answers informs the classes)
    answers = [(0, 3, "cannot"), (1, 2, "cannot", 0.2)] if gamma_prior is not None else []
    cons = Constraints.from_answers(4, answers) if answers else None
    model.fit(x4, constraints=cons, init_labels=np.array([[0, 0, 1, 1], [0, 1, 2, 3]] * 32) if warm else None)
    if warm:
        assert model.n_slots_ == 4  # no start with one slot per item
    xs = (x4 - x4.mean(0)) / x4.std(0)
    # the data's step: the median gap between consecutive values, 0.7, in the standardised units
    rounding = (0.7 / x4.std()) ** 2 / 12
    prior = N.NestedPrior(jnp.zeros(1), jnp.array(0.2), jnp.array(2.0), jnp.array([0.6]), rounding=rounding)
    data = N.prepare(xs, answers)
    exact, gamma_mean = {}, {}
    for z, classes in labellings(4):
        lj = float(N.log_joint(N.init(z, classes, data, 4), data, prior, 0.7, 1.3, 4))
        if lj == -math.inf:
            continue
        key = canonical(z, classes[z])
        exact[key] = lj
        if gamma_prior is not None:  # the joint with gamma integrated out under its Gamma prior
            K, C = len(classes), len(set(classes.tolist()))
            rest = lj - _class_crp(1.3, K, C)

            def weight(g, power=0, K=K, C=C):
                return (
                    g**power * math.exp(_class_crp(g, K, C)) * stats.gamma.pdf(g, GAMMA_PRIOR[0], scale=1.0)
                )

            mass = integrate.quad(weight, 0, np.inf)[0]
            exact[key] = rest + math.log(mass)
            gamma_mean[key] = integrate.quad(lambda g, w=weight: w(g, 1), 0, np.inf)[0] / mass
    lj = np.array(list(exact.values()))
    p = np.exp(lj - lj.max())
    exact = dict(zip(exact, p / p.sum(), strict=True))
    if gamma_prior is None:
        assert np.all(model.gamma_samples_ == np.float32(1.3))
    else:  # E[gamma | data] = sum over labellings of p(labelling) E[gamma | its K and C]
        want = sum(q * gamma_mean[k] for k, q in exact.items())
        draws = model.gamma_samples_.reshape(64, -1).mean(1)  # chain means: about independent
        assert want > GAMMA_PRIOR[0] / GAMMA_PRIOR[1] + 0.2  # the answers' classes raise it from the prior's
        assert abs(draws.mean() - want) < 4 * draws.std() / 8 + 0.01, (draws.mean(), want)
    counts: dict = {}
    for z, c in zip(model.components_, model.samples_, strict=True):
        key = canonical(z, c)
        counts[key] = counts.get(key, 0) + 1
    total = sum(counts.values())
    tv = 0.5 * sum(abs(counts.get(k, 0) / total - q) for k, q in exact.items())
    assert tv < 0.03, tv


def test_slots_are_powers_of_two_with_a_quarter_to_spare_and_at_most_one_per_item():
    slots = [nested_model._slots(k, 600) for k in (1, 13, 14, 26, 27, 52, 500)]
    assert slots == [16, 16, 32, 32, 64, 128, 600]
    assert nested_model._slots(50, 40) == 40
    assert [nested_model._answer_rows(p) for p in (0, 16, 128, 129, 300)] == [128, 128, 128, 256, 512]


def test_must_linked_groups_are_laid_out_in_arrays_of_n_items():
    data = N.prepare(np.zeros((6, 1)), [(0, 2, "must"), (4, 1, "must"), (3, 5, "cannot")])
    assert np.asarray(data.group_items).tolist() == [0, 2, 1, 4, -1, -1]
    assert np.asarray(data.group_start).tolist() == [0, 2, 4, 4, 4, 4, 4]
    assert int(data.n_groups) == 2


def test_padded_answers_change_no_conditional_and_no_joint():
    """The inert rows that pad the answers (so refits share a compiled program) leave every full conditional
    and the log joint as they were."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(7, 2))
    data = N.prepare(x, [(0, 1, "must"), (2, 3, "cannot"), (4, 5, "must", 0.2), (0, 6, "cannot", 0.1)])
    padded = N.pad_answers(data, 16)
    assert padded.i.shape == (16,)
    prior = PRIOR._replace(mean=jnp.zeros(2), rate=jnp.full(2, 0.6))
    st = N.init(np.array([0, 0, 1, 2, 3, 3, 4]), np.array([0, 0, 1, 1, 2, -1, -1]), data, 7)
    for d in (data, padded):
        assert float(N.log_joint(st, d, prior, ALPHA, GAMMA, 7)) == pytest.approx(
            float(N.log_joint(st, data, prior, ALPHA, GAMMA, 7)), rel=1e-6
        )
    for i in range(7):
        np.testing.assert_allclose(
            N.item_conditional(i, st, padded, prior, ALPHA, GAMMA, 7)[1],
            N.item_conditional(i, st, data, prior, ALPHA, GAMMA, 7)[1],
            rtol=1e-6,
        )
    for k in range(5):
        np.testing.assert_allclose(
            N.component_conditional(k, st, padded, prior, ALPHA, GAMMA, 7)[0],
            N.component_conditional(k, st, data, prior, ALPHA, GAMMA, 7)[0],
            rtol=1e-6,
        )
    # with no group the group move leaves the state as it is
    st2, info = MH.group_sweep(jax.random.key(0), st, N.prepare(x), prior, ALPHA, GAMMA, 7, 8)
    assert int(info.proposed_merges) == 0
    assert all(np.array_equal(a, b) for a, b in zip(st2, st, strict=True))
    with pytest.raises(InvalidInputError, match="rows=2"):
        N.pad_answers(data, 2)


def test_a_block_that_runs_short_is_redone_with_more_slots_and_the_same_keys(monkeypatch):
    """90 items in 3 tight blobs: the chains start in the slots of their k-means start (12 parts) and, given no
    headroom, run short, grow and redo that block with the same keys; no kept block ran short."""
    monkeypatch.setattr(nested_model, "_slots", lambda occupied, n: min(n, occupied))  # no headroom
    calls, run_block = [], nested_model._run_block

    def recorded(state, gamma, keys, *rest):
        out = run_block(state, gamma, keys, *rest)
        calls.append((state.u.shape[-1], np.asarray(jax.random.key_data(keys)), bool(np.any(out[2][3]))))
        return out

    monkeypatch.setattr(nested_model, "_run_block", recorded)
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 30)
    x = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])[y] + rng.normal(scale=0.3, size=(90, 2))
    model = NestedDPMM(n_chains=2, n_burnin=20, n_samples=2, thin=5, scale=0.01, random_state=0).fit(x)
    assert calls[0][0] == 12  # the start's parts, one slot each
    redo = [k for k in range(1, len(calls)) if calls[k - 1][2]]
    assert redo, "no block ran short"
    for k in redo:  # redone with more slots and the same keys
        assert calls[k][0] > calls[k - 1][0]
        np.testing.assert_array_equal(calls[k][1], calls[k - 1][1])
    assert not calls[-1][2]
    assert adjusted_rand_score(y, model.labels_) == 1.0


def test_group_moves_alone_carry_must_linked_pairs_into_their_class_and_components():
    """Two separated blobs of 8, each item must-linked to one neighbour, one cannot-link between the blobs; every
    item starts as its own component and every pair as its own class. Group moves alone (no item move can carry a
    pair across classes: each of its items is held by the other) make the blobs the classes in every chain, the
    pairs' items placed into shared components."""
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(-4.0, 0.3, (8, 1)), rng.normal(4.0, 0.3, (8, 1))]
    answers = [(a, a + 1, "must") for a in range(0, 16, 2)] + [(0, 8, "cannot")]
    data = N.prepare(X, answers)
    start = N.init(np.arange(16), np.arange(16) // 2, data, 16)

    def chain(key):
        def sweep(st, k):
            return MH.group_sweep(k, st, data, PRIOR, ALPHA, 10.0, 16, 8)[0], None

        st = jax.lax.scan(sweep, start, jax.random.split(key, 100))[0]
        return N.class_labels(st), jnp.sum(st.count > 0)

    labels, n_components = jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(3), 8))
    assert [adjusted_rand_score(np.repeat([0, 1], 8), lab) for lab in np.asarray(labels)] == [1.0] * 8
    assert int(jnp.max(n_components)) < 8


def test_the_component_split_merge_cuts_a_component_that_holds_two_blobs_and_joins_two_halves_of_one():
    """In practice, not only in law: 200 items in 3 columns, two blobs 8 standard deviations apart, start in one
    component (one class); the split-merge of components alone cuts the blobs apart in every chain within 40
    proposals (at most 2 items on the wrong side, which item moves would carry back; a chain may also cut a
    blob's tail off, as the posterior allows). From the blobs as two components each cut in half at random
    (four components), it joins the halves back in every chain. A proposal that drew the sides at random, or one
    whose merges' reverse probabilities were negligible, would do neither (the enumeration tests check only that
    the move is exact)."""
    rng = np.random.default_rng(0)
    blob = np.repeat([0, 1], 100)
    X = rng.normal(0.0, 1.0, (200, 3)) + 8.0 * blob[:, None]
    X = (X - X.mean(0)) / X.std(0)
    prior = N.NestedPrior(jnp.zeros(3), jnp.array(0.05), jnp.array(2.0), jnp.full(3, 0.5), rounding=0.0)
    data = N.prepare(X, [])
    halves = blob * 2 + rng.integers(0, 2, 200)

    def run(key, z, classes):
        st = N.init(z, classes, data, 8)
        st, info = MH.component_split_merge(key, st, data, prior, 1.0, 10.0, 8, 40)
        return st.z, info.accepted_splits

    keys = jax.random.split(jax.random.key(5), 8)
    go = jax.jit(jax.vmap(run, in_axes=(0, None, None)))
    z_split, accepted = go(keys, jnp.zeros(200, jnp.int32), jnp.zeros(1, jnp.int32))
    for z in np.asarray(z_split):  # at most 2 of the 200 items in a component of the other blob's
        assert len(np.unique(z)) >= 2
        assert sum(np.bincount(blob[z == k]).max() for k in np.unique(z)) >= 198
    assert np.all(np.asarray(accepted) >= 1)
    z_merged, _ = go(keys, jnp.asarray(halves, jnp.int32), jnp.zeros(4, jnp.int32))
    assert [adjusted_rand_score(blob, z) for z in np.asarray(z_merged)] == [1.0] * 8
