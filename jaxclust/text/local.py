"""Local context features of a target-word instance (Mihalcea 2002; Purandare & Pedersen 2004).

Features of one instance, as named binary features:

1. the target word and its part of speech (``w0=``, ``p0=``);
2. the 3 words either side with their positions and parts of speech (``w-1=``, ``p+2=``, ...);
3. the head of the noun phrase (``np=``): for a noun target, the last noun of the noun run holding it; for
   any other target, the last noun of the first noun run after it, skipping determiners, adjectives, adverbs
   and conjunctions (a POS-only approximation: no parser);
4. the first noun and the first verb before the target (``nb=``, ``vb=``);
5. the first noun and the first verb after the target (``na=``, ``va=``).

Words are lower-cased; a missing POS tag is ``UNK``. :class:`LocalFeatures` turns the dicts into a sparse CSR
matrix.

Example
-------
>>> local_feature_dict(["a", "hard", "rock"], ["DT", "JJ", "NN"], 1)["np"]
'rock'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from jaxclust.errors import InvalidInputError, NotFittedError

__all__ = ["local_feature_dict", "LocalFeatures"]

_SKIP_TO_NP = ("DT", "JJ", "RB", "CC", "CD", "PRP$", "POS", "``", "''")


def _is_noun(tag: str) -> bool:
    return tag.startswith("NN")


def _is_verb(tag: str) -> bool:
    return tag.startswith("VB")


def local_feature_dict(tokens: Sequence[str], pos: Sequence[str | None], head: int, window: int = 3) -> dict:
    """Feature dict (name -> value string) of the instance whose target is ``tokens[head]``."""
    n = len(tokens)
    if not 0 <= head < n:
        raise InvalidInputError(f"head: index {head} outside the {n} tokens")
    if len(pos) != n:
        raise InvalidInputError(f"pos: {len(pos)} tags for {n} tokens")
    words = [t.lower() for t in tokens]
    tags = [p if p else "UNK" for p in pos]
    f = {"w0": words[head], "p0": tags[head]}
    for o in range(-window, window + 1):
        if o and 0 <= head + o < n:
            f[f"w{o:+d}"] = words[head + o]
            f[f"p{o:+d}"] = tags[head + o]
    # head of the noun phrase
    np_head = None
    if _is_noun(tags[head]):
        j = head
        while j + 1 < n and _is_noun(tags[j + 1]):
            j += 1
        np_head = words[j]
    else:
        j = head + 1
        while j < n and (tags[j] in _SKIP_TO_NP or tags[j].startswith("JJ") or tags[j].startswith("RB")):
            j += 1
        if j < n and _is_noun(tags[j]):
            while j + 1 < n and _is_noun(tags[j + 1]):
                j += 1
            np_head = words[j]
    if np_head is not None:
        f["np"] = np_head
    for name, rng, test in (
        ("nb", range(head - 1, -1, -1), _is_noun),
        ("vb", range(head - 1, -1, -1), _is_verb),
        ("na", range(head + 1, n), _is_noun),
        ("va", range(head + 1, n), _is_verb),
    ):
        for j in rng:
            if test(tags[j]):
                f[name] = words[j]
                break
    return f


class LocalFeatures:
    """Vectoriser of local features: binary sparse CSR matrix, one column per seen ``name=value``.

    Parameters
    ----------
    window : int
        Words either side of the target (the seed: 3).
    min_count : int
        Keep features seen in at least this many instances (at ``fit``).

    Attributes
    ----------
    vocabulary_ : dict feature string -> column.
    """

    def __init__(self, window=3, min_count=1):
        self.window = window
        self.min_count = min_count

    def _dicts(self, instances):
        return [local_feature_dict(t, p, h, self.window) for t, p, h in instances]

    def fit(self, instances):
        """``instances``: iterable of ``(tokens, pos, head_index)``."""
        counts: dict[str, int] = {}
        for d in self._dicts(instances):
            for k, v in d.items():
                key = f"{k}={v}"
                counts[key] = counts.get(key, 0) + 1
        keys = sorted(k for k, c in counts.items() if c >= self.min_count)
        self.vocabulary_ = {k: i for i, k in enumerate(keys)}
        return self

    def transform(self, instances) -> sp.csr_matrix:
        """(n, F) binary CSR matrix; unseen features are ignored."""
        if not hasattr(self, "vocabulary_"):
            raise NotFittedError("LocalFeatures: call fit first")
        instances = list(instances)
        rows, cols = [], []
        for r, d in enumerate(self._dicts(instances)):
            for k, v in d.items():
                c = self.vocabulary_.get(f"{k}={v}")
                if c is not None:
                    rows.append(r)
                    cols.append(c)
        return sp.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(len(instances), len(self.vocabulary_))
        )

    def fit_transform(self, instances) -> sp.csr_matrix:
        """``fit`` then ``transform`` (instances are read twice: pass a list)."""
        instances = list(instances)
        return self.fit(instances).transform(instances)
