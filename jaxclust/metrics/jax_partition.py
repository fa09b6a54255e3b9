"""Jittable partition metrics over JAX arrays with a fixed label capacity.

The host versions in :mod:`jaxclust.metrics.partition` build a sparse table with ``np.unique``; here the
contingency table is a dense ``(n_classes, n_clusters)`` array built by an integer scatter-add (exact and
deterministic), so sizes are static and the metrics run inside ``jit``, ``vmap`` (e.g. over a batch of sampled
labelings) and ``lax.scan`` (learning curves).

Conventions
-----------
- Labels are integer arrays; ids outside ``[0, capacity)`` (e.g. ``-1`` padding) are ignored, so padded items
  simply drop out of every count.
- Empty rows/columns (unused ids) contribute nothing: 0·log 0 = 0, and "number of classes/clusters" always
means
  the number of *non-empty* rows/columns (this matters for V-beta and the one-cluster edge cases).
- Edge cases match the host versions (scikit-learn's rules): empty input gives h = c = V = 1; one class gives
  h = 1; one cluster gives c = 1; identical partitions give ARI = 1.
- Every quotient and log uses the double-``where`` guard, so ``jax.grad`` through a *soft* table (e.g.
  ``one_hot(y).T @ responsibilities``) is NaN-free even with empty cells.
- Precision follows the input dtype: float32 by default (counts are exact up to 2^24 items; entropies to
~1e-6),
  float64 inside ``with jax.enable_x64(True):``.

Examples
--------
>>> import jax, jax.numpy as jnp
>>> y = jnp.array([0, 0, 1, 1, -1])              # last item is padding
>>> zs = jnp.array([[3, 3, 1, 1, -1], [0, 1, 0, 1, -1]])
>>> vm = jax.vmap(lambda z: v_measure(y, z, n_classes=2, n_clusters=4))(zs)
>>> [round(float(v), 4) for v in vm]
[1.0, 0.0]
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_int

__all__ = [
    "contingency",
    "table_stats",
    "homogeneity_completeness_v_measure",
    "v_measure",
    "v_beta",
    "variation_of_information",
    "purity",
    "inverse_purity",
    "adjusted_rand_index",
    "pairwise_link_accuracy",
    "hcv_from_table",
    "v_beta_from_table",
    "vi_from_table",
    "purity_from_table",
    "ari_from_table",
    "pairwise_link_accuracy_from_table",
]

_STATIC = ("n_classes", "n_clusters")


def _float_dtype():
    return jnp.result_type(float)


@functools.partial(jax.jit, static_argnames=_STATIC)
def contingency(
    labels_true: jax.Array, labels_pred: jax.Array, n_classes: int, n_clusters: int | None = None
) -> jax.Array:
    """Dense contingency table n_ck as floats.

    Parameters
    ----------
    labels_true : int array, shape (n,)
        Class ids; ids outside ``[0, n_classes)`` are ignored.
    labels_pred : int array, shape (n,)
        Cluster ids; ids outside ``[0, n_clusters)`` are ignored.
    n_classes, n_clusters : int (static)
        Label capacities; ``n_clusters`` defaults to ``n_classes``.

    Returns
    -------
    table : array, shape (n_classes, n_clusters)
        Counts of items with class c and cluster k (both in range), in the default float dtype.
    """
    n_clusters = n_classes if n_clusters is None else n_clusters
    _check_capacity(n_classes, "n_classes")
    _check_capacity(n_clusters, "n_clusters")
    y = jnp.asarray(labels_true)
    z = jnp.asarray(labels_pred)
    for arr, name in ((y, "labels_true"), (z, "labels_pred")):  # dtypes and shapes are static under jit
        if not jnp.issubdtype(arr.dtype, jnp.integer) or arr.ndim != 1:
            raise InvalidInputError(
                f"{name}: expected a 1-D array of integer labels, got dtype {arr.dtype} and shape {arr.shape}"
            )
    if y.shape != z.shape:
        raise InvalidInputError(
            f"labels_true and labels_pred: expected the same length, got {y.shape[0]} and {z.shape[0]}"
        )
    valid = (y >= 0) & (y < n_classes) & (z >= 0) & (z < n_clusters)
    # integer scatter-add: exact and order-independent (unlike a float scatter); O(n), not a one-hot matmul
    cell = jnp.where(valid, y * n_clusters + z, n_classes * n_clusters)
    counts = jnp.zeros(n_classes * n_clusters, jnp.int32).at[cell].add(1, mode="drop")
    return counts.reshape(n_classes, n_clusters).astype(_float_dtype())


def _check_capacity(value, name: str) -> None:
    """Static label capacities are checked when traced (they are Python values then): a positive int."""

    check_int(value, name, minimum=1)


def _safe(x: jax.Array, ok: jax.Array, fill: float = 1.0) -> jax.Array:
    """``x`` where ``ok`` else ``fill``: first half of the double-where trick."""
    return jnp.where(ok, x, fill)


def table_stats(table: jax.Array) -> dict[str, jax.Array]:
    """Entropies and mutual information of a (possibly soft) contingency table, natural log.

    Parameters
    ----------
    table : array, shape (C, K)
        Non-negative cell counts.

    Returns
    -------
    dict with scalar arrays ``n`` (total), ``n_classes``, ``n_clusters`` (non-empty rows/columns, float),
    ``h_c``, ``h_k`` (entropies), ``h_c_given_k``, ``h_k_given_c`` (conditional entropies) and ``mi``.
    """
    table = jnp.asarray(table)
    a = table.sum(axis=1)  # (C,)
    b = table.sum(axis=0)  # (K,)
    n = table.sum()
    n_ok = n > 0
    n_safe = _safe(n, n_ok)
    a_ok, b_ok, t_ok = a > 0, b > 0, table > 0
    a_s, b_s, t_s = _safe(a, a_ok), _safe(b, b_ok), _safe(table, t_ok)
    log_a, log_b, log_t = jnp.log(a_s), jnp.log(b_s), jnp.log(t_s)
    log_n = jnp.log(n_safe)
    p_a, p_b, p_t = a / n_safe, b / n_safe, table / n_safe
    h_c = -jnp.sum(jnp.where(a_ok, p_a * (log_a - log_n), 0.0))
    h_k = -jnp.sum(jnp.where(b_ok, p_b * (log_b - log_n), 0.0))
    h_c_given_k = -jnp.sum(jnp.where(t_ok, p_t * (log_t - log_b[None, :]), 0.0))
    h_k_given_c = -jnp.sum(jnp.where(t_ok, p_t * (log_t - log_a[:, None]), 0.0))
    mi = jnp.sum(jnp.where(t_ok, p_t * (log_t + log_n - log_a[:, None] - log_b[None, :]), 0.0))
    n_classes = jnp.sum(a_ok).astype(table.dtype)
    n_clusters = jnp.sum(b_ok).astype(table.dtype)
    # I = 0 exactly when one side has a single label (as scikit-learn); clip rounding into [0, min(H(C),
    # H(K))]
    mi = jnp.where((n_classes > 1) & (n_clusters > 1), jnp.clip(mi, 0.0, jnp.minimum(h_c, h_k)), 0.0)
    return dict(
        n=n,
        n_classes=n_classes,
        n_clusters=n_clusters,
        h_c=jnp.maximum(h_c, 0.0),
        h_k=jnp.maximum(h_k, 0.0),
        h_c_given_k=jnp.maximum(h_c_given_k, 0.0),
        h_k_given_c=jnp.maximum(h_k_given_c, 0.0),
        mi=mi,
    )


def _hcv(s: dict[str, jax.Array], beta: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    c_ok = s["n_classes"] > 1
    k_ok = s["n_clusters"] > 1
    h = jnp.where(c_ok, s["mi"] / _safe(s["h_c"], c_ok & (s["h_c"] > 0)), 1.0)
    c = jnp.where(k_ok, s["mi"] / _safe(s["h_k"], k_ok & (s["h_k"] > 0)), 1.0)
    den = beta * h + c
    den_ok = (h + c) > 0
    v = jnp.where(den_ok, (1.0 + beta) * h * c / _safe(den, den_ok & (den > 0)), 0.0)
    return h, c, v


def hcv_from_table(table: jax.Array, beta: float | jax.Array = 1.0) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Homogeneity, completeness and V_β of a contingency table (see
    :func:`homogeneity_completeness_v_measure`)."""
    table = jnp.asarray(table)
    return _hcv(table_stats(table), jnp.asarray(beta, table.dtype))


