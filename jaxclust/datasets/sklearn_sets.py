"""Embedded default data: scikit-learn's bundled wine, digits and iris (no data directory needed)."""

from __future__ import annotations

import numpy as np

from jaxclust.datasets.base import Dataset

__all__ = ["load_wine", "load_digits", "load_iris"]

_UCI_LICENSE = (
    "UCI Machine Learning Repository, CC BY 4.0; redistributed in scikit-learn (BSD-3-Clause) as bundled data"
)


def _from_bunch(name: str, bunch, source: str) -> Dataset:
    X = np.ascontiguousarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    classes = [str(c) for c in bunch.target_names]
    return Dataset(
        name=name,
        X=X,
        texts=None,
        labels={"class": y},
        label_names={"class": classes},
        item_names=[f"{name}_{i}" for i in range(len(y))],
        feature_names=[str(f) for f in bunch.feature_names],
        target="class",
        description=str(bunch.DESCR),
        source=source,
        license=_UCI_LICENSE,
    )


def load_wine() -> Dataset:
    """Wine recognition: 178 wines x 13 chemical features, 3 cultivars (``sklearn.datasets.load_wine``)."""
    from sklearn.datasets import load_wine as sk_load

    return _from_bunch("wine", sk_load(), "scikit-learn sklearn.datasets.load_wine (UCI Wine, Forina et al.)")


def load_digits() -> Dataset:
    """Optical digits: 1,797 images x 64 pixel counts, 10 classes (``sklearn.datasets.load_digits``)."""
    from sklearn.datasets import load_digits as sk_load

    return _from_bunch(
        "digits",
        sk_load(),
        "scikit-learn sklearn.datasets.load_digits (UCI Optical Recognition of "
        "Handwritten Digits, test part)",
    )


def load_iris() -> Dataset:
    """Iris: 150 flowers x 4 measurements, 3 species (``sklearn.datasets.load_iris``)."""
    from sklearn.datasets import load_iris as sk_load

    return _from_bunch("iris", sk_load(), "scikit-learn sklearn.datasets.load_iris (Fisher 1936, UCI Iris)")
