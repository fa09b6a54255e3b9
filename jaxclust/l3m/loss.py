"""The gamma-scaled L3M negative log-likelihood over padded documents (ALGORITHMS.md section 2).

For item ``i`` with candidate links ``{0 (dummy)} U {j < i}``, scores ``s_ij`` and admissible gold links
``G_i``::

    l_i = softmax_gamma(s_i.)  -  softmax_gamma(s_i, G_i),     softmax_gamma(s) = gamma * logsumexp(s / gamma)

with the exact limit ``softmax_0 = max`` (best-left-link / latent structural SVM). At ``gamma = 1`` ``l_i``
is minus
the log-probability of item ``i`` linking inside its gold cluster, summed over the latent left-linking
forests.
The gradient is ``sum_j p_ij phi_ij - sum_{j in G_i} q_ij phi_ij`` (``phi_i0 = 0``), see the tests.

``item_loss`` is the per-item term (the seed's online SGD decomposes over it); ``document_losses`` vmaps it
over the
items of one document and ``batch_loss`` averages documents (each weighted by ``1 / m_d``) and adds ``l2/2
||w||^2``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxclust.l3m.constraints import apply_constraints

__all__ = ["soft_max", "link_logits", "item_loss", "document_losses", "batch_loss"]


def soft_max(s, mask, gamma):
    """``gamma * logsumexp(s / gamma)`` over ``mask`` along the last axis; ``max`` when ``gamma == 0``.

    Stable for small gamma: logsumexp shifts by the max before exponentiating. ``mask`` must be non-empty per
    row.
    """
    g = jnp.where(gamma > 0, gamma, 1.0)
    lse = g * jax.nn.logsumexp(jnp.where(mask, s, 0.0) / g, axis=-1, where=mask)
    hard = jnp.max(jnp.where(mask, s, -jnp.inf), axis=-1)
    return jnp.where(gamma > 0, lse, hard)


def link_logits(scorer, features, cand, codes, weight):
    """Scores of all links of the items of one document, dummy first.

    Parameters
    ----------
    features : (M, A, F); cand : (M, A) bool; codes : (M, A) int8; weight : () constraint weight

    Returns
    -------
    logits : (M, A + 1) float32, column 0 = dummy link
    allowed : (M, A + 1) bool
    """
    s, cand, dummy_ok = apply_constraints(scorer(features), cand, codes, weight)
    dummy = jnp.broadcast_to(scorer.dummy, s.shape[:-1])[..., None]
    return jnp.concatenate([dummy, s], -1), jnp.concatenate([dummy_ok[..., None], cand], -1)


def item_loss(logits, allowed, gold, gamma):
    """Loss of one item (or a leading batch of items).

    Parameters
    ----------
    logits, allowed : (..., A + 1) link scores and allowed links (dummy first), see :func:`link_logits`
    gold : (..., A + 1) bool admissible gold links ``G_i``
    gamma : () temperature >= 0

    Returns
    -------
    loss : (...) ``soft_max(all) - soft_max(gold)``; 0 where no gold link is allowed (item skipped)
    valid : (...) bool, item has an allowed gold link
    """
    gold = gold & allowed
    valid = gold.any(-1)
    gold_safe = jnp.where(valid[..., None], gold, allowed)
    loss = soft_max(logits, allowed, gamma) - soft_max(logits, gold_safe, gamma)
    return jnp.where(valid, loss, 0.0), valid


def document_losses(scorer, features, cand, gold, gold_new, item, codes, gamma, weight):
    """Per-item losses ``(M,)`` of one padded document and the mask ``(M,)`` of items that count."""
    logits, allowed = link_logits(scorer, features, cand, codes, weight)
    gold_full = jnp.concatenate([gold_new[:, None], gold], -1)
    loss, valid = item_loss(logits, allowed, gold_full, gamma)
    valid = valid & item
    return jnp.where(valid, loss, 0.0), valid


def batch_loss(scorer, batch, gamma, l2, weight):
    """Mean over documents of the mean item loss, plus ``l2 * scorer.l2_penalty()``.

    Parameters
    ----------
    batch : DocBatch with leading axis B (padding documents have no items and are ignored)
    gamma, l2, weight : () arrays (traced: no recompilation when they change)
    """
    losses, valid = jax.vmap(document_losses, in_axes=(None, 0, 0, 0, 0, 0, 0, None, None))(
        scorer, batch.features, batch.cand, batch.gold, batch.gold_new, batch.item, batch.codes, gamma, weight
    )
    n_items = valid.sum(-1)
    per_doc = losses.sum(-1) / jnp.maximum(n_items, 1)
    has = n_items > 0
    data = jnp.sum(jnp.where(has, per_doc, 0.0)) / jnp.maximum(has.sum(), 1)
    return data + l2 * scorer.l2_penalty()
