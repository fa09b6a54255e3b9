"""A chat model in a team session: it answers the pool's questions first, people answer where it matters.

:class:`TeamMachine` is what :class:`~jaxclust.active.team.TeamSession` needs of a machine annotator (a
:class:`~jaxclust.active.chat.ChatOracle`): the routing of each pair, its calibrated error rates, the checks owed
and what a page shows. The session's machine thread takes pairs from the same pool as the people, best first, so
the most informative pairs go to whoever asks first and people never wait for the machine.

* **Where the machine's answer stands**: its replies agree, or split with a majority, and the model is not sure
  of the opposite (a share ``sure`` of its samples). A unanimous answer is stored under the machine's name, a
  majority's under its split name (``oracle.split_annotator``); each is used as a soft answer with the error
  rate of its kind for what it said.
* **Where a person answers instead**: the replies tie (or all abstained), or the model is sure of the opposite;
  the pair goes to the next person who asks, with the reason.
* **Checks**: a share of each kind's answers (``check``, ``split_check``), by what it said (chosen by a seeded
  hash of the pair, so a restarted session owes the same ones), is owed a person's second opinion. Each kind's
  two error rates (:class:`~jaxclust.active.chat.MachineRates`) are estimated from these checks and what it said
  about the pairs nobody checked, not from the other pairs people answer about, which are chosen where the
  machine is likelier to be wrong; they are rebuilt from the store, so a restarted session keeps its
  calibration.
* **Review**: a person may go through the machine's answers in order of doubt (the share of the model's
  samples that say the opposite); a person's answer that differs overrules it (:meth:`TeamMachine.overruled`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxclust.active.answer_log import UNNAMED
from jaxclust.active.chat import (
    CHECK,
    SPLIT_PRIOR,
    ChatOracle,
    MachineRates,
    check_shares,
    contradicts,
    is_checked,
    kind_of,
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
        The Beta prior of each error rate of its unanimous answers (:class:`~jaxclust.active.chat.MachineRates`;
        its majority answers': :data:`~jaxclust.active.machine_rates.SPLIT_PRIOR`).
    split_check : float in [0, 1] or dict or None
        The share of its answers by the majority of split replies asked of a person (default: ``check``'s); 1
        hands every split to people.

    Attributes
    ----------
    name, split_name : str
        The names its unanimous and its majority answers are stored under.
    rates, split_rates : MachineRates
        Each kind's, from the checked pairs in the store (:meth:`calibrate`).
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
        split_check=None,
    ):
        if not isinstance(oracle, ChatOracle):
            raise InvalidInputError(f"oracle: expected a ChatOracle, got {type(oracle).__name__}")
        self.oracle, self.name, self.split_name = oracle, oracle.annotator, oracle.split_annotator
        self.names = (self.name, self.split_name)
        self.check = check_shares(CHECK if check is None else check)
        self.split_check = self.check if split_check is None else check_shares(split_check, "split_check")
        self.sure = None if sure is None else check_float(sure, "sure", minimum=0.5, maximum=1.0)
        self.seed = seed_from(random_state)
        self.prior = prior
        self.rates = MachineRates(prior)
        self.split_rates = MachineRates(SPLIT_PRIOR)
        self.for_people: dict[Pair, str] = {}
        self.routed = {"machine": 0, "majority": 0, "tie": 0, "contradicts": 0}
        self.error: str | None = None
        self.stopped: str | None = None

    def checked(self, i: int, j: int, said: str, who: str | None = None) -> bool:
        """Whether a person owes a second opinion on the machine's answer ``said`` about ``(i, j)``, stored
        under ``who`` (one of :attr:`names`; default its unanimous name)."""
        shares = self.split_check if who == self.split_name else self.check
        return said in shares and is_checked(self.seed, i, j, shares[said])

    def said(self, answers: dict[str, str]) -> tuple[str, str] | None:
        """``(name, answer)`` of the machine's answer among ``answers`` ({annotator: answer}), None if it gave
        none."""
        return next(((w, answers[w]) for w in self.names if w in answers), None)

    def _kind(self, votes: tuple[int, int, int]) -> tuple[str, str]:
        """``(name, verdict)``: the machine's answer for ``votes`` and the name of its kind."""
        verdict, split = kind_of(votes)
        return (self.split_name if split else self.name), verdict

    def calibrate(self, by_pair: dict[Pair, dict[str, str]]) -> None:
        """The error rates from ``by_pair`` (pair -> {annotator: must/cannot}, the answers in effect): each
        checked pair a person answered (each person's answer counts), and each unchecked pair, by what the
        machine said: its stored answer, or its votes on a pair it handed to people (a checked pair no person
        has answered yet says nothing)."""
        self.rates = MachineRates(self.prior)
        self.split_rates = MachineRates(SPLIT_PRIOR)
        for p, answers in by_pair.items():
            mine = self.said(answers)
            if mine is None:  # a pair it handed to people: what its votes said
                votes = self.oracle.known(*p)
                mine = ("", "unknown") if votes is None else self._kind(votes)
            who, said = mine
            if said not in ("must", "cannot"):
                continue
            rates = self.split_rates if who == self.split_name else self.rates
            if not self.checked(*p, said, who):
                rates.saw(said)
                continue
            for other, theirs in answers.items():
                if other not in self.names:
                    rates.add(said, theirs)

    def recalibrate(self, by_pair: dict[Pair, dict[str, str]]) -> bool:
        """:meth:`calibrate` again; returns whether the rates moved (its answers then weigh otherwise)."""
        before = self._estimates()
        self.calibrate(by_pair)
        return self._estimates() != before

    def _estimates(self) -> list[tuple[float, float]]:
        return [(r.false_same, r.false_different) for r in (self.rates, self.split_rates)]

    def failed(self, message: str) -> None:
        """A request that failed after its retries (the session goes on; the machine tries the next pair)."""
        self.error = message

    def error_rate(self, answer: str, who: str | None = None) -> float:
        """The error rate the machine's ``answer`` (``"must"`` or ``"cannot"``), stored under ``who`` (default
        its unanimous name), gets as a soft answer."""
        return (self.split_rates if who == self.split_name else self.rates).error_rate(answer)

    def route(self, p: Pair, samples: np.ndarray | None) -> tuple[str, str, str | None]:
        """Ask the chat model about ``p`` (a request the first time): ``(name, verdict, None)`` when its answer
        stands (stored under ``name``, that of its kind), ``(name, verdict, reason)`` when the pair goes to a
        person. May raise what the endpoint raises."""
        votes = self.oracle.votes(*p)
        who, verdict = self._kind(votes)
        if verdict == "unknown":
            self.routed["tie"] += 1
            same, different, unread = votes
            tally = f"{same} same, {different} different" + (f", {unread} unread" if unread else "")
            return who, verdict, f"the chat model's replies tie ({tally})"
        if contradicts(samples, p[0], p[1], verdict, self.sure):
            self.routed["contradicts"] += 1
            return (
                who,
                verdict,
                f"the chat model says {WORDS[verdict]}, but the model is sure of the opposite",
            )
        self.routed["machine" if who == self.name else "majority"] += 1
        return who, verdict, None

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
        mine = [(p, self.said(a)[1]) for p, a in by_pair.items() if len(a) == 1 and self.said(a) and free(p)]
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
            mine = self.said(by_pair[p])
            if mine is None:
                continue
            said = mine[1]
            against = {w: a for w, a in by_pair[p].items() if w not in self.names and a != said}
            if against:
                out.append({"i": p[0], "j": p[1], "machine": said, "people": against})
        return out

    def status(self) -> dict[str, Any]:
        """``name``, ``false_same``, ``false_different``, ``n_checked``, ``n_unchecked`` (its unanimous answers
        nobody checked, which the rates also learn from), ``split`` (the same four for the answers by the
        majority of split replies), ``routed`` (pairs by route since the start: ``machine`` and ``majority``
        answered, ``tie`` and ``contradicts`` handed to people), ``for_people`` (pairs handed to people, not yet
        answered), ``usage`` (the endpoint's counts), ``error`` and ``stopped``."""
        return {
            "name": self.name,
            **_rates_status(self.rates),
            "split": _rates_status(self.split_rates),
            "routed": dict(self.routed),
            "for_people": len(self.for_people),
            "usage": self.oracle.endpoint.usage.as_dict(),
            "error": self.error,
            "stopped": self.stopped,
        }


def _rates_status(rates: MachineRates) -> dict[str, Any]:
    return {
        "false_same": rates.false_same,
        "false_different": rates.false_different,
        "n_checked": rates.n_checked,
        "n_unchecked": rates.n_unchecked,
    }
