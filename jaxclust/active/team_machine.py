"""A chat model in a team session: it answers the pool's questions first, people answer where it matters.

:class:`TeamMachine` is what :class:`~jaxclust.active.team.TeamSession` needs of a machine annotator (a
:class:`~jaxclust.active.chat.ChatOracle`): the routing of each pair, its calibrated error rates, the checks owed
and what a page shows. The session's machine thread takes pairs from the same pool as the people, best first, so
the most informative pairs go to whoever asks first and people never wait for the machine.

* **Where the machine's answer stands**: its replies agree and the model is not sure of the opposite (a share
  ``sure`` of its samples). The answer is stored under the machine's name and used as a soft answer with the
  machine's error rate for what it said.
* **Where a person answers instead**: the replies split (or all abstained), or the model is sure of the opposite;
  the pair goes to the next person who asks, with the reason.
* **Checks**: a share ``check`` of the machine's answers, by what it said (chosen by a seeded hash of the pair,
  so a restarted session owes the same ones), is owed a person's second opinion. The machine's two error rates
  (:class:`~jaxclust.active.chat.MachineRates`) are estimated from these checks and what it said about the
  pairs nobody checked, not from the other pairs people answer about, which are chosen where the machine is
  likelier to be wrong; they are rebuilt from the store, so a restarted session keeps its calibration.
* **Review**: a person may go through the machine's answers in order of doubt (the share of the model's
  samples that say the opposite); a person's answer that differs overrules it (:meth:`TeamMachine.overruled`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxclust.active.answer_log import UNNAMED
from jaxclust.active.chat import (
    CHECK,
    ChatOracle,
    MachineRates,
    check_shares,
    contradicts,
    is_checked,
    verdict_of,
)
from jaxclust.active.replies import WORDS
from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_float, seed_from

__all__ = ["TeamMachine"]

Pair = tuple[int, int]


class TeamMachine:
    """A chat model answering a team session's questions first (see the module docstring).

    Parameters
    ----------
    oracle : ChatOracle
        Its ``annotator`` is the machine's name in the store.
    check : float in [0, 1] or dict
        The share of the machine's answers also asked of a person: one for both answers, or ``{"must": share,
        "cannot": share}`` (default :data:`~jaxclust.active.chat.CHECK`).
    sure : float in [0.5, 1] or None
        A verdict against what at least this share of the model's samples say goes to a person (None: never).
    random_state : int
        Seeds the choice of checked pairs.
    prior : (float, float)
        The Beta prior of each error rate (:class:`~jaxclust.active.chat.MachineRates`).

    Attributes
    ----------
    name : str
    rates : MachineRates
        From the checked pairs in the store (:meth:`calibrate`).
    for_people : dict
        Pairs the machine handed to people, each with the reason, oldest first.
    error : str or None
        The machine's last failure (a request that failed after its retries); it tries again later.
    stopped : str or None
        Why it stopped for good (its request budget is spent).
    """

    def __init__(
        self,
        oracle: ChatOracle,
        check=None,
        sure: float = 0.95,
        random_state: int = 0,
        prior: tuple[float, float] = (1.0, 9.0),
    ):
        if not isinstance(oracle, ChatOracle):
            raise InvalidInputError(f"oracle: expected a ChatOracle, got {type(oracle).__name__}")
        self.oracle, self.name = oracle, oracle.annotator
        self.check = check_shares(CHECK if check is None else check)
        self.sure = None if sure is None else check_float(sure, "sure", minimum=0.5, maximum=1.0)
        self.seed = seed_from(random_state)
        self.prior = prior
        self.rates = MachineRates(prior)
        self.for_people: dict[Pair, str] = {}
        self.routed = {"machine": 0, "split": 0, "contradicts": 0}
        self.error: str | None = None
        self.stopped: str | None = None

    def checked(self, i: int, j: int, said: str) -> bool:
        """Whether a person owes a second opinion on the machine's answer ``said`` about ``(i, j)``."""
        return said in self.check and is_checked(self.seed, i, j, self.check[said])

    def calibrate(self, by_pair: dict[Pair, dict[str, str]]) -> None:
        """The error rates from ``by_pair`` (pair -> {annotator: must/cannot}, the answers in effect): each
        checked pair a person answered (each person's answer counts), and each unchecked pair, by what the
        machine said: its stored answer, or its unanimous votes on a pair it handed to people (a checked pair
        no person has answered yet says nothing)."""
        self.rates = MachineRates(self.prior)
        for p, answers in by_pair.items():
            said = answers.get(self.name)
            if said is None:  # a pair it handed to people: what its votes said
                votes = self.oracle.known(*p)
                said = "unknown" if votes is None else verdict_of(votes)
            if said not in ("must", "cannot"):
                continue
            if not self.checked(*p, said):
                self.rates.saw(said)
                continue
            for who, theirs in answers.items():
                if who != self.name:
                    self.rates.add(said, theirs)

    def recalibrate(self, by_pair: dict[Pair, dict[str, str]]) -> bool:
        """:meth:`calibrate` again; returns whether the rates moved (its answers then weigh otherwise)."""
        before = self.rates.false_same, self.rates.false_different
        self.calibrate(by_pair)
        return (self.rates.false_same, self.rates.false_different) != before

    def failed(self, message: str) -> None:
        """A request that failed after its retries (the session goes on; the machine tries the next pair)."""
        self.error = message

    def error_rate(self, answer: str) -> float:
        """The error rate the machine's ``answer`` (``"must"`` or ``"cannot"``) gets as a soft answer."""
        return self.rates.error_rate(answer)

    def route(self, p: Pair, samples: np.ndarray | None) -> tuple[str, str | None]:
        """Ask the chat model about ``p`` (a request the first time): ``(verdict, None)`` when its answer stands,
        ``(verdict, reason)`` when the pair goes to a person. May raise what the endpoint raises."""
        same, different, unread = self.oracle.votes(*p)
        verdict = self.oracle.answer(*p)
        if verdict == "unknown":
            self.routed["split"] += 1
            tally = f"{same} same, {different} different" + (f", {unread} unread" if unread else "")
            return verdict, f"the chat model's replies split ({tally})"
        if contradicts(samples, p[0], p[1], verdict, self.sure):
            self.routed["contradicts"] += 1
            return verdict, (f"the chat model says {WORDS[verdict]}, but the model is sure of the opposite")
        self.routed["machine"] += 1
        return verdict, None

    @staticmethod
    def doubt(samples: np.ndarray | None, p: Pair, verdict: str) -> float:
        """The share of the partitions ``samples`` (S, n) that say the opposite of ``verdict`` about ``p``
        (0 without samples)."""
        if samples is None:
            return 0.0
        together = float(np.mean(samples[:, p[0]] == samples[:, p[1]]))
        return 1.0 - together if verdict == "must" else together

    def to_review(
        self, by_pair: dict[Pair, dict[str, str]], samples: np.ndarray | None, free
    ) -> tuple | None:
        """``(pair, reason)``: among the pairs of ``by_pair`` that only the machine answered and ``free(pair)``
        allows, the one whose answer the ``samples`` (S, n) doubt most (the first such pair on a tie); None
        when there is none."""
        mine = [(p, a[self.name]) for p, a in by_pair.items() if set(a) == {self.name} and free(p)]
        if not mine:
            return None
        p, said = max(mine, key=lambda pa: (self.doubt(samples, *pa), -pa[0][0], -pa[0][1]))
        share = self.doubt(samples, p, said)
        return p, f"the chat model said {WORDS[said]}; {share:.0%} of the model's samples say otherwise"

    def overruled(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The machine's answers among ``records`` (the answers in effect) that a person answered otherwise:
        ``i``, ``j``, ``machine`` (its answer) and ``people`` ({annotator: answer} of those who disagree), in
        pair order."""
        by_pair: dict[Pair, dict[str, str]] = {}
        for rec in records:
            if rec["answer"] != "unknown":
                by_pair.setdefault((rec["i"], rec["j"]), {})[rec.get("annotator") or UNNAMED] = rec["answer"]
        out = []
        for p in sorted(by_pair):
            said = by_pair[p].get(self.name)
            if said is None:
                continue
            against = {w: a for w, a in by_pair[p].items() if w != self.name and a != said}
            if against:
                out.append({"i": p[0], "j": p[1], "machine": said, "people": against})
        return out

    def status(self) -> dict[str, Any]:
        """``name``, ``false_same``, ``false_different``, ``n_checked``, ``n_unchecked`` (its answers nobody
        checked, which the rates also learn from), ``routed`` (pairs by route since the
        start), ``for_people`` (pairs handed to people, not yet answered), ``usage`` (the endpoint's counts),
        ``error`` and ``stopped``."""
        return {
            "name": self.name,
            "false_same": self.rates.false_same,
            "false_different": self.rates.false_different,
            "n_checked": self.rates.n_checked,
            "n_unchecked": self.rates.n_unchecked,
            "routed": dict(self.routed),
            "for_people": len(self.for_people),
            "usage": self.oracle.endpoint.usage.as_dict(),
            "error": self.error,
            "stopped": self.stopped,
        }
