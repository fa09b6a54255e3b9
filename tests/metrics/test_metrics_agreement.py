"""Cohen's kappa and Krippendorff's alpha against a published worked example and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from jaxclust.errors import InvalidInputError
from jaxclust.metrics.agreement import cohen_kappa, krippendorff_alpha

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the nominal example: 4 observers, 12
# units, None where an observer gave no value; 40 pairable values, 4 coincidences of two different values and
# sum_{c != k} n_c n_k = 608, so alpha = 1 - (40 - 1) * 4 / 608 = 0.743
EXAMPLE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def _units(matrix):
    return [[row[u] for row in matrix if row[u] is not None] for u in range(len(matrix[0]))]


def test_alpha_is_the_published_value_of_the_worked_example():
    assert krippendorff_alpha(_units(EXAMPLE)) == pytest.approx(1 - 39 * 4 / 608, abs=1e-12)
    assert round(krippendorff_alpha(_units(EXAMPLE)), 3) == 0.743
    # the values are only labels: renaming them, or the observers' order within units, changes nothing
    names = {1: "a", 2: "b", 3: "c", 4: "d", 5: "e"}
    renamed = [[names[v] for v in reversed(u)] for u in _units(EXAMPLE)]
    assert krippendorff_alpha(renamed) == pytest.approx(krippendorff_alpha(_units(EXAMPLE)), abs=1e-12)


def test_alpha_limits():
    assert krippendorff_alpha([["same", "same"], ["diff", "diff", "diff"], ["same", "same"]]) == 1.0
    # unit 3 has one value: not pairable, left out (same alpha as without it)
    assert krippendorff_alpha([[1, 2], [2, 2], [1]]) == krippendorff_alpha([[1, 2], [2, 2]])
    # two observers who always disagree on two values: alpha = 1 - D_o / D_e = 1 - 4 / (2 * 2 * 2 / 3) < 0
    assert krippendorff_alpha([[1, 2], [2, 1]]) == pytest.approx(1 - 4 / (8 / 3))
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1]]))  # no disagreement possible
    assert math.isnan(krippendorff_alpha([[1], [2]]))  # nothing pairable


@pytest.mark.parametrize("seed", range(4))
def test_kappa_is_scikit_learns(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, 60)
    b = np.where(rng.random(60) < 0.6, a, rng.integers(0, 3, 60))
    assert cohen_kappa(a.tolist(), b.tolist()) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    words = np.array(["must", "cannot", "unknown"])
    assert cohen_kappa(words[a].tolist(), words[b].tolist()) == pytest.approx(
        cohen_kappa_score(a, b), abs=1e-12
    )


def test_kappa_limits_and_errors():
    assert cohen_kappa(["must", "cannot"], ["must", "cannot"]) == 1.0
    assert cohen_kappa(["must", "cannot"], ["cannot", "must"]) == -1.0
    assert math.isnan(cohen_kappa(["must", "must"], ["must", "must"]))  # chance agreement is 1
    with pytest.raises(InvalidInputError, match="one answer per unit each, got 2 and 1"):
        cohen_kappa(["must", "must"], ["must"])
    with pytest.raises(InvalidInputError, match="no unit"):
        cohen_kappa([], [])
