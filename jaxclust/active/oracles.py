"""Oracles answer "are items i and j in the same cluster?" with ``"must"``, ``"cannot"`` or ``"unknown"``.

An oracle is any callable ``oracle(i, j) -> str`` (or an object with such an ``answer`` method);
:class:`~jaxclust.active.ActiveLearner` accepts both. An oracle that passes questions on to others returns an
:class:`Answer` (the reply and who gave it), and the answer is stored under that name. ``"unknown"`` ("don't know")
is recorded and that pair is never asked again. Raising :class:`SessionStopped` ends a session cleanly (the person
typed ``q`` or closed stdin); raising :class:`UndoLast` undoes the person's last answer (they typed ``u``): the
learner undoes it in its store, tells the oracle (``oracle.undone(record, message)`` when it has that method) and
asks again from there.
The replies a person types are those of :mod:`jaxclust.active.replies`, the same in the terminal, the notebook
and the browser.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from jaxclust.active.replies import key_help, read_reply
from jaxclust.answers import Answer, ask, check_reply
from jaxclust.validation import check_float, check_index, check_labels, seed_from

__all__ = [
    "GoldOracle",
    "NoisyOracle",
    "InteractiveOracle",
    "SessionStopped",
    "UndoLast",
    "Answer",
    "ask",
    "check_reply",
    "shorten",
    "item_label",
]


class SessionStopped(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by an oracle to end the session; answers already given are kept."""


class UndoLast(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by an oracle to undo its annotator's last answer in the store (an undo record; nothing is deleted);
    the session goes on from where it was before that answer."""


def item_label(names: Sequence[str] | None, i: int, max_chars: int | None = 300) -> str:
    """How a person is shown item ``i``: its name (``line 26`` for a text file, a CSV's name column), with
    ``(item i)`` after it only when another item has the same name; ``item i`` without names. ``i`` is the
    0-based index the answer store and the labels use."""
    if names is None:
        return f"item {i}"
    name = shorten(names[i], max_chars)
    if sum(1 for other in names if other == names[i]) > 1:
        return f"{name} (item {i})"
    return name


def shorten(text: Any, max_chars: int | None = 300) -> str:
    """``text`` on one line (runs of whitespace and line breaks become one space), cut to at most
    ``max_chars`` characters at a word boundary with ``...`` when longer (None: never cut)."""
    flat = " ".join(str(text).split())
    if max_chars is None or len(flat) <= max_chars:
        return flat
    cut = flat[: max(1, max_chars - 3)]
    space = cut.rfind(" ")
    if space >= 0.7 * len(cut):  # end on a whole word unless that loses too much
        cut = cut[:space]
    return cut.rstrip() + "..."


class GoldOracle:
    """Answers from gold labels: must-link iff ``labels[i] == labels[j]`` (always consistent).

    Parameters
    ----------
    labels : array-like of int, shape (n,)
    """

    def __init__(self, labels):
        self.labels = labels
        self._labels = check_labels(labels, name="labels")
        self.n_asked = 0

    def answer(self, i: int, j: int) -> str:
        i = check_index(i, len(self._labels), "i")
        j = check_index(j, len(self._labels), "j")
        self.n_asked += 1
        return "must" if self._labels[i] == self._labels[j] else "cannot"

    __call__ = answer


class NoisyOracle(GoldOracle):
    """A gold oracle whose answer is flipped with probability ``flip_rate``.

    The flip of a pair is a deterministic function of ``(random_state, min(i, j), max(i, j))``, so asking the
    same pair twice gives the same answer and results do not depend on the order of the questions.

    Parameters
    ----------
    labels : array-like of int, shape (n,)
    flip_rate : float in [0, 1]
    random_state : int or None
    """

    def __init__(self, labels, flip_rate: float = 0.1, random_state=0):
        super().__init__(labels)
        self.flip_rate = flip_rate
        self.random_state = random_state
        self._rate = check_float(flip_rate, "flip_rate", minimum=0.0, maximum=1.0)
        self._seed = seed_from(random_state)

    def answer(self, i: int, j: int) -> str:
        gold = super().answer(i, j)
        a, b = min(int(i), int(j)), max(int(i), int(j))
        if np.random.default_rng([self._seed, a, b]).random() < self._rate:
            return "cannot" if gold == "must" else "must"
        return gold

    __call__ = answer


class InteractiveOracle:
    """Asks a person at the terminal.

    Parameters
    ----------
    names : sequence of str, optional
        Display name of each item (default: ``"item <i>"``).
    contexts : sequence of str, optional
        Extra text shown under each item's name (an example sentence, a snippet, the item's text).
    input_fn : callable, optional
        Reads one reply line (default :func:`input`); end of input stops the session.
    output : text stream, optional
        Where prompts go (default ``sys.stdout``).
    max_chars : int or None
        Names and contexts are shown on one line each, cut at a word boundary to this many characters
        (default 300; None shows them whole).

    Notes
    -----
    Replies (:mod:`jaxclust.active.replies`): ``y``/``yes``/``m``/``1`` (same cluster), ``n``/``no``/``c``/``2``
    (different), ``d``/``?``/``3``/``skip`` (don't know), ``u``/``undo`` (undo the last answer; raises
    :class:`UndoLast`), ``q``/``quit`` (stop; raises :class:`SessionStopped`). Anything else asks again.
    """

    def __init__(
        self,
        names: Sequence[str] | None = None,
        contexts: Sequence[str] | None = None,
        input_fn: Callable[[str], str] | None = None,
        output: TextIO | None = None,
        max_chars: int | None = 300,
    ):
        self.names = names
        self.contexts = contexts
        self.input_fn = input_fn
        self.output = output
        self.max_chars = max_chars
        self.n_asked = 0

    def _describe(self, i: int) -> str:
        text = f"  {item_label(self.names, i, self.max_chars)}"
        if self.contexts is not None and self.contexts[i]:
            text += f"\n        {shorten(self.contexts[i], self.max_chars)}"
        return text

    def answer(self, i: int, j: int) -> str:
        out = self.output if self.output is not None else sys.stdout
        read = self.input_fn if self.input_fn is not None else input
        self.n_asked += 1
        print(f"\nQuestion {self.n_asked}: do these two belong in the same cluster?", file=out)
        print(self._describe(i), file=out)
        print(self._describe(j), file=out)
        while True:
            print(f"  {key_help(('undo', 'quit'))} > ", end="", file=out, flush=True)
            try:
                line = read("")
            except EOFError as exc:
                raise SessionStopped("end of input") from exc
            reply = read_reply(line)
            if reply == "quit":
                raise SessionStopped("quit")
            if reply == "undo":
                self.n_asked -= 1  # this question is asked again later, under its number
                raise UndoLast
            if reply is not None:
                return reply
            print(f"  (did not understand {line.strip()!r})", file=out)

    def undone(self, record: dict | None, message: str) -> None:
        """Told by the learner what an undo did: ``record`` the undone answer (None: nothing was undone)."""
        if record is not None:
            self.n_asked -= 1  # its question is asked again, under its number
        print(f"  {message}", file=self.output if self.output is not None else sys.stdout)

    __call__ = answer
