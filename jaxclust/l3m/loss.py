"""The gamma-scaled L3M negative log-likelihood over padded documents (docs/algorithms/l3m.md).

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

``linear_value_and_grad`` is the same objective and its gradient for the linear scorer in closed form (one
forward pass and one weighted reduction per block of items, no autodiff): the fast path of the training step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxclust.l3m.constraints import apply_constraints

__all__ = [
    "soft_max",
    "link_logits",
    "item_loss",
    "document_losses",
    "batch_loss",
    "item_weights",
    "linear_value_and_grad",
    "linear_sums",
]


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


def item_weights(batch, weight):
    """Weight ``(B, M)`` of every item in :func:`batch_loss`: ``1 / (m_d * D)`` for items that count, else
    0."""
    _, cand, dummy_ok = apply_constraints(jnp.zeros(batch.cand.shape), batch.cand, batch.codes, weight)
    valid = ((batch.gold_new & dummy_ok) | (batch.gold & cand).any(-1)) & batch.item
    n_items = valid.sum(-1, keepdims=True)
    n_docs = (n_items > 0).sum()
    return jnp.where(valid, 1.0 / (jnp.maximum(n_items, 1) * jnp.maximum(n_docs, 1)), 0.0)


def _link_offsets(batch, dummy, weight):
    """Per-pair additive terms of the two soft-max sets, flattened to ``(B * M, ...)``.

    ``s_ij + add_all_ij`` are the logits over allowed links and ``s_ij + add_gold_ij`` those over the gold set
    ``G_i`` (all allowed links when ``G_i`` is empty, as in :func:`item_loss`): the soft constraint offset
    where the link is in the set, ``-inf`` elsewhere; ``dummy_*`` are the dummy-link logits, ``-inf`` where
    excluded. Nothing here depends on ``w``: it is computed once per step, outside the loop over blocks.
    """
    b, m, a = batch.cand.shape
    off, cand, dummy_ok = apply_constraints(jnp.zeros((b, m, a)), batch.cand, batch.codes, weight)
    gold = batch.gold & cand
    gold_new = batch.gold_new & dummy_ok
    has_gold = gold_new | gold.any(-1)
    gold = jnp.where(has_gold[..., None], gold, cand)
    gold_new = jnp.where(has_gold, gold_new, dummy_ok)
    dummy = jnp.asarray(dummy, jnp.float32)
    return (
        jnp.where(cand, off, -jnp.inf).reshape(b * m, a),
        jnp.where(gold, off, -jnp.inf).reshape(b * m, a),
        jnp.where(dummy_ok, dummy, -jnp.inf).reshape(b * m),
        jnp.where(gold_new, dummy, -jnp.inf).reshape(b * m),
    )


def _row_max(x):
    """``x.max(-1)`` by pairwise halving: XLA:CPU reduces a row as one serial chain of ``max`` ops, the
    halving steps are elementwise and vectorise (same value: ``max`` does not depend on the order)."""
    while x.shape[-1] > 1 and x.shape[-1] % 2 == 0:
        half = x.shape[-1] // 2
        x = jnp.maximum(x[..., :half], x[..., half:])
    return x.max(-1)


def _soft_max_and_probs(logits, dummy, gamma, soft):
    """``soft_max`` over ``[dummy, logits]`` (``-inf`` = excluded) and its gradient ``(p_dummy, p)``.

    ``soft``: ``p`` is the softmax at temperature ``gamma``; otherwise (``gamma = 0``) ``p`` splits the unit
    mass evenly over tied maxima, as autodiff of ``max`` does, so both paths give the same gradient. Row sums
    are matrix-vector products (vectorised, unlike XLA:CPU's serial row reductions).
    """
    top = jnp.maximum(_row_max(logits), dummy)
    if soft:
        e = jnp.exp((logits - top[:, None]) / gamma)
        e_dummy = jnp.exp((dummy - top) / gamma)
    else:
        e = (logits == top[:, None]).astype(jnp.float32)
        e_dummy = (dummy == top).astype(jnp.float32)
    z = e @ jnp.ones(e.shape[-1], jnp.float32) + e_dummy
    value = top + gamma * jnp.log(z) if soft else top
    return value, e_dummy / z, e / z[:, None]


def linear_value_and_grad(w, dummy, batch, gamma, l2, weight, chunk):
    """:func:`batch_loss` of ``LinearScorer(w, dummy)`` and its gradient, in closed form.

    ``d l_i / d s_ij = p_ij - q_ij`` (softmax over all allowed links minus softmax over the gold set), so the
    gradient is ``sum_i c_i sum_j (p_ij - q_ij) phi_ij + l2 w`` for ``w`` and ``sum_i c_i (p_i0 - q_i0)`` for
    the dummy score, with item weights ``c_i`` from :func:`item_weights`. Items go in blocks of ``chunk``
    consecutive items of the flattened ``B * M`` axis through a ``fori_loop``: a block's features are
    converted to float32 once and both contractions (``phi w`` and ``r phi``) read that copy from cache, and
    the loop body holds nothing but them and the two soft-maxes (autodiff's version re-derives masks and
    materialises more per block). ``gamma == 0`` (hard max) and ``gamma > 0`` run separate loops under
    ``lax.cond``, so neither pays for the other branch.

    Parameters
    ----------
    w : (F,) float32; dummy : () float32
    batch : DocBatch (B, M, A, F); ``chunk`` must divide ``B * M`` (static int)
    gamma, l2, weight : () arrays (traced)

    Returns
    -------
    loss : () ; grad_w : (F,) ; grad_dummy : ()
    """
    loss, gw, gd = linear_sums(w, dummy, batch, gamma, weight, item_weights(batch, weight), chunk)
    return loss + l2 * 0.5 * jnp.sum(w * w), gw + l2 * w, gd


def linear_sums(w, dummy, batch, gamma, weight, wts, chunk):
    """The data part of :func:`linear_value_and_grad` (no ``l2`` term) with the item weights ``wts (B, M)``
    given: sums over the documents of ``batch`` only, so a shard of the documents of a larger batch gives its
    share of that batch's loss and gradient when ``wts`` are that batch's :func:`item_weights`.

    Returns ``(sum_i c_i l_i, sum_i c_i d l_i / d w, sum_i c_i d l_i / d dummy)``.
    """
    b, m, a, f = batch.features.shape
    feats = batch.features.reshape(b * m, a, f)
    fields = (feats, *_link_offsets(batch, dummy, weight), wts.reshape(b * m))

    def loop(soft):
        def body(k, acc):
            x, add_all, add_gold, d_all, d_gold, c = (
                jax.lax.dynamic_slice_in_dim(v, k * chunk, chunk, axis=0) for v in fields
            )
            x = x.astype(jnp.float32).reshape(chunk * a, f)
            s = (x @ w).reshape(chunk, a)
            v_all, p0, p = _soft_max_and_probs(s + add_all, d_all, gamma, soft)
            v_gold, q0, q = _soft_max_and_probs(s + add_gold, d_gold, gamma, soft)
            r = c[:, None] * (p - q)
            loss, gw, gd = acc
            # items that do not count have c = 0 (their v_all - v_gold is finite: both sets are non-empty)
            return loss + c @ (v_all - v_gold), gw + r.reshape(-1) @ x, gd + c @ (p0 - q0)

        zero = (jnp.zeros((), jnp.float32), jnp.zeros_like(w), jnp.zeros((), jnp.float32))
        return lambda: jax.lax.fori_loop(0, (b * m) // chunk, body, zero)

    return jax.lax.cond(gamma > 0, loop(True), loop(False))
