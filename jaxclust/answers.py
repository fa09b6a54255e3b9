"""An answer to "are items i and j in one class?": its two kinds, a checked reply, asking an oracle, an error rate.

The lowest layer both the models (which take answers as constraints) and active learning (which asks for them)
read, so that ``True``/``"must"`` and ``False``/``"cannot"`` mean the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxclust.errors import ConstraintError, InvalidInputError
from jaxclust.pairs import as_pair
from jaxclust.validation import check_label_rows

__all__ = [
    "KINDS",
    "Answer",
    "SoftAnswers",
    "as_kind",
    "ask",
    "check_error_rate",
    "check_reply",
    "lift_answers",
]

KINDS = {True: "must", False: "cannot"}  # an answer's kind by whether it says "same class"


def as_kind(kind: Any, what: str) -> bool:
    """An answer's kind as ``must`` (True) or not: exactly ``True``/``"must"`` or ``False``/``"cannot"``.

    ``None`` (an oracle's "don't know") and every other value raise ``ConstraintError`` naming ``what``.
    """
    if isinstance(kind, bool | np.bool_):
        return bool(kind)
    if isinstance(kind, str) and kind in ("must", "cannot"):
        return kind == "must"
    if kind is None:
        raise ConstraintError(
            f'{what}: kind None means "don\'t know", which is not a constraint (leave the pair out); '
            "expected True / 'must' or False / 'cannot'"
        )
    raise ConstraintError(f"{what}: kind must be 'must' or 'cannot' (or True / False), got {kind!r}")


class Answer(NamedTuple):
    """A reply that says who gave it: an oracle that passes questions on (a chat model first, a person where it
    matters) returns one, and the session stores ``annotator`` with the answer instead of its own name."""

    answer: str
    annotator: str | None = None


def check_reply(reply: Any, i: int, j: int, name: str = "oracle") -> str:
    """``reply`` as ``"must"``, ``"cannot"`` or ``"unknown"`` (True, False and None are accepted for them, and an
    :class:`Answer` for its ``answer``); ``InvalidInputError`` naming ``name`` and the pair otherwise."""
    if isinstance(reply, Answer):
        reply = reply.answer
    if isinstance(reply, bool | np.bool_):  # as as_kind reads them
        reply = "must" if reply else "cannot"
    elif reply is None:
        reply = "unknown"
    if not isinstance(reply, str) or reply not in ("must", "cannot", "unknown"):
        raise InvalidInputError(
            f"{name}: answered {reply!r} for pair ({i}, {j}); expected 'must', 'cannot' or 'unknown'"
        )
    return reply


def ask(oracle: Any, i: int, j: int) -> str | Answer:
    """Call an oracle (an object with ``answer`` or a plain callable ``oracle(i, j)``) and check its reply (an
    :class:`Answer` is returned as one, its ``answer`` checked)."""
    fn = oracle.answer if hasattr(oracle, "answer") else oracle
    reply = fn(i, j)
    if isinstance(reply, Answer):
        if reply.annotator is not None and (
            not isinstance(reply.annotator, str) or not reply.annotator.strip()
        ):
            raise InvalidInputError(
                f"oracle: answered pair ({i}, {j}) as annotator {reply.annotator!r}; expected a name or None"
            )
        return Answer(check_reply(reply, i, j), reply.annotator)
    return check_reply(reply, i, j)


def check_error_rate(value: Any, name: str, allow_zero: bool = True) -> float:
    """An answer's error rate as a float in [0, 1/2] ((0, 1/2] when ``allow_zero`` is False)."""
    try:
        eps = float(value)
    except (TypeError, ValueError) as exc:
        raise ConstraintError(f"{name}: expected a number in [0, 0.5], got {value!r}") from exc
    if not (np.isfinite(eps) and 0.0 <= eps <= 0.5) or (eps == 0.0 and not allow_zero):
        low = "[0" if allow_zero else "(0"
        raise ConstraintError(f"{name}: expected a probability in {low}, 0.5], got {value!r}")
    return eps


def lift_answers(
    soft: Sequence, n: int, group_of: np.ndarray, is_cannot: Callable[[int, int], bool]
) -> tuple[tuple, float, np.ndarray, np.ndarray]:
    """Answers that may be wrong, ``((i, j), must, error_rate)`` over ``n`` items, checked and lifted to the
    must-link groups ``group_of`` (n,): ``ln p(answers | z) = const + sum_{g < h} w_gh 1[z_g = z_h]``.

    An answer with rate ``eps`` weighs ``w = +-ln((1 - eps) / eps)`` (+ for must); one inside a group, or across
    groups that ``is_cannot(g, h)`` keeps apart, only adds to ``const``. Returns ``(answers, const, edges (E, 2)
    int32 with g < h, weights (E,) float64)``, the edges of zero net weight left out.
    """
    answers = []
    const = 0.0
    weights: dict[tuple[int, int], float] = {}
    for pair, must, eps in soft:
        kind = KINDS[bool(must)]
        i, j = as_pair(pair, n, kind)
        if i == j:
            raise ConstraintError(f"{kind} answer ({i}, {j}): an answer needs two different items")
        eps = check_error_rate(eps, f"{kind} answer ({i}, {j}) error_rate", allow_zero=False)
        answers.append(((i, j), bool(must), eps))
        w = np.log1p(-eps) - np.log(eps)  # ln((1 - eps) / eps)
        base = np.log(eps) if must else np.log1p(-eps)
        w = w if must else -w
        gi, gj = int(group_of[i]), int(group_of[j])
        if gi == gj:  # always together: a constant factor
            const += base + w
            continue
        const += base
        key = (min(gi, gj), max(gi, gj))
        if is_cannot(*key):  # never together: the constant alone
            continue
        weights[key] = weights.get(key, 0.0) + w
    keys = sorted(k for k, w in weights.items() if w != 0.0)
    edges = np.array(keys, dtype=np.int32).reshape(-1, 2)
    w_out = np.array([weights[k] for k in keys], dtype=np.float64)
    edges.setflags(write=False)
    w_out.setflags(write=False)
    return tuple(answers), float(const), edges, w_out


class SoftAnswers:
    """The soft answers of a constraint set (one concern of :class:`jaxclust.Constraints`; :func:`lift_answers`
    makes them), read from its built state: ``_soft`` the answers ``((i, j), must, eps)`` in order,
    ``_soft_groups`` (A, 2) and ``_soft_weights`` (A,) their net log-weights per pair of groups, ``_soft_const``
    the part of their log-likelihood that no labelling changes, ``_n`` and ``groups``."""

    __slots__ = ()

    @property
    def answers(self) -> tuple[tuple[int, int, str, float], ...]:
        """The soft answers ``(i, j, "must" | "cannot", error_rate)`` in insertion order (hard constraints are in
        :attr:`pairs`)."""
        return tuple((i, j, KINDS[must], eps) for (i, j), must, eps in self._soft)

    @property
    def soft_link_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """``(edges (E, 2) int32 with g < h, weights (E,) float64)``: the soft answers' net log-weight per pair of
        groups (pairs inside one group or across a hard cannot-link are constants, in
        :attr:`log_answer_constant`)."""
        return self._soft_groups, self._soft_weights

    @property
    def log_answer_constant(self) -> float:
        """The part of ``ln p(answers | z)`` that does not depend on ``z``."""
        return self._soft_const

    def log_answer_likelihood(self, labels: Any) -> float | np.ndarray:
        """``ln p(soft answers | z)`` for item labels ``z`` (n,), or for each row of labellings (C, n) (an array
        (C,)); hard constraints are not included."""
        z = np.atleast_2d(check_label_rows(labels, self._n, "labels"))
        total = np.full(len(z), self._soft_const)
        if len(self._soft_groups):
            first = np.unique(self._group_of, return_index=True)[1]  # each group's first member
            zg = z[:, first]
            same = zg[:, self._soft_groups[:, 0]] == zg[:, self._soft_groups[:, 1]]
            total += np.where(same, self._soft_weights, 0.0).sum(axis=1)
        return float(total[0]) if np.ndim(labels) == 1 else total
