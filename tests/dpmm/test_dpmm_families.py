"""Conjugate algebra of the component families, in float64, against scipy and closed forms.

For each family: the one-point predictive equals scipy's Student-t / multivariate t / Dirichlet-multinomial;
a group predictive equals the chain of one-point predictives and the ratio of marginal likelihoods; the
marginal likelihood of the data equals the chain rule from the prior; ``remove`` inverts ``add``; the slots
recomputed from an assignment equal sequential adds.
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxclust.dpmm import DirichletMultinomial, Family, NormalGamma, NormalInverseWishart, families
from jaxclust.errors import InvalidInputError

RNG = np.random.default_rng(0)
XG = RNG.normal(size=(9, 3)) * np.array([1.0, 2.0, 0.5]) + np.array([0.3, -1.0, 2.0])
XC = RNG.integers(0, 5, size=(9, 4)).astype(float)


def _families():
    return {
        "ng": (NormalGamma(mean=[0.1, -0.5, 1.5], kappa=0.7, shape=2.5, rate=[0.8, 1.3, 0.4]), XG),
        # values rounded to steps 0.5, 1 and 0.1 (rounding h²/12 per column)
        "ng_rounded": (
            NormalGamma(
                mean=[0.1, -0.5, 1.5],
                kappa=0.7,
                shape=2.5,
                rate=[0.8, 1.3, 0.4],
                rounding=np.array([0.25, 1, 0.01]) / 12,
            ),
            XG,
        ),
        "niw": (
            NormalInverseWishart(
                mean=[0.1, -0.5, 1.5],
                kappa=0.7,
                dof=5.0,
                scale=[[1.0, 0.3, 0.0], [0.3, 2.0, -0.2], [0.0, -0.2, 0.5]],
            ),
            XG,
        ),
        "dm": (DirichletMultinomial([0.5, 1.0, 2.0, 0.7]), XC),
    }


def _stats_of(family, X, rows):
    """Statistics of one group made of ``rows`` of X (float64 pytree with no leading axis)."""
    group_of = np.zeros(len(rows), dtype=np.int32)
    gs = family.group_stats(X[rows], group_of, 1)
    return jax.tree.map(lambda a: jnp.asarray(a[0], jnp.float64), gs)


def _slot_with(family, X, rows):
    slot = family.prior_slot()
    for r in rows:
        slot = family.add(slot, _stats_of(family, X, [r]))
    return slot


def _batch(slot):
    return jax.tree.map(lambda a: jnp.asarray(a)[None], slot)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("name", ["ng", "ng_rounded", "niw", "dm"])
def test_group_predictive_is_chain_and_marginal_ratio(name):
    family, X = _families()[name]
    family = family.check(X).astype(jnp.float64)
    base, group = [0, 1, 2, 3], [4, 5, 6]
    slot = _slot_with(family, X, base)
    joint = family.log_pred(_batch(slot), _stats_of(family, X, group))[0]
    # chain of one-point predictives, updating the slot after each point
    chain, s = 0.0, slot
    for r in group:
        gs = _stats_of(family, X, [r])
        chain += family.log_pred(_batch(s), gs)[0]
        s = family.add(s, gs)
    assert float(joint) == pytest.approx(float(chain), rel=1e-10, abs=1e-9)
    # ratio of marginal likelihoods
    ratio = family.log_marginal(_batch(s))[0] - family.log_marginal(_batch(slot))[0]
    if name == "dm":  # multinomial coefficients are part of the group predictive, not of log_marginal
        ratio += _stats_of(family, X, group).coef
    assert float(joint) == pytest.approx(float(ratio), rel=1e-10, abs=1e-9)
    # the group added in one step equals the points added one by one
    one_step = family.add(slot, _stats_of(family, X, group))
    for a, b in zip(jax.tree.leaves(one_step), jax.tree.leaves(s), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_normal_gamma_one_point_is_product_of_scipy_t():
    family, X = _families()["ng"]
    family = family.check(X).astype(jnp.float64)
    slot = _slot_with(family, X, [0, 1, 2])
    x = X[7]
    got = family.log_pred(_batch(slot), _stats_of(family, X, [7]))[0]
    kn, an = float(slot.kappa), float(slot.shape)
    scale = np.sqrt(np.asarray(slot.rate) * (kn + 1) / (an * kn))
    want = stats.t.logpdf(x, df=2 * an, loc=np.asarray(slot.mean), scale=scale).sum()
    assert float(got) == pytest.approx(want, rel=1e-10)
    # posterior parameters after three points, from the closed form of docs/algorithms/dpmm.md (a)
    x3 = X[:3]
    k0, m0, b0 = 0.7, np.array([0.1, -0.5, 1.5]), np.array([0.8, 1.3, 0.4])
    xbar = x3.mean(0)
    np.testing.assert_allclose(slot.mean, (k0 * m0 + 3 * xbar) / (k0 + 3), rtol=1e-12)
    np.testing.assert_allclose(
        slot.rate,
        b0 + 0.5 * ((x3 - xbar) ** 2).sum(0) + k0 * 3 * (xbar - m0) ** 2 / (2 * (k0 + 3)),
        rtol=1e-12,
    )


def test_niw_one_point_is_scipy_multivariate_t():
    family, X = _families()["niw"]
    family = family.check(X).astype(jnp.float64)
    slot = _slot_with(family, X, [0, 1, 2, 3])
    D = 3
    kn, nun = float(slot.kappa), float(slot.dof)
    v = nun - D + 1
    shape = np.asarray(slot.scale) * (kn + 1) / (kn * v)
    want = stats.multivariate_t.logpdf(X[8], loc=np.asarray(slot.mean), shape=shape, df=v)
    got = family.log_pred(_batch(slot), _stats_of(family, X, [8]))[0]
    assert float(got) == pytest.approx(want, rel=1e-10)


def test_dirichlet_multinomial_one_point_is_scipy():
    family, X = _families()["dm"]
    family = family.check(X).astype(jnp.float64)
    slot = _slot_with(family, X, [0, 1, 2])
    x = X[5]
    alpha = np.array([0.5, 1.0, 2.0, 0.7]) + X[:3].sum(0)
    want = stats.dirichlet_multinomial.logpmf(x, alpha, int(x.sum()))
    got = family.log_pred(_batch(slot), _stats_of(family, X, [5]))[0]
    assert float(got) == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("name", ["ng", "ng_rounded", "niw", "dm"])
def test_marginal_is_chain_rule_from_prior(name):
    family, X = _families()[name]
    family = family.check(X).astype(jnp.float64)
    prior = family.prior_slot()
    total, s = 0.0, prior
    for r in range(6):
        gs = _stats_of(family, X, [r])
        total += family.log_pred(_batch(s), gs)[0] - (gs.coef if name == "dm" else 0.0)
        s = family.add(s, gs)
    assert float(family.log_marginal(_batch(s))[0]) == pytest.approx(float(total), rel=1e-10)
    assert float(family.log_marginal(_batch(prior))[0]) == pytest.approx(0.0, abs=1e-10)


@pytest.mark.parametrize("name", ["ng", "ng_rounded", "niw", "dm"])
def test_remove_inverts_add_and_refresh_matches_adds(name):
    family, X = _families()[name]
    family = family.check(X).astype(jnp.float64)
    slot = _slot_with(family, X, [0, 1, 2, 3, 4])
    back = family.remove(family.add(slot, _stats_of(family, X, [5, 6])), _stats_of(family, X, [5, 6]))
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(slot), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    # slots recomputed from an assignment of 4 groups to 3 slots (slot 2 empty) equal sequential adds
    group_of = np.array([0, 0, 1, 2, 2, 2, 3, 3, 1], dtype=np.int32)
    gs = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), family.group_stats(X, group_of, 4))
    z = jnp.array([1, 0, 1, 3])
    slots = family.slots_from_groups(z, gs, 4)
    for k in range(4):
        rows = [i for i in range(9) if int(z[group_of[i]]) == k]
        want = _slot_with(family, X, rows)
        for a, b in zip(
            jax.tree.leaves(jax.tree.map(lambda t, k=k: t[k], slots)), jax.tree.leaves(want), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def test_float32_far_from_origin_keeps_statistics():
    """Centred group statistics in float32 on data at +1e4 match float64 statistics of the same data."""
    family = NormalGamma(mean=1e4, kappa=0.5, shape=2.0, rate=0.5).check(XG)
    Xfar = XG + 1e4
    shift = Xfar.mean(0)
    fam_c = family.transformed(shift, np.ones(XG.shape[1]))
    z = jnp.array([0, 1, 0, 2, 1, 0, 2, 2, 1])
    group_of = np.arange(9, dtype=np.int32)
    exact = None
    for dtype in (jnp.float64, jnp.float32):
        gs = jax.tree.map(lambda a, d=dtype: jnp.asarray(a, d), fam_c.group_stats(Xfar - shift, group_of, 9))
        f = fam_c.astype(dtype)
        lm = f.log_marginal(f.slots_from_groups(z, gs, 3))
        if exact is None:
            exact = np.asarray(lm)
            # and the float64 value equals the un-shifted model on centred data under the shifted prior
            fam0 = NormalGamma(mean=1e4 - shift, kappa=0.5, shape=2.0, rate=0.5).check(XG).astype(dtype)
            gs0 = jax.tree.map(
                lambda a, d=dtype: jnp.asarray(a, d), fam0.group_stats(XG + 1e4 - shift, group_of, 9)
            )
            lm0 = fam0.log_marginal(fam0.slots_from_groups(z, gs0, 3))
            np.testing.assert_allclose(lm0, exact, rtol=1e-12)
        else:
            np.testing.assert_allclose(lm, exact, rtol=1e-5)


@pytest.mark.parametrize("name", ["ng", "ng_rounded", "niw"])
def test_transformed_prior_is_the_same_model_in_new_units(name):
    """Data mapped to (x - c) / s under the transformed prior: the same marginal likelihood up to the
    Jacobian, ln p(X) = ln p(X') - n sum_d ln s_d (float64, every partition block)."""
    shift, scale = np.array([3.0, -1.0, 0.5]), np.array([8.0, 0.25, 2.0])
    rounding = np.array([0.02, 0.3, 0.0]) if name == "ng_rounded" else 0.0
    fam = (
        NormalGamma(mean=[1.0, 0.0, -2.0], kappa=0.7, shape=2.5, rate=[0.4, 1.3, 0.9], rounding=rounding)
        if name.startswith("ng")
        else NormalInverseWishart(
            mean=[1.0, 0.0, -2.0],
            kappa=0.7,
            dof=5.0,
            scale=[[1.0, 0.3, 0.0], [0.3, 2.0, 0.1], [0.0, 0.1, 0.5]],
        )
    ).check(XG)
    moved = fam.transformed(shift, scale).check(XG)
    z = jnp.array([0, 1, 0, 2, 1, 0, 2, 2, 1])
    group_of = np.arange(9, dtype=np.int32)

    def lm(f, X):
        f = f.astype(jnp.float64)
        gs = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), f.group_stats(X, group_of, 9))
        return np.asarray(f.log_marginal(f.slots_from_groups(z, gs, 3)))

    n_k = np.bincount(np.asarray(z), minlength=3)
    np.testing.assert_allclose(
        lm(fam, XG), lm(moved, (XG - shift) / scale) - n_k * np.log(scale).sum(), rtol=1e-10
    )


