"""Pang & Lee subjectivity v1.0: 5,000 + 5,000 sentences equal to the original files."""

from __future__ import annotations

import numpy as np

from jaxclust import datasets as D


def test_counts_and_texts_match_original_files(data_dir):
    ds = D.load_subjectivity(data_dir=data_dir)
    assert len(ds) == 10000
    assert ds.label_names["subjectivity"] == ["objective", "subjective"]
    np.testing.assert_array_equal(np.bincount(ds.y), [5000, 5000])
    orig = data_dir / "pang_lee_subjectivity_v1" / "original"
    quote = (orig / "quote.tok.gt9.5000").read_text(encoding="utf-8").splitlines()
    plot = (orig / "plot.tok.gt9.5000").read_text(encoding="utf-8").splitlines()
    # quote lines (subjective) first, then plot lines (objective), in file order
    assert ds.texts[:5000] == [s.strip() for s in quote]
    assert ds.texts[5000:] == [s.strip() for s in plot]
    assert (ds.y[:5000] == 1).all() and (ds.y[5000:] == 0).all()
    assert ds.item_names == [str(i) for i in range(10000)]
    assert "CC BY 4.0" in ds.license
    assert all(len(t.split()) >= 10 for t in ds.texts)
