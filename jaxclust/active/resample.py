"""The chains of one fit carried to the next across a change of answers: reweighted, then resampled.

A session refits after every answer, each chain starting where it ended (a warm start). Between two fits the
target changes: the posterior under the old answers, ``p_old``, becomes the posterior under the new ones, ``p_new
= p_old * L_new / L_old`` (``L`` the answers' likelihood of the classes; the data's part is the same in both). A
chain's last state is a draw of ``p_old``, so it is a draw of ``p_new`` with importance weight ``L_new / L_old``.
Resampling the chains by these weights and then running the sampler from them is the resample-move step of
sequential Monte Carlo (Gilks and Berzuini 2001; Chopin 2002): the sampler's moves leave ``p_new`` as it is, the
resampling hands the sweeps to the chains that agree with what the answers say now.

Without it a chain that an answer contradicts keeps its place: the chains that disagree with several answers
remain a fixed share of the samples, however little posterior mass they hold, and the clustering read from the
samples goes back and forth between them from one question to the next.

* :func:`answers_log_likelihood`: ``ln L`` (C,) of class labellings (C, n) under a set of answers.
* :func:`systematic`: which chain each of C new chains copies, given the weights.
* :func:`carried_chains`: the whole step, seeded, None where the answers tell no chain from another.
"""

from __future__ import annotations

import numpy as np

from jaxclust.constraints import Constraints

__all__ = ["answers_log_likelihood", "systematic", "carried_chains"]


def answers_log_likelihood(rows: np.ndarray, constraints: Constraints) -> np.ndarray:
    """``ln p(answers | classes)`` (C,) of each class labelling in ``rows`` (C, n): the soft answers' factors
    (:meth:`~jaxclust.Constraints.log_answer_likelihood`), ``-inf`` where a hard answer is broken."""
    rows = np.atleast_2d(np.asarray(rows))
    return np.where(_broken(rows, constraints), -np.inf, _soft(rows, constraints))


def _soft(rows: np.ndarray, constraints: Constraints) -> np.ndarray:
    """The soft answers' part of :func:`answers_log_likelihood` (C,)."""
    return np.array([constraints.log_answer_likelihood(z) for z in rows], dtype=np.float64)


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


def carried_chains(rows: np.ndarray, before: Constraints, after: Constraints, seed: int) -> np.ndarray | None:
    """Which of the chains whose last class labellings are ``rows`` (C, n), sampled under the answers ``before``,
    each chain of the next fit, under ``after``, starts from: :func:`systematic` resampling by ``L_after /
    L_before`` (:func:`answers_log_likelihood`), its uniform drawn from ``seed``. None when the weights are equal
    (every chain kept) or all zero (every chain breaks a new hard answer; the model's start repairs them)."""
    rows = np.atleast_2d(np.asarray(rows))
    # a hard answer broken before too (none should be: the sampler keeps them) says nothing new
    newly_broken = _broken(rows, after) & ~_broken(rows, before)
    log_w = np.where(newly_broken, -np.inf, _soft(rows, after) - _soft(rows, before))
    if newly_broken.all():
        return None
    top = np.max(log_w)
    if not newly_broken.any() and top - np.min(log_w) < 1e-9:
        return None
    u = np.random.default_rng([int(seed), 29]).random()
    chosen = systematic(np.exp(log_w - top), u)
    return None if np.array_equal(chosen, np.arange(len(chosen))) else chosen