def test_prior_validation_names_the_field():
    with pytest.raises(InvalidInputError, match="prior.rate"):
        NormalGamma(rate=[1.0, 2.0]).check(XG)
    with pytest.raises(InvalidInputError, match="prior.kappa"):
        NormalGamma(kappa=-1.0).check(XG)
    with pytest.raises(InvalidInputError, match="prior.dof"):
        NormalInverseWishart(dof=1.0).check(XG)
    with pytest.raises(InvalidInputError, match="count"):
        DirichletMultinomial().check(XG)


def test_default_prior_is_documented_data_driven():
    p = NormalGamma.from_data(XG)
    np.testing.assert_allclose(p.mean, XG.mean(0))
    np.testing.assert_allclose(p.rate, 0.5 * (2.0 - 1.0) * XG.var(0))
    assert float(p.kappa) == 0.05 and float(p.shape) == 2.0


@pytest.mark.parametrize("name", ["ng", "ng_rounded", "niw"])
def test_count_table_fast_path_equals_direct(name):
    family, X = _families()[name]
    family = family.check(X).astype(jnp.float64)
    group_of = np.array([0, 0, 1, 2, 2, 2, 3, 3, 1], dtype=np.int32)
    gs = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), family.group_stats(X, group_of, 4))
    z = jnp.array([1, 0, 1, 3])
    slots = family.slots_from_groups(z, gs, 4)
    counts = jax.nn.one_hot(z, 4, dtype=jnp.float64).T @ gs.size
    table = family.count_table(12, X.shape[1])
    for g in range(4):
        one = jax.tree.map(lambda a, g=g: a[g], gs)
        np.testing.assert_allclose(
            family.log_pred(slots, one, counts, table), family.log_pred(slots, one), rtol=1e-12
        )


