"""How far the annotators of one answer store agree, on the pairs two or more of them answered.

:func:`store_agreement` reads answer records (:attr:`jaxclust.active.AnswerStore.records`: undone answers are
already left out) and keeps, for every pair, each annotator's latest "same" or "different" answer ("don't know"
says nothing about the pair and is left out). A pair answered by two or more annotators is *doubly answered*.
For each two annotators it reports the pairs both answered, the share answered alike and Cohen's kappa; over
everybody, Krippendorff's alpha (nominal) on the doubly answered pairs; and the pairs answered both ways, for
review. :func:`error_rates` turns each annotator's measured agreement into the error rate a disputed answer of
theirs is given.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from jaxclust.active.answer_log import UNNAMED
from jaxclust.metrics.agreement import cohen_kappa, krippendorff_alpha

__all__ = ["store_agreement", "error_rates", "UNNAMED", "PRIOR_AGREEMENT", "PRIOR_WEIGHT"]

#: How answers stored without an annotator are counted: as one annotator of this name.
#: Before any doubly answered pair, an annotator is taken to agree with the others on this share of pairs ...
PRIOR_AGREEMENT = 0.9
#: ... with the weight of this many pairs (their measured agreement takes over as doubly answered pairs come).
PRIOR_WEIGHT = 10.0


def store_agreement(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Agreement among the annotators of ``records`` (answer records: ``i``, ``j``, ``answer``, ``annotator``).

    Returns a dict:

    * ``annotators``: ``{name: {"must": int, "cannot": int, "unknown": int}}``, every record counted;
    * ``doubly_answered``: the number of pairs two or more annotators answered "same" or "different";
    * ``pairs``: one entry per two annotators who share at least one such pair: ``annotators`` (the two
      names), ``n`` (pairs both answered), ``agreement`` (share answered alike) and ``kappa`` (Cohen's kappa,
      NaN when both gave one and the same answer to every shared pair);
    * ``alpha``: Krippendorff's alpha over the doubly answered pairs (NaN when there is none, or when every
      answer on them is the same);
    * ``disagreements``: ``{"i", "j", "answers": {name: answer}}`` for every pair answered both ways, in pair
      order.
    """
    counts: dict[str, dict[str, int]] = {}
    by_pair: dict[tuple[int, int], dict[str, str]] = {}
    for rec in records:
        who = rec.get("annotator") or UNNAMED
        counts.setdefault(who, {"must": 0, "cannot": 0, "unknown": 0})[rec["answer"]] += 1
        if rec["answer"] != "unknown":
            by_pair.setdefault((rec["i"], rec["j"]), {})[who] = rec["answer"]  # the latest counts
    shared = {p: a for p, a in sorted(by_pair.items()) if len(a) >= 2}
    pairs = []
    for x, y in combinations(sorted(counts), 2):
        both = [(a[x], a[y]) for a in shared.values() if x in a and y in a]
        if both:
            ax, ay = zip(*both, strict=True)
            pairs.append(
                {
                    "annotators": (x, y),
                    "n": len(both),
                    "agreement": sum(u == v for u, v in both) / len(both),
                    "kappa": cohen_kappa(ax, ay),
                }
            )
    return {
        "annotators": counts,
        "doubly_answered": len(shared),
        "pairs": pairs,
        "alpha": krippendorff_alpha([list(a.values()) for a in shared.values()]),
        "disagreements": [
            {"i": i, "j": j, "answers": dict(a)} for (i, j), a in shared.items() if len(set(a.values())) > 1
        ],
    }


def error_rates(
    records: list[dict[str, Any]], floor: float = 0.01, ceiling: float = 0.45
) -> dict[str, float]:
    """The error rate of each annotator of ``records``, from how often they agree with the others.

    Two annotators who err independently with rates ``e`` agree with probability ``(1 - e)^2 + e^2 ~ 1 - 2e``;
    so annotator ``a``, who agreed on ``m_a`` of the ``n_a`` doubly answered pairs they share with others, gets
    ``e_a = (1 - agree_a) / 2`` with ``agree_a = (m_a + PRIOR_AGREEMENT * PRIOR_WEIGHT) / (n_a + PRIOR_WEIGHT)``
    (0.05 before any shared pair), clipped to ``[floor, ceiling]``. Returns ``{name: rate}`` for every
    annotator in ``records`` (answers without one under :data:`UNNAMED`).
    """
    stats = store_agreement(records)
    shared: dict[str, list[float]] = {who: [0.0, 0.0] for who in stats["annotators"]}
    for p in stats["pairs"]:
        for who in p["annotators"]:
            shared[who][0] += p["agreement"] * p["n"]
            shared[who][1] += p["n"]
    out = {}
    for who, (agreed, n) in shared.items():
        agree = (agreed + PRIOR_AGREEMENT * PRIOR_WEIGHT) / (n + PRIOR_WEIGHT)
        out[who] = float(min(max((1.0 - agree) / 2.0, floor), ceiling))
    return out
