"""Online L3M inference over padded documents: greedy cluster linking and best-left-link decoding.

Both run as one ``lax.scan`` over the items of a document (items arrive left to right) and are vmapped over
the
documents of a :class:`~jaxclust.l3m.document.DocBatch`.

* :func:`greedy_labels` (docs/algorithms/l3m.md, "Inference"): ``P(c <- i) = sum_{j in c} P(j <- i)`` with
  ``P(j <- i) = softmax(s_i. / gamma)`` (one-hot on the arg-max at ``gamma = 0``); item ``i`` joins ``c* =
  argmax_c P(c <- i)`` if ``P(c* <- i) > threshold``, else opens a new cluster. Hard cannot-links block every
  cluster holding a cannot-linked item; a hard must-link forces the join.
* :func:`best_left_link_labels`: link ``i`` to ``argmax_j s_ij`` (dummy = new cluster); exact MAP at ``gamma
  = 0``.

Cluster probabilities are summed with ``segment_sum`` (O(A) per item); on a GPU its float summation order may
vary,
which can only matter for exact ties between clusters.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxclust.l3m.loss import link_logits

__all__ = ["link_probabilities", "greedy_labels", "best_left_link_labels", "predict_batch"]


def link_probabilities(logits, allowed, gamma):
    """``P(j <- i)`` over the allowed links (dummy first): softmax of ``logits / gamma``; arg-max one-hot at
    0."""
    g = jnp.where(gamma > 0, gamma, 1.0)
    soft = jax.nn.softmax(jnp.where(allowed, logits, 0.0) / g, axis=-1, where=allowed)
    soft = jnp.where(allowed, soft, 0.0)
    hard = jax.nn.one_hot(
        jnp.argmax(jnp.where(allowed, logits, -jnp.inf), -1), logits.shape[-1], dtype=logits.dtype
    )
    return jnp.where(gamma > 0, soft, hard)


def _ante(i, n_ante):
    j = i - 1 - jnp.arange(n_ante)
    return jnp.maximum(j, 0)


def greedy_labels(scorer, features, cand, item, codes, gamma, threshold, weight):
    """Greedy online clustering of one padded document.

    Parameters
    ----------
    features : (M, A, F); cand : (M, A) bool; item : (M,) bool; codes : (M, A) int8
    gamma, threshold, weight : () arrays

    Returns
    -------
    labels : (M,) int32 cluster ids numbered 0, 1, ... by first item; -1 for padding items
    """
    logits, allowed = link_logits(scorer, features, cand, codes, weight)
    probs = link_probabilities(logits, allowed, gamma)  # (M, A+1)
    m, n_ante = cand.shape
    hard = jnp.isinf(weight)
    clusters = jnp.arange(m)

    def body(carry, i):
        z, k = carry
        zj = z[_ante(i, n_ante)]
        # O(A) per item: sum link probabilities per cluster (ids outside [0, M) are dropped by segment_sum)
        p_cluster = jax.ops.segment_sum(probs[i, 1:], jnp.where(allowed[i, 1:], zj, m), num_segments=m)
        # hard cannot-links: refuse any cluster that holds a cannot-linked item (not just the candidate
        # itself)
        cannot = (codes[i] < 0) & cand[i]
        blocked = hard & (
            jax.ops.segment_max(cannot.astype(jnp.int32), jnp.where(cand[i], zj, m), num_segments=m) > 0
        )
        p_cluster = jnp.where(blocked | (clusters >= k), -1.0, p_cluster)
        best = jnp.argmax(p_cluster)
        must = hard & ~allowed[i, 0]  # dummy removed by a hard must-link
        join = (p_cluster[best] > threshold) | (must & (p_cluster[best] > 0))
        label = jnp.where(join, best, k)
        label = jnp.where(item[i], label, -1)
        z = z.at[i].set(label)
        k = k + (item[i] & ~join).astype(k.dtype)
        return (z, k), None

    z0 = jnp.full((m,), -1, jnp.int32)
    (z, _), _ = jax.lax.scan(body, (z0, jnp.zeros((), jnp.int32)), jnp.arange(m))
    return z


def best_left_link_labels(scorer, features, cand, item, codes, weight):
    """Best-left-link decoding of one padded document: labels ``(M,)`` (``-1`` for padding)."""
    logits, allowed = link_logits(scorer, features, cand, codes, weight)
    choice = jnp.argmax(jnp.where(allowed, logits, -jnp.inf), -1)  # 0 = dummy, a + 1 = antecedent slot a
    m, _ = cand.shape

    def body(carry, i):
        z, k = carry
        parent = jnp.maximum(i - choice[i], 0)  # slot a -> j = i - 1 - a = i - choice
        new = choice[i] == 0
        label = jnp.where(item[i], jnp.where(new, k, z[parent]), -1)
        return (z.at[i].set(label), k + (item[i] & new).astype(k.dtype)), None

    z0 = jnp.full((m,), -1, jnp.int32)
    (z, _), _ = jax.lax.scan(body, (z0, jnp.zeros((), jnp.int32)), jnp.arange(m))
    return z


@eqx.filter_jit
def predict_batch(scorer, batch, gamma, threshold, weight, best_link):
    """Labels ``(B, M)`` for a DocBatch; ``best_link`` (a static Python bool) picks best-left-link over
    greedy."""
    if best_link:
        return jax.vmap(best_left_link_labels, in_axes=(None, 0, 0, 0, 0, None))(
            scorer, batch.features, batch.cand, batch.item, batch.codes, weight
        )
    return jax.vmap(greedy_labels, in_axes=(None, 0, 0, 0, 0, None, None, None))(
        scorer, batch.features, batch.cand, batch.item, batch.codes, gamma, threshold, weight
    )