@pytest.mark.parametrize("name", ["ng", "ng_rounded", "niw", "dm"])
def test_segment_and_combined_statistics_equal_direct_ones(name):
    """Statistics of two segments combined (Chan's update) equal those of their union, and segment statistics
    equal a direct computation from the items (float64)."""
    family, X = _families()[name]
    family = family.check(X).astype(jnp.float64)
    group_of = np.array([0, 0, 1, 2, 2, 2, 3, 3, 1], dtype=np.int32)
    gs = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), family.group_stats(X, group_of, 4))
    seg = jnp.array([0, 1, 1, 0])
    parts = family.segment_stats(seg, gs, 2)
    both = family.combine_stats(jax.tree.map(lambda a: a[0], parts), jax.tree.map(lambda a: a[1], parts))
    union = family.segment_stats(jnp.zeros(4, jnp.int32), gs, 1)
    for a, b in zip(jax.tree.leaves(both), jax.tree.leaves(union), strict=True):
        np.testing.assert_allclose(a, b[0], rtol=1e-10, atol=1e-10)
    direct = family.group_stats(X[np.isin(group_of, [1, 2])], np.zeros(5, np.int32), 1)
    for a, b in zip(jax.tree.leaves(parts), jax.tree.leaves(direct), strict=True):
        np.testing.assert_allclose(a[1], b[0], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["ng", "ng_rounded", "niw", "dm"])
