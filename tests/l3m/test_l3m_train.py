"""L3M training: optax steps equal hand-written SGD, per-item SGD equals a NumPy reference, learning works."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from l3m_synth import canonical, random_document, separable_document  # noqa: E402

from jaxclust.l3m import Document, LinearScorer, MLPScorer, pad_batch  # noqa: E402
from jaxclust.l3m.loss import batch_loss  # noqa: E402
from jaxclust.l3m.train import fit_scorer, make_optimizer, online_epoch, train_step  # noqa: E402

F = 3


def _numpy_item_grad(full, clusters, w, dummy, i, gamma):
    s = full[i, :i] @ w
    logits = np.concatenate([[dummy], s]) / gamma
    phis = np.concatenate([np.zeros((1, F)), full[i, :i]])
    gold = np.array([False] + [clusters[j] == clusters[i] for j in range(i)])
    if not gold.any():
        gold[0] = True
    p = np.exp(logits - logits.max())
    p /= p.sum()
    q = np.where(gold, np.exp(logits - logits[gold].max()), 0.0)
    q /= q.sum()
    return p @ phis - q @ phis, p[0] - q[0]


def test_train_step_is_one_sgd_step():
    _, _, d1 = random_document(5, F, seed=1)
    _, _, d2 = random_document(7, F, seed=2)
    b = pad_batch([d1, d2], n_docs=2, n_items=8, n_ante=8)
    scorer = LinearScorer(F, np.array([0.1, 0.2, 0.3]), 0.0)
    opt = optax.sgd(0.5)
    args = (jnp.float32(0.8), jnp.float32(0.01), jnp.float32(0.0))
    grads = jax.jit(jax.grad(lambda s: batch_loss(s, b, *args)))(scorer)
    new, _, loss = train_step(scorer, opt.init(scorer), b, *args, opt.update)
    np.testing.assert_allclose(
        np.asarray(new.weight), np.asarray(scorer.weight - 0.5 * grads.weight), rtol=1e-6
    )
    assert float(new.dummy) == pytest.approx(float(scorer.dummy - 0.5 * grads.dummy), rel=1e-6, abs=1e-7)
    assert float(loss) == pytest.approx(float(batch_loss(scorer, b, *args)), rel=1e-6)


def test_online_epoch_equals_numpy_per_item_sgd():
    docs = [random_document(6, F, seed=s) for s in (3, 4)]
    b = pad_batch([d for _, _, d in docs], n_docs=2, n_items=8, n_ante=8)
    lr, l2, gamma = 0.3, 0.05, 0.7
    w, dummy = np.array([0.1, -0.2, 0.3]), 0.05
    opt = optax.sgd(lr)
    scorer = LinearScorer(F, w, dummy)
    new, _, _ = online_epoch(
        scorer, opt.init(scorer), b, jnp.float32(gamma), jnp.float32(l2), jnp.float32(0.0), opt.update
    )
    for full, clusters, _ in docs:  # the seed's update, item by item, in arrival order
        for i in range(6):
            gw, gd = _numpy_item_grad(full.astype(np.float64), clusters, w, dummy, i, gamma)
            w = w - lr * (l2 * w + gw)
            dummy = dummy - lr * gd
    np.testing.assert_allclose(np.asarray(new.weight), w, rtol=1e-4, atol=1e-6)
    assert float(new.dummy) == pytest.approx(dummy, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("mode", ["batch", "item"])
def test_fit_recovers_separable_clusters(mode):
    train = [Document.from_pairwise(*separable_document(12, seed=s, noise=0.0)) for s in range(8)]
    test = [separable_document(12, seed=100 + s, noise=0.0) for s in range(4)]
    scorer, hist = fit_scorer(
        train,
        LinearScorer(3),
        optimizer="adam",
        learning_rate=0.3,
        gamma=1.0,
        n_epochs=40,
        batch_size=4,
        mode=mode,
    )
    assert hist["train_loss"][-1] < 0.5 * hist["train_loss"][0]
    from jaxclust.l3m.infer import predict_batch

    b = pad_batch([Document.from_pairwise(f) for f, _ in test], n_items=16, n_ante=16)
    pred = np.asarray(predict_batch(scorer, b, jnp.float32(1.0), jnp.float32(0.5), jnp.float32(0.0), False))
    for k, (_, c) in enumerate(test):
        np.testing.assert_array_equal(pred[k, :12], canonical(c))


def test_early_stopping_keeps_best_dev_epoch():
    train = [Document.from_pairwise(*separable_document(12, seed=s, noise=0.2)) for s in range(4)]
    calls = []

    def score_fn(s):  # dev criterion peaks at epoch 2, then falls: training stops after `patience` bad epochs
        calls.append(np.asarray(s.weight).copy())
        return -abs(len(calls) - 3)

    best, hist = fit_scorer(train, LinearScorer(3), n_epochs=20, batch_size=4, score_fn=score_fn, patience=2)
    assert hist["best_epoch"] == 2 and len(hist["train_loss"]) == 5
    np.testing.assert_array_equal(np.asarray(best.weight), calls[2])


def test_mlp_scorer_trains_with_same_code():
    train = [Document.from_pairwise(*separable_document(12, seed=s, noise=0.0)) for s in range(4)]
    mlp = MLPScorer(3, hidden=8, key=jax.random.key(0))
    _, hist = fit_scorer(train, mlp, optimizer="adam", learning_rate=0.05, n_epochs=10, batch_size=4)
    assert hist["train_loss"][-1] < 0.5 * hist["train_loss"][0]


def test_builtin_optimizers_are_cached_and_validated():
    assert make_optimizer(None, 0.1) is make_optimizer("sgd", 0.1)
    assert make_optimizer("adam", 0.1) is not make_optimizer("adam", 0.2)
    from jaxclust.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="optimizer"):
        make_optimizer("rmsprop")


class _CountingScorer(LinearScorer):
    traces = 0

    def __call__(self, phi):
        type(self).traces += 1  # Python side effect: runs once per trace, not per call
        return super().__call__(phi)


def test_gamma_l2_and_threshold_do_not_recompile():
    _, _, d = random_document(5, F, seed=9)
    b = pad_batch([d], n_items=8, n_ante=8)
    opt = make_optimizer("sgd", 0.1)
    scorer = _CountingScorer(F)
    state = opt.init(scorer)
    for g, l2 in ((0.0, 0.0), (0.3, 1e-3), (1.0, 0.1)):
        scorer, state, _ = train_step(
            scorer, state, b, jnp.float32(g), jnp.float32(l2), jnp.float32(0.0), opt.update
        )
    assert _CountingScorer.traces == 1
    from jaxclust.l3m.infer import predict_batch

    before = _CountingScorer.traces
    for g, t in ((0.0, 0.5), (0.5, 0.2), (1.0, 0.9)):
        predict_batch(scorer, b, jnp.float32(g), jnp.float32(t), jnp.float32(np.inf), False)
    assert _CountingScorer.traces == before + 1


def test_l2_in_loss_equals_optax_decayed_weights():
    _, _, d = random_document(6, F, seed=11)
    b = pad_batch([d], n_items=8, n_ante=8)
    scorer = LinearScorer(F, np.array([0.4, -0.3, 0.2]), 0.1)
    lam, g, wt = 0.2, jnp.float32(0.6), jnp.float32(0.0)
    plain = optax.sgd(0.5)
    a, _, _ = train_step(scorer, plain.init(scorer), b, g, jnp.float32(lam), wt, plain.update)
    mask = LinearScorer(F, None, 0.0)
    mask = jax.tree.map(lambda _: True, mask)
    mask = eqx_replace_dummy(mask)
    decayed = optax.chain(optax.add_decayed_weights(lam, mask=mask), optax.sgd(0.5))
    bb, _, _ = train_step(scorer, decayed.init(scorer), b, g, jnp.float32(0.0), wt, decayed.update)
    np.testing.assert_allclose(np.asarray(a.weight), np.asarray(bb.weight), rtol=1e-6)
    assert float(a.dummy) == pytest.approx(float(bb.dummy), rel=1e-6)


def eqx_replace_dummy(mask):
    import equinox as eqx

    return eqx.tree_at(lambda s: s.dummy, mask, False)  # the dummy score is a bias: not decayed


def test_chunked_step_equals_whole_batch_step():
    docs = [random_document(m, F, seed=20 + m, n_clusters=3)[2] for m in (5, 13, 16)]
    codes = np.zeros((16, 15), np.int8)
    codes[9, 2] = -1
    codes[12, 0] = 1
    docs[2] = Document(docs[2].features, docs[2].clusters, codes)
    b = pad_batch(docs, n_docs=4, n_items=16, n_ante=16)
    scorer = LinearScorer(F, np.array([0.3, -0.1, 0.5]), 0.2)
    opt = optax.sgd(0.7)
    for weight in (0.0, 1.5, np.inf):
        args = (jnp.float32(0.4), jnp.float32(0.05), jnp.float32(weight))
        a, _, la = train_step(scorer, opt.init(scorer), b, *args, opt.update)
        c, _, lc = train_step(scorer, opt.init(scorer), b, *args, opt.update, chunk=4)
        np.testing.assert_allclose(np.asarray(c.weight), np.asarray(a.weight), rtol=1e-5, atol=1e-6)
        assert float(c.dummy) == pytest.approx(float(a.dummy), rel=1e-5, abs=1e-6)
        assert float(lc) == pytest.approx(float(la), rel=1e-5)
