"""L3M inference: greedy online clustering and best-left-link against plain-Python references; CL3M masks."""

from __future__ import annotations

import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from l3m_synth import random_document  # noqa: E402

from jaxclust.l3m import Document, LinearScorer, pad_batch  # noqa: E402
from jaxclust.l3m.infer import predict_batch  # noqa: E402

F = 3


def _predict(scorer, docs, gamma, t, weight=0.0, best=False):
    b = pad_batch(docs, n_docs=4, n_items=16, n_ante=16)
    out = np.asarray(predict_batch(scorer, b, jnp.float32(gamma), jnp.float32(t), jnp.float32(weight), best))
    return [out[k, : d.n_items] for k, d in enumerate(docs)], out


def _greedy_ref(s, dummy, gamma, t):
    m = s.shape[0]
    z = []
    for i in range(m):
        logits = np.concatenate([[dummy], s[i, :i]])
        if gamma > 0:
            p = np.exp((logits - logits.max()) / gamma)
            p /= p.sum()
        else:
            p = np.eye(len(logits))[np.argmax(logits)]
        pc = {}
        for j in range(i):
            pc[z[j]] = pc.get(z[j], 0.0) + p[j + 1]
        if pc:
            c = max(sorted(pc), key=lambda c: pc[c])
            if pc[c] > t:
                z.append(c)
                continue
        z.append(max(z, default=-1) + 1)
    return np.array(z)


def _bll_ref(s, dummy):
    z = []
    for i in range(s.shape[0]):
        logits = np.concatenate([[dummy], s[i, :i]])
        a = int(np.argmax(logits))
        z.append(max(z, default=-1) + 1 if a == 0 else z[a - 1])
    return np.array(z)


@pytest.mark.parametrize("gamma,t", [(1.0, 0.3), (0.5, 0.5), (2.0, 0.1)])
def test_greedy_matches_reference(gamma, t):
    docs, fulls = [], []
    for seed in range(3):
        full, clusters, doc = random_document(7 + 3 * seed, F, seed=10 + seed)
        docs.append(doc)
        fulls.append(full)
    w, dummy = np.array([1.0, -0.5, 0.8], np.float32), 0.4
    got, padded = _predict(LinearScorer(F, w, dummy), docs, gamma, t)
    for full, z in zip(fulls, got, strict=False):
        np.testing.assert_array_equal(z, _greedy_ref(full @ w, dummy, gamma, t))
    assert (padded[0, 7:] == -1).all() and (padded[3] == -1).all()  # padding items and documents


def test_gamma_zero_greedy_equals_best_left_link_equals_reference():
    docs, fulls = [], []
    for seed in range(3):
        full, _, doc = random_document(12, F, seed=20 + seed)
        docs.append(doc)
        fulls.append(full)
    w, dummy = np.array([0.7, 0.2, -0.3], np.float32), 0.5
    scorer = LinearScorer(F, w, dummy)
    greedy, _ = _predict(scorer, docs, 0.0, 0.5)
    bll, _ = _predict(scorer, docs, 1.0, 0.5, best=True)
    for full, g, b in zip(fulls, greedy, bll, strict=False):
        ref = _bll_ref(full @ w, dummy)
        np.testing.assert_array_equal(g, ref)
        np.testing.assert_array_equal(b, ref)


def test_window_limits_candidates():
    full, _, _ = random_document(10, F, seed=30)
    w, dummy = np.array([1.0, 0.0, 0.0], np.float32), 0.0
    doc = Document.from_pairwise(full, None, max_antecedents=2)
    s = full @ w
    far = np.triu(np.ones((10, 10), bool), 0) | (np.arange(10)[:, None] - np.arange(10)[None, :] > 2)
    s_masked = np.where(far, -np.inf, s)
    (got,), _ = _predict(LinearScorer(F, w, dummy), [doc], 0.0, 0.5, best=True)
    np.testing.assert_array_equal(got, _bll_ref(s_masked, dummy))


def test_hard_constraints_force_and_block():
    m = 6
    full = np.zeros((m, m, F), np.float32)
    full[..., 0] = 1.0  # every pair scores 1 > dummy 0: without constraints everything joins cluster 0
    scorer = LinearScorer(F, np.array([1.0, 0, 0], np.float32), 0.0)
    (free,), _ = _predict(scorer, [Document.from_pairwise(full)], 0.0, 0.5)
    assert free.tolist() == [0] * m
    codes = np.zeros((m, m), np.int8)
    codes[2, 0] = codes[2, 1] = -1  # item 2 cannot join 0/1
    codes[4, 2] = 1  # item 4 must join item 2's cluster
    codes[5, 0] = -1  # item 5 cannot join item 0: its whole cluster is blocked, even via items 1 and 3
    doc = Document.from_pairwise(full, codes_full=codes)
    (hard,), _ = _predict(scorer, [doc], 1.0, 0.1, weight=np.inf)
    assert hard[2] != hard[0] and hard[2] != hard[1]
    assert hard[4] == hard[2]
    assert hard[5] != hard[0]
    # soft: weight 0 ignores the constraints entirely
    (soft0,), _ = _predict(scorer, [doc], 0.0, 0.5, weight=0.0)
    assert soft0.tolist() == [0] * m