def test_group_loglik_is_the_sum_of_item_log_densities(name):
    """The (rows, K) matrix product equals sum over each group's items of scipy log densities under the drawn
    parameters."""
    from scipy import stats as st

    family, X = _families()[name]
    family = family.check(X).astype(jnp.float64)
    group_of = np.array([0, 0, 1, 2, 2, 2, 3, 3, 1], dtype=np.int32)
    gs = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), family.group_stats(X, group_of, 4))
    slots = family.slots_from_groups(jnp.array([0, 1, 1, 2]), gs, 3)
    params = family.draw_params(jax.random.key(0), slots)
    got = np.asarray(family.group_loglik(params, gs, family.loglik_features(gs)))
    want = np.zeros((4, 3))
    for k in range(3):
        for i, g in enumerate(group_of):
            if name.startswith("ng"):  # rounded: the geometric mean of the density over x +- h/2
                lam, mu = (np.asarray(p[k]) for p in params)
                h2 = np.asarray(family.rounding)
                want[g, k] += (st.norm.logpdf(X[i], mu, 1 / np.sqrt(lam)) - lam * h2 / 2).sum()
            elif name == "niw":
                lam, mu = np.asarray(params[0][k]), np.asarray(params[1][k])
                want[g, k] += st.multivariate_normal.logpdf(X[i], mu, np.linalg.inv(lam))
            else:
                theta = np.exp(np.asarray(params[0][k]))
                want[g, k] += st.multinomial.logpmf(X[i], int(X[i].sum()), theta)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["ng", "ng_rounded", "niw", "dm"])
