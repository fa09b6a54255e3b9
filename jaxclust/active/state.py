"""What a session knows, and how one answer changes it.

* :class:`SessionState`: the constraints kept, every answer used, the pairs never to ask again, the conflicts and
  the current samples.
* :func:`apply_answer` adds one answer (a hard constraint, an observation with an error rate, or "don't know");
  it is the only place answers become constraints. :func:`replay` applies many at once, with the same result.
* A hard answer that contradicts the kept ones is dropped; :class:`KeptAnswers` names the earlier answers it
  contradicts, and :func:`describe_conflict` says so in one line.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

from jaxclust.constraints import Constraints
from jaxclust.must_link_closure import shortest_path

__all__ = ["SessionState", "apply_answer", "replay", "KeptAnswers", "describe_conflict"]


@dataclass
class SessionState:
    """What a session knows. ``answers``: every answer used, in order (``i``, ``j``, ``answer``,
    ``annotator``, ``kept``); ``unknown``/``soft``/``taken``: pairs not to ask (answered "don't know",
    answered with an error rate, claimed by another live session); ``dropped``/``conflicts``: hard answers
    dropped as contradictory and why; ``samples`` (S, n) the partitions questions are about, ``components``
    (n,) the model's best sample."""

    initial: Constraints
    constraints: Constraints
    graph: KeptAnswers
    answers: list = field(default_factory=list)
    unknown: set = field(default_factory=set)
    soft: set = field(default_factory=set)
    taken: set = field(default_factory=set)
    dropped: list = field(default_factory=list)
    conflicts: list = field(default_factory=list)
    asked: int = 0
    n_fits: int = 0
    samples: Any = None
    components: Any = None
    stale: bool = False
    round_answers: int = 0

    @classmethod
    def start(cls, initial: Constraints) -> SessionState:
        return cls(
            initial=initial,
            constraints=initial,
            graph=KeptAnswers(initial),
            soft={(min(i, j), max(i, j)) for i, j, _, _ in initial.answers},
        )

    def reset(self) -> None:
        """Back to no answer (the samples are kept, marked stale)."""
        fresh = SessionState.start(self.initial)
        for name in ("constraints", "graph", "answers", "unknown", "soft", "dropped", "conflicts", "asked"):
            setattr(self, name, getattr(fresh, name))
        self.stale = True

    def excluded(self) -> set[tuple[int, int]]:
        return self.unknown | self.taken | self.soft if (self.taken or self.soft) else self.unknown


def apply_answer(state: SessionState, rec: dict, rate: float) -> tuple[bool, bool]:
    """Add the answer ``rec`` (``i``, ``j``, ``answer``, ``annotator``) given with error rate ``rate``.

    Returns ``(kept, changed)``: whether it became a constraint or observation, and whether the constraints
    changed. A hard answer that contradicts the kept ones is dropped and its conflict explained.
    """
    a, b, answer = min(rec["i"], rec["j"]), max(rec["i"], rec["j"]), rec["answer"]
    who = rec.get("annotator")
    kept, changed = True, False
    if answer == "unknown":
        state.unknown.add((a, b))
    elif rate > 0:  # an observation: never dropped, never contradicts
        state.constraints = state.constraints.with_answer(a, b, answer == "must", rate)
        state.soft.add((a, b))
        changed = True
    else:
        new = state.constraints.with_constraint(a, b, answer == "must")
        kept = changed = len(new.dropped) == len(state.constraints.dropped)
        number = len(state.answers) + 1
        if kept:
            state.graph.add(a, b, answer == "must", who, number)
        else:
            state.dropped.append((a, b, answer))
            state.conflicts.append(state.graph.explain(state.constraints, a, b, answer, who, number))
        state.constraints = new
    state.answers.append({"i": a, "j": b, "answer": answer, "annotator": who, "kept": kept})
    state.asked += 1
    return kept, changed


