"""Sampler behaviour: constraints always hold, determinism, capacity growth, no re-compile between rounds,
the estimator's fitted attributes, warm starts, input errors, sharding over devices."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import gammaln

from jaxclust import DPMM, Constraints
from jaxclust.dpmm import NormalGamma, capacity, chains, gibbs, model, repair_labels, sample
from jaxclust.dpmm import state as _state
from jaxclust.errors import ConstraintConflictError, ConstraintError, InvalidInputError

RNG = np.random.default_rng(1)
X12 = np.concatenate([RNG.normal(c, 0.4, size=(4, 2)) for c in (-3.0, 0.0, 3.0)])
KW = dict(n_chains=4, n_burnin=4, n_samples=4, thin=2)  # shared shapes: one compile serves most tests
# 19 points on a unit grid and near-duplicates of 9 of them: ~19 components under a tight-variance prior
GRID = np.stack(np.meshgrid(np.arange(5.0), np.arange(4.0)), -1).reshape(-1, 2)[:19]
X28 = np.concatenate([GRID, GRID[:9] + RNG.normal(0, 1e-3, (9, 2))])


def _ng_log_marginal(x, mean, kappa, shape, rate):
    """Closed-form Normal-Gamma log marginal likelihood (docs/algorithms/dpmm.md (a)), float64 NumPy."""
    n = len(x)
    kn, an = kappa + n, shape + n / 2
    xbar = x.mean(0)
    bn = rate + 0.5 * ((x - xbar) ** 2).sum(0) + kappa * n * (xbar - mean) ** 2 / (2 * kn)
    return float(
        np.sum(
            gammaln(an)
            - gammaln(shape)
            + shape * np.log(rate)
            - an * np.log(bn)
            + 0.5 * np.log(kappa / kn)
            - n / 2 * np.log(2 * np.pi)
        )
    )


@st.composite
def constraint_sets(draw, n=12):
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1])
    must = draw(st.lists(pairs, max_size=5))
    cannot = draw(st.lists(pairs, max_size=8))
    return Constraints(n, must_link=must, cannot_link=cannot, on_conflict="drop")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(constraint_sets(), st.integers(0, 2**31 - 1))
def test_every_retained_sample_satisfies_every_constraint(c, seed):
    # a fixed partner-table width keeps one compiled sweep for all examples
    res = sample(seed, X12, c, alpha=2.0, partner_capacity=8, capacity=16, **KW)
    for z in res.samples.reshape(-1, 12):
        assert c.check_assignment(z) == []
    for z in res.final_labels:
        assert c.check_assignment(z) == []


def test_same_seed_same_samples_and_seed_matters():
    c = Constraints(12, must_link=[(0, 1)], cannot_link=[(0, 4)])
    a = DPMM(alpha_prior=(1.0, 1.0), random_state=3, **KW).fit(X12, c)
    b = DPMM(alpha_prior=(1.0, 1.0), random_state=3, **KW).fit(X12, c)
    other = DPMM(alpha_prior=(1.0, 1.0), random_state=4, **KW).fit(X12, c)
    np.testing.assert_array_equal(a.samples_, b.samples_)
    np.testing.assert_array_equal(a.alpha_samples_, b.alpha_samples_)
    assert not np.array_equal(a.alpha_samples_, other.alpha_samples_)


def test_thin_given_to_fit_is_the_constructors_thin():
    """``fit(thin=)`` (an active session's warm refits) is the model built with that thin: same draws."""
    c = Constraints(12, must_link=[(0, 1)])
    first = DPMM(random_state=3, **KW).fit(X12)
    kw = {**KW, "thin": 1}
    a = DPMM(random_state=3, **KW).fit(X12, c, init_labels=first.final_labels_, n_burnin=2, thin=1)
    b = DPMM(random_state=3, **kw).fit(X12, c, init_labels=first.final_labels_, n_burnin=2)
    np.testing.assert_array_equal(a.samples_, b.samples_)
    assert a.settings_["thin"] == 1
    with pytest.raises(InvalidInputError, match="thin"):
        DPMM(**KW).fit(X12, thin=0)


def test_fitted_attributes_are_consistent():
    prior = NormalGamma(mean=0.0, kappa=0.3, shape=2.0, rate=0.5)
    m = DPMM(prior=prior, alpha=1.5, **KW).fit(X12)
    S = KW["n_chains"] * KW["n_samples"]
    assert m.samples_.shape == (S, 12) and m.log_joint_.shape == (S,) and m.alpha_samples_.shape == (S,)
    assert isinstance(m.samples_, np.ndarray) and isinstance(m.n_components_, int)
    # labels_ is the retained sample of highest log joint
    np.testing.assert_array_equal(m.labels_, m.samples_[np.argmax(m.log_joint_)])
    assert m.n_components_ == len(np.unique(m.labels_))
    # co-clustering equals the brute-force frequency of sharing a component
    brute = (m.samples_[:, :, None] == m.samples_[:, None, :]).mean(0)
    np.testing.assert_allclose(m.coclustering_, brute, atol=1e-6)
    # every log joint equals ln p(X, z | alpha) computed independently (CRP x closed-form marginals, float64)
    for z, lj in zip(m.samples_, m.log_joint_, strict=True):
        K = z.max() + 1
        want = K * math.log(1.5) + gammaln(1.5) - gammaln(1.5 + 12)
        for k in range(K):
            want += gammaln((z == k).sum()) + _ng_log_marginal(X12[z == k], 0.0, 0.3, 2.0, 0.5)
        assert lj == pytest.approx(want, rel=2e-5, abs=2e-3)
    d = m.diagnostics_
    assert set(d) >= {"log_joint", "n_components", "alpha", "traces"}
    assert d["traces"]["log_joint"].shape == (KW["n_chains"], KW["n_burnin"] + KW["n_samples"] * KW["thin"])
    # the last trace entry of each chain is its last retained sample
    np.testing.assert_allclose(d["traces"]["log_joint"][:, -1], m.log_joint_.reshape(4, 4)[:, -1], rtol=1e-6)
    assert m.final_labels_.shape == (4, 12)
    np.testing.assert_array_equal(m.final_labels_, m.samples_.reshape(4, 4, 12)[:, -1])


def test_capacity_grows_instead_of_truncating():
    """Growing and redoing a block gives exactly the draws of a sampler that had enough slots from the start
    (the random numbers of a step do not depend on the number of slots)."""
    # a prior with tiny within-component variance wants about one component per point
    prior = NormalGamma(mean=0.0, kappa=1e-3, shape=5.0, rate=0.005)
    c = Constraints(12, cannot_link=[(0, 1), (2, 3)])
    init = np.zeros((4, 12), dtype=int)
    grown = DPMM(prior=prior, alpha=5.0, capacity=8, **KW).fit(X12, c, init_labels=init)
    roomy = DPMM(prior=prior, alpha=5.0, capacity=16, **KW).fit(X12, c, init_labels=init)
    # 8 -> 12 (x1.5); never more slots than groups (12), which can never overflow
    assert grown.n_capacity_growths_ == 1 and grown.capacity_ == 12
    assert roomy.n_capacity_growths_ == 0 and roomy.capacity_ == 12
    np.testing.assert_array_equal(grown.samples_, roomy.samples_)
    np.testing.assert_allclose(grown.log_joint_, roomy.log_joint_, rtol=1e-6)
    for z in grown.samples_:
        assert c.check_assignment(z) == []


def test_max_components_is_the_deprecated_spelling_of_capacity():
    """``DPMM(max_components=)`` warns and fits exactly what ``DPMM(capacity=)`` fits, which is what
    ``sample(capacity=)`` draws."""
    prior = NormalGamma(mean=0.0, kappa=1e-3, shape=5.0, rate=0.005)
    init = np.zeros((4, 12), dtype=int)
    new = DPMM(prior=prior, alpha=5.0, capacity=8, **KW).fit(X12, init_labels=init)
    with pytest.warns(FutureWarning, match="max_components=.* is deprecated: the setting is called capacity"):
        old = DPMM(prior=prior, alpha=5.0, max_components=8, **KW).fit(X12, init_labels=init)
    functional = sample(0, X12, None, prior, alpha=5.0, capacity=8, init_labels=init, **KW)
    assert new.n_capacity_growths_ == old.n_capacity_growths_ == functional.n_capacity_growths == 1
    np.testing.assert_array_equal(new.samples_, old.samples_)
    np.testing.assert_array_equal(new.samples_, functional.samples.reshape(new.samples_.shape))


def test_capacity_policy_steps():
    """Start: the requested slots (default 32), doubled until the occupied ones leave a quarter free, at most the
    groups; growth: x2 (and at least occupied + 2) to a multiple of 4, capped at the groups; proactive growth
    keeps a quarter of the slots free."""
    assert capacity.initial_capacity(1, 2000) == 32
    assert capacity.initial_capacity(24, 2000) == 32 and capacity.initial_capacity(25, 2000) == 64
    assert capacity.initial_capacity(70, 2000) == 128 and capacity.initial_capacity(96, 2000) == 128
    assert capacity.initial_capacity(97, 2000) == 256 and capacity.initial_capacity(97, 200) == 200
    assert capacity.initial_capacity(1, 2000, 8) == 8 and capacity.initial_capacity(8, 2000, 4) == 16
    assert capacity.initial_capacity(1, 3) == 3 and capacity.initial_capacity(5, 3) == 5
    assert [capacity.grown_capacity(k, k, 2000) for k in (4, 8, 12, 16, 32)] == [8, 16, 24, 32, 64]
    assert capacity.grown_capacity(8, 17, 2000) == 20
    assert capacity.grown_capacity(32, 32, 40) == 40
    assert capacity.headroom(8) == 2 and capacity.headroom(32) == 8


def test_capacity_grows_ahead_while_components_multiply():
    """A block that took the components from 8 to 25 is expected to take them to 25 * 25 / 8 = 78 next: the
    slots grow x4 (128) where x2 (64) would not leave that a quarter free, never beyond x4; a block that did not
    multiply them grows x2 as before."""
    assert capacity.grown_capacity(32, 25, 2000, expected=25 * 25 / 8) == 128
    assert capacity.grown_capacity(32, 25, 2000, expected=48.0) == 64  # 64 - 48 >= 64 / 4
    assert capacity.grown_capacity(32, 30, 2000, expected=900.0) == 128  # at most GROWTH ** 2
    assert capacity.grown_capacity(32, 25, 2000, expected=30.0) == 64  # x2 at least
    assert capacity.grown_capacity(32, 25, 90, expected=78.0) == 90  # capped at the groups
    policy = capacity.SlotPolicy(32, 2000, 2000)
    assert policy.after_block(20, last=False, before=8) is None  # 20 + 8 free fits in 32
    assert policy.after_block(25, last=False, before=8) == 128 and policy.growths == 1
    assert capacity.SlotPolicy(32, 2000, 2000).after_block(25, last=False, before=25) == 64
    assert capacity.SlotPolicy(32, 2000, 2000).after_block(25, last=False) == 64


def test_many_growths_give_the_draws_of_a_roomy_sampler():
    """Several growths, after overflows and proactive (from 8 slots to about 19 components): exactly the
    samples of a fit that had all the slots it needed from the start, and every constraint holds. A growth
    that truncated, mis-copied a slot or lost the redo's starting state would change the draws. (The Gibbs
    sweep alone: split-merge pairs components through 2 x capacity labels, so its draws depend on the
    capacity by design; its law under growth is checked against enumeration in ``test_dpmm_exact``.)"""
    # tight variance, diffuse means: every grid point wants its own component, duplicates join theirs
    prior = NormalGamma(mean=0.0, kappa=1e-6, shape=50.0, rate=0.05)
    c = Constraints(28, must_link=[(0, 19)], cannot_link=[(2, 3), (0, 4), (10, 11)])
    init = np.zeros((4, 28), dtype=int)
    kw = dict(prior=prior, alpha=5.0, n_chains=4, n_burnin=6, n_samples=4, thin=2, split_merge=0)
    grown = DPMM(capacity=8, **kw).fit(X28, c, init_labels=init)
    roomy = DPMM(capacity=27, **kw).fit(X28, c, init_labels=init)
    assert roomy.n_capacity_growths_ == 0 and roomy.capacity_ == 27  # 27 groups: never more slots
    # 8 slots, then x2 after overflows (each redoes a block) or proactively
    assert grown.n_overflow_redos_ >= 1 and grown.n_capacity_growths_ >= 2
    assert grown.diagnostics_["traces"]["n_components"].max() > 12  # it really needed the slots
    np.testing.assert_array_equal(grown.samples_, roomy.samples_)
    np.testing.assert_array_equal(grown.final_labels_, roomy.final_labels_)
    np.testing.assert_allclose(grown.log_joint_, roomy.log_joint_, rtol=1e-5)
    for z in grown.samples_:
        assert c.check_assignment(z) == []


def test_repair_labels_enumerated_cases():
    c = Constraints(6, must_link=[(0, 3)], cannot_link=[(0, 1), (4, 5)])
    # groups: {0,3}=0, {1}=1, {2}=2, {4}=3, {5}=4; item labels all equal -> the later group of each cannot-link
    # moves to the label's first extra component (one, shared by both)
    np.testing.assert_array_equal(repair_labels(np.zeros(6, int), c), [0, 1, 0, 0, 1])
    # the group takes its first member's label (item 0), not item 3's
    np.testing.assert_array_equal(repair_labels(np.array([5, 7, 7, 9, 1, 2]), c), [2, 3, 3, 0, 1])
    # a triangle needs the label's second extra component; a star shares the first
    tri = Constraints(3, cannot_link=[(0, 1), (1, 2), (0, 2)])
    np.testing.assert_array_equal(repair_labels(np.zeros(3, int), tri), [0, 1, 2])
    star = Constraints(6, cannot_link=[(0, j) for j in range(1, 6)])
    np.testing.assert_array_equal(repair_labels(np.zeros(6, int), star), [0, 1, 1, 1, 1, 1])
    # extra components are per label: two labels' conflicts do not share one
    two = Constraints(4, cannot_link=[(0, 1), (2, 3)])
    np.testing.assert_array_equal(repair_labels(np.array([0, 0, 1, 1]), two), [0, 2, 1, 3])


def test_warm_start_repairs_and_respects_new_constraints():
    first = DPMM(alpha=1.0, **KW).fit(X12)
    c = Constraints(12, must_link=[(0, 11)], cannot_link=[(0, 1), (2, 3)])
    second = DPMM(alpha=1.0, **KW).fit(X12, c, init_labels=first.final_labels_, n_burnin=0)
    for z in second.samples_:
        assert c.check_assignment(z) == []
    with pytest.raises(InvalidInputError, match="init_labels"):
        DPMM(**KW).fit(X12, init_labels=np.zeros((3, 12), int))


def test_new_constraints_do_not_recompile():
    c1 = Constraints(12, must_link=[(0, 1)], cannot_link=[(2, 9)])
    m = DPMM(alpha=1.0, **KW).fit(X12, c1)
    before = chains.TRACE_COUNTER["block"]
    c2 = c1.with_must_link(4, 5).with_cannot_link(0, 8).with_must_link(6, 7)
    m.fit(X12, c2, init_labels=m.final_labels_)
    m.fit(X12)
    assert chains.TRACE_COUNTER["block"] == before


@pytest.mark.parametrize("sampler", ["collapsed", "subcluster"])
def test_a_hub_outgrowing_the_table_width_does_not_recompile(sampler):
    """One item cannot-linked to 5, then 12, then 20 others (past the table's 8 and 16 columns): its further
    partners go to spill rows, so the warm refits reuse the compiled block."""
    hub = lambda d: Constraints(28, cannot_link=[(0, j) for j in range(1, d + 1)])  # noqa: E731
    m = DPMM(alpha=1.0, sampler=sampler, **KW).fit(X28, hub(5))
    before = chains.TRACE_COUNTER["block"]
    for degree in (12, 20):
        c = hub(degree)
        m.fit(X28, c, init_labels=m.final_labels_)
        assert all(c.check_assignment(z) == [] for z in m.samples_.reshape(-1, 28))
    assert chains.TRACE_COUNTER["block"] == before


def test_cpu_compiler_options_drop_what_this_xla_does_not_know(monkeypatch):
    """The compile-speed options are XLA debug options, which a later jaxlib may drop: the probe keeps the known
    ones and skips an unknown one; the sub-cluster block adds its own."""
    monkeypatch.setitem(chains._CPU_COMPILER_OPTIONS, "xla_no_such_option_anywhere", True)
    got = chains.cpu_compiler_options()
    assert got == {"xla_backend_optimization_level": 1}
    assert chains.cpu_compiler_options("subcluster") == {**got, **chains._CPU_SUBCLUSTER_OPTIONS}
    with pytest.raises(jax.errors.JaxRuntimeError, match="xla_no_such_option_anywhere"):
        jax.jit(lambda x: x, compiler_options={"xla_no_such_option_anywhere": True}).lower(1.0).compile()


def test_errors_name_the_culprit():
    X = X12.copy()
    X[3, 1] = np.nan
    with pytest.raises(InvalidInputError, match="row 3"):
        DPMM(**KW).fit(X)
    with pytest.raises(ConstraintConflictError):
        DPMM(**KW).fit(X12, {"must_link": [(0, 1), (1, 2)], "cannot_link": [(0, 2)]})
    with pytest.raises(ConstraintError, match="12 rows"):
        DPMM(**KW).fit(X12, Constraints(10))
    with pytest.raises(InvalidInputError, match="alpha"):
        DPMM(alpha=-1.0, **KW).fit(X12)
    with pytest.raises(InvalidInputError, match="alpha_prior"):
        DPMM(alpha_prior=(1.0,), **KW).fit(X12)
    with pytest.raises(InvalidInputError, match="prior"):
        DPMM(prior="gaussian", **KW).fit(X12)
    with pytest.raises(InvalidInputError, match="partner_capacity: expected at least 1 column, got 0"):
        sample(0, X12, None, partner_capacity=0, **KW)


def test_far_from_origin_same_samples_as_centred():
    """Data at +1e4 under the prior shifted by +1e4 is the same model: same samples, same log joint."""
    prior = dict(kappa=0.3, shape=2.0, rate=0.5)
    near = sample(5, X12, None, NormalGamma(mean=0.0, **prior), **KW)
    far = sample(5, X12 + 1e4, None, NormalGamma(mean=1e4, **prior), **KW)
    np.testing.assert_array_equal(near.samples, far.samples)
    np.testing.assert_allclose(near.log_joint, far.log_joint, rtol=1e-5)


def test_chains_shard_over_four_host_devices():
    code = textwrap.dedent(f"""
        import json, numpy as np, jax
        from jaxclust.dpmm import sample
        X = np.array({X12.tolist()})
        res = sample(11, X, None, alpha=1.0, n_chains=4, n_burnin=4, n_samples=3, thin=2)
        print(json.dumps({{"devices": jax.device_count(), "samples": res.samples.tolist()}}))
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["devices"] == 4
    local = sample(11, X12, None, alpha=1.0, n_chains=4, n_burnin=4, n_samples=3, thin=2)
    np.testing.assert_array_equal(np.array(got["samples"]), local.samples)


def test_numpyro_mcmc_vectorized_matches_exact_k_distribution(capsys):
    """NumPyro's MCMC drives the sweep; the posterior of K over 4 points matches enumeration."""
    import jax
    from numpyro.infer import MCMC

    from jaxclust.dpmm import DPMMKernel

    X = np.array([[-1.0], [-0.6], [0.8], [1.5]])
    pr = dict(mean=0.0, kappa=0.5, shape=2.0, rate=0.6)
    kernel = DPMMKernel(X, Constraints(4, cannot_link=[(0, 3)]), NormalGamma(**pr), alpha=1.0)
    mcmc = MCMC(
        kernel, num_warmup=10, num_samples=100, num_chains=200, chain_method="vectorized", progress_bar=False
    )
    mcmc.run(jax.random.key(0))
    draws = mcmc.get_samples()
    z = np.asarray(mcmc.get_extra_fields()["z"])
    assert z.shape == (200 * 100, 4) and np.all(z[:, 0] != z[:, 3])
    k = np.asarray(draws["n_components"])
    # exact P(K) by enumerating the 15 partitions of 4 points
    parts = [
        (0, 0, 0, 0),
        (0, 0, 0, 1),
        (0, 0, 1, 0),
        (0, 0, 1, 1),
        (0, 0, 1, 2),
        (0, 1, 0, 0),
        (0, 1, 0, 1),
        (0, 1, 0, 2),
        (0, 1, 1, 0),
        (0, 1, 1, 1),
        (0, 1, 1, 2),
        (0, 1, 2, 0),
        (0, 1, 2, 1),
        (0, 1, 2, 2),
        (0, 1, 2, 3),
    ]
    pk = np.zeros(5)
    for p in parts:
        p = np.array(p)
        if p[0] == p[3]:
            continue
        K = p.max() + 1
        lp = K * 0.0 + gammaln(1.0) - gammaln(5.0)
        for c in range(K):
            lp += gammaln((p == c).sum()) + _ng_log_marginal(X[p == c], **pr)
        pk[K] += np.exp(lp)
    pk /= pk.sum()
    freq = np.bincount(k, minlength=5) / len(k)
    assert 0.5 * np.abs(freq - pk).sum() < 0.02
    mcmc.print_summary()
    out = capsys.readouterr().out
    assert "n_components" in out and "r_hat" in out


def test_categorical_draw_by_inversion_matches_the_probabilities():
    """The parallel step's draw: with uniforms on an even grid of M points, each column is drawn for a fraction
    of rows within 1/M of its softmax probability, and a column of logit -inf never, not even for u at the
    largest float32 below 1 or at 0."""
    import jax.numpy as jnp

    from jaxclust.dpmm.draws import categorical

    logits = np.array([-np.inf, 0.3, -1.2, -np.inf, 2.0, 0.0, -np.inf], np.float32)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    M = 4096
    u = np.concatenate([(np.arange(M) + 0.5) / M, [0.0, np.nextafter(np.float32(1), np.float32(0))]])
    k = np.asarray(categorical(jnp.asarray(np.tile(logits, (len(u), 1))), jnp.asarray(u, jnp.float32)))
    assert np.all(np.isfinite(logits[k])), "a column of probability 0 was drawn"
    freq = np.bincount(k[:M], minlength=len(logits)) / M
    np.testing.assert_allclose(freq, p, atol=1.0 / M + 1e-6)
    assert k[M] == 1 and k[M + 1] == 5  # u = 0: the first possible column; u -> 1: the last one


def test_visiting_order_is_a_random_permutation_with_the_valid_rows_first():
    """The sweep's order: every row once, the valid ones first, each valid row first in about a fifth of 4,000
    keys (within four standard deviations), and a different order for a different key."""
    valid = jax.numpy.asarray([True, False, True, True, False, True, True])
    keys = jax.random.split(jax.random.key(0), 4000)
    orders = np.asarray(jax.vmap(lambda k: gibbs.visiting_order(k, valid))(keys))
    assert orders.dtype == np.int32
    assert np.all(np.sort(orders, 1) == np.arange(7))
    assert np.all(np.isin(orders[:, :5], [0, 2, 3, 5, 6]))
    first = np.bincount(orders[:, 0], minlength=7)[[0, 2, 3, 5, 6]] / len(keys)
    assert np.all(np.abs(first - 0.2) < 4 * math.sqrt(0.2 * 0.8 / len(keys))), first
    assert len({tuple(o) for o in orders[:50]}) > 40


def test_spill_rows_sample_as_a_wide_table_does():
    """Item 0 cannot-linked to eight others and answered softly about two: a table one column wide reads nine
    of its partners from spill rows. The parallel sampler draws with the same key what it draws from a table
    wide enough for all (the collapsed sweep visits hubs last, so its draws differ: its law is checked by
    enumeration in test_dpmm_exact), and the log joint of a state, soft answers included, agrees."""
    answers = [(0, j, "cannot") for j in range(3, 11)] + [(0, 1, "must", 0.1), (0, 11, "cannot", 0.2)]
    answers += [(5, 6, "must", 0.3), (2, 4, "cannot")]
    c = Constraints.from_answers(12, answers)
    runs = [
        sample(5, X12, c, alpha=2.0, capacity=16, sampler="subcluster", partner_capacity=w, **KW)
        for w in (1, 16)
    ]
    np.testing.assert_array_equal(runs[0].samples, runs[1].samples)
    np.testing.assert_allclose(runs[0].log_joint, runs[1].log_joint, rtol=1e-5)
    family = NormalGamma.from_data(X12)
    data = [_state.prepare(X12, c, family, partner_capacity=w) for w in (1, 16)]
    together = np.arange(12)
    together[[1, 11]] = 0  # the hub with its soft partners in its row (1) and in a spill row (11)
    for z in [together, *runs[0].samples.reshape(-1, 12)[:8]]:
        assert c.check_assignment(z) == []
        zg = np.zeros(12, np.int32)
        zg[c.group_of] = z  # group rows: a group's items share a label
        joint = [float(_state.init(zg, d, family, 2.0, 16).log_joint) for d in data]
        assert joint[0] == pytest.approx(joint[1], rel=1e-6)


def test_a_fit_validates_its_data_once(monkeypatch):
    """``DPMM.fit`` and ``sample`` check the data once (a copy and a scan of X each time otherwise), and the
    estimator and the function draw the same samples."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs.get("name"))
        return check_array(*args, **kwargs)

    check_array = model.check_array
    monkeypatch.setattr(model, "check_array", counted)
    fitted = DPMM(**KW).fit(X12)
    assert calls == ["X"]
    drawn = sample(0, X12, **KW)
    assert calls == ["X", "X"]
    np.testing.assert_array_equal(fitted.samples_, drawn.samples.reshape(fitted.samples_.shape))


def test_auto_sampler_by_groups_and_by_groups_times_features():
    """``sampler="auto"``: the collapsed sweep (sequential over groups, each visit costing the columns) below
    5,000 groups and below 2**18 groups x features; the sub-cluster sampler from either; a sampler named is
    kept."""
    assert model.choose_sampler("auto", 4999, 2) == "collapsed"
    assert model.choose_sampler("auto", 5000, 1) == "subcluster"
    assert model.choose_sampler("auto", 1023, 256) == "collapsed"  # 261,888 group-features
    assert model.choose_sampler("auto", 1024, 256) == "subcluster"  # 262,144
    assert model.choose_sampler("collapsed", 10_000, 256) == "collapsed"
    wide = np.random.default_rng(0).normal(size=(1100, 240))
    fit = DPMM(n_chains=1, n_burnin=1, n_samples=1, thin=1, random_state=0).fit(wide)
    assert fit.settings_["sampler"] == "subcluster"
    assert model.resolve_settings("auto", 1100, 240)["n_chains"] == 2  # the sub-cluster sampler's defaults