def test_draw_params_follow_the_posterior(name):
    """Posterior draws of 20,000 slots: sample means match the closed-form posterior means (NG: E[lam] =
    shape/rate, E[mu] = mean; NIW: E[Lam] = dof scale^-1; DM: E[theta] = conc / sum(conc))."""
    family, X = _families()[name]
    family = family.check(X).astype(jnp.float64)
    gs = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), family.group_stats(X, np.zeros(9, np.int32), 1))
    slot = family.slots_from_groups(jnp.zeros(1, jnp.int32), gs, 1)
    many = jax.tree.map(lambda a: jnp.repeat(a, 20000, axis=0), slot)
    params = family.draw_params(jax.random.key(1), many)
    s0 = jax.tree.map(lambda a: np.asarray(a[0]), slot)
    if name.startswith("ng"):
        np.testing.assert_allclose(params[0].mean(0), s0.shape / s0.rate, rtol=0.03)
        np.testing.assert_allclose(params[1].mean(0), s0.mean, atol=0.03 * np.sqrt(s0.rate / s0.shape).max())
    elif name == "niw":
        np.testing.assert_allclose(params[0].mean(0), s0.dof * np.linalg.inv(s0.scale), rtol=0.05, atol=0.05)
        np.testing.assert_allclose(params[1].mean(0), s0.mean, atol=0.05)
        np.testing.assert_allclose(params[2], np.linalg.slogdet(np.asarray(params[0]))[1], rtol=1e-8)
    else:
        np.testing.assert_allclose(np.exp(params[0]).mean(0), s0.conc / s0.conc.sum(), atol=0.01)


@pytest.mark.parametrize("family", [NormalGamma(), NormalInverseWishart(), DirichletMultinomial()], ids=type)
def test_every_family_implements_the_family_protocol_with_its_parameter_names(family):
    """Each family has every method of :class:`jaxclust.dpmm.Family` with the protocol's parameters, in order
    (the samplers call some of them by keyword)."""
    assert isinstance(family, Family)
    methods = [m for m, v in vars(Family).items() if inspect.isfunction(v) and not m.startswith("_")]
    assert len(methods) == 18
    for name in methods:
        want = list(inspect.signature(getattr(Family, name)).parameters)
        got = list(inspect.signature(getattr(type(family), name)).parameters)
        assert got == want, name


@pytest.mark.parametrize("D", [1, 5, 32, 33, 35, 100])
def test_sum_of_logs_from_bit_fields_matches_float64(D):
    """The Normal-Gamma predictive's sum of logarithms (exponents added exactly, one logarithm per 32 mantissas)
    equals the float64 sum of the logs of the same float32 numbers to within a few float32 epsilons of the
    magnitudes involved, over 35 orders of magnitude either side of 1 and at mantissas 1 and just below 2; in
    float64 to within float64 epsilons; and entries below the smallest normal float count as it."""
    rng = np.random.default_rng(D)
    x = np.exp(rng.uniform(-80.0, 80.0, (6, D))).astype(np.float32)
    x[0] = 1.0
    x[1] = np.nextafter(np.float32(2.0), np.float32(0.0))  # the largest mantissa, in every entry of a chunk
    x[2] = rng.uniform(0.5, 2.0, D)
    want = np.log(x.astype(np.float64)).sum(-1)
    scale = np.abs(np.log(x.astype(np.float64))).sum(-1) + 22.0 * (-(-D // 32))
    got = np.asarray(families._sum_log(jnp.asarray(x)), np.float64)
    assert np.all(np.abs(got - want) <= 4 * np.finfo(np.float32).eps * scale), (got - want, scale)
    assert got[0] == 0.0
    with jax.enable_x64(True):
        x64 = np.exp(rng.uniform(-600.0, 600.0, (6, D)))
        got64 = np.asarray(families._sum_log(jnp.asarray(x64)))
        assert got64.dtype == np.float64
        want64 = np.log(x64).sum(-1)
        bound = 4 * np.finfo(np.float64).eps * (np.abs(np.log(x64)).sum(-1) + 37.0 * (-(-D // 32)))
        assert np.all(np.abs(got64 - want64) <= bound)
    tiny = np.finfo(np.float32).tiny
    below = np.asarray(families._sum_log(jnp.asarray([[0.0, tiny / 4.0, tiny]], jnp.float32)))
    np.testing.assert_allclose(below, [3 * np.log(np.float64(tiny))], rtol=1e-6)


def test_each_columns_step_is_the_median_gap_between_its_distinct_values():
    x = np.array([[0, 2.5, 1.0], [1, 2.5, 1.0], [1, 2.5, 1.1], [3, 2.5, 1.3], [5, 2.5, 1.0], [3, 2.5, 2.0]])
    # distinct 0 1 3 5: gaps 1 2 2; one value: no gap; distinct 1.0 1.1 1.3 2.0: gaps 0.1 0.2 0.7
    np.testing.assert_allclose(families.column_steps(x), [2.0, 0.0, 0.2])
