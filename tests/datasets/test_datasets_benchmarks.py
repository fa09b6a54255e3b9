"""Gagolewski's benchmark battery: shapes and label counts equal index.csv; uci/wine and other/iris equal
scikit-learn's bundled copies."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import sklearn.datasets as skd

from jaxclust import datasets as D

# README table: uci data sets (n, d, k)
UCI = {
    "ecoli": (336, 7, 8),
    "glass": (214, 9, 6),
    "ionosphere": (351, 34, 2),
    "sonar": (208, 60, 2),
    "wdbc": (569, 30, 2),
    "wine": (178, 13, 3),
    "yeast": (1484, 8, 10),
}


@pytest.fixture(scope="module")
def index(data_dir):
    with open(data_dir / "clustering_benchmarks_v1" / "index.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_list_has_220_datasets(data_dir):
    pairs = D.list_clustering_benchmarks(data_dir=data_dir)
    assert len(pairs) == 220
    assert len(D.list_clustering_benchmarks("uci", data_dir=data_dir)) == 8


@pytest.mark.parametrize("name", sorted(UCI))
def test_uci_shapes(data_dir, name):
    ds = D.load_clustering_benchmark("uci", name, data_dir=data_dir)
    n, d, k = UCI[name]
    assert ds.X.shape == (n, d) and ds.n_classes == k


@pytest.mark.parametrize(
    "battery, name",
    [("fcps", "target"), ("fcps", "engytime"), ("graves", "dense"), ("wut", "x2"), ("other", "iris")],
)
def test_rows_agree_with_index(data_dir, index, battery, name):
    ds = D.load_clustering_benchmark(battery, name, data_dir=data_dir)
    rows = [r for r in index if (r["battery"], r["dataset"]) == (battery, name)]
    assert sorted(ds.labels) == sorted(r["labels"] for r in rows)
    for r in rows:
        y = ds.labels[r["labels"]]
        assert ds.X.shape == (int(r["n"]), int(r["d"]))
        assert len(np.unique(y[y != 0])) == int(r["k"])
        assert int((y == 0).sum()) == int(r["noise"])
        assert ds.label_names[r["labels"]][0] == "noise"


@pytest.mark.parametrize(
    "battery, name, loader", [("uci", "wine", skd.load_wine), ("other", "iris", skd.load_iris)]
)
def test_equal_to_sklearn_copies(data_dir, battery, name, loader):
    ds, sk = D.load_clustering_benchmark(battery, name, data_dir=data_dir), loader()
    np.testing.assert_array_equal(ds.X, sk.data)
    np.testing.assert_array_equal(ds.y - 1, sk.target)  # clusters are numbered from 1 (0 = noise)