def v_beta_from_table(table: jax.Array) -> jax.Array:
    """V-beta of a contingency table: β = non-empty columns / non-empty rows; 1 for an empty table."""
    s = table_stats(table)
    c_ok = s["n_classes"] > 0
    beta = jnp.where(c_ok, s["n_clusters"] / _safe(s["n_classes"], c_ok), 1.0)
    return _hcv(s, beta)[2]


def vi_from_table(table: jax.Array) -> jax.Array:
    """Variation of information H(C|K) + H(K|C) (nats) of a contingency table."""
    s = table_stats(table)
    return s["h_c_given_k"] + s["h_k_given_c"]


def purity_from_table(table: jax.Array) -> jax.Array:
    """Purity (1/N) Σ_k max_c n_ck of a contingency table; 1 for an empty table."""
    table = jnp.asarray(table)
    n = table.sum()
    ok = n > 0
    return jnp.where(ok, table.max(axis=0).sum() / _safe(n, ok), 1.0)


def _pair_terms(table: jax.Array):
    """Pair fractions normalised by C(N, 2): same-cell, same-row, same-column (floats in [0, 1])."""
    n = table.sum()
    ok = n > 1
    # x(x-1) / (N(N-1)) computed as (x/N)((x-1)/(N-1)) to stay in range in float32
    n_s, n1_s = _safe(n, ok), _safe(n - 1.0, ok)

    def frac(x):
        return jnp.sum((x / n_s) * ((x - 1.0) / n1_s))

    return ok, frac(table), frac(table.sum(axis=1)), frac(table.sum(axis=0))


