"""k-means++ seeding in jitted JAX (the greedy variant scikit-learn uses), with sample weights and padded rows."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax import lax

from jaxclust.kmeans.common import row_weights

__all__ = ["kmeans_plusplus"]


@functools.partial(jax.jit, static_argnames=("n_clusters", "n_local_trials"))
def kmeans_plusplus(
    key, X, n_clusters: int, n_local_trials: int | None = None, n_valid=None, sample_weight=None
):
    """Greedy k-means++ seeding (Arthur & Vassilvitskii 2007, greedy variant as in scikit-learn).

    The first centre is a draw with probability proportional to the sample weight (uniform by default); each
    further centre is the best (lowest resulting weighted potential) of ``n_local_trials`` candidates drawn with
    probability proportional to weight times the squared distance to the closest centre chosen so far.

    Parameters
    ----------
    key : PRNG key
    X : (n, d) float array
    n_clusters : int (static)
    n_local_trials : int or None (static), default ``2 + floor(log k)``.
    n_valid : scalar or None (traced), rows past it are padding and never chosen.
    sample_weight : (n,) non-negative float array or None (traced); rows of weight 0 are never chosen.

    Returns
    -------
    (n_clusters, d) array of centres (rows of X).
    """
    n, d = X.shape
    trials = n_local_trials or 2 + int(math.log(n_clusters))
    x_sq = jnp.sum(X * X, axis=1)
    n_valid = n if n_valid is None else n_valid
    w = row_weights(n, X.dtype, n_valid, sample_weight)
    key_first, key_rest = jax.random.split(key)
    last = jnp.max(jnp.where(w > 0, jnp.arange(n), 0))  # searchsorted can land past it only by rounding

    def draw(mass, u):  # rows with probability ∝ their share of ``mass``; a row adding nothing is never drawn
        cum = jnp.cumsum(mass)
        return jnp.minimum(jnp.searchsorted(cum, u * jnp.sum(mass), side="right"), last)

    first = draw(w, jax.random.uniform(key_first, (), X.dtype))

    def sq_dist_to(idx):  # (m,) indices -> (m, n) squared distances
        c = X[idx]
        return jnp.maximum(x_sq[idx][:, None] - 2.0 * (c @ X.T) + x_sq[None, :], 0.0)

    closest = sq_dist_to(first[None])[0]
    centers = jnp.zeros((n_clusters, d), X.dtype).at[0].set(X[first])

    def body(c, carry):
        centers, closest = carry
        cand = draw(w * closest, jax.random.uniform(jax.random.fold_in(key_rest, c), (trials,), X.dtype))
        d_cand = jnp.minimum(closest[None, :], sq_dist_to(cand))  # (trials, n)
        best = jnp.argmin(d_cand @ w)
        return centers.at[c].set(X[cand[best]]), d_cand[best]

    centers, _ = lax.fori_loop(1, n_clusters, body, (centers, closest))
    return centers
