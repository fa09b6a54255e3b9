"""Co-clustering, link entropy and blockwise top-k selection against brute-force NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from jaxclust.active.entropy import agreeing_samples, coclustering, link_entropy, top_entropy_pairs
from jaxclust.constraints import Constraints
from jaxclust.errors import ConstraintError, InvalidInputError

S, N = 24, 13  # one shape for the whole file so compiled functions are reused


def _samples(seed: int, n_labels: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_labels, size=(S, N))


def _np_cocluster(z, w=None):
    w = np.ones(len(z)) if w is None else np.asarray(w, float)
    same = (z[:, :, None] == z[:, None, :]).astype(float)
    return np.tensordot(w, same, axes=1) / w.sum()


def _np_entropy(p):
    p = np.minimum(p, 1 - p)  # H(p) = H(1-p); evaluated symmetrically so exact ties stay ties
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(p * np.log(p)) - ((1 - p) * np.log(1 - p))
    return np.nan_to_num(h, nan=0.0)


def _brute_top(z, k, cons=None, w=None, exclude=()):
    h = _np_entropy(_np_cocluster(z, w)).astype(np.float32)
    i, j = np.triu_indices(z.shape[1], 1)
    ok = np.ones(len(i), bool) if cons is None else ~cons.is_known(i, j)
    ok &= np.array([(a, b) not in set(exclude) for a, b in zip(i, j, strict=True)])
    i, j, hv = i[ok], j[ok], h[i[ok], j[ok]]
    order = np.lexsort((j, i, -hv))[:k]
    return [(int(i[t]), int(j[t])) for t in order], hv[order]


def test_coclustering_matches_numpy():
    z = _samples(0)
    np.testing.assert_allclose(np.asarray(coclustering(z)), _np_cocluster(z), atol=1e-6)
    w = np.random.default_rng(1).integers(0, 2, S).astype(float)
    w[0] = 1.0
    np.testing.assert_allclose(np.asarray(coclustering(z, w)), _np_cocluster(z, w), atol=1e-6)


def test_link_entropy_matches_numpy_and_bounds():
    z = _samples(2)
    h = np.asarray(link_entropy(z))
    np.testing.assert_allclose(h, _np_entropy(_np_cocluster(z)), atol=1e-6)
    assert np.allclose(np.diag(h), 0.0)
    assert h.max() <= np.log(2) + 1e-6


def test_entropy_is_label_switching_invariant():
    z = _samples(3)
    perm = np.array([2, 0, 1])
    z2 = perm[z] + 10  # relabel every sample
    np.testing.assert_allclose(np.asarray(link_entropy(z2)), np.asarray(link_entropy(z)), atol=0)


@pytest.mark.parametrize("block", [1, 4, 5, 13])
def test_top_pairs_equal_brute_force_for_any_block(block):
    z = _samples(4)
    cons = Constraints(N, must_link=[(0, 1), (1, 4), (7, 8)], cannot_link=[(4, 9), (2, 8)])
    got = top_entropy_pairs(z, 9, cons, block=block)
    want, hv = _brute_top(z, 9, cons)
    assert [(i, j) for i, j, _ in got] == want
    np.testing.assert_allclose([h for _, _, h in got], hv, atol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_selection_never_returns_known_or_implied_pairs(seed):
    rng = np.random.default_rng(seed)
    z = _samples(10 + seed, n_labels=2)
    pairs = [tuple(int(v) for v in rng.choice(N, 2, replace=False)) for _ in range(10)]
    cons = Constraints.from_pairs(N, [(a, b, bool(rng.random() < 0.5)) for a, b in pairs], on_conflict="drop")
    got = top_entropy_pairs(z, 200, cons, block=5)  # ask for more than exist: all unknown pairs come back
    i, j = np.triu_indices(N, 1)
    unknown = {(int(a), int(b)) for a, b in zip(i, j, strict=True) if cons.status(int(a), int(b)) is None}
    assert {(a, b) for a, b, _ in got} == unknown
    # implied pairs, checked one by one through transitivity, never appear
    for a, b, _ in got:
        assert cons.status(a, b) is None


def test_exclude_and_weights():
    z = _samples(5)
    w = np.zeros(S)
    w[:7] = 1
    first, _ = _brute_top(z, 3, None, w)
    got = top_entropy_pairs(z, 3, None, weights=w, exclude=[first[0][::-1]], block=4)
    want, _ = _brute_top(z, 3, None, w, exclude=[first[0]])
    assert [(i, j) for i, j, _ in got] == want
    assert first[0] not in [(i, j) for i, j, _ in got]


def test_agreeing_samples_keeps_exactly_the_agreeing_ones():
    z = _samples(6)
    for i, j in [(0, 1), (3, 11), (5, 6)]:
        same = z[:, i] == z[:, j]
        np.testing.assert_array_equal(np.asarray(agreeing_samples(z, i, j, True)), same)
        np.testing.assert_array_equal(np.asarray(agreeing_samples(z, i, j, False)), ~same)


def test_bad_inputs_raise_named_errors():
    z = _samples(7)
    with pytest.raises(InvalidInputError, match="samples"):
        coclustering(z.astype(float) + 0.5)
    with pytest.raises(InvalidInputError, match="weights"):
        coclustering(z, np.ones(S + 1))
    with pytest.raises(InvalidInputError, match="k"):
        top_entropy_pairs(z, 0)
    with pytest.raises(ConstraintError, match="constraints: built for"):
        top_entropy_pairs(z, 1, Constraints(N + 1))
