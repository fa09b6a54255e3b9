"""Agreement between annotators on nominal answers: Cohen's kappa and Krippendorff's alpha.

* :func:`cohen_kappa`: two annotators who answered the same units,
  ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of units they answered alike and ``p_e`` the share
  expected by chance from each one's own answer frequencies (Cohen 1960).
* :func:`krippendorff_alpha`: any number of annotators, each unit answered by any two or more of them,
  ``alpha = 1 - D_o / D_e`` from the coincidence matrix of the values paired within units (Krippendorff 2011,
  "Computing Krippendorff's alpha-reliability", nominal metric). Units answered once are not pairable and are
  left out.

Both are 1 for perfect agreement and 0 for agreement at chance level; they are undefined (NaN, said in the
docstrings) when chance alone would give perfect agreement, e.g. every answer is the same value.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from jaxclust.errors import InvalidInputError

__all__ = ["cohen_kappa", "krippendorff_alpha"]


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two annotators' answers ``a`` and ``b`` (same length, one entry per unit, any hashable
    values). NaN when both gave one and the same value to every unit (``p_e = 1``: nothing to tell apart from
    chance)."""
    if len(a) != len(b):
        raise InvalidInputError(f"a, b: one answer per unit each, got {len(a)} and {len(b)}")
    if len(a) == 0:
        raise InvalidInputError("a, b: no unit answered by both")
    values = sorted(set(a) | set(b), key=repr)
    code = {v: k for k, v in enumerate(values)}
    x = np.array([code[v] for v in a])
    y = np.array([code[v] for v in b])
    p_o = float(np.mean(x == y))
    p_e = (
        float(np.sum(np.bincount(x, minlength=len(values)) * np.bincount(y, minlength=len(values))))
        / len(x) ** 2
    )
    return float("nan") if p_e == 1.0 else (p_o - p_e) / (1.0 - p_e)


def krippendorff_alpha(units: Sequence[Sequence[Hashable]]) -> float:
    """Krippendorff's alpha (nominal) of ``units``: for each unit, the values the annotators who answered it
    gave (any number, any hashable values; a unit with fewer than two values is not pairable and is left out).
    NaN when fewer than two pairable values exist or every pairable value is the same (no disagreement is
    possible, ``D_e = 0``)."""
    units = [list(u) for u in units]
    pairable = [u for u in units if len(u) >= 2]
    values = sorted({v for u in pairable for v in u}, key=repr)
    if not pairable or len(values) < 2:
        return float("nan")
    code = {v: k for k, v in enumerate(values)}
    V = len(values)
    o = np.zeros((V, V))  # coincidences: each ordered pair of values within a unit, weighted 1 / (m_u - 1)
    for u in pairable:
        counts = np.bincount([code[v] for v in u], minlength=V).astype(float)
        o += (np.outer(counts, counts) - np.diag(counts)) / (len(u) - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    disagree = ~np.eye(V, dtype=bool)
    d_o = o[disagree].sum()
    d_e = np.outer(n_c, n_c)[disagree].sum() / (n - 1.0)
    return float("nan") if d_e == 0 else float(1.0 - d_o / d_e)
