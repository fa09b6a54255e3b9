"""Loop-free gamma and normal draws against scipy's distributions, and their transforms against closed forms."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxclust.dpmm.draws import (
    GAMMA_UNIFORMS,
    gamma_draw,
    gamma_draws,
    gamma_from_uniforms,
    gumbels,
    normal_draws,
    normals_from_uniforms,
    uniforms,
)


@pytest.mark.parametrize("shape", [0.3, 2.5, 40.0])
def test_gamma_draw_matches_scipy(shape):
    keys = jax.random.split(jax.random.key(0), 20000)
    draws = np.asarray(jax.jit(jax.vmap(lambda k: gamma_draw(k, jnp.float32(shape))))(keys))
    assert stats.kstest(draws, stats.gamma(shape).cdf).pvalue > 1e-3


def test_gamma_draws_per_element_shapes_match_scipy():
    shapes = jnp.broadcast_to(jnp.asarray([0.2, 1.0, 7.0], jnp.float32), (20000, 3))
    draws = np.asarray(gamma_draws(jax.random.key(1), shapes))
    for col, shape in enumerate((0.2, 1.0, 7.0)):
        assert stats.kstest(draws[:, col], stats.gamma(shape).cdf).pvalue > 1e-3
    # at shape 0.05 about 1 % of Gamma draws are below float32's smallest normal: the log form keeps them
    log_g = np.asarray(gamma_draws(jax.random.key(1), jnp.full((20000,), 0.05, jnp.float32), log=True))
    assert stats.kstest(np.exp(log_g.astype(np.float64)), stats.gamma(0.05).cdf).pvalue > 1e-3


def test_log_gamma_is_the_log_of_the_same_draw_and_finite_for_tiny_shapes():
    u = uniforms(jax.random.key(2), (1000, GAMMA_UNIFORMS), jnp.float32)
    shape = jnp.full((1000,), 3.0, jnp.float32)
    np.testing.assert_allclose(
        np.exp(np.asarray(gamma_from_uniforms(shape, u, log=True))),
        np.asarray(gamma_from_uniforms(shape, u)),
        rtol=1e-5,
    )
    tiny = np.asarray(gamma_from_uniforms(jnp.full((1000,), 1e-3, jnp.float32), u, log=True))
    assert np.all(np.isfinite(tiny))
    # ln g of Gamma(a) for small a is about ln(U) / a: its median is ln(1/2) / a
    assert np.median(tiny) == pytest.approx(np.log(0.5) / 1e-3, rel=0.1)


def test_normal_draws_are_standard_normal_and_independent():
    z = np.asarray(normal_draws(jax.random.key(3), (20001,), jnp.float32))  # odd size: one pair half used
    assert z.shape == (20001,)
    assert stats.kstest(z, stats.norm.cdf).pvalue > 1e-3
    # Box-Muller's two halves come from the same uniforms: they must still be uncorrelated, also in square
    a, b = z[:10000], z[10000:20000]
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.04
    assert abs(np.corrcoef(a**2, b**2)[0, 1]) < 0.04


def test_box_muller_closed_form():
    u = jnp.asarray(
        [[0.25, 0.5, 0.125, 0.75]], jnp.float32
    )  # radii from 0.25, 0.5; angles 2 pi 0.125, 2 pi 0.75
    r = np.sqrt(-2.0 * np.log([0.25, 0.5]))
    t = 2.0 * np.pi * np.array([0.125, 0.75])
    want = np.concatenate([r * np.cos(t), r * np.sin(t)])
    np.testing.assert_allclose(np.asarray(normals_from_uniforms(u))[0], want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="even"):
        normals_from_uniforms(jnp.ones((3,), jnp.float32) * 0.5)


@pytest.mark.parametrize("shape", [(), (7,), (5, 3), (4, 6, 2)])
def test_flat_uniforms_and_gumbels_are_the_values_of_jax_random_for_the_same_key(shape):
    # drawn flat and reshaped (it compiles faster): a sampler that switches to them keeps its draws for a seed
    key = jax.random.key(11)
    tiny = jnp.finfo(jnp.float32).tiny
    u = jax.jit(lambda k: uniforms(k, shape, jnp.float32))(key)
    g = jax.jit(lambda k: gumbels(k, shape, jnp.float32))(key)
    want_u = jax.jit(lambda k: jax.random.uniform(k, shape, jnp.float32, minval=tiny))(key)
    want_g = jax.jit(lambda k: jax.random.gumbel(k, shape, jnp.float32))(key)
    assert u.shape == g.shape == shape
    np.testing.assert_array_equal(np.asarray(u), np.asarray(want_u))
    np.testing.assert_array_equal(np.asarray(g), np.asarray(want_g))
