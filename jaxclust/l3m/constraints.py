"""CL3M: must-link / cannot-link knowledge as hard masks or soft score offsets on left-links.

Constraints reach the jitted code as an ``int8`` code per (item, candidate antecedent) pair: ``1`` must-link,
``-1`` cannot-link, ``0`` none, and one traced ``weight``:

* ``weight = inf`` (hard): a cannot-linked candidate is removed; if an item has must-linked candidates, only
  those stay and the dummy link is removed (the item must join their cluster). Greedy inference also refuses a
  cluster holding any cannot-linked item.
* finite ``weight = rho`` (soft, CCM style): ``s_ij += rho * code_ij``.
* ``weight = 0``: constraints ignored.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxclust.l3m.document import antecedent_index

__all__ = ["apply_constraints", "codes_from_constraints"]


def apply_constraints(scores, cand, codes, weight):
    """Apply constraint codes to pair scores.

    Parameters
    ----------
    scores : (..., A) pair scores
    cand : (..., A) bool candidate mask
    codes : (..., A) int constraint codes (1 must, -1 cannot, 0 none)
    weight : () float, ``inf`` for hard constraints

    Returns
    -------
    scores : (..., A) scores with soft offsets added
    cand : (..., A) bool candidates still allowed
    dummy_ok : (...) bool whether the dummy (new cluster) link is allowed
    """
    codes = codes.astype(jnp.int32)
    hard = jnp.isinf(weight)
    offset = jnp.where(hard, 0.0, weight) * codes.astype(scores.dtype)
    is_must = (codes > 0) & cand
    any_must = is_must.any(-1)
    cand_hard = cand & (codes >= 0) & jnp.where(any_must[..., None], is_must, True)
    return scores + offset, jnp.where(hard, cand_hard, cand), jnp.where(hard, ~any_must, True)


def codes_from_constraints(constraints, m: int, n_ante: int, offset: int = 0) -> np.ndarray:
    """Window-layout codes ``(m, A)`` int8 from a :class:`jaxclust.constraints.Constraints` (or ``None``).

    ``offset`` shifts item indices (for a document that is a slice of the constrained item set). Uses the
    transitive ``status_codes`` of the constraints object.
    """
    codes = np.zeros((m, n_ante), np.int8)
    if constraints is None:
        return codes
    j, valid = antecedent_index(m, n_ante)
    i = np.broadcast_to(np.arange(m)[:, None], j.shape)
    codes[valid] = np.asarray(constraints.status_codes(i[valid] + offset, j[valid] + offset), np.int8)
    return codes
