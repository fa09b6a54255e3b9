"""Host data goes to the device without compiling: ``to_device`` gives what ``jnp.asarray`` gives, and a first
DPMM fit compiles its own programs only (compiles counted with ``jax.monitoring``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclust import DPMM
from jaxclust.transfer import to_device
from jaxclust.validation import prng_key

_COMPILED: list[str] = []  # the name of every program compiled in this process, in order


def _record(event: str, seconds: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _COMPILED.append(kwargs.get("fun_name", "?"))


jax.monitoring.register_event_duration_secs_listener(_record)


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (np.linspace(0.0, 1.0, 7), None),  # float64 -> float32 (x64 off)
        (np.linspace(0.0, 1.0, 7), jnp.float32),
        (np.arange(5) < 2, None),
        (np.arange(6, dtype=np.int64).reshape(2, 3), None),
        (np.arange(6, dtype=np.int64), np.int32),
        (0.1, jnp.float32),
        (3, np.int32),
        (True, None),
        (np.zeros((4, 0)), jnp.float32),
    ],
    ids=["f64", "f64-f32", "bool", "i64-2d", "i64-i32", "py-float", "py-int", "py-bool", "empty"],
)
def test_to_device_gives_what_jnp_asarray_gives_and_compiles_nothing(value, dtype):
    before = len(_COMPILED)
    got = to_device(value, dtype)
    assert _COMPILED[before:] == []
    want = jnp.asarray(value, dtype)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_to_device_converts_traced_and_device_arrays_as_jnp_asarray_does():
    x = jnp.arange(4)
    assert to_device(x) is x
    got = jax.jit(lambda a: to_device(a, jnp.float32) / 2)(x)
    np.testing.assert_array_equal(np.asarray(got), [0.0, 0.5, 1.0, 1.5])


@pytest.mark.parametrize("seed", [0, 7, 2**31 + 5, 2**32 - 1, 2**40 + 3])
def test_prng_key_is_jax_random_key_of_the_seed(seed):
    want = jax.random.key(seed & 0xFFFFFFFF)
    if seed >> 32:
        want = jax.random.fold_in(want, seed >> 32)
    np.testing.assert_array_equal(jax.random.key_data(prng_key(seed)), jax.random.key_data(want))


def test_a_first_fit_compiles_its_sampler_and_a_few_named_programs_only():
    # a shape no other test uses, so that every program of the fit is compiled here
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(0.0, 1.0, (19, 3)), rng.normal(8.0, 1.0, (18, 3))])
    before = len(_COMPILED)
    DPMM(n_chains=3, n_burnin=2, n_samples=2, thin=1, random_state=0).fit(X)
    compiled = set(_COMPILED[before:])
    assert "jit(_run_block)" in compiled
    allowed = {
        "jit(_run_block)",
        "jit(_init_states)",
        "jit(_summary)",  # whether there are cannot-links, and the number of groups
        "jit(key)",  # the seed's key
        "jit(_second_key)",
        "jit(_threefry_split)",  # the chains' keys
        "jit(<lambda>)",  # probes of the compile options, once per process
    }
    assert compiled <= allowed, f"eager programs compiled by a fit: {sorted(compiled - allowed)}"
