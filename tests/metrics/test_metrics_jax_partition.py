"""Jittable partition metrics: equal to the host versions (and so to scikit-learn) under jit and vmap, with
padding, unused ids and empty columns; NaN-free gradients through soft tables."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

from jaxclust.metrics import jax_partition as J
from jaxclust.metrics import partition as P

N, C, K, B = 48, 6, 10, 16  # fixed shapes so each jitted function compiles once for the whole module
ATOL32 = 2e-5


def _batch(seed):
    """Truth with padding (-1) and a batch of predictions using a random subset of ids (unused ids, empty
    columns)."""
    rng = np.random.default_rng(seed)
    n_valid = int(rng.integers(N // 2, N + 1))
    y = rng.integers(0, rng.integers(1, C + 1), N)
    zs = np.stack(
        [rng.choice(rng.choice(K, size=rng.integers(1, K + 1), replace=False), N) for _ in range(B)]
    )
    zs[0] = y  # identical partition
    zs[1] = 0  # one cluster
    zs[2, :n_valid] = np.where(
        y[:n_valid] < K, (y[:n_valid] * 3 + 1) % K, 0
    )  # relabelled truth (injective on 0..5)
    y[n_valid:] = -1
    zs[:, n_valid:] = -1
    return y, zs, n_valid


def _host(fn, y, z, n_valid):
    return fn(y[:n_valid], z[:n_valid])


METRICS = [
    (J.v_measure, P.v_measure),
    (J.v_beta, P.v_beta),
    (J.variation_of_information, P.variation_of_information),
    (J.purity, P.purity),
    (J.inverse_purity, P.inverse_purity),
    (J.adjusted_rand_index, P.adjusted_rand_index),
    (J.pairwise_link_accuracy, P.pairwise_link_accuracy),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vmapped_metrics_equal_host(seed):
    y, zs, n_valid = _batch(seed)
    yj, zj = jnp.asarray(y), jnp.asarray(zs)
    for jfn, hfn in METRICS:
        got = jax.vmap(lambda z, jfn=jfn: jfn(yj, z, n_classes=C, n_clusters=K))(zj)
        want = [_host(hfn, y, z, n_valid) for z in zs]
        np.testing.assert_allclose(np.asarray(got), want, atol=ATOL32, err_msg=jfn.__name__)
    h, c, v = jax.vmap(lambda z: J.homogeneity_completeness_v_measure(yj, z, C, K, 2.0))(zj)
    want = np.array([skm.homogeneity_completeness_v_measure(y[:n_valid], z[:n_valid], beta=2.0) for z in zs])
    np.testing.assert_allclose(np.stack([h, c, v], 1), want, atol=ATOL32)


def test_exact_edge_values_under_jit():
    y, zs, n_valid = _batch(3)
    yj = jnp.asarray(y)
    for z in zs[:3]:  # identical, one cluster, relabelled
        assert float(J.adjusted_rand_index(yj, jnp.asarray(z), C, K)) == pytest.approx(
            skm.adjusted_rand_score(y[:n_valid], z[:n_valid]), abs=1e-6
        )
    assert float(J.v_measure(yj, yj, C, K)) == pytest.approx(1.0, abs=1e-6)
    assert float(J.variation_of_information(yj, yj, C, K)) == pytest.approx(0.0, abs=1e-6)
    # all padding: empty input behaves as the host version (h = c = V = 1, purity 1, VI 0)
    pad = jnp.full((N,), -1)
    np.testing.assert_allclose(J.homogeneity_completeness_v_measure(pad, pad, C, K), (1.0, 1.0, 1.0))
    assert float(J.v_beta(pad, pad, C, K)) == 1.0
    assert float(J.purity(pad, pad, C, K)) == 1.0
    assert float(J.variation_of_information(pad, pad, C, K)) == 0.0


def test_float64_matches_sklearn_tightly():
    y, zs, n_valid = _batch(4)
    with jax.enable_x64(True):
        yj, zj = jnp.asarray(y), jnp.asarray(zs)
        v = jax.vmap(lambda z: J.v_measure(yj, z, C, K))(zj)
        ari = jax.vmap(lambda z: J.adjusted_rand_index(yj, z, C, K))(zj)
        assert v.dtype == jnp.float64
    np.testing.assert_allclose(v, [skm.v_measure_score(y[:n_valid], z[:n_valid]) for z in zs], atol=1e-12)
    np.testing.assert_allclose(
        ari, [skm.adjusted_rand_score(y[:n_valid], z[:n_valid]) for z in zs], atol=1e-12
    )


def test_contingency_counts_only_in_range_items():
    y, zs, n_valid = _batch(5)
    t = np.asarray(J.contingency(jnp.asarray(y), jnp.asarray(zs[3]), C, K))
    want = np.zeros((C, K))
    np.add.at(want, (y[:n_valid], zs[3, :n_valid]), 1)
    np.testing.assert_array_equal(t, want)


def test_gradients_are_finite_and_match_finite_differences():
    """A soft table with empty rows/columns: grads finite (double-where); on the positive cells they match
    FD."""
    rng = np.random.default_rng(6)
    cells = [(0, 0), (3, 5), (5, 9)]
    eps = 1e-6

    def all_metrics(t):
        return jnp.stack(
            [
                J.hcv_from_table(t)[2],
                J.v_beta_from_table(t),
                J.vi_from_table(t),
                J.ari_from_table(t),
                J.pairwise_link_accuracy_from_table(t),
            ]
        )

    with jax.enable_x64(True):
        table = jnp.asarray(rng.uniform(0.5, 3.0, (C, K)))
        table = table.at[2, :].set(0.0).at[:, 7].set(0.0)  # an empty class and an empty cluster
        # a NaN in any metric's gradient would survive the sum
        full = np.asarray(jax.jit(jax.grad(lambda t: all_metrics(t).sum()))(table))
        steps = jnp.stack([jnp.zeros_like(table).at[i, j].set(1.0) for i, j in cells])
        # directional derivatives along the chosen cells, forward mode: (cells, metrics)
        jvps = jax.jit(jax.vmap(lambda d: jax.jvp(all_metrics, (table,), (d,))[1]))(steps)
        both = jnp.concatenate([table + eps * steps, table - eps * steps])
        plus, minus = jax.jit(jax.vmap(all_metrics))(both).reshape(2, len(cells), 5)
        zero_grad = np.asarray(jax.jit(jax.grad(lambda t: J.hcv_from_table(t)[2]))(jnp.zeros((C, K))))
        fd = np.asarray((plus - minus) / (2 * eps))
        jvps = np.asarray(jvps)
    assert np.isfinite(full).all()
    np.testing.assert_allclose(jvps, fd, rtol=1e-5, atol=1e-8)
    assert np.isfinite(zero_grad).all()  # even an all-zero table


def test_inside_scan_learning_curve():
    """The metrics compose with lax.scan (as in a learning curve over sampled labelings)."""
    y, zs, n_valid = _batch(7)
    yj = jnp.asarray(y)

    def body(carry, z):
        return carry, J.v_beta(yj, z, C, K)

    _, curve = jax.jit(lambda zz: jax.lax.scan(body, 0, zz))(jnp.asarray(zs))
    np.testing.assert_allclose(curve, [P.v_beta(y[:n_valid], z[:n_valid]) for z in zs], atol=ATOL32)
