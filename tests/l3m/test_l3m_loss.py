"""L3M loss: exact enumeration of latent forests, gamma limits, closed-form and finite-difference
gradients."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from l3m_synth import all_forests, canonical, forest_clusters, random_document  # noqa: E402

from jaxclust.l3m import Document, LinearScorer, pad_batch  # noqa: E402
from jaxclust.l3m.loss import batch_loss, document_losses, soft_max  # noqa: E402

M = 5
F = 3
_doc_losses = jax.jit(document_losses)  # one compile per shape, reused across tests
_batch_loss = jax.jit(batch_loss)


def _doc_loss_sum(scorer, doc, gamma, weight=0.0, n_items=8, n_ante=8):
    b = pad_batch([doc], n_items=n_items, n_ante=n_ante)
    losses, valid = _doc_losses(
        scorer,
        b.features[0],
        b.cand[0],
        b.gold[0],
        b.gold_new[0],
        b.item[0],
        b.codes[0],
        jnp.float32(gamma),
        jnp.float32(weight),
    )
    return float(losses.sum()), np.asarray(valid)


def _forest_probs(full, w, dummy, gamma):
    """P_gamma(C) summed over all left-linking forests, by brute force (independent of the package)."""
    m = full.shape[0]
    s = full @ w
    probs = collections.defaultdict(float)
    for parent in all_forests(m):
        logp = 0.0
        for i, p in enumerate(parent):
            logits = np.concatenate([[dummy], s[i, :i]]) / gamma
            logz = np.log(np.exp(logits - logits.max()).sum()) + logits.max()
            logp += logits[p + 1] - logz
        probs[forest_clusters(parent)] += np.exp(logp)
    return probs


@pytest.mark.parametrize("gamma", [1.0, 0.5])
def test_loss_is_minus_log_likelihood_over_latent_forests(gamma):
    full, _, _ = random_document(M, F, seed=1)
    rng = np.random.default_rng(2)
    w, dummy = rng.normal(size=F).astype(np.float32), 0.3
    probs = _forest_probs(full.astype(np.float64), w.astype(np.float64), dummy, gamma)
    assert len(probs) == 52  # Bell(5): every clustering reachable
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-9)
    scorer = LinearScorer(F, w, dummy)
    for clustering, p in list(probs.items())[::5]:
        doc = Document.from_pairwise(full, np.array(clustering))
        total, _ = _doc_loss_sum(scorer, doc, gamma)
        # gamma-scaled loss: sum_i l_i = -gamma log P_gamma(C)
        assert total == pytest.approx(-gamma * np.log(p), rel=1e-4, abs=1e-5)


def test_gamma_zero_is_best_left_link_margin():
    full, clusters, doc = random_document(M, F, seed=3)
    w = np.array([0.5, -1.0, 2.0], np.float32)
    scorer = LinearScorer(F, w, -0.2)
    s = full @ w
    expect = 0.0
    for i in range(M):
        all_s = np.concatenate([[-0.2], s[i, :i]])
        gold = [s[i, j] for j in range(i) if clusters[j] == clusters[i]]
        gold = gold if gold else [-0.2]
        expect += all_s.max() - max(gold)
    total, _ = _doc_loss_sum(scorer, doc, 0.0)
    assert total == pytest.approx(expect, rel=1e-5)
    # the gamma -> 0 limit is continuous and stable for tiny gamma
    small, _ = _doc_loss_sum(scorer, doc, 1e-6)
    assert np.isfinite(small) and small == pytest.approx(expect, abs=1e-4)
    tiny, _ = _doc_loss_sum(scorer, doc, 1e-30)
    assert tiny == pytest.approx(expect, abs=1e-4)


def test_soft_max_matches_scipy_logsumexp():
    from scipy.special import logsumexp

    s = np.array([[1.0, 3.0, -2.0, 7.0]], np.float32)
    mask = np.array([[True, True, False, True]])
    for g in (0.1, 1.0, 3.0):
        ref = g * logsumexp(np.array([1.0, 3.0, 7.0]) / g)
        assert float(soft_max(s, mask, jnp.float32(g))[0]) == pytest.approx(ref, rel=1e-6)
    assert float(soft_max(s, mask, jnp.float32(0.0))[0]) == 7.0


@pytest.mark.parametrize("gamma", [1.0, 0.3])
def test_gradient_closed_form_and_finite_differences(gamma):
    full, clusters, doc = random_document(M, F, seed=4)
    w, dummy = np.array([0.2, -0.4, 0.7], np.float32), 0.1
    b = pad_batch([doc], n_items=8, n_ante=8)
    g, l2, wt = jnp.float32(gamma), jnp.float32(0.0), jnp.float32(0.0)

    @jax.jit
    def loss(wv, dv):
        return batch_loss(LinearScorer(F, wv, dv), b, g, l2, wt)

    gw, gd = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(w), jnp.asarray(dummy, jnp.float32))
    # closed form: mean_i [sum_j p_ij phi_ij - sum_{j in G_i} q_ij phi_ij], phi_i0 = 0, d/d dummy = p_i0 -
    # q_i0
    s = full.astype(np.float64) @ w
    ew, ed = np.zeros(F), 0.0
    for i in range(M):
        logits = np.concatenate([[dummy], s[i, :i]]) / gamma
        phis = np.concatenate([np.zeros((1, F)), full[i, :i]])
        gold = np.array([False] + [clusters[j] == clusters[i] for j in range(i)])
        if not gold.any():
            gold[0] = True
        p = np.exp(logits - logits.max())
        p /= p.sum()
        q = np.where(gold, np.exp(logits - logits[gold].max()), 0.0)
        q /= q.sum()
        ew += p @ phis - q @ phis
        ed += p[0] - q[0]
    np.testing.assert_allclose(np.asarray(gw), ew / M, rtol=1e-4, atol=1e-6)
    assert float(gd) == pytest.approx(ed / M, rel=1e-4, abs=1e-6)
    # central finite differences (float32 forward pass, smooth at gamma > 0)
    eps = 1e-2
    for k in range(F):
        e = np.zeros(F, np.float32)
        e[k] = eps
        fd = (float(loss(w + e, dummy)) - float(loss(w - e, dummy))) / (2 * eps)
        assert fd == pytest.approx(float(gw[k]), rel=2e-2, abs=2e-3)


def test_l2_penalty_and_document_averaging():
    _, _, d1 = random_document(M, F, seed=5)
    _, _, d2 = random_document(3, F, seed=6)
    scorer = LinearScorer(F, np.array([1.0, 2.0, -1.0]), 0.0)
    l1, _ = _doc_loss_sum(scorer, d1, 1.0)
    l2_, _ = _doc_loss_sum(scorer, d2, 1.0)
    b = pad_batch([d1, d2], n_docs=4, n_items=8, n_ante=8)  # two padding documents must not count
    val = float(_batch_loss(scorer, b, jnp.float32(1.0), jnp.float32(0.1), jnp.float32(0.0)))
    assert val == pytest.approx((l1 / M + l2_ / 3) / 2 + 0.1 * 0.5 * 6.0, rel=1e-5)


def test_window_layout_and_padding_invariance():
    full, clusters, doc = random_document(6, F, seed=7)
    scorer = LinearScorer(F, np.array([0.3, 0.1, -0.5]), 0.2)
    small, _ = _doc_loss_sum(scorer, doc, 0.7, n_items=8, n_ante=8)
    big, _ = _doc_loss_sum(scorer, doc, 0.7, n_items=16, n_ante=16)
    assert small == pytest.approx(big, rel=1e-6)
    # window layout: slot a of item i is antecedent i - 1 - a
    assert np.array_equal(doc.features[4, 0], full[4, 3]) and np.array_equal(doc.features[4, 3], full[4, 0])
    # a window of 2 antecedents: an item whose gold antecedents are all further away takes the dummy link
    w2 = Document.from_pairwise(full, clusters, max_antecedents=2)
    gold, new = w2.gold_links()
    for i in range(6):
        near = [j for j in range(max(0, i - 2), i) if clusters[j] == clusters[i]]
        assert new[i] == (len(near) == 0)


def test_hard_and_soft_constraints_in_the_loss():
    full, clusters, _ = random_document(4, F, seed=8, n_clusters=1)  # all one cluster
    w = np.array([0.5, 0.5, 0.5], np.float32)
    scorer = LinearScorer(F, w, 0.0)
    codes = np.zeros((4, 4), np.int8)
    codes[3, 0] = -1  # item 3 cannot link to item 0
    doc = Document.from_pairwise(full, clusters, codes_full=codes)
    s = full @ w
    # hard: candidate 0 removed from both sets of item 3
    hard, _ = _doc_loss_sum(scorer, doc, 1.0, weight=np.inf)
    free, _ = _doc_loss_sum(scorer, Document.from_pairwise(full, clusters), 1.0)

    def lse(v):
        return np.log(np.exp(v).sum())

    item3_free = lse(np.r_[0.0, s[3, :3]]) - lse(s[3, :3])
    item3_hard = lse(np.r_[0.0, s[3, 1:3]]) - lse(s[3, 1:3])
    assert hard - free == pytest.approx(item3_hard - item3_free, rel=1e-4, abs=1e-5)
    # soft weight rho: score offset -rho on the cannot-linked candidate
    soft, _ = _doc_loss_sum(scorer, doc, 1.0, weight=2.0)
    s3 = s[3, :3].copy()
    s3[0] -= 2.0
    item3_soft = lse(np.r_[0.0, s3]) - lse(s3)
    assert soft - free == pytest.approx(item3_soft - item3_free, rel=1e-4, abs=1e-5)


def test_canonical_helper():
    assert canonical(np.array([5, 5, 2, 7, 2])).tolist() == [0, 0, 1, 2, 1]
