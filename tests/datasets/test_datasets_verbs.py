"""Verb sets: counts and labels equal the folders' READMEs; features are consistent across files."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from jaxclust import datasets as D


@pytest.fixture(scope="module")
def balanced(data_dir):
    return D.load_verbs_general("balanced", data_dir=data_dir)


@pytest.fixture(scope="module")
def full(data_dir):
    return D.load_verbs_general("full", data_dir=data_dir)


def test_general_full_counts(full):
    # README: 2,582 verbs x 36 features; root_number 275 classes, levin_top 93
    assert full.X.shape == (2582, 36)
    assert len(full.label_names["root_class"]) == 275
    assert len(full.label_names["root_number"]) == 275
    assert len(full.label_names["levin_top"]) == 93
    assert len(set(full.item_names)) == 2582
    tc = full.extra["total_count"]
    assert tc.min() == 1 and tc.max() == 9425 and np.median(tc) == 774
    np.testing.assert_allclose(full.X.sum(axis=1), 1.0, atol=1e-4)
    assert full.target == "root_class" and full.n_classes == 275


def test_general_balanced_is_46_classes_of_12(balanced, full):
    assert balanced.X.shape == (552, 36)
    sizes = np.bincount(balanced.y)
    assert len(sizes) == 46 and set(sizes) == {12}
    assert len(np.unique(balanced.labels["levin_top"])) == 24
    assert balanced.extra["total_count"].min() >= 100
    assert {"put-9.1", "remove-10.1", "say-37.7", "run-51.3.2", "light_emission-43.1", "amuse-31.1"} <= set(
        balanced.label_names["root_class"]
    )
    # the subset's rows equal the full set's rows for the same verbs
    row = {v: i for i, v in enumerate(full.item_names)}
    idx = [row[v] for v in balanced.item_names]
    np.testing.assert_array_equal(balanced.X, full.X[idx])
    for key in ("root_class", "levin_top"):
        ours = [balanced.label_names[key][c] for c in balanced.labels[key]]
        theirs = [full.label_names[key][c] for c in full.labels[key][idx]]
        assert ours == theirs


def test_label_levels_are_consistent(full):
    # root_number is the number part of root_class (same partition) and levin_top its first component
    rc = [full.label_names["root_class"][c] for c in full.labels["root_class"]]
    rn = [full.label_names["root_number"][c] for c in full.labels["root_number"]]
    lt = [full.label_names["levin_top"][c] for c in full.labels["levin_top"]]
    assert all(c.split("-", 1)[1] == n for c, n in zip(rc, rn, strict=True))
    assert all(n.split(".")[0] == t for n, t in zip(rn, lt, strict=True))
    # numeric order of class numbers: "9.2" before "9.10"
    names = full.label_names["root_number"]
    assert names.index("9.1") < names.index("9.2") < names.index("9.10") < names.index("10.1")


def test_counts_features_normalise_to_relfreq(data_dir, balanced):
    counts = D.load_verbs_general("balanced", features="counts", label="levin_top", data_dir=data_dir)
    assert counts.item_names == balanced.item_names and counts.target == "levin_top"
    assert D.load_verbs_general(label="vn_root_class", data_dir=data_dir).target == "root_class"
    np.testing.assert_array_equal(counts.X.sum(axis=1), balanced.extra["total_count"])
    np.testing.assert_allclose(counts.X / counts.X.sum(axis=1, keepdims=True), balanced.X, atol=1e-5)


def test_cached_loader_returns_fresh_arrays(data_dir):
    a = D.load_verbs_general("balanced", data_dir=data_dir)
    a.X[0, 0] = -5.0
    assert D.load_verbs_general("balanced", data_dir=data_dir).X[0, 0] != -5.0


@pytest.fixture(scope="module")
def biomed(data_dir):
    return D.load_verbs_biomed(data_dir=data_dir)


def test_biomed_counts(biomed, data_dir):
    # README: 593 verbs x 136 / 149 features; fine 112, mid 71, top 22 classes; top sizes 1-118
    assert biomed.X.shape == (593, 136)
    assert biomed.target == "top" and biomed.n_classes == 22
    assert {k: len(v) for k, v in biomed.label_names.items()} == {"top": 22, "mid": 71, "fine": 112}
    sizes = np.bincount(biomed.labels["top"])
    assert sizes.min() == 1 and sizes.max() == 118
    np.testing.assert_allclose(biomed.X.sum(axis=1), 1.0, atol=1e-4)
    spec = D.load_verbs_biomed(level="fine", features="scfspecific", data_dir=data_dir)
    assert spec.X.shape == (593, 149) and spec.target == "fine"
    assert spec.item_names == biomed.item_names


def test_biomed_levels_nest(biomed, data_dir):
    fine = [biomed.label_names["fine"][c] for c in biomed.labels["fine"]]
    mid = [biomed.label_names["mid"][c] for c in biomed.labels["mid"]]
    top = [biomed.label_names["top"][c] for c in biomed.labels["top"]]
    assert all(
        f.rsplit(".", 1)[0] == m and m.split(".")[0] == t for f, m, t in zip(fine, mid, top, strict=True)
    )
    # each fine class lies in exactly one mid class
    parents = collections.defaultdict(set)
    for f, m in zip(biomed.labels["fine"], biomed.labels["mid"], strict=True):
        parents[f].add(m)
    assert all(len(p) == 1 for p in parents.values())
    for level, key in [(1, "top"), (2, "mid"), (3, "fine"), ("class_mid", "mid")]:
        assert D.load_verbs_biomed(level=level, data_dir=data_dir).target == key
