"""How often a chat model's answers are wrong: which of its answers a person checks, and what the checks say.

* :func:`is_checked`: whether a pair is among the share of the machine's answers a person also answers, a seeded
  hash of the pair, so that a resumed session and the store read afterwards know which; :func:`check_shares`
  reads the shares (one for both answers, or one for each, default :data:`CHECK`).
* :func:`kind_of` (from :func:`verdict_of` and :func:`majority_of`): the machine's answer from its votes and its
  kind, unanimous or by the majority of replies that split; :func:`split_name`: the name the second kind is
  stored under, with rates of its own.
* :class:`MachineRates`: the machine's two error rates (a wrong "same", a wrong "different"), the exact
  posterior from the checked pairs and from how often it gives each answer, and the error rate each of its
  answers gets as a soft answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_float

__all__ = [
    "CHECK",
    "SPLIT_PRIOR",
    "check_shares",
    "is_checked",
    "MachineRates",
    "verdict_of",
    "majority_of",
    "kind_of",
    "split_name",
]


#: The default shares of the machine's unanimous answers a person also answers, by what it said: its "same"s are
#: checked more often, since a wrong "same" is both likelier and costlier (it joins two classes), and the rate of
#: wrong "same"s is learned from the different pairs among the checks.
CHECK = {"must": 0.2, "cannot": 0.05}


#: The Beta prior of each error rate of the answers a chat model gives by the majority of split replies: wrong a
#: quarter of the time until checks say otherwise (its unanimous answers: a tenth), since replies that split say
#: the model is unsure.
SPLIT_PRIOR = (1.0, 3.0)


def check_shares(check: Any, name: str = "check") -> dict[str, float]:
    """``check`` as ``{"must": share, "cannot": share}``: one number in [0, 1] for both of the machine's
    answers, or a mapping with a share for each (``"must"``/``"same"`` and ``"cannot"``/``"different"``)."""
    if isinstance(check, dict):
        spelled = {"same": "must", "different": "cannot", "must": "must", "cannot": "cannot"}
        unknown = sorted(str(k) for k in check if k not in spelled)
        if unknown or {spelled[k] for k in check} != {"must", "cannot"} or len(check) != 2:
            raise InvalidInputError(
                f"{name}: expected one share, or a share for each answer ({{'must': ..., 'cannot': ...}}), "
                f"got {check!r}"
            )
        return {
            spelled[k]: check_float(v, f"{name}[{k!r}]", minimum=0.0, maximum=1.0) for k, v in check.items()
        }
    share = check_float(check, name, minimum=0.0, maximum=1.0)
    return {"must": share, "cannot": share}


class MachineRates:
    """The machine's two error rates, from the pairs people also answered.

    ``false_same``: how often it says "same" about a pair people call different; ``false_different``: how often
    it says "different" about a pair people call the same. Each is the mean of its posterior, under a Beta
    ``prior`` (a, b) on each rate (wrong a times in a + b) and a uniform prior on the share of same pairs among
    those asked.

    Two kinds of evidence: the *checked* pairs (:meth:`add`: what the machine said and what a person said, a
    random share of its answers) and the machine's *unchecked* answers (:meth:`saw`: what it said, nobody
    checked). The checked pairs of each answer tell how often that answer is wrong; the unchecked ones how often
    it gives each answer, which turns the two into the rates. With every answer checked the posterior means are
    the Beta ones in closed form: ``false_same = (a + wrong "same"s) / (a + b + pairs people call different)``.
    The checks may take a different share of each answer (the ``check`` of
    :class:`~jaxclust.active.chat.MachineFirst`): the estimate stays right, as long as within each answer the
    checked pairs are a random share. Checking more of the machine's "same"s learns ``false_same`` from fewer
    checks, where most pairs are different.

    The posterior is exact: the unchecked answers' unknown truths are summed over in closed form (a sum over
    how many of each answer's unchecked pairs are same pairs, of products of Beta functions), leaving out only
    the terms more than eight standard deviations from the checked pairs' share (none while either answer has
    at most 400 unchecked pairs).

    :meth:`error_rate` is the error rate its answer gets as a soft answer: the rate ``eps`` whose odds
    ``(1 - eps) / eps`` equal the likelihood ratio of the reply, so ``"must"`` gets ``fs / (fs + 1 - fd)`` and
    ``"cannot"`` gets ``fd / (fd + 1 - fs)`` (``fs``, ``fd`` the two rates), at most 1/2.
    """

    def __init__(self, prior: tuple[float, float] = (1.0, 9.0)):
        a, b = prior
        check_float(a, "prior[0]", minimum=0.0, strict=True)
        check_float(b, "prior[1]", minimum=0.0, strict=True)
        self.prior = (float(a), float(b))
        self.checked = {"must": [0, 0], "cannot": [0, 0]}  # machine's answer -> [right, wrong]
        self.unchecked = {"must": 0, "cannot": 0}  # machine's answer -> how many nobody checked
        self._memo: tuple | None = None

    def add(self, machine: str, person: str) -> None:
        """One pair both answered (``"unknown"`` on either side says nothing)."""
        if machine in ("must", "cannot") and person in ("must", "cannot"):
            self.checked[machine][machine != person] += 1

    def saw(self, machine: str) -> None:
        """One answer of the machine's that nobody checked (``"unknown"`` says nothing)."""
        if machine in ("must", "cannot"):
            self.unchecked[machine] += 1

    def reset(self) -> None:
        """No pair seen: the prior's rates."""
        self.checked = {"must": [0, 0], "cannot": [0, 0]}
        self.unchecked = {"must": 0, "cannot": 0}

    def _rates(self) -> tuple[float, float]:
        (ss, sd), (dd, ds) = self.checked["must"], self.checked["cannot"]
        us, ud = self.unchecked["must"], self.unchecked["cannot"]
        key = (ss, sd, dd, ds, us, ud, self.prior)
        if self._memo is None or self._memo[0] != key:
            self._memo = (key, _posterior_rates(ss, sd, dd, ds, us, ud, *self.prior))
        return self._memo[1]

    @property
    def false_same(self) -> float:
        return self._rates()[0]

    @property
    def false_different(self) -> float:
        return self._rates()[1]

    @property
    def n_checked(self) -> int:
        return sum(sum(v) for v in self.checked.values())

    @property
    def n_unchecked(self) -> int:
        """The machine's answers nobody checked (:meth:`saw`), which the rates also learn from."""
        return sum(self.unchecked.values())

    def __repr__(self) -> str:
        return f"MachineRates(prior={self.prior}, checked={self.checked}, unchecked={self.unchecked})"

    def error_rate(self, answer: str) -> float:
        fs, fd = self.false_same, self.false_different
        if answer == "must":
            eps = fs / (fs + 1.0 - fd)
        elif answer == "cannot":
            eps = fd / (fd + 1.0 - fs)
        else:
            raise InvalidInputError(f"answer: expected 'must' or 'cannot', got {answer!r}")
        return min(0.5, eps)


