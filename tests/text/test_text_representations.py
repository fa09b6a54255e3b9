"""Text representations: local features by hand, PPMI by brute force, compositions against dense
definitions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from jaxclust.errors import InvalidInputError
from jaxclust.text import LocalFeatures, build_space, context_vectors, local_feature_dict, mixed

CORPUS = [
    "the cat sat on the mat".split(),
    "the dog sat on the log".split(),
    "a cat and a dog".split(),
    "the mat was on the floor".split(),
]


def test_local_feature_dict_by_hand():
    toks = ["He", "found", "the", "very", "hard", "rock", "bed", "quickly", "."]
    pos = ["PRP", "VBD", "DT", "RB", "JJ", "NN", "NN", "RB", None]
    f = local_feature_dict(toks, pos, 4)
    expected = {
        "w0": "hard",
        "p0": "JJ",
        "w-3": "found",
        "p-3": "VBD",
        "w-2": "the",
        "p-2": "DT",
        "w-1": "very",
        "p-1": "RB",
        "w+1": "rock",
        "p+1": "NN",
        "w+2": "bed",
        "p+2": "NN",
        "w+3": "quickly",
        "p+3": "RB",
        "np": "bed",  # last noun of the noun run after the adjective
        "vb": "found",
        "na": "rock",  # no noun before, no verb after
    }
    assert f == expected
    assert local_feature_dict(toks, pos, 5)["np"] == "bed"  # noun target: end of its own noun run
    assert local_feature_dict(toks, pos, 7)["p+1"] == "UNK"


def test_local_features_matrix():
    inst = [(["a", "hard", "rock"], ["DT", "JJ", "NN"], 1), (["hard", "work"], ["JJ", "NN"], 0)]
    lf = LocalFeatures(min_count=1)
    X = lf.fit_transform(inst)
    assert X.shape == (2, len(lf.vocabulary_))
    row0 = {k for k, c in lf.vocabulary_.items() if X[0, c] == 1}
    assert row0 == {f"{k}={v}" for k, v in local_feature_dict(*inst[0]).items()}
    shared = {k for k, c in lf.vocabulary_.items() if X[0, c] == 1 and X[1, c] == 1}
    assert shared == {"w0=hard", "p0=JJ", "p+1=NN"}


def _brute_ppmi(corpus, half, columns):
    words = sorted({t for s in corpus for t in s})
    cnt = {(w, c): 0 for w in words for c in columns}
    for s in corpus:
        for i, w in enumerate(s):
            for j, c in enumerate(s):
                if i != j and abs(i - j) <= half and c in columns:
                    cnt[(w, c)] += 1
    N = sum(cnt.values())
    rw = {w: sum(cnt[(w, c)] for c in columns) for w in words}
    cc = {c: sum(cnt[(w, c)] for w in words) for c in columns}
    out = {}
    for (w, c), v in cnt.items():
        out[(w, c)] = max(0.0, np.log(v * N / (rw[w] * cc[c]))) if v else 0.0
    return out


def test_ppmi_space_matches_brute_force():
    space = build_space(CORPUS, window=4, n_columns=5)
    # the 5 most frequent words, ties alphabetical: the(7) on(3) a(2) cat(2) dog(2)
    assert space.columns == ["the", "on", "a", "cat", "dog"]
    ref = _brute_ppmi(CORPUS, 2, space.columns)
    M = space.matrix.toarray()
    for (w, c), v in ref.items():
        assert M[space.rows[w], space.columns.index(c)] == pytest.approx(v, abs=1e-12)


def test_compositions_match_dense_definitions():
    space = build_space(CORPUS, window=4, n_columns=5)
    inst = [("the cat sat on".split(), 2), ("a dog and zebra".split(), 3), (["only"], 0)]
    add = context_vectors(inst, space, mode="add", window=2).toarray()
    mul = context_vectors(inst, space, mode="mul", window=2).toarray()
    v = space.vector
    np.testing.assert_allclose(add[0], (v("cat") + v("on") + v("the")) / 3)
    np.testing.assert_allclose(mul[0], v("cat") * v("on") * v("the"))
    np.testing.assert_allclose(add[1], (v("dog") + v("and")) / 2)  # "a" is 3 away; "zebra" is the target
    np.testing.assert_allclose(mul[1], v("dog") * v("and"))
    np.testing.assert_array_equal(add[2], 0.0)
    np.testing.assert_array_equal(mul[2], 0.0)


def test_mixed_unit_blocks():
    a = sp.csr_matrix(np.array([[3.0, 4.0], [0.0, 0.0]]))
    b = sp.csr_matrix(np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]]))
    M = mixed(a, b).toarray()
    np.testing.assert_allclose(M, [[0.6, 0.8, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0]])
    with pytest.raises(InvalidInputError, match="block 1"):
        mixed(a, b[:1])


def test_bad_input():
    with pytest.raises(InvalidInputError, match="head"):
        local_feature_dict(["a"], ["DT"], 3)
    with pytest.raises(InvalidInputError, match="mode"):
        context_vectors([(["a", "b"], 0)], build_space(CORPUS, window=2, n_columns=3), mode="max")