def _identical(table: jax.Array) -> jax.Array:
    """True when the two partitions are equal: every non-empty row and column holds exactly one non-empty
    cell."""
    nz = table > 0
    cells = jnp.sum(nz)
    return (cells == jnp.sum(nz.any(axis=1))) & (cells == jnp.sum(nz.any(axis=0)))


def ari_from_table(table: jax.Array) -> jax.Array:
    """Adjusted Rand index of a contingency table; 1 for identical partitions (incl. N < 2)."""
    table = jnp.asarray(table)
    ok, s_ij, s_a, s_b = _pair_terms(table)
    expected = s_a * s_b
    den = 0.5 * (s_a + s_b) - expected
    den_ok = ok & (den != 0)
    ari = (s_ij - expected) / _safe(den, den_ok)
    return jnp.where(_identical(table) | ~ok, 1.0, jnp.where(den_ok, ari, 0.0))


def pairwise_link_accuracy_from_table(table: jax.Array) -> jax.Array:
    """Rand index (fraction of item pairs whose same/different status agrees); 1 when N < 2."""
    table = jnp.asarray(table)
    ok, s_ij, s_a, s_b = _pair_terms(table)
    # agree = 1 - (same class only + same cluster only)
    disagree = (s_a - s_ij) + (s_b - s_ij)
    return jnp.where(ok, jnp.clip(1.0 - disagree, 0.0, 1.0), 1.0)


@functools.partial(jax.jit, static_argnames=_STATIC)
def homogeneity_completeness_v_measure(
    labels_true: jax.Array, labels_pred: jax.Array, n_classes: int, n_clusters: int | None = None, beta=1.0
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Jittable (h, c, V_β) of two label arrays with label capacities ``n_classes`` and ``n_clusters``.

    Parameters
    ----------
    labels_true, labels_pred : int arrays, shape (n,)
        Ids outside ``[0, capacity)`` mark padding and are ignored.
    n_classes, n_clusters : int (static)
        Label capacities (``n_clusters`` defaults to ``n_classes``).
    beta : float or scalar array (traced)
        Completeness weight.

    Returns
    -------
    (h, c, v) : scalar arrays
    """
    return hcv_from_table(contingency(labels_true, labels_pred, n_classes, n_clusters), beta)


@functools.partial(jax.jit, static_argnames=_STATIC)
def v_measure(labels_true, labels_pred, n_classes: int, n_clusters: int | None = None, beta=1.0) -> jax.Array:
    """Jittable V-measure V_β; see :func:`homogeneity_completeness_v_measure`."""
    return hcv_from_table(contingency(labels_true, labels_pred, n_classes, n_clusters), beta)[2]


@functools.partial(jax.jit, static_argnames=_STATIC)
def v_beta(labels_true, labels_pred, n_classes: int, n_clusters: int | None = None) -> jax.Array:
    """Jittable V-beta: V_β with β = #non-empty clusters / #non-empty classes."""
    return v_beta_from_table(contingency(labels_true, labels_pred, n_classes, n_clusters))


@functools.partial(jax.jit, static_argnames=_STATIC)
def variation_of_information(
    labels_true, labels_pred, n_classes: int, n_clusters: int | None = None
) -> jax.Array:
    """Jittable variation of information (nats)."""
    return vi_from_table(contingency(labels_true, labels_pred, n_classes, n_clusters))


@functools.partial(jax.jit, static_argnames=_STATIC)
def purity(labels_true, labels_pred, n_classes: int, n_clusters: int | None = None) -> jax.Array:
    """Jittable purity (1/N) Σ_k max_c n_ck."""
    return purity_from_table(contingency(labels_true, labels_pred, n_classes, n_clusters))


@functools.partial(jax.jit, static_argnames=_STATIC)
def inverse_purity(labels_true, labels_pred, n_classes: int, n_clusters: int | None = None) -> jax.Array:
    """Jittable inverse purity (1/N) Σ_c max_k n_ck."""
    return purity_from_table(contingency(labels_true, labels_pred, n_classes, n_clusters).T)


@functools.partial(jax.jit, static_argnames=_STATIC)
def adjusted_rand_index(labels_true, labels_pred, n_classes: int, n_clusters: int | None = None) -> jax.Array:
    """Jittable adjusted Rand index."""
    return ari_from_table(contingency(labels_true, labels_pred, n_classes, n_clusters))


@functools.partial(jax.jit, static_argnames=_STATIC)
def pairwise_link_accuracy(
    labels_true, labels_pred, n_classes: int, n_clusters: int | None = None
) -> jax.Array:
    """Jittable pairwise link accuracy (Rand index)."""
    return pairwise_link_accuracy_from_table(contingency(labels_true, labels_pred, n_classes, n_clusters))