def _window(unchecked: int, right: int, wrong: int) -> np.ndarray:
    """How many of an answer's ``unchecked`` pairs may be same pairs, for the sum of :func:`_posterior_rates`:
    all of them up to 400, else those within eight standard deviations of the checked pairs' share (``right``
    and ``wrong`` of that answer's checks; the spread of a binomial plus that of the share)."""
    if unchecked <= 400:
        return np.arange(unchecked + 1)
    m = right + wrong
    p = (right + 1.0) / (m + 2.0)
    sd = np.sqrt(unchecked * p * (1 - p)) + unchecked * np.sqrt(p * (1 - p) / (m + 3.0))
    lo, hi = p * unchecked - 8 * sd - 10, p * unchecked + 8 * sd + 10
    return np.arange(max(0, int(lo)), min(unchecked, int(np.ceil(hi))) + 1)


def _posterior_rates(ss, sd, dd, ds, us, ud, a, b) -> tuple[float, float]:
    """Posterior means of (false same, false different) (see :class:`MachineRates`). Checked: ``ss``/``sd``
    "same" said of same/different pairs, ``dd``/``ds`` "different" said of different/same pairs; ``us``/``ud``
    unchecked "same"s and "different"s. ``k`` of the unchecked "same"s and ``l`` of the unchecked "different"s
    being same pairs, the joint is a product of Beta functions: false same seen ``sd + us - k`` times wrong in
    ``dd + ud - l`` right, false different ``ds + l`` in ``ss + k``, same pairs ``ss + k + ds + l`` of all."""
    from scipy.special import betaln, gammaln

    k = _window(us, ss, sd)[:, None].astype(np.float64)
    l = _window(ud, ds, dd)[None, :].astype(np.float64)  # noqa: E741 (the sum's index, as in the docstring)
    choose = lambda n, r: gammaln(n + 1) - gammaln(r + 1) - gammaln(n - r + 1)  # noqa: E731
    fs_wrong, fs_right = sd + us - k, dd + ud - l
    fd_wrong, fd_right = ds + l, ss + k
    same = ss + k + ds + l
    log_w = (
        choose(us, k)
        + choose(ud, l)
        + betaln(a + fs_wrong, b + fs_right)
        + betaln(a + fd_wrong, b + fd_right)
        + betaln(1.0 + same, 1.0 + fs_wrong + fs_right)
    )
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    fs = np.sum(w * (a + fs_wrong) / (a + b + fs_wrong + fs_right))
    fd = np.sum(w * (a + fd_wrong) / (a + b + fd_wrong + fd_right))
    return float(fs), float(fd)


def is_checked(seed: int, i: int, j: int, share: float) -> bool:
    """Whether the pair ``(i, j)`` (``i < j``) is among the share ``share`` of a machine's answers a person also
    gives: a seeded hash of the pair, so that a resumed session, and the store read afterwards, know which."""
    return share > 0 and np.random.default_rng([seed, 11, i, j]).random() < share


def verdict_of(votes: tuple[int, int, int]) -> str:
    """``"must"`` or ``"cannot"`` when the votes ``(same, different, abstained)`` that did not abstain agree,
    else ``"unknown"``."""
    same, different, _ = votes
    if same and not different:
        return "must"
    if different and not same:
        return "cannot"
    return "unknown"


def majority_of(votes: tuple[int, int, int]) -> str:
    """``"must"`` or ``"cannot"``, whichever more of the votes ``(same, different, abstained)`` say; ``"unknown"``
    on a tie (all abstained included)."""
    same, different, _ = votes
    return "must" if same > different else "cannot" if different > same else "unknown"


def kind_of(votes: tuple[int, int, int]) -> tuple[str, bool]:
    """The machine's answer for ``votes`` and whether its replies split: the unanimous verdict, else the
    majority's (``"unknown"`` on a tie)."""
    verdict = verdict_of(votes)
    return (verdict, False) if verdict != "unknown" else (majority_of(votes), True)


#: Added to a chat model's name for the answers it gave by the majority of split replies.
SPLIT_SUFFIX = ", split replies"


def split_name(annotator: str) -> str:
    """The name the majority of ``annotator``'s split replies is stored under (at most 100 characters, as every
    annotator's name: a long name is cut before the suffix)."""
    return annotator[: 100 - len(SPLIT_SUFFIX)] + SPLIT_SUFFIX
