"""The closed-form linear training step equals the autodiff step (loss, gradient, updated parameters)."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from l3m_synth import random_document  # noqa: E402

from jaxclust.errors import InvalidInputError  # noqa: E402
from jaxclust.l3m import Document, LinearScorer, pad_batch  # noqa: E402
from jaxclust.l3m.loss import batch_loss, linear_value_and_grad  # noqa: E402
from jaxclust.l3m.train import auto_chunk, closed_form, train_step  # noqa: E402

F = 4
_closed = jax.jit(linear_value_and_grad, static_argnums=6)
_autodiff = jax.jit(
    jax.value_and_grad(
        lambda w, d, b, g, l2, wt: batch_loss(LinearScorer(F, w, d), b, g, l2, wt), argnums=(0, 1)
    )
)


def _batch(binary: bool, seed: int, n_ante: int = 8):
    """Padded batch: documents of different lengths, a window shorter than some documents, must- and
    cannot-link codes, one padding document; float or binary uint8 features."""
    rng = np.random.default_rng(seed)
    docs = []
    for k, m in enumerate((5, 11, 16)):
        full, clusters, _ = random_document(m, F, seed=seed * 10 + k, n_clusters=3)
        if binary:
            full = (rng.random(full.shape) < 0.4).astype(np.uint8)
        codes = rng.choice(np.array([-1, 0, 0, 0, 1], np.int8), size=(m, m))
        docs.append(Document.from_pairwise(full, clusters, max_antecedents=6, codes_full=codes))
    return pad_batch(docs, n_docs=4, n_items=16, n_ante=n_ante)


@pytest.mark.parametrize("binary, n_ante", [(False, 8), (True, 6)])  # 6: row max not a power of two
def test_closed_form_gradient_equals_autodiff(binary, n_ante):
    b = _batch(binary, seed=1 + binary, n_ante=n_ante)
    rng = np.random.default_rng(3)
    for w, dummy in ((rng.normal(size=F), 0.3), (np.zeros(F), 0.0)):  # the second: all links tie at gamma 0
        w, dummy = jnp.asarray(w, jnp.float32), jnp.float32(dummy)
        for gamma in (0.0, 0.1, 1.0):
            for weight in (0.0, 1.5, np.inf):
                args = (jnp.float32(gamma), jnp.float32(0.05), jnp.float32(weight))
                val, (gw, gd) = _autodiff(w, dummy, b, *args)
                for chunk in (1, 4, 16):
                    cval, cgw, cgd = _closed(w, dummy, b, *args, chunk)
                    case = f"gamma={gamma} weight={weight} chunk={chunk}"
                    np.testing.assert_allclose(cgw, gw, rtol=1e-5, atol=1e-6, err_msg=case)
                    assert float(cgd) == pytest.approx(float(gd), rel=1e-5, abs=1e-6), case
                    assert float(cval) == pytest.approx(float(val), rel=1e-5, abs=1e-6), case


def test_closed_form_step_equals_autodiff_step_with_adam():
    b = _batch(True, seed=5)
    scorer = LinearScorer(F, np.array([0.3, -0.2, 0.1, 0.4]), -0.1)
    assert closed_form(scorer) and not closed_form(_Sub(F))
    opt = optax.adam(0.05)
    args = (jnp.float32(0.3), jnp.float32(0.01), jnp.float32(2.0))
    a, sa = scorer, opt.init(scorer)
    c, sc = scorer, opt.init(scorer)
    for _ in range(3):  # several steps: the optimizer state must follow the same trajectory
        a, sa, la = train_step(a, sa, b, *args, opt.update, chunk=None)  # whole batch, jax.grad
        c, sc, lc = train_step(c, sc, b, *args, opt.update, chunk=2)  # closed form
        np.testing.assert_allclose(np.asarray(c.weight), np.asarray(a.weight), rtol=1e-5, atol=1e-6)
        assert float(c.dummy) == pytest.approx(float(a.dummy), rel=1e-5, abs=1e-6)
        assert float(lc) == pytest.approx(float(la), rel=1e-5)
    # the chunked autodiff path is still reachable and agrees
    d, _, _ = train_step(scorer, opt.init(scorer), b, *args, opt.update, chunk=4, autodiff=True)
    e, _, _ = train_step(scorer, opt.init(scorer), b, *args, opt.update, chunk=4)
    np.testing.assert_allclose(np.asarray(e.weight), np.asarray(d.weight), rtol=1e-5, atol=1e-6)


class _Sub(LinearScorer):
    def __call__(self, phi):  # a different score: must not be trained with the linear closed form
        return 2.0 * super().__call__(phi)


def test_subclass_goes_through_autodiff():
    b = _batch(False, seed=7)
    scorer = _Sub(F, np.array([0.2, 0.1, -0.3, 0.5]), 0.0)
    args = (jnp.float32(0.5), jnp.float32(0.0), jnp.float32(0.0))
    opt = optax.sgd(1.0)
    new, _, _ = train_step(scorer, opt.init(scorer), b, *args, opt.update, chunk=4)
    grads = jax.grad(lambda s: batch_loss(s, b, *args))(scorer)
    np.testing.assert_allclose(
        np.asarray(new.weight), np.asarray(scorer.weight - grads.weight), rtol=1e-5, atol=1e-6
    )


def test_chunk_must_divide_item_count():
    b = _batch(False, seed=8)
    opt = optax.sgd(0.1)
    scorer = LinearScorer(F)
    with pytest.raises(
        InvalidInputError, match="chunk must be a positive divisor of the padded item count 16"
    ):
        train_step(
            scorer, opt.init(scorer), b, jnp.float32(1), jnp.float32(0), jnp.float32(0), opt.update, chunk=3
        )


def test_auto_chunk_budgets():
    b = pad_batch([Document(np.zeros((256, 128, 128), np.uint8), np.zeros(256, int))], n_docs=16)
    assert auto_chunk(b, linear=True) == 4  # 4 * 128 * 128 = 2**16 values per closed-form block
    assert auto_chunk(b) == 4  # 16 documents * 4 * 128 * 128 = 2**20 values per autodiff block
    assert auto_chunk(b, budget=1) == 1
    odd = pad_batch([Document(np.zeros((12, 4, 2), np.uint8), np.zeros(12, int))], n_items=12)
    assert auto_chunk(odd, linear=True) == 4  # a power of two that divides M = 12 (8 would drop items)
