"""The active clustering suite (``experiments/active_suite.py``): its data, its summary, its COBRAS shim."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxclust.apps.experiment.registry import KINDS, load_target


def _suite():
    import sys

    return sys.modules[load_target(KINDS["active_suite"].run).__module__]


def test_synthetic_subtype_sets_are_unions_of_blobs():
    suite = _suite()
    X, y = suite.load("blobs_subtypes")
    assert X.shape == (400, 6) and np.bincount(y).tolist() == [120, 80, 120, 80]
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)  # standardised
    # every class is 2-3 blobs: k-means with 10 clusters is pure (each cluster inside one class)
    from sklearn.cluster import KMeans

    km = KMeans(10, n_init=10, random_state=0).fit_predict(X)
    assert all(len(np.unique(y[km == c])) == 1 for c in range(10))
    assert len(np.unique(KMeans(4, n_init=10, random_state=0).fit_predict(X) * 10 + y)) > 4
    Xd, yd = suite.load("digits_groups")
    assert Xd.shape[0] == 600 and sorted(np.unique(yd)) == [0, 1, 2]


def _record(dataset, method, seed, ari, oracle="gold"):
    return {
        "result": {
            "dataset": dataset,
            "method": method,
            "seed": seed,
            "oracle": oracle,
            "ari": ari,
            "v_beta": [a / 2 for a in ari],
            "seconds_per_question": 0.1,
        }
    }


def test_summary_means_over_seeds_and_counts_sets_at_or_above_cobras(tmp_path):
    suite = _suite()
    curve = lambda v: [0.0] + [v] * 100  # noqa: E731
    records = [
        _record("a", "explore_classes", 0, curve(0.8)),
        _record("a", "explore_classes", 1, curve(0.6)),
        _record("a", "cobras", 0, curve(0.7)),
        _record("b", "explore_classes", 0, curve(0.5)),
        _record("b", "cobras", 0, curve(0.9)),
    ]
    out = suite.summarize(records, tmp_path)
    row = next(t for t in out["table"] if t["dataset"] == "a" and t["method"] == "explore_classes")
    assert row["ari@60"] == pytest.approx(0.7) and row["v_beta@60"] == pytest.approx(0.35)
    assert row["auc_ari"] == pytest.approx(0.7 * 100 / 101) and "ari@200" not in row
    assert out["verdict"]["gold"]["at_or_above_cobras_at_60"] == 1 and out["verdict"]["gold"]["of"] == 2
    assert json.loads((tmp_path / "active_suite.json").read_text())["verdict"] == out["verdict"]
    assert (tmp_path / "active_suite_gold.png").stat().st_size > 1000


def test_summary_of_folders_takes_only_the_methods_a_folder_is_given_with(tmp_path):
    """``FOLDER:cobras`` contributes its COBRAS runs only: an older grid's runs of the default session do not
    mix with a newer grid's."""
    suite = _suite()
    curve = lambda v: [0.0] + [v] * 100  # noqa: E731
    for name, recs in {
        "old": [_record("a", "cobras", 0, curve(0.7)), _record("a", "explore_classes", 0, curve(0.1))],
        "new": [_record("a", "explore_classes", 0, curve(0.9))],
    }.items():
        (tmp_path / name / "runs").mkdir(parents=True)
        for k, rec in enumerate(recs):
            (tmp_path / name / "runs" / f"{k}.json").write_text(json.dumps(rec))
    out = suite.summarize_folders([tmp_path / "new", f"{tmp_path / 'old'}:cobras"], tmp_path / "out")
    ours = next(t for t in out["table"] if t["method"] == "explore_classes")
    assert ours["ari@60"] == pytest.approx(0.9) and ours["seeds"] == [0]
    assert out["verdict"]["gold"]["sets"] == [{"dataset": "a", "ours": 0.9, "cobras": 0.7}]


def test_cobras_runs_through_the_shim_at_equal_numbers_of_questions():
    pytest.importorskip("cobras_ts")
    suite = _suite()
    X, y = suite.load("blobs_subtypes")
    asked = []

    def answer(i, j):
        asked.append((i, j))
        return "must" if y[i] == y[j] else "cannot"

    curve, _ = suite.cobras_curve(X, y, 30, answer)
    assert len(curve) == 31 and len(asked) <= 30
    assert not np.any(curve[0])  # no answer: one cluster
