"""The concentration update: the Escobar-West chain's stationary mean against the exact posterior
p(alpha | K, N) ∝ Gamma(alpha; a, b) alpha^K Gamma(alpha) / Gamma(alpha + N)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import gammaln

from jaxclust.dpmm.alpha import escobar_west


def test_escobar_west_stationary_mean_is_exact():
    a, b, K, N = 2.0, 1.0, 7.0, 50.0

    def step(alpha, key):
        new = escobar_west(key, alpha, jnp.float32(K), jnp.float32(N), jnp.float32(a), jnp.float32(b))
        return new, new

    keys = jax.random.split(jax.random.key(1), (64, 2000))  # 64 chains x 2000 steps
    _, trace = jax.jit(jax.vmap(lambda ks: jax.lax.scan(step, jnp.float32(1.0), ks)))(keys)
    got = float(np.asarray(trace)[:, 100:].mean())
    dens = lambda al, e: (
        al**e
        * math.exp(stats.gamma.logpdf(al, a, scale=1 / b) + K * math.log(al) + gammaln(al) - gammaln(al + N))
    )
    want = (
        integrate.quad(lambda t: dens(t, 1), 0, np.inf)[0]
        / integrate.quad(lambda t: dens(t, 0), 0, np.inf)[0]
    )
    assert want == pytest.approx(2.029, abs=2e-3)  # the exact posterior mean (docs/algorithms/dpmm.md (e))
    assert got == pytest.approx(want, rel=0.02)
