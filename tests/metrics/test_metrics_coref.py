"""Coreference metrics: the CoNLL reference scorer's own test cases (v8.01, test/CorefMetricTestConfig.pm and
test/TestCases.README), per-document agreement with ``scorch.scores`` on random clusterings, brute-force LEA,
and
micro-averaged corpus totals."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scorch import scores as sc

from jaxclust.errors import InvalidInputError
from jaxclust.metrics import coref as M


def E(*groups: str) -> list[list[str]]:
    """Entities from strings of one-character mention ids: E("a", "bc") -> [["a"], ["b", "c"]]."""
    return [list(g) for g in groups]


KEY_A = E("a", "bc", "def")
KEY_B = E("ab", "cde")
KEY_C = E("ab", "cde", "fg")
KEY_D = E("12345", "67", "89ABC")
KEY_M = E("abcdef")
KEY_N = E(*"abcdef")

# (id, key, response, expected {metric: (R, P, F1)}), numbers from CorefMetricTestConfig.pm; LEA from
# TestCases.README.
# In TC-A-5/6 "B" is a distinct (overlapping) mention; in TC-A-7/8/9 it duplicates b, written here as a
# repeated "b".
_F = lambda r, p: (r, p, 2 * r * p / (r + p) if r + p else 0.0)  # noqa: E731
CASES = [
    (
        "A1",
        KEY_A,
        E("a", "bc", "def"),
        dict(
            muc=(1, 1, 1),
            b_cubed=(1, 1, 1),
            ceaf_m=(1, 1, 1),
            ceaf_e=(1, 1, 1),
            blanc=(1, 1, 1),
            lea=_F(1, 1),
        ),
    ),
    (
        "A2",
        KEY_A,
        E("a", "de"),
        dict(
            muc=(1 / 3, 1, 0.5),
            b_cubed=((7 / 3) / 6, 1, 14 / 25),
            ceaf_m=(0.5, 1, 0.66667),
            ceaf_e=(0.6, 0.9, 0.72),
            blanc=(0.21591, 1, 0.35385),
            lea=_F(1 / 3, 1),
        ),
    ),
    (
        "A3",
        KEY_A,
        E("a", "bcx", "defy", "z"),
        dict(
            muc=(1, 3 / 5, 0.75),
            b_cubed=(1, (4 + 7 / 12) / 9, 110 / 163),
            ceaf_m=(1, 0.66667, 0.8),
            ceaf_e=(0.88571, 0.66429, 0.75918),
            blanc=(1, 0.42593, 0.59717),
            lea=_F(1, 4 / 9),
        ),
    ),
    (
        "A4",
        KEY_A,
        E("a", "bcx", "dy", "z"),
        dict(
            muc=(1 / 3, 1 / 3, 1 / 3),
            b_cubed=_F((3 + 1 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            ceaf_m=(0.66667, 0.57143, 0.61538),
            ceaf_e=(0.73333, 0.55, 0.62857),
            blanc=(0.35227, 0.27206, 0.30357),
            lea=_F(0.5, 2 / 7),
        ),
    ),
    (
        "A5",
        KEY_A,
        [["a"], ["b", "c", "x", "B"], ["d", "y"], ["z"]],
        dict(
            muc=(1 / 3, 1 / 4, 2 / 7),
            b_cubed=_F((3 + 1 / 3) / 6, 2.5 / 8),
            ceaf_m=(0.66667, 0.5, 0.57143),
            ceaf_e=(0.68889, 0.51667, 0.59048),
            blanc=(0.35227, 0.19048, 0.24716),
            lea=_F(0.5, 5 / 24),
        ),
    ),
    (
        "A6",
        KEY_A,
        [["a"], ["b", "c", "x"], ["d", "y"], ["B", "z"]],
        dict(
            muc=(1 / 3, 1 / 4, 2 / 7),
            b_cubed=_F((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 8),
            ceaf_m=(0.66667, 0.5, 0.57143),
            ceaf_e=(0.73333, 0.55, 0.62857),
            blanc=(0.35227, 0.20870, 0.25817),
            lea=_F(0.5, 0.25),
        ),
    ),
    (
        "A7",
        KEY_A,
        [["a"], ["b", "c", "x", "b"], ["d", "y"], ["z"]],
        dict(
            muc=(1 / 3, 1 / 3, 1 / 3),
            b_cubed=_F((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            ceaf_m=(0.66667, 0.57143, 0.61538),
            ceaf_e=(0.73333, 0.55, 0.62857),
            blanc=(0.35227, 0.27206, 0.30357),
            lea=_F(0.5, 2 / 7),
        ),
    ),
    (
        "A8",
        KEY_A,
        [["a"], ["b", "c", "x"], ["d", "y"], ["b", "z"]],
        dict(
            muc=(1 / 3, 1 / 3, 1 / 3),
            b_cubed=_F((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            ceaf_m=(0.66667, 0.57143, 0.61538),
            ceaf_e=(0.73333, 0.55, 0.62857),
            blanc=(0.35227, 0.27206, 0.30357),
            lea=_F(0.5, 2 / 7),
        ),
    ),
    (
        "A9",
        KEY_A,
        [["a"], ["b", "c", "x"], ["d", "y"], ["b"] * 10 + ["z"]],
        dict(
            muc=(1 / 3, 1 / 3, 1 / 3),
            b_cubed=_F((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            ceaf_m=(0.66667, 0.57143, 0.61538),
            ceaf_e=(0.73333, 0.55, 0.62857),
            blanc=(0.35227, 0.27206, 0.30357),
            lea=_F(0.5, 2 / 7),
        ),
    ),
    (
        "A10",
        KEY_A,
        E(*"abcdef"),
        dict(muc=(0, 0, 0), b_cubed=(3 / 6, 1, 2 / 3), blanc=(0.5, 0.36667, 0.42308), lea=_F(1 / 6, 1 / 6)),
    ),
    (
        "A11",
        KEY_A,
        E("abcdef"),
        dict(
            muc=(1, 3 / 5, 6 / 8),
            b_cubed=(1, (1 / 6 + 2 * 2 / 6 + 3 * 3 / 6) / 6, 14 / 25),
            blanc=(0.5, 0.13333, 0.21053),
            lea=_F(5 / 6, 4 / 15),
        ),
    ),
    (
        "A12",
        KEY_A,
        E("a", "x", "y", "c", "d", "e", "z"),
        dict(
            muc=(0, 0, 0),
            b_cubed=_F((1 + 1 / 2 + 2 / 3) / 6, 4 / 7),
            blanc=(0.22727, 0.11905, 0.15625),
            lea=_F(1 / 6, 1 / 7),
        ),
    ),
    (
        "A13",
        KEY_A,
        E("axycdez"),
        dict(
            muc=(1 / 3, 1 / 6, 2 / 9),
            b_cubed=_F((1 + 1 / 2 + 2 * 2 / 3) / 6, (1 / 7 + 1 / 7 + 2 * 2 / 7) / 7),
            blanc=(0.125, 0.02381, 0.04),
            lea=_F(1 / 6, 1 / 21),
        ),
    ),
    ("B1", KEY_B, E("bcx", "de"), dict(blanc=(7 / 24, 7 / 24, 7 / 24), lea=_F(1 / 5, 2 / 5))),
    ("C1", KEY_C, E("bcx", "de", "fg"), dict(blanc=(0.5125, 0.5125, 0.5125), lea=_F(3 / 7, 4 / 7))),
    ("D1", KEY_D, E("12345", "6789ABC"), dict(muc=_F(1, 9 / 10), b_cubed=_F(1, 16 / 21), lea=_F(1, 13 / 18))),
    ("E1", KEY_D, E("1234589ABC", "67"), dict(muc=_F(1, 9 / 10), b_cubed=_F(1, 7 / 12), lea=_F(1, 29 / 54))),
    ("F1", E("ABCD"), E("AB", "CD"), dict(muc=_F(2 / 3, 1), lea=_F(1 / 3, 1))),
    ("G1", E("AB", "CD"), E("ABCD"), dict(muc=_F(1, 2 / 3), lea=_F(1, 1 / 3))),
    ("H1", E("ABCD"), E("ABCD"), dict(muc=(1, 1, 1), lea=_F(1, 1))),
    ("I1", E("ABCD"), E("AB", "CD"), dict(muc=_F(2 / 3, 1), lea=_F(1 / 3, 1))),
    ("J1", E("ABC"), E("AC"), dict(muc=_F(1 / 2, 1), lea=_F(1 / 3, 1))),
    ("K1", E("BCDEGHJ"), E("ABC", "DEF", "GHI"), dict(muc=(0.5, 0.5, 0.5), lea=_F(1 / 7, 1 / 3))),
    ("L1", E("ABC", "DEFG"), E("AB", "CD", "FGH"), dict(muc=_F(2 / 5, 2 / 4), lea=_F(5 / 21, 3 / 7))),
    (
        "M1",
        KEY_M,
        E("abcdef"),
        dict(
            muc=(1, 1, 1),
            b_cubed=(1, 1, 1),
            ceaf_m=(1, 1, 1),
            ceaf_e=(1, 1, 1),
            blanc=(1, 1, 1),
            lea=_F(1, 1),
        ),
    ),
    ("M2", KEY_M, E(*"abcdef"), dict(muc=(0, 0, 0), blanc=(0, 0, 0), lea=(0, 0, 0))),
    ("M3", KEY_M, E("ab", "cde", "f"), dict(blanc=(0.26667, 1, 0.42105), lea=_F(4 / 15, 5 / 6))),
    ("M4", KEY_M, E("abcxyz"), dict(blanc=(0.2, 0.2, 0.2), lea=_F(0.2, 0.2))),
    ("M5", KEY_M, E(*"abcxyz"), dict(muc=(0, 0, 0), blanc=(0, 0, 0), lea=(0, 0, 0))),
    ("M6", KEY_M, E("ab", "cxy", "z"), dict(blanc=(0.06667, 0.25, 0.10526), lea=_F(1 / 15, 1 / 3))),
    (
        "N1",
        KEY_N,
        E(*"abcdef"),
        dict(
            muc=(0, 0, 0),
            b_cubed=(1, 1, 1),
            ceaf_m=(1, 1, 1),
            ceaf_e=(1, 1, 1),
            blanc=(1, 1, 1),
            lea=_F(1, 1),
        ),
    ),
    ("N2", KEY_N, E("abcdef"), dict(muc=(0, 0, 0), blanc=(0, 0, 0), lea=(0, 0, 0))),
    ("N3", KEY_N, E("ab", "cde", "f"), dict(blanc=(0.73333, 1, 0.84615), lea=_F(1 / 6, 1 / 6))),
    ("N4", KEY_N, E(*"abcxyz"), dict(muc=(0, 0, 0), blanc=(0.2, 0.2, 0.2), lea=_F(0.5, 0.5))),
    ("N5", KEY_N, E("abcxyz"), dict(blanc=(0, 0, 0), lea=(0, 0, 0))),
    ("N6", KEY_N, E("ab", "cxy", "z"), dict(blanc=(0.13333, 0.18182, 0.15385), lea=(0, 0, 0))),
]

FUNCS = {
    "muc": M.muc,
    "b_cubed": M.b_cubed,
    "ceaf_m": M.ceaf_m,
    "ceaf_e": M.ceaf_e,
    "blanc": M.blanc,
    "lea": M.lea,
}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_reference_scorer_cases(case):
    _, key, response, expected = case
    for metric, want in expected.items():
        got = FUNCS[metric](key, response)
        # the config file rounds to 5 decimals
        np.testing.assert_allclose(got, want, atol=1e-5, err_msg=f"{case[0]} {metric}")


def _random_clustering(rng, universe, p_keep=0.8, max_entities=6):
    ids = [m for m in universe if rng.random() < p_keep]
    rng.shuffle(ids)
    labels = rng.integers(0, rng.integers(1, max_entities + 1), len(ids))
    return [set(np.asarray(ids)[labels == k].tolist()) for k in np.unique(labels)]


def _random_docs(n_docs, seed):
    rng = np.random.default_rng(seed)
    docs = []
    while len(docs) < n_docs:
        n = int(rng.integers(2, 16))
        key = _random_clustering(rng, list(range(n)))
        # response: some key mentions missing, some twinless mentions (ids >= 100)
        resp = _random_clustering(rng, list(range(n)) + list(range(100, 100 + int(rng.integers(0, 5)))))
        if (
            sum(len(k) for k in key) >= 2
        ):  # scorch and the reference agree on BLANC only when the key has 2+ mentions
            docs.append((key, resp))
    return docs


def test_random_documents_match_scorch():
    for key, resp in _random_docs(150, seed=0):
        np.testing.assert_allclose(M.muc(key, resp), sc.muc(key, resp), atol=1e-12)
        np.testing.assert_allclose(M.b_cubed(key, resp), sc.b_cubed(key, resp), atol=1e-12)
        np.testing.assert_allclose(M.blanc(key, resp), sc.blanc(key, resp), atol=1e-12)
        if not set().union(*key) & set().union(*resp):
            # scorch's harmonic_mean fails on a NumPy zero when nothing aligns; CEAF is then 0 by definition
            assert M.ceaf_m(key, resp) == M.ceaf_e(key, resp) == (0.0, 0.0, 0.0)
            continue
        np.testing.assert_allclose(M.ceaf_m(key, resp), sc.ceaf_m(key, resp), atol=1e-12)
        np.testing.assert_allclose(M.ceaf_e(key, resp), sc.ceaf_e(key, resp), atol=1e-12)
        assert M.conll_f1(key, resp) == pytest.approx(sc.conll2012(key, resp), abs=1e-12)


def _brute_lea(key, resp):
    """LEA by enumerating links (Moosavi & Strube 2016; singleton self-link as in coval)."""

    def side(a, b):
        where = {m: i for i, e in enumerate(b) for m in e}
        num = den = 0.0
        for e in a:
            e = list(e)
            if len(e) == 1:
                m = e[0]
                res = 1.0 if m in where and len(b[where[m]]) == 1 else 0.0
            else:
                pairs = list(itertools.combinations(e, 2))
                res = sum(1 for u, v in pairs if u in where and v in where and where[u] == where[v]) / len(
                    pairs
                )
            num += len(e) * res
            den += len(e)
        return num, den

    rn, rd = side(key, resp)
    pn, pd = side(resp, key)
    return M.prf(rn, rd, pn, pd)


def test_lea_matches_link_enumeration():
    for key, resp in _random_docs(100, seed=1):
        np.testing.assert_allclose(M.lea(key, resp), _brute_lea(key, resp), atol=1e-12)


def test_counts_forms_give_the_scores():
    key, resp = _random_docs(1, seed=2)[0]
    for name, fn in FUNCS.items():
        if name == "blanc":
            assert M.blanc_from_counts(*M.blanc_counts(key, resp)) == pytest.approx(fn(key, resp))
        else:
            counts = getattr(M, f"{name}_counts")(key, resp)
            assert M.prf(*counts) == pytest.approx(fn(key, resp))


def test_corpus_scores_micro_average():
    docs = [(KEY_A, E("a", "de")), (E("ABCD"), E("AB", "CD")), ([], [])]  # TC-A-2, TC-F-1, an empty document
    keys, resps = zip(*docs, strict=True)
    out = M.corpus_scores(keys, resps)
    # MUC: correct links 1 + 2, key links 3 + 3, response links 1 + 2
    assert out["muc"] == pytest.approx(M.prf(3, 6, 3, 3))
    # B³: recall numerators 7/3 + 4*(2/4) over 6 + 4 key mentions; precision (3 + 4)/(3 + 4)
    assert out["b_cubed"] == pytest.approx(M.prf(7 / 3 + 2, 10, 7, 7))
    # the micro-average differs from the mean of per-document F1 (which would also count the empty doc as 0)
    assert out["muc"][2] != pytest.approx(np.mean([M.muc(k, r)[2] for k, r in docs]))
    # each metric equals the prf of the summed counts
    for name in ("muc", "b_cubed", "ceaf_m", "ceaf_e", "lea"):
        fn = getattr(M, f"{name}_counts")
        summed = np.sum([fn(k, r) for k, r in docs], axis=0)
        assert out[name] == pytest.approx(M.prf(*summed)), name
    c = np.sum([M.blanc_counts(k, r)[0] for k, r in docs], axis=0)
    n = np.sum([M.blanc_counts(k, r)[1] for k, r in docs], axis=0)
    assert out["blanc"] == pytest.approx(M.blanc_from_counts(c, n))
    assert out["conll_f1"] == pytest.approx((out["muc"][2] + out["b_cubed"][2] + out["ceaf_e"][2]) / 3)
    # a corpus of one document gives that document's scores
    one = M.corpus_scores([KEY_A], [E("a", "bcx", "dy", "z")])
    for name, fn in FUNCS.items():
        assert one[name] == pytest.approx(fn(KEY_A, E("a", "bcx", "dy", "z"))), name


def test_blanc_degenerate_keys_follow_the_reference():
    # a key with no link at all scores 0 (reference ComputeBLANCFromCounts); scorch would give 1 here
    assert M.blanc([{"a"}], [{"a"}]) == (0.0, 0.0, 0.0)
    assert M.blanc([], [{"a", "b"}]) == (0.0, 0.0, 0.0)


def test_empty_sides():
    assert M.b_cubed(KEY_A, []) == (0.0, 0.0, 0.0)
    assert M.ceaf_e([], KEY_A) == (0.0, 0.0, 0.0)
    assert M.muc([], []) == (0.0, 0.0, 0.0)


def test_clusters_from_labels():
    assert M.clusters_from_labels([2, 0, 2, 5]) == [{0, 2}, {1}, {3}]
    assert M.clusters_from_labels([1, 1], ids=["x", "y"]) == [{"x", "y"}]


def test_bad_inputs():
    with pytest.raises(InvalidInputError, match="mention 'b'"):
        M.muc([{"a", "b"}, {"b"}], [{"a"}])
    with pytest.raises(InvalidInputError, match="entity 1"):
        M.b_cubed([{"a"}, "bc"], [{"a"}])
    with pytest.raises(InvalidInputError, match="expected 2 documents"):
        M.corpus_scores([KEY_A, KEY_A], [KEY_A])
    with pytest.raises(InvalidInputError, match="document 1"):
        M.corpus_scores([KEY_A, [{"a"}, {"a"}]], [KEY_A, KEY_A])


def test_swapping_key_and_response_swaps_recall_and_precision():
    for key, resp in _random_docs(50, seed=3):
        for fn in (M.muc, M.b_cubed, M.ceaf_m, M.ceaf_e, M.lea):
            r, p, f = fn(key, resp)
            r2, p2, f2 = fn(resp, key)
            assert (r, p, f) == pytest.approx((p2, r2, f2), abs=1e-12), fn.__name__
