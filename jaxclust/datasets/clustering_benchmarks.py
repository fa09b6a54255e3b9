"""Gagolewski's clustering benchmark battery v1 (folder ``clustering_benchmarks_v1``): 220 data sets with
386 reference partitions (fcps, g2mg, graves, h2mg, other, sipu, uci, wut)."""

from __future__ import annotations

import functools
import os
import re

import numpy as np

from jaxclust.datasets.base import Dataset, check_choice, dataset_folder, file_errors, read_csv_rows
from jaxclust.errors import InvalidInputError

__all__ = ["load_clustering_benchmark", "list_clustering_benchmarks", "BENCHMARK_BATTERIES"]

FOLDER = "clustering_benchmarks_v1"
BENCHMARK_BATTERIES = ("fcps", "g2mg", "graves", "h2mg", "other", "sipu", "uci", "wut")


@functools.lru_cache(maxsize=2)
def _index(path: str) -> tuple[dict, ...]:
    return tuple(read_csv_rows(path, required=("battery", "dataset")))


@functools.lru_cache(maxsize=32)
def _loadtxt(path: str, ndmin: int, dtype: str) -> np.ndarray:
    """``np.loadtxt`` cached in-process; the cached array is read-only (callers copy)."""
    with file_errors(path):
        arr = np.loadtxt(path, ndmin=ndmin, dtype=dtype)
    arr.flags.writeable = False
    return arr


def list_clustering_benchmarks(
    battery: str | None = None, data_dir: str | os.PathLike | None = None
) -> list[tuple[str, str]]:
    """``(battery, dataset)`` pairs of the battery index, one per data set, in ``index.csv`` order."""
    if battery is not None:
        check_choice(battery, "battery", BENCHMARK_BATTERIES)
    folder = dataset_folder(FOLDER, ["index.csv"], data_dir)
    out: list[tuple[str, str]] = []
    for r in _index(str(folder / "index.csv")):
        key = (r["battery"], r["dataset"])
        if (battery is None or r["battery"] == battery) and key not in out:
            out.append(key)
    return out


def load_clustering_benchmark(battery: str, name: str, data_dir: str | os.PathLike | None = None) -> Dataset:
    """One benchmark data set with all its reference partitions.

    Parameters
    ----------
    battery : {"fcps", "g2mg", "graves", "h2mg", "other", "sipu", "uci", "wut"}
    name : str
        Data set name within the battery, e.g. ``"wine"`` in ``"uci"``, ``"iris"`` in ``"other"``.
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).

    Returns
    -------
    Dataset
        ``X`` (n, d) float64; ``labels["labels0"]``, ``labels["labels1"]``, ... the alternative reference
        partitions with the battery's coding: **0 = noise point** (not a cluster), clusters 1..k, so
        ``label_names[key][0] == "noise"``; ``target = "labels0"``; ``extra["noise_label"] = 0``.
    """
    check_choice(battery, "battery", BENCHMARK_BATTERIES)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", name) or name.startswith("."):
        raise InvalidInputError(f"name={name!r} is not a benchmark data set name")
    sub = f"{FOLDER}/{battery}"
    folder = dataset_folder(sub, [f"{name}.data.gz", f"{name}.labels0.gz"], data_dir)
    X = np.array(_loadtxt(str(folder / f"{name}.data.gz"), 2, "float64"))
    labels, names = {}, {}
    j = 0
    while (folder / f"{name}.labels{j}.gz").is_file():
        y = np.array(_loadtxt(str(folder / f"{name}.labels{j}.gz"), 1, "int64"))
        labels[f"labels{j}"] = y
        names[f"labels{j}"] = ["noise"] + [str(c) for c in range(1, int(y.max()) + 1)]
        j += 1
    desc_path = folder / f"{name}.txt"
    description = desc_path.read_text(encoding="utf-8", errors="replace") if desc_path.is_file() else ""
    return Dataset(
        name=f"{battery}/{name}",
        X=X,
        texts=None,
        labels=labels,
        label_names=names,
        item_names=[f"{battery}/{name}/{i}" for i in range(X.shape[0])],
        feature_names=[f"x{c}" for c in range(X.shape[1])],
        target="labels0",
        description=description,
        source=(
            "Gagolewski M., A framework for benchmarking clustering algorithms, SoftwareX 20:101270, 2022 "
            "(gagolews/clustering-data-v1 v1.1.0); original source in the description"
        ),
        license="Repository AGPL-3.0; data provided solely for research purposes unless stated otherwise.",
        extra={"noise_label": 0},
    )
