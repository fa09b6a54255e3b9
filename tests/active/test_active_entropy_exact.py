"""The sub-quadratic ``top_entropy_pairs`` returns exactly the dense sweep's pairs and entropies.

Reference: the O(n^2) blockwise sweep over all item pairs (``_dense_select``), which ``top_entropy_pairs`` uses only
for weights whose sums the signature path cannot reproduce bit for bit. Every comparison is exact equality of the
returned lists (pairs, order and float entropies), and no returned pair is known (transitively included).
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxclust.active import entropy as E
from jaxclust.active import signatures as SG
from jaxclust.active.entropy import top_entropy_pairs
from jaxclust.constraints import Constraints

S = 16  # one sample count for the file so compiled sweeps are reused


def _posterior(rng, n, k_labels=4, flip=0.05, uncertain=0.2):
    """Posterior-like samples: stable items (twins), boundary items that alternate, a little noise."""
    home = rng.integers(0, k_labels, n)
    alt = (home + 1 + rng.integers(0, k_labels - 1, n)) % k_labels
    p_alt = np.where(rng.random(n) < uncertain, rng.uniform(0.2, 0.6, n), 0.0)
    z = np.where(rng.random((S, n)) < p_alt, alt, home)
    noise = rng.random((S, n)) < flip
    z[noise] = rng.integers(0, k_labels, noise.sum())
    return z


def _case(seed, kind, n):
    rng = np.random.default_rng(seed)
    if kind == 0:
        z = _posterior(rng, n)
    elif kind == 1:
        z = rng.integers(0, 3, (S, n))  # very uncertain: almost every item its own signature
    elif kind == 2:
        z = _posterior(rng, n, k_labels=6, flip=0.0, uncertain=0.05) - 1  # labels -1 allowed, many twins
    else:
        z = _posterior(rng, n, k_labels=2, flip=0.01, uncertain=0.5)
    pairs = [tuple(int(v) for v in rng.choice(n, 2, replace=False)) for _ in range(n // 4)]
    cons = Constraints.from_pairs(n, [(a, b, bool(rng.random() < 0.3)) for a, b in pairs], on_conflict="drop")
    exclude = [tuple(int(v) for v in rng.choice(n, 2, replace=False)) for _ in range(3)]
    return rng, z, cons, exclude


def _weights(rng, kind):
    if kind == "none":
        return None
    if kind == "mask":
        w = (rng.random(S) < 0.6).astype(np.float32)
        w[0] = 1.0
        return w
    if kind == "integer":
        return rng.integers(0, 4, S).astype(float) + np.eye(S)[0]
    return rng.uniform(0.05, 1.0, S)


def _unknown_only(out, cons):
    """``out`` after checking that none of its pairs is known, directly or by transitivity."""
    if cons is not None and out:
        known = np.asarray(cons.is_known(np.array([p[0] for p in out]), np.array([p[1] for p in out])))
        assert not known.any(), [p for p, kn in zip(out, known, strict=True) if kn]
    return out


def _top_entropy_pairs_reference(samples, k, constraints=None, weights=None, exclude=(), block=None):
    z, k, constraints, excl, block, w = E._validate(samples, k, constraints, weights, exclude, block)
    return _unknown_only(E._dense_select(z, k, constraints, w, excl, block), constraints)


def _fast(z, k, cons=None, w=None, exclude=(), route=None, method=None):
    zz, kk, cons, excl, block, ww = E._validate(z, k, cons, w, exclude, None)
    return _unknown_only(E._select(zz, kk, cons, ww, excl, block, route=route, method=method), cons)


_CASES = [  # (samples kind, weights kind, n, also ask for every pair)
    (0, "none", 150, True),
    (1, "real", 40, True),
    (2, "integer", 150, True),
    (3, "mask", 40, False),
    (0, "real", 150, False),
    (3, "integer", 40, False),
]


@pytest.mark.parametrize("seed", range(len(_CASES)))
def test_equals_reference_on_random_sample_sets(seed):
    kind, wkind, n, every_pair = _CASES[seed]
    rng, z, cons, exclude = _case(seed, kind, n)
    w = _weights(rng, wkind)
    cases = [(1, None, ()), (6, cons, exclude)]
    if every_pair:
        cases.append((n * n, cons, exclude))  # more than there are pairs: every unknown pair, zeros last
    for k, c, ex in cases:
        want = _top_entropy_pairs_reference(z, k, c, w, ex)
        if k == 6:
            assert top_entropy_pairs(z, k, c, w, ex) == want  # the public function (automatic route)
        assert _fast(z, k, c, w, ex, route="sparse") == want
        assert _fast(z, k, c, w, ex, route="dense") == want
        if wkind != "real":
            assert _fast(z, k, c, w, ex, route="dense", method="matmul") == want


def test_one_huge_level_of_ties_with_known_and_excluded_pairs():
    # items 0..59 in one component; in half the samples it splits into evens and odds: every even-odd pair
    # has p = 1/2 (3600 item pairs from only 2 signatures); 60..99 are a second stable component, and item 99
    # hops between the two, so its pairs with 0..59 form a second level
    n = 100
    z = np.zeros((S, n), int)
    z[:, 60:] = 1
    z[: S // 2, 1:60:2] = 2
    z[::4, 99] = 0
    cons = Constraints(n, cannot_link=[(0, j) for j in range(1, 40, 2)], must_link=[(2, 5)])
    exclude = [(0, 41), (2, 3), (4, 1)]
    for k in (1, 33, 2000):
        want = _top_entropy_pairs_reference(z, k, cons, None, exclude)
        assert len(want) == k
        for route in ("sparse", "dense"):
            assert _fast(z, k, cons, None, exclude, route=route) == want
    # (0, odd < 40) are cannot-linked and (0, 41) excluded: the first unknown pair of the top level is (0, 43)
    assert _fast(z, 5, cons, None, exclude)[0][:2] == (0, 43)


def test_known_pairs_force_more_signature_pairs_on_the_dense_sweep():
    # item 0 hops; every other item is its own stable signature... in one component with 0 half the time, so the
    # top level is (0, j) for all j, and cannot-links make the first 40 of them known: the dense sweep's first
    # top-K of signature pairs is too short and has to grow
    n = 64
    rng = np.random.default_rng(3)
    z = np.tile(np.arange(n), (S, 1))
    z[: S // 2, 0] = rng.integers(1, n, S // 2)  # 0 joins a random item in half the samples
    z[S // 2 :, 0] = 0
    z[:, 1:] = np.arange(1, n)
    z[: S // 2, 0] = 1  # with item 1 in half the samples: one top pair...
    z[S // 2 :, 1:40] = 1  # ... and items 1..39 merge in the other half
    cons = Constraints(n, cannot_link=[(0, j) for j in range(1, 40)])
    for k in (1, 30):
        want = _top_entropy_pairs_reference(z, k, cons, None, ())
        assert _fast(z, k, cons, None, (), route="dense") == want
        assert _fast(z, k, cons, None, (), route="sparse") == want


def test_identical_samples_return_zero_entropy_pairs_in_index_order():
    n = 30
    z = np.tile(np.random.default_rng(5).integers(0, 3, n), (S, 1))
    cons = Constraints(n, must_link=[(0, 1)], cannot_link=[(0, 2)])
    got = top_entropy_pairs(z, 8, cons, exclude=[(0, 4)])
    assert got == _top_entropy_pairs_reference(z, 8, cons, exclude=[(0, 4)])
    assert [(i, j) for i, j, _ in got] == [(0, 3), (0, 5), (0, 6), (0, 7), (0, 8), (0, 9), (0, 10), (0, 11)]
    assert all(h == 0.0 for _, _, h in got)


def test_zero_weight_samples_are_ignored_and_weights_that_only_drop_samples_agree():
    rng = np.random.default_rng(7)
    z = _posterior(rng, 80)
    w = np.ones(S)
    w[5:9] = 0
    z2 = z.copy()
    z2[5:9] = rng.integers(0, 50, (4, 80))  # the dropped samples' labels do not matter
    want = _top_entropy_pairs_reference(z, 12, None, w)
    assert top_entropy_pairs(z, 12, None, w) == want == top_entropy_pairs(z2, 12, None, w)


def test_level_pairs_are_the_first_item_pairs_in_index_order():
    rng = np.random.default_rng(11)
    n = 70
    sg = SG.signatures(rng.integers(0, 3, (2, n)))  # 9 signatures with several members each
    mult = np.diff(sg.start)
    a, b = np.triu_indices(sg.m)
    keep = (rng.random(len(a)) < 0.5) & ((a != b) | (mult[a] > 1))
    a, b = a[keep].astype(np.int64), b[keep].astype(np.int64)
    chosen = set(zip(a.tolist(), b.tolist(), strict=True))
    brute = sorted(
        (i, j)
        for i in range(n)
        for j in range(i + 1, n)
        if (min(sg.sig_of[i], sg.sig_of[j]), max(sg.sig_of[i], sg.sig_of[j])) in chosen
    )
    assert SG.n_item_pairs(sg, a, b) == len(brute)
    for limit in (1, 2, 7, 50, len(brute), len(brute) + 5):
        i, j = SG.level_pairs(sg, a, b, limit)
        assert list(zip(i.tolist(), j.tolist(), strict=True)) == brute[:limit]


def test_a_few_thousand_posterior_like_items():
    rng = np.random.default_rng(13)
    z = _posterior(rng, 3000, k_labels=20, flip=0.002, uncertain=0.05)
    cons = Constraints(3000, must_link=[(0, 1), (5, 9)], cannot_link=[(2, 3)])
    want = _top_entropy_pairs_reference(z, 20, cons, exclude=[(10, 11)])
    assert top_entropy_pairs(z, 20, cons, exclude=[(10, 11)]) == want


def test_small_blocks_and_chunks_give_the_same_pairs(monkeypatch):
    # many row blocks of the sparse product (each past a different column cut) and many zero-fill chunks
    monkeypatch.setattr(E, "_SPARSE_WORK", 64)
    monkeypatch.setattr(SG, "ZERO_FILL_PAIRS", 50)
    rng = np.random.default_rng(17)
    n = 150
    z = _posterior(rng, n)
    cons = Constraints(n, must_link=[(0, 1), (3, 4)], cannot_link=[(0, 5)])
    for k in (3, 40):
        assert _fast(z, k, cons, None, [(2, 7)], route="sparse") == _top_entropy_pairs_reference(
            z, k, cons, None, [(2, 7)]
        )
    z_same = np.tile(z[0], (S, 1))  # identical samples: everything comes from the zero fill
    assert top_entropy_pairs(z_same, 300, cons) == _top_entropy_pairs_reference(z_same, 300, cons)
