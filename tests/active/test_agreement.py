"""Agreement between the annotators of one answer store (``jaxclust.active.agreement``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from jaxclust.active.agreement import UNNAMED, store_agreement
from jaxclust.metrics.agreement import krippendorff_alpha


def _rec(i, j, answer, who):
    return {"i": i, "j": j, "answer": answer, "kept": True, "round": 0, "annotator": who}


def test_kappa_per_two_annotators_alpha_overall_and_the_pairs_answered_both_ways():
    rng = np.random.default_rng(0)
    truth = rng.random(40) < 0.5
    answers = {
        who: np.where(rng.random(40) < err, ~truth, truth) for who, err in (("ann", 0.1), ("bob", 0.3))
    }
    records = [_rec(p, 100 + p, "must" if answers[w][p] else "cannot", w) for w in answers for p in range(40)]
    records += [
        _rec(p, 100 + p, "must", "cy") for p in range(10)
    ]  # cy: only the first 10 pairs, always "same"
    records += [_rec(200, 201, "cannot", "cy"), _rec(0, 100, "unknown", "dan")]  # answered once; don't know
    got = store_agreement(records)
    assert got["doubly_answered"] == 40
    pairs = {p["annotators"]: p for p in got["pairs"]}
    assert set(pairs) == {("ann", "bob"), ("ann", "cy"), ("bob", "cy")}  # dan said nothing about any pair
    a, b = answers["ann"], answers["bob"]
    assert pairs["ann", "bob"]["n"] == 40
    assert pairs["ann", "bob"]["agreement"] == pytest.approx(np.mean(a == b))
    assert pairs["ann", "bob"]["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert pairs["ann", "cy"]["n"] == 10
    assert pairs["ann", "cy"]["kappa"] == pytest.approx(
        cohen_kappa_score(a[:10], np.ones(10, bool)), abs=1e-12
    )
    units = [
        [("must" if answers[w][p] else "cannot") for w in ("ann", "bob")] + (["must"] if p < 10 else [])
        for p in range(40)
    ]
    assert got["alpha"] == pytest.approx(krippendorff_alpha(units), abs=1e-12)
    both_ways = [p for p in range(40) if len(set(units[p])) > 1]
    assert [d["i"] for d in got["disagreements"]] == both_ways
    assert got["annotators"]["dan"] == {"must": 0, "cannot": 0, "unknown": 1}
    assert got["annotators"]["cy"] == {"must": 10, "cannot": 1, "unknown": 0}


def test_the_latest_answer_of_an_annotator_counts_and_unnamed_answers_are_one_annotator():
    records = [
        _rec(0, 1, "cannot", "ann"),
        _rec(0, 1, "must", "ann"),  # ann changed her mind: "same" counts
        _rec(0, 1, "must", None),
        _rec(2, 3, "must", "ann"),
        _rec(2, 3, "cannot", None),
    ]
    got = store_agreement(records)
    assert got["doubly_answered"] == 2
    (pair,) = got["pairs"]
    assert pair["annotators"] == (UNNAMED, "ann") and pair["n"] == 2 and pair["agreement"] == 0.5  # sorted
    assert got["disagreements"] == [{"i": 2, "j": 3, "answers": {"ann": "must", UNNAMED: "cannot"}}]


def test_nothing_answered_twice():
    got = store_agreement([_rec(0, 1, "must", "ann"), _rec(1, 2, "cannot", "bob")])
    assert got["doubly_answered"] == 0 and got["pairs"] == [] and got["disagreements"] == []
    assert math.isnan(got["alpha"])
