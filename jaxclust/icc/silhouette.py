"""silh_const: the constrained silhouette of Akkaya, Wiebe & Mihalcea (EACL 2014, Section 4.2.2).

For an instance ``i`` in cluster ``c(i)``, using labelled instances only:

1. ``x_i`` = average distance from ``i`` to the other *labelled* instances of its own cluster;
2. ``y_i`` = minimum, over the other clusters holding a labelled member with a label opposing ``i``'s, of
   the average distance from ``i`` to that cluster's labelled instances;
3. ``silh_const(i) = (y_i - x_i) / max(y_i, x_i)``.

The seed leaves the edge cases open; ours (documented, tested):

* ``i``'s label is its own if it is labelled, otherwise its cluster's (majority of the cluster's
  labelled members; ties -> smallest label code).
* A cluster with no labelled member gives its members the score ``-1`` (nothing to propagate there: most
  informative).
* No labelled other member in the own cluster (only for a labelled ``i``): ``x_i = 0``.
* No opposing cluster: ``y_i = inf`` -> score ``1``. ``max(x, y) = 0`` -> score ``0``.

The core is one jitted function over a dense distance matrix: O(n^2 k) via two matrix products, no loops.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxclust.errors import InvalidInputError
from jaxclust.shapes import next_pow2
from jaxclust.transfer import to_device
from jaxclust.validation import check_array, check_labels

__all__ = ["silh_const", "silh_const_parts", "silh_const_scores", "silh_const_weights"]


@functools.partial(jax.jit, static_argnames=("n_clusters", "n_classes"))
def silh_const(D, clusters, labeled, label_codes, *, n_clusters: int, n_classes: int):
    """silh_const of every instance (see :func:`silh_const_parts` for the arguments)."""
    return silh_const_parts(D, clusters, labeled, label_codes, n_clusters=n_clusters, n_classes=n_classes)[0]


@functools.partial(jax.jit, static_argnames=("n_clusters", "n_classes"))
def silh_const_parts(D, clusters, labeled, label_codes, *, n_clusters: int, n_classes: int):
    """silh_const of every instance with its two terms.

    Parameters
    ----------
    D : (n, n) distances.
    clusters : (n,) int cluster ids in ``[0, n_clusters)``.
    labeled : (n,) bool, True for instances whose label is known.
    label_codes : (n,) int label codes in ``[0, n_classes)`` (ignored where not labelled).
    n_clusters, n_classes : static capacities.

    Returns
    -------
    score : (n,) in ``[-1, 1]``; x : (n,) own-cluster term; y : (n,) opposing term (``inf`` when none).
    """
    Cm = jax.nn.one_hot(clusters, n_clusters, dtype=D.dtype)  # (n, k)
    Lw = labeled.astype(D.dtype)
    Y = jax.nn.one_hot(label_codes, n_classes, dtype=D.dtype) * Lw[:, None]  # (n, q) labelled only
    S = D @ (Cm * Lw[:, None])  # (n, k): summed distance to the labelled members of each cluster
    N = Lw @ Cm  # (k,) labelled members per cluster
    H = Cm.T @ Y  # (k, q) label counts per cluster
    own = clusters
    cluster_label = jnp.argmax(H, axis=1)  # majority, ties -> smallest code
    has_label = N > 0
    lab_i = jnp.where(labeled, label_codes, cluster_label[own])
    # x: own cluster, excluding i itself (D[i, i] = 0 contributes nothing to the sum)
    n_other = N[own] - Lw
    s_own = jnp.take_along_axis(S, own[:, None], axis=1)[:, 0]
    x = jnp.where(n_other > 0, s_own / jnp.maximum(n_other, 1.0), 0.0)
    # opposing clusters: hold a labelled member whose label differs from i's
    opposing = (N[None, :] - jnp.take(H, lab_i, axis=1).T) > 0  # (n, k)
    opposing = opposing & (jnp.arange(n_clusters)[None, :] != own[:, None])
    means = S / jnp.maximum(N, 1.0)[None, :]
    y = jnp.min(jnp.where(opposing, means, jnp.inf), axis=1)
    denom = jnp.maximum(x, y)
    score = jnp.where(
        jnp.isinf(y), 1.0, jnp.where(denom > 0, (y - x) / jnp.where(denom > 0, denom, 1.0), 0.0)
    )
    return jnp.where(has_label[own], score, -1.0), x, y


def silh_const_scores(D, clusters, labeled_idx, labels, return_parts: bool = False):
    """Host wrapper: (n,) float64 silh_const from NumPy inputs.

    Parameters
    ----------
    D : (n, n) distances; clusters : (n,) ints; labeled_idx : (L,) indices of labelled instances;
    labels : (L,) their labels (any hashable values).
    return_parts : also return the ``x`` and ``y`` terms.
    """

    D = check_array(D, name="D", min_rows=1)
    n = D.shape[0]
    if D.shape != (n, n):
        raise InvalidInputError(f"D: expected a square (n, n) distance matrix, got shape {D.shape}")
    clusters = np.asarray(clusters)
    if clusters.shape != (n,):
        raise InvalidInputError(
            f"clusters: expected {n} cluster ids (one per row of D), got shape {clusters.shape}"
        )
    _, cl = np.unique(clusters, return_inverse=True)
    labeled = np.zeros(n, bool)
    codes = np.zeros(n, np.int32)
    idx = check_labels(labeled_idx, name="labeled_idx")
    if np.shape(labels) != idx.shape:
        raise InvalidInputError(
            f"labels: expected {idx.shape[0]} labels (one per labelled index), got shape {np.shape(labels)}"
        )
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx[(idx < 0) | (idx >= n)][0])
        raise InvalidInputError(f"labeled_idx: index {bad} is out of range for {n} items (valid: 0..{n - 1})")
    if idx.size:
        _, lc = np.unique(np.asarray(labels), return_inverse=True)
        labeled[idx] = True
        codes[idx] = lc
    k = int(cl.max()) + 1
    q = int(codes.max()) + 1
    with jax.enable_x64(True):
        out = silh_const_parts(
            to_device(D),
            to_device(cl, jnp.int32),
            to_device(labeled),
            to_device(codes),
            n_clusters=_bucket(k),
            n_classes=_bucket(q),
        )
        score, x, y = (np.asarray(o, dtype=np.float64) for o in out)
        return (score, x, y) if return_parts else score


def silh_const_weights(scores) -> np.ndarray:
    """Scores in [-1, 1] mapped linearly to sample weights in [0, 1] (the seed's normalisation)."""
    return (np.asarray(scores, dtype=np.float64) + 1.0) / 2.0


def _bucket(k: int) -> int:
    # capacities rounded up to a power of two (min 8) so repeated calls reuse one compile
    return next_pow2(k, 8)
