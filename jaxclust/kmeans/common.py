"""Helpers shared by the modules of :mod:`jaxclust.kmeans` (public within the package, not re-exported).

* input and hyperparameter checks of the estimators: :func:`check_X`, :func:`check_params`;
* the estimate step and scikit-learn's empty-cluster rule (traceable, called inside jit): :func:`estimate_centers`,
  :func:`relocate_empty`;
* exact power-of-two rescaling of data whose squared distances would overflow or underflow:
  :func:`scale_exponent`, :func:`scaled_centres`, :func:`unscale_sq`;
* row bucketing (one compilation for many sizes) and the scoped float64 context: :func:`bucket_rows`,
  :func:`x64_for`.

k-means (:mod:`~jaxclust.kmeans.lloyd_kmeans`), EM (:mod:`~jaxclust.kmeans.mixture`) and the constrained
variants (:mod:`~jaxclust.kmeans.constrained`) import them from here, so no module of the package reaches into
another's private names.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from sklearn.utils.validation import validate_data

from jaxclust.errors import InvalidInputError, InvalidInputTypeError, NumericalError
from jaxclust.shapes import next_pow2
from jaxclust.validation import Int, Real, check_array, validate_params

__all__ = [
    "bucket_rows",
    "check_X",
    "check_params",
    "estimate_centers",
    "relocate_empty",
    "row_weights",
    "scale_exponent",
    "scaled_centres",
    "unscale_sq",
    "x64_for",
]


def relocate_empty(Xflat, labels_flat, dist_flat, sums, counts, w_flat=None):
    """Move the points farthest from their centres into empty clusters (scikit-learn's rule), vectorised.

    The r-th empty cluster (by index) receives the r-th farthest point, which leaves its old cluster's sum.
    Nothing moves when every distance is 0 (more clusters than distinct points). With sample weights
    ``w_flat`` (like ``labels_flat``) a point carries its weight: ``sums`` and ``counts`` are weighted, and
    "farthest" is by distance alone, as in scikit-learn.
    """
    k = sums.shape[0]
    empty = counts == 0
    n_empty = jnp.sum(empty)
    far = lax.top_k(dist_flat, k)[1]  # (k,) indices of the k farthest points
    rank = jnp.arange(k)
    active = (rank < n_empty) & (jnp.max(dist_flat) > 0)
    empty_ids = jnp.argsort(~empty, stable=True)  # empty cluster ids first, in index order
    target = jnp.where(active, empty_ids, k)  # k = dropped by one_hot
    source = jnp.where(active, labels_flat[far], k)
    wf = jnp.ones((k,), sums.dtype) if w_flat is None else w_flat[far].astype(sums.dtype)
    move = jax.nn.one_hot(target, k, dtype=sums.dtype) - jax.nn.one_hot(source, k, dtype=sums.dtype)  # (k, k)
    return sums + move.T @ (Xflat[far] * wf[:, None]), counts + move.T @ wf


def estimate_centers(centers, sums, counts):
    """The estimate step: each centre to the mean of its points (``sums / counts``); a centre without points
    stays where it is."""
    safe = jnp.where(counts > 0, counts, 1.0)
    return jnp.where((counts > 0)[:, None], sums / safe[:, None], centers)


def check_X(estimator, X, *, reset: bool):
    """scikit-learn validation (shape, dtype, sparse, n_features_in_) plus jaxclust's NaN check.

    scikit-learn's errors come back as jaxclust's (``InvalidInputError``, a ``ValueError``;
    ``InvalidInputTypeError`` where scikit-learn raised a ``TypeError``), with scikit-learn's message after
    ``"X: "`` so that its estimator checks still recognise them.
    """
    try:
        X = validate_data(
            estimator, X, dtype=[np.float64, np.float32], reset=reset, ensure_all_finite=False, order="C"
        )
    except TypeError as exc:
        raise InvalidInputTypeError(_x_message(exc)) from exc
    except ValueError as exc:
        raise InvalidInputError(_x_message(exc)) from exc
    if not np.isfinite(X).all():
        check_array(X, name="X", min_rows=1)  # raises InvalidInputError naming the row/column
    return X


def _x_message(exc: Exception) -> str:
    msg = str(exc)
    return msg if msg.startswith("X ") or msg.startswith("X:") else f"X: {msg}"


def scale_exponent(dtype, *arrays) -> int:
    """0 when the largest magnitude in ``arrays`` lies where squared distances in ``dtype`` neither overflow nor
    underflow (2**-(e/4) .. 2**(e/4), e = 128 for float32, 1024 for float64); else the power of two ``p`` with
    ``max |x| / 2**p`` in [0.5, 1). Scaling by ``2**-p`` is exact (short of values that become subnormal), so
    k-means on the scaled data makes the same choices as on the data (it is scale-equivariant)."""
    m = max((float(np.max(np.abs(a))) for a in arrays if a.size), default=0.0)
    e = np.finfo(dtype).maxexp
    if m == 0.0 or 2.0 ** (-(e // 4)) <= m <= 2.0 ** (e // 4):
        return 0
    return int(np.frexp(m)[1])


def unscale_sq(value: float, p: int, what: str, X: np.ndarray) -> float:
    """``value * 4**p`` for a sum of squared distances computed on data scaled by ``2**-p``; raises
    :class:`NumericalError` (naming ``what`` and the scale of X) when that is beyond the float64 range."""
    value = float(value)
    if not np.isfinite(value):
        raise NumericalError(
            f"{what} is not finite ({value}) for X with max |x| = {float(np.max(np.abs(X))):.3g}; "
            "divide X by a constant (k-means is scale-equivariant: the labels do not change)"
        )
    try:
        return math.ldexp(value, 2 * p)
    except OverflowError:
        decades = math.log10(value) + 2 * p * math.log10(2.0) if value > 0 else float("inf")
        raise NumericalError(
            f"{what} is about 1e{decades:.0f}, beyond the float64 range, for X with max |x| = "
            f"{float(np.max(np.abs(X))):.3g}; divide X by a constant (k-means is scale-equivariant: the labels "
            "do not change)"
        ) from None


def scaled_centres(X: np.ndarray, centres: np.ndarray):
    """X and the centres in X's dtype, both scaled by the same power of two when their magnitudes need it;
    returns (X, centres, p)."""
    p = scale_exponent(X.dtype, X, centres)
    if p:
        return np.ldexp(X, -p).astype(X.dtype), np.ldexp(centres, -p).astype(X.dtype), p
    return X, centres.astype(X.dtype), 0


# the hyperparameters every k-means estimator shares, declared once
KMEANS_PARAMS = {"n_clusters": Int(1), "n_init": Int(1), "max_iter": Int(1), "tol": Real(0.0)}


def check_params(estimator, n_samples: int) -> dict:
    """The estimator's declared hyperparameters, checked (:func:`~jaxclust.validation.validate_params`), and
    at least as many rows as clusters."""
    params = validate_params(estimator)
    k = params["n_clusters"]
    if n_samples < k:
        raise InvalidInputError(
            f"{type(estimator).__name__}: n_samples={n_samples} should be >= n_clusters={k}"
        )
    return params


_BUCKET_MAX = 4096


def bucket_rows(X: np.ndarray) -> np.ndarray:
    """Zero-pad small inputs to the next power of two rows (host), so one compilation serves many sizes.

    Inputs above 4096 rows are left alone (padding would cost up to 2x compute); pass ``n_valid`` to the core.
    """
    n = X.shape[0]
    if n > _BUCKET_MAX:
        return X
    m = next_pow2(n, 16)
    return np.concatenate([X, np.zeros((m - n,) + X.shape[1:], X.dtype)]) if m > n else X


def x64_for(X):
    """Scoped float64 for float64 input; float32 input stays float32 (as scikit-learn's KMeans does)."""
    return jax.enable_x64(X.dtype == np.float64)


def row_weights(n: int, dtype, n_valid=None, sample_weight=None):
    """(n,) weight of each row: ``sample_weight`` (default 1) on data rows, 0 on padding (rows >= n_valid)."""
    valid = jnp.arange(n) < (n if n_valid is None else n_valid)
    w = jnp.ones((n,), dtype) if sample_weight is None else jnp.asarray(sample_weight, dtype)
    return jnp.where(valid, w, 0.0)
