"""The training step split over several XLA host devices equals the one-device step.

JAX reads ``XLA_FLAGS`` once, when it starts, so each device count runs in a subprocess (as the DPMM's sharding
test does). Inside it, the one-device path (``shard=False``) is the reference: same loss and parameters after
several optimizer steps, for batches whose document count is not a multiple of the device count (padding with
empty documents), gamma = 0 and gamma > 0, hard and soft constraint codes, closed-form and autodiff blocks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_l3m_train_closed_form import _batch  # noqa: E402

from jaxclust.errors import InvalidInputError  # noqa: E402
from jaxclust.l3m import LinearScorer  # noqa: E402
from jaxclust.l3m.train import shard_batch, train_step  # noqa: E402

_HERE = str(Path(__file__).parent)

_CODE = textwrap.dedent(
    """
    import json, sys
    import numpy as np, jax, jax.numpy as jnp, optax, equinox as eqx
    sys.path.insert(0, {here!r})
    from test_l3m_train_closed_form import _batch
    from jaxclust.l3m import Document, LinearScorer, MLPScorer, pad_batch
    from jaxclust.l3m.train import fit_scorer, shard_batch, train_step

    full = _batch(True, seed=5)  # 4 documents (the 4th is padding), must- and cannot-link codes
    b3 = full._replace(**{{k: getattr(full, k)[:3] for k in full._fields}})  # 3: not a multiple of 2 or 4
    b1 = full._replace(**{{k: getattr(full, k)[1:2] for k in full._fields}})
    lin = LinearScorer(4, np.array([0.3, -0.2, 0.1, 0.4]), -0.1)
    mlp = MLPScorer(4, hidden=5, key=jax.random.key(1))
    opt = optax.adam(0.05)  # one update function: a new one is a new static argument (recompiles)
    n_cases = 0
    for b, place, scorer, chunk, autodiff in (
        (b3, False, lin, 2, False),  # closed form, padded with an empty document inside the step
        (b3, True, lin, 4, True),  # autodiff blocks, padded and placed by shard_batch
        (full, True, lin, 16, False),  # closed form, one block per device, no padding
        (b3, False, mlp, 8, False),  # another scorer: autodiff blocks
        (b1, True, lin, 2, False),  # one document: more padding documents than real ones
    ):
        batch = shard_batch(b) if place else b
        for gamma in (0.0, 0.4):
            for weight in (1.5, np.inf):
                args = (jnp.float32(gamma), jnp.float32(0.02), jnp.float32(weight))
                ref = new = scorer
                rs = ns = opt.init(eqx.filter(scorer, eqx.is_inexact_array))
                for _ in range(2):  # the optimizer state must follow the same trajectory
                    ref, rs, lr = train_step(
                        ref, rs, b, *args, opt.update, chunk=chunk, autodiff=autodiff, shard=False
                    )
                    new, ns, ln = train_step(new, ns, batch, *args, opt.update, chunk=chunk, autodiff=autodiff)
                    assert abs(float(ln) - float(lr)) <= 1e-5 * max(1.0, abs(float(lr))), (ln, lr)
                    for x, y in zip(jax.tree.leaves(eqx.filter(new, eqx.is_inexact_array)),
                                    jax.tree.leaves(eqx.filter(ref, eqx.is_inexact_array))):
                        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)
                n_cases += 1

    # fit_scorer shards automatically: same trajectory as the one-device fit (chunk=None: unsharded path)
    rng = np.random.default_rng(0)
    docs = [Document(rng.normal(size=(m, 4, 4)).astype(np.float32), rng.integers(0, 3, size=m))
            for m in (5, 7, 8, 6, 3)]
    kw = dict(gamma=0.5, l2=0.01, n_epochs=2, batch_size=3, optimizer="adam", learning_rate=0.05)
    fit, hist = fit_scorer(docs, LinearScorer(4), **kw)
    ref, rhist = fit_scorer(docs, LinearScorer(4), chunk=None, **kw)
    np.testing.assert_allclose(np.asarray(fit.weight), np.asarray(ref.weight), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hist["train_loss"], rhist["train_loss"], rtol=1e-5)
    print(json.dumps({{"devices": jax.device_count(), "cases": n_cases,
                       "sharded": len(shard_batch(pad_batch(docs[:3])).features.sharding.device_set)}}))
    """
)


@pytest.mark.parametrize("n_devices", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_sharded_step_equals_one_device_step(n_devices):
    code = _CODE.format(here=_HERE)
    env = dict(
        os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n_devices}", JAX_PLATFORMS="cpu"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["devices"] == n_devices and got["sharded"] == n_devices
    assert got["cases"] == 5 * 2 * 2


def test_one_device_shard_is_a_no_op():
    """In this (one-device) process sharding changes nothing: same batch, bit-identical step."""
    if jax.device_count() != 1:
        pytest.skip("needs a one-device process")
    b = _batch(True, seed=5)
    assert shard_batch(b) is b
    scorer = LinearScorer(4, np.array([0.3, -0.2, 0.1, 0.4]), -0.1)
    opt = optax.sgd(0.1)
    args = (jnp.float32(0.4), jnp.float32(0.02), jnp.float32(1.5))
    a = train_step(scorer, opt.init(scorer), b, *args, opt.update, chunk=2)
    c = train_step(scorer, opt.init(scorer), b, *args, opt.update, chunk=2, shard=True)
    np.testing.assert_array_equal(np.asarray(a[0].weight), np.asarray(c[0].weight))
    assert float(a[2]) == float(c[2])


def test_shard_needs_a_chunk():
    b = _batch(False, seed=8)
    scorer = LinearScorer(4)
    opt = optax.sgd(0.1)
    with pytest.raises(InvalidInputError, match="shard=True needs a chunk"):
        train_step(
            scorer,
            opt.init(scorer),
            b,
            jnp.float32(1),
            jnp.float32(0),
            jnp.float32(0),
            opt.update,
            shard=True,
        )
