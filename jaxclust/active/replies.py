"""The words and keys people answer with: one vocabulary for the terminal, the notebook and the browser.

An answer is one of :data:`ANSWERS`: ``"must"`` (same cluster), ``"cannot"`` (different clusters) or
``"unknown"`` (don't know). A person may type any word of :data:`REPLIES` for it, or press one of its
:data:`KEYS`; ``u`` undoes their last answer and ``q`` stops (in the terminal). :data:`WORDS` says an answer in
words.
"""

from __future__ import annotations

__all__ = ["ANSWERS", "WORDS", "KEYS", "REPLIES", "COMMANDS", "read_reply", "key_help"]

#: The answers every store, session and oracle uses.
ANSWERS = ("must", "cannot", "unknown")

#: An answer in words, as pages and messages show it.
WORDS = {"must": "same cluster", "cannot": "different clusters", "unknown": "don't know"}

#: One-key replies, the same everywhere (the browser's keyboard shortcuts, the terminal's letters).
KEYS = {
    "must": ("y", "m", "1"),
    "cannot": ("n", "c", "2"),
    "unknown": ("d", "?", "3"),
    "undo": ("u",),
    "quit": ("q",),
}

#: Every reply a person may type for an answer, and the answer it means.
REPLIES = {
    **{k: a for a in ANSWERS for k in KEYS[a]},
    "must": "must",
    "same": "must",
    "yes": "must",
    "cannot": "cannot",
    "different": "cannot",
    "no": "cannot",
    "unknown": "unknown",
    "dont_know": "unknown",
    "don't know": "unknown",
    "dk": "unknown",
    "skip": "unknown",
}

#: Replies that are not answers: undo the last answer, stop the session.
COMMANDS = {"u": "undo", "undo": "undo", "q": "quit", "quit": "quit", "exit": "quit"}


def read_reply(text: str) -> str | None:
    """What a typed reply means: an answer of :data:`ANSWERS`, ``"undo"``, ``"quit"``, or None (not understood).
    Case and surrounding spaces do not matter."""
    key = text.strip().lower()
    return REPLIES.get(key, COMMANDS.get(key))


def key_help(commands: tuple[str, ...] = ("undo",)) -> str:
    """The keys in one line, e.g. ``[y] same / [n] different / [d] don't know / [u] undo``."""
    parts = [
        f"[{KEYS['must'][0]}] same",
        f"[{KEYS['cannot'][0]}] different",
        f"[{KEYS['unknown'][0]}] don't know",
    ]
    return " / ".join(parts + [f"[{KEYS[c][0]}] {c}" for c in commands])
