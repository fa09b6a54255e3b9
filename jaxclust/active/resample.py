"""The chains of one fit carried to the next across a change of answers: reweighted, then resampled.

A session refits after every answer, each chain starting where it ended (a warm start). Between two fits the
target changes: the posterior under the old answers, ``p_old``, becomes the posterior under the new ones, ``p_new
= p_old * L_new / L_old`` (``L`` the answers' likelihood of the classes; the data's part is the same in both). A
chain's last state is a draw of ``p_old``, so it is a draw of ``p_new`` with importance weight ``L_new / L_old``.
This is sequential Monte Carlo with the sampler's sweeps as its moves (resample-move: Gilks and Berzuini 2001;
Chopin 2002; Del Moral, Doucet and Jasra 2006): each chain carries a weight, the product of these ratios, through
the sweeps (which leave ``p_new`` as it is), and the samples are read at their chain's weight. When the weights
have become too uneven, the chains are resampled: those the answers rule out hand their place to copies of those
they favour, and the copies part again under their own random draws. Resampling only then, not after every
answer, keeps the chains apart while one answer, perhaps a wrong one, is all that tells them apart.

Without it a chain that the answers contradict keeps its place: the chains that disagree with several answers
remain a fixed share of the samples, however little posterior mass they hold, and the clustering read from the
samples goes back and forth between them from one question to the next.

* :func:`answers_log_likelihood`: ``ln L`` (C,) of class labellings (C, n) under a set of answers;
  :func:`reweighed`: the change of a chain's weight from one set of answers to another.
* :func:`carry`: the whole step (new weights, resampled when uneven), seeded.
* :func:`systematic`: which chain each of C new chains copies, given the weights; :func:`weighted_rows`: the
  samples of weighted chains as equal ones.
"""

from __future__ import annotations

import numpy as np

from jaxclust.constraints import Constraints
from jaxclust.errors import InvalidInputError

__all__ = ["answers_log_likelihood", "reweighed", "effective_number", "systematic", "carry", "weighted_rows"]


def answers_log_likelihood(rows: np.ndarray, constraints: Constraints) -> np.ndarray:
    """``ln p(answers | classes)`` (C,) of each class labelling in ``rows`` (C, n): the soft answers' factors
    (:meth:`~jaxclust.Constraints.log_answer_likelihood`), ``-inf`` where a hard answer is broken."""
    rows = np.atleast_2d(np.asarray(rows))
    return np.where(_broken(rows, constraints), -np.inf, constraints.log_answer_likelihood(rows))


def _broken(rows: np.ndarray, constraints: Constraints) -> np.ndarray:
    """Whether each labelling in ``rows`` (C, n) breaks a hard answer of ``constraints`` (C,)."""
    if not constraints.pairs:
        return np.zeros(len(rows), bool)
    i, j, kind = (np.array(v) for v in zip(*constraints.pairs, strict=True))
    return np.any((rows[:, i] == rows[:, j]) != (kind == "must")[None, :], axis=1)


def systematic(weights: np.ndarray, u: float) -> np.ndarray:
    """Systematic resampling: the chain each of ``C = len(weights)`` new chains copies (sorted), chain ``c`` copied
    ``floor(C w_c)`` or ``ceil(C w_c)`` times and ``C w_c`` times on average over ``u`` uniform in [0, 1)."""
    w = np.asarray(weights, dtype=np.float64)
    C = len(w)
    edges = np.cumsum(w / w.sum())
    edges[-1] = 1.0  # no point past the end through rounding
    return np.searchsorted(edges, (u + np.arange(C)) / C, side="right").astype(np.int64)


#: The chains are resampled when their effective number falls below this share of them, or when one of them
#: weighs less than :data:`DEAD` times the heaviest (it would take a long run of answers to matter again).
RESAMPLE_BELOW = 0.5
DEAD = 1e-3


def reweighed(rows: np.ndarray, before: Constraints, after: Constraints) -> np.ndarray:
    """``ln (L_after / L_before)`` (C,) of the class labellings ``rows`` (C, n): what the change of answers does
    to each chain's weight (:func:`answers_log_likelihood`; ``-inf`` where a labelling breaks a hard answer of
    ``after`` that it kept under ``before``, since the sampler keeps every hard answer)."""
    rows = np.atleast_2d(np.asarray(rows))
    newly_broken = _broken(rows, after) & ~_broken(rows, before)
    return np.where(
        newly_broken, -np.inf, after.log_answer_likelihood(rows) - before.log_answer_likelihood(rows)
    )


def effective_number(log_weights: np.ndarray) -> float:
    """``1 / sum(w^2)`` of the normalised weights ``exp(log_weights)``: C for equal weights, 1 for one chain."""
    w = np.exp(log_weights - np.max(log_weights))
    w /= w.sum()
    return float(1.0 / np.sum(w**2))


def carry(
    rows: np.ndarray, log_weights: np.ndarray | None, before: Constraints, after: Constraints, seed: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The chains whose last class labellings are ``rows`` (C, n), weighted ``log_weights`` (C,) (None: equal)
    under the answers ``before``, carried to the answers ``after``: ``(chains, log_weights)``. The weights are
    multiplied by :func:`reweighed`; when they have become too uneven (:data:`RESAMPLE_BELOW`, :data:`DEAD`)
    the chains are resampled (:func:`systematic`, its uniform drawn from ``seed``): ``chains`` (C,) says which
    chain each new one copies, and the weights are equal again. Else ``chains`` is None (each chain goes on from
    its own state) and the weights are carried, None when equal. When every chain breaks a new hard answer, each
    keeps its place at equal weight (the model's start repairs them)."""
    C = len(rows)
    log_w = reweighed(rows, before, after) + (0.0 if log_weights is None else np.asarray(log_weights))
    if not np.any(np.isfinite(log_w)):
        return None, None
    log_w = log_w - np.max(log_w)
    w = np.exp(log_w)
    if np.min(w) > 1.0 - 1e-9:
        return None, None
    if effective_number(log_w) >= RESAMPLE_BELOW * C and np.min(w) >= DEAD:
        return None, log_w
    u = np.random.default_rng([int(seed), 29]).random()
    chosen = systematic(w, u)
    return (None if np.array_equal(chosen, np.arange(C)) else chosen), None


def weighted_rows(n_rows: int, log_weights: np.ndarray | None, seed: int) -> np.ndarray | None:
    """The samples of weighted chains read as equal ones: which of ``n_rows`` chain-major rows (the same number
    per chain) each of ``n_rows`` rows copies, by :func:`systematic` resampling of the rows at their chain's
    weight (``log_weights`` (C,)); None when the weights are equal."""
    if log_weights is None:
        return None
    C = len(log_weights)
    if n_rows % C:
        raise InvalidInputError(
            f"model: its samples_ has {n_rows} rows, not the same number for each of its {C} chains "
            "(final_labels_): a session cannot weigh them by chain"
        )
    w = np.repeat(np.exp(np.asarray(log_weights) - np.max(log_weights)), n_rows // C)
    return systematic(w, np.random.default_rng([int(seed), 31]).random())
