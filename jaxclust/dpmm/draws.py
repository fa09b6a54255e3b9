"""Gamma, normal and categorical draws that compile small: straight-line transforms of one call's uniforms.

Every random-number call site is a separate copy of the generator in a compiled program, and
``jax.random.gamma`` is a rejection loop per element, ``jax.random.normal`` an inverse-error-function
polynomial of a few dozen instructions that XLA inlines into each kernel that reads it. The samplers draw
several gamma and normal arrays per iteration, so these helpers take *uniforms* (one call for all of a move's
needs) and transform them without loops. The uniforms are drawn as one flat array and reshaped: the same
values as a draw of the full shape, whose generator XLA compiles more slowly on the CPU.

- normals by Box-Muller (``sqrt(-2 ln u1) (cos, sin)(2 pi u2)``: two independent normals per pair, exact);
- Gamma(shape, 1) by Marsaglia & Tsang (2000) with a fixed budget of :data:`N_TRY` proposals, run at
  ``shape + 1 >= 1`` (each try accepted with probability > 0.95) and boosted by ``U**(1/shape)`` (exact for any
  shape > 0). The chance that all tries are rejected is below 1e-10; then the last proposal is returned (a
  negligible bias);
- a categorical index by inversion of cumulative sums computed as one matrix product (:func:`categorical`).

Usage::

    u = uniforms(key, shapes.shape + (GAMMA_UNIFORMS,), jnp.float32)
    g = gamma_from_uniforms(shapes, u)          # or gamma_draws(key, shapes)
    x = normal_draws(key, (K, D), jnp.float32)
    k = categorical(logits, uniforms(key, logits.shape[:-1], logits.dtype))
    k = jnp.argmax(logits + gumbels(key, logits.shape, logits.dtype), -1)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

__all__ = [
    "N_TRY",
    "GAMMA_UNIFORMS",
    "uniforms",
    "gumbels",
    "normals_from_uniforms",
    "normal_draws",
    "gamma_from_uniforms",
    "gamma_draw",
    "gamma_draws",
    "categorical",
]

#: Proposals of one gamma draw.
N_TRY = 8
#: Uniforms one gamma draw reads: the tries' normals, their acceptance uniforms and the boost's uniform.
GAMMA_UNIFORMS = 2 * N_TRY + 1


def uniforms(key: jax.Array, shape: tuple, dtype) -> jax.Array:
    """Uniforms on (0, 1) of ``shape`` (``tiny`` at the least, so logs stay finite): the values of
    ``jax.random.uniform(key, shape, ...)``, drawn as one flat array and reshaped, which compiles faster on the
    CPU (the generator's counters over a flat index rather than over every axis)."""
    flat = jax.random.uniform(key, (math.prod(shape),), dtype, minval=jnp.finfo(dtype).tiny)
    return flat.reshape(shape)


def gumbels(key: jax.Array, shape: tuple, dtype) -> jax.Array:
    """Standard Gumbel draws of ``shape``: the values of ``jax.random.gumbel(key, shape, dtype)``, from
    :func:`uniforms` (so they compile as fast)."""
    return -jnp.log(-jnp.log(uniforms(key, shape, dtype)))


def normals_from_uniforms(u: jax.Array) -> jax.Array:
    """Standard normals (..., 2m) from uniforms on (0, 1) (..., 2m) by Box-Muller: the first m are radii'
    uniforms, the last m angles'."""
    m = u.shape[-1] // 2
    if 2 * m != u.shape[-1]:
        raise ValueError(f"u: Box-Muller needs an even last axis, got {u.shape[-1]}")
    r = jnp.sqrt(-2.0 * jnp.log(u[..., :m]))
    t = (2.0 * math.pi) * u[..., m:]
    return jnp.concatenate([r * jnp.cos(t), r * jnp.sin(t)], axis=-1)


def normal_draws(key: jax.Array, shape: tuple, dtype) -> jax.Array:
    """Independent standard normals of ``shape`` (one uniform call, Box-Muller)."""
    size = math.prod(shape)
    half = -(-size // 2)
    z = normals_from_uniforms(uniforms(key, (2 * half,), dtype))
    return z[:size].reshape(shape)


def gamma_from_uniforms(shape: jax.Array, u: jax.Array, log: bool = False) -> jax.Array:
    """Gamma(shape, 1) (or its log) for an array of shapes (...) from uniforms ``u`` (..., GAMMA_UNIFORMS).

    ``log=True`` computes ``ln g`` in log space, which stays finite for tiny shapes (where ``g`` itself
    underflows, e.g. Dirichlet draws with concentration << 1)."""
    dtype = u.dtype
    shape = jnp.asarray(shape, dtype)
    d = (shape + 1.0 - 1.0 / 3.0)[..., None]
    c = 1.0 / jnp.sqrt(9.0 * d)
    x = normals_from_uniforms(u[..., :N_TRY])
    v = (1.0 + c * x) ** 3
    log_v = jnp.log(jnp.where(v > 0, v, 1.0))
    ok = (v > 0) & (jnp.log(u[..., N_TRY : 2 * N_TRY]) < 0.5 * x**2 + d - d * v + d * log_v)
    idx = jnp.where(jnp.any(ok, -1), jnp.argmax(ok, -1), N_TRY - 1)
    v_acc = jnp.maximum(jnp.take_along_axis(v, idx[..., None], -1)[..., 0], jnp.finfo(dtype).tiny)
    log_g = jnp.log(d[..., 0] * v_acc) + jnp.log(u[..., 2 * N_TRY]) / shape
    return log_g if log else jnp.exp(log_g)


def gamma_draw(key: jax.Array, shape: jax.Array, dtype=None) -> jax.Array:
    """One Gamma(shape, 1) draw (see the module docstring)."""
    dtype = dtype or jnp.result_type(shape, float)
    return gamma_from_uniforms(shape, uniforms(key, (GAMMA_UNIFORMS,), dtype))


def gamma_draws(key: jax.Array, shape: jax.Array, log: bool = False) -> jax.Array:
    """Independent Gamma(shape, 1) draws for an array of shapes (``log``: see :func:`gamma_from_uniforms`)."""
    shape = jnp.asarray(shape)
    dtype = jnp.result_type(shape, float)
    return gamma_from_uniforms(shape, uniforms(key, shape.shape + (GAMMA_UNIFORMS,), dtype), log)


def categorical(logits: jax.Array, u: jax.Array) -> jax.Array:
    """One draw from ``softmax(logits)`` (..., K) per leading index, by inversion with the uniforms ``u`` (...)
    in [0, 1); int32 (...).

    The cumulative sums are one matrix product with an upper-triangular matrix of ones, at full float precision
    on every backend (XLA's ``cumsum`` is a slower reduce-window on the CPU). Column k sums
    ``p_j [j <= k]`` with the same evaluation order for every column, and float addition is monotone, so the
    sums are non-decreasing in k: the draw ``#{k : cdf_k <= u cdf_K}`` is the first column whose sum exceeds
    ``u cdf_K`` (``u < 1`` keeps that below ``cdf_K``), a column of positive probability. A draw that lands on
    a column of probability 0 anyway (a product evaluated in a column-dependent order) returns -1, which the
    caller treats as "stay".
    """
    K = logits.shape[-1]
    p = jnp.exp(logits - jnp.max(logits, -1, keepdims=True))
    cdf = jnp.matmul(p, jnp.triu(jnp.ones((K, K), p.dtype)), precision=jax.lax.Precision.HIGHEST)
    k = jnp.minimum(jnp.sum(cdf <= u[..., None] * cdf[..., -1:], -1), K - 1).astype(jnp.int32)
    return jnp.where(jnp.take_along_axis(p, k[..., None], -1)[..., 0] > 0, k, -1)
