"""Where a new point goes: the posterior predictive assignment of new data under retained DPMM samples.

In one sample ``z`` of the training partition (components with ``n_c`` items) and concentration ``alpha``, a
new point ``x`` joins component ``c`` with probability proportional to ``n_c p(x | X_c)`` (the family's
posterior predictive given the component's items, e.g. a product of Student-t densities for
:class:`~jaxclust.dpmm.NormalGamma`) and a new component with probability proportional to ``alpha p(x)`` (the
prior predictive): the collapsed Gibbs conditional of one more item. Samples name their components
arbitrarily, so each sample's components are read in the clusters of a reference partition (``labels_``):
component ``c`` gives each cluster ``k`` the share of its items that ``labels_`` puts in ``k``. Averaged over
the retained samples this is ``p(x joins cluster k | data)`` for the clusters of ``labels_``, plus the
probability of a new cluster.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["assignment_probabilities"]


def assignment_probabilities(family, X, X_new, samples, alphas, reference) -> np.ndarray:
    """(m, K + 1) probabilities that each row of ``X_new`` joins each of the K clusters of ``reference``
    (n,), or (last column) a new one, averaged over ``samples`` (S, n) with concentrations ``alphas`` (S,).

    ``family`` is the prior in the units of ``X`` (n, D) and ``X_new`` (m, D) (those of
    :func:`jaxclust.dpmm.model.prepare_data`).
    """
    X = np.asarray(X, np.float64)
    X_new = np.asarray(X_new, np.float64)
    samples = np.atleast_2d(np.asarray(samples))
    _, ref = np.unique(np.asarray(reference), return_inverse=True)
    K_ref = int(ref.max()) + 1
    fam = family.astype(jnp.float64) if jax.config.jax_enable_x64 else family
    train = fam.group_stats(X, np.arange(len(X)), len(X))
    new = fam.group_stats(X_new, np.arange(len(X_new)), len(X_new))
    prior = jax.tree.map(lambda a: a[None], fam.prior_slot())
    pred = jax.vmap(lambda slots, g: fam.log_pred(slots, g), in_axes=(None, 0))
    lp_new = np.asarray(pred(prior, new))[:, 0].astype(np.float64)  # (m,) ln p(x) under the prior
    out = np.zeros((len(X_new), K_ref + 1))
    for z, alpha in zip(samples, np.asarray(alphas, np.float64), strict=True):
        _, comp = np.unique(z, return_inverse=True)
        K = int(comp.max()) + 1
        slots = fam.slots_from_groups(jnp.asarray(comp), train, K)
        lp = np.asarray(pred(slots, new)).astype(np.float64)  # (m, K) ln p(x | X_c)
        counts = np.bincount(comp, minlength=K).astype(np.float64)
        logw = np.concatenate([np.log(counts)[None, :] + lp, (np.log(alpha) + lp_new)[:, None]], axis=1)
        logw -= logw.max(axis=1, keepdims=True)
        p = np.exp(logw)
        p /= p.sum(axis=1, keepdims=True)
        share = np.zeros((K, K_ref))
        np.add.at(share, (comp, ref), 1.0)
        share /= counts[:, None]
        out[:, :K_ref] += p[:, :K] @ share
        out[:, K_ref] += p[:, K]
    return out / len(samples)