def replay(state: SessionState, records: list[dict], rates: list[float]) -> None:
    """Apply ``records`` (each with its error rate in ``rates``) to a state that holds no answer yet (just
    started or :meth:`~SessionState.reset`): the same state as :func:`apply_answer` on each in turn, but the
    constraints are built once, in time linear in the number of answers instead of quadratic."""
    ini = state.constraints
    if state.answers or ini.dropped:
        for rec, rate in zip(records, rates, strict=True):
            apply_answer(state, rec, rate)
        return
    prefix = [(i, j, kind) for i, j, kind in ini.pairs] + list(ini.answers)
    entries: list[tuple] = []
    for rec, rate in zip(records, rates, strict=True):
        if rec["answer"] != "unknown":
            a, b = min(rec["i"], rec["j"]), max(rec["i"], rec["j"])
            entries.append((a, b, rec["answer"]) if rate <= 0 else (a, b, rec["answer"], rate))
    cons = Constraints.from_answers(ini.n, prefix + entries, on_conflict="drop")
    drops, d, e = list(cons.dropped), 0, 0
    for rec, rate in zip(records, rates, strict=True):
        a, b, answer = min(rec["i"], rec["j"]), max(rec["i"], rec["j"]), rec["answer"]
        who, kept = rec.get("annotator"), True
        if answer == "unknown":
            state.unknown.add((a, b))
        elif rate > 0:
            state.soft.add((a, b))
            e += 1
        else:
            number = len(state.answers) + 1
            if d < len(drops) and drops[d] == ((a, b), answer):
                kept, d = False, d + 1
                state.dropped.append((a, b, answer))
                before = Constraints.from_answers(ini.n, prefix + entries[:e], on_conflict="drop")
                state.conflicts.append(state.graph.explain(before, a, b, answer, who, number))
            else:
                state.graph.add(a, b, answer == "must", who, number)
            e += 1
        state.answers.append({"i": a, "j": b, "answer": answer, "annotator": who, "kept": kept})
        state.asked += 1
    state.constraints = cons


class KeptAnswers:
    """The kept must-link / cannot-link answers as a graph, to name the answers a dropped one contradicts."""

    def __init__(self, initial: Constraints):
        self.must: dict[int, list[tuple[int, dict]]] = collections.defaultdict(list)
        self.cannot: list[tuple[int, int, dict]] = []
        for a, b, kind in initial.pairs:
            self.add(a, b, kind == "must", None, None)

    def add(self, a: int, b: int, must: bool, who: str | None, number: int | None) -> None:
        rec = {"number": number, "i": a, "j": b, "answer": "must" if must else "cannot", "annotator": who}
        if must:
            self.must[a].append((b, rec))
            self.must[b].append((a, rec))
        else:
            self.cannot.append((a, b, rec))

    def _path(self, src: int, dst: int) -> list[dict]:
        """The must-link answers on a shortest path from ``src`` to ``dst``."""
        return [rec for _, _, rec in shortest_path(self.must, src, dst)]

    def explain(self, cons: Constraints, a: int, b: int, answer: str, who: str | None, number: int) -> dict:
        """The conflict of a dropped answer: ``{"answer": its record, "contradicts": [earlier records]}``."""
        because: list[dict] = []
        if answer == "cannot":  # a and b are joined by must-links
            because = self._path(a, b)
        else:  # their groups are cannot-linked
            g = cons.group_of
            for c, d, rec in self.cannot:
                if {int(g[c]), int(g[d])} == {int(g[a]), int(g[b])}:
                    if g[c] != g[a]:
                        c, d = d, c
                    because = [*self._path(a, c), rec, *self._path(d, b)]
                    break
        mine = {"number": number, "i": a, "j": b, "answer": answer, "annotator": who}
        return {"answer": mine, "contradicts": because, "message": describe_conflict(mine, because)}


def _describe_answer(rec: dict) -> str:
    kind = "same cluster" if rec["answer"] == "must" else "different clusters"
    if rec.get("number") is None:
        return f"the initial constraint {rec['i']}-{rec['j']} ({kind})"
    who = rec.get("annotator") or "an unknown annotator"
    return f"answer {rec['number']} ({rec['i']}-{rec['j']}: {kind}, by {who})"


def describe_conflict(answer: dict, contradicts: list[dict]) -> str:
    """One line naming a dropped answer and the earlier answers it contradicts (with who gave them)."""
    earlier = ", ".join(_describe_answer(r) for r in contradicts) or "earlier answers"
    return f"{_describe_answer(answer)} contradicts {earlier}; it is recorded but not used as a constraint"
