"""Host-side input validation: one place that checks feature matrices, label arrays and seeds.

Every check raises :class:`jaxclust.errors.InvalidInputError` with a message that names the culprit
(``"X: row 17 has NaN in column 3"``), before any array reaches JAX.
"""

from __future__ import annotations

import functools
import numbers
import sys
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from jaxclust.errors import ConstraintError, InvalidInputError, InvalidInputTypeError

__all__ = [
    "check_array",
    "check_label_rows",
    "check_labels",
    "check_index",
    "check_positive",
    "check_int",
    "check_rule",
    "check_float",
    "check_fitted",
    "looks_like_constraints",
    "reject_constraints_as_y",
    "prng_key",
    "seed_from",
    "sklearn_seed",
    "check_sample_weight",
    "Int",
    "Real",
    "Options",
    "Function",
    "PerKey",
    "Reals",
    "validate_params",
]


def check_array(
    X: Any,
    name: str = "X",
    *,
    min_rows: int = 2,
    min_cols: int = 1,
    ndim: int = 2,
    dtype: Any = np.float64,
    allow_nonfinite: bool = False,
) -> np.ndarray:
    """Validate a numeric array and return it as a C-contiguous NumPy array of ``dtype``.

    Parameters
    ----------
    X : array-like, shape (n, d) when ``ndim == 2``
        Anything ``np.asarray`` accepts; JAX arrays are copied to host once. Sparse matrices are rejected
        with a hint to densify (the dense-feature models need dense input).
    name : str
        How the array is called in error messages.
    min_rows, min_cols : int
        Smallest accepted number of rows (items) and columns (features).
    ndim : int
        Required number of dimensions.
    dtype : numpy dtype
        Output dtype (float64 by default; callers that need float32 cast themselves).
    allow_nonfinite : bool
        If False (default) NaN and ±inf raise, naming the first offending row and column.
    """
    if (  # already what is asked for: skip the conversions (tens of microseconds on a millisecond fit)
        type(X) is np.ndarray
        and X.dtype == dtype
        and X.ndim == ndim
        and X.flags.c_contiguous
        and X.shape[0] >= min_rows
        and (ndim < 2 or X.shape[1] >= min_cols)
    ):
        if not allow_nonfinite:
            _raise_if_nonfinite(X, name)
        return X
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):
        raise InvalidInputError(f"{name}: sparse input is not supported here; pass {name}.toarray()")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise InvalidInputError(f"{name}: cannot be converted to an array ({exc})") from exc
    if (
        arr.dtype == object
    ):  # numbers boxed as objects (pandas, lists of Decimals) are fine; anything else is not
        try:
            arr = arr.astype(np.float64)
        except TypeError as exc:
            raise InvalidInputTypeError(f"{name}: {exc}") from exc
        except ValueError as exc:
            raise InvalidInputError(f"{name}: expected numeric values ({exc})") from exc
    if np.iscomplexobj(arr):
        raise InvalidInputError(f"{name}: Complex data not supported (got dtype {arr.dtype})")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InvalidInputError(f"{name}: expected numeric values, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        hint = (
            " (Reshape your data either using X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) if "
            "it contains a single sample)"
            if ndim == 2 and arr.ndim == 1
            else ""
        )
        raise InvalidInputError(f"{name}: expected a {ndim}-D array, got shape {arr.shape}{hint}")
    if arr.shape[0] < min_rows:
        raise InvalidInputError(
            f"{name}: {arr.shape[0]} sample(s) (shape={arr.shape}) while a minimum of {min_rows} is required "
            f"(needs at least {min_rows} rows, one per item)"
        )
    if ndim >= 2 and arr.shape[1] < min_cols:
        raise InvalidInputError(
            f"{name}: {arr.shape[1]} feature(s) (shape={arr.shape}) while a minimum of {min_cols} is required "
            f"(needs at least {min_cols} columns)"
        )
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if not allow_nonfinite:
        _raise_if_nonfinite(arr, name)
    return arr


def _raise_if_nonfinite(arr: np.ndarray, name: str) -> None:
    """Raise :class:`InvalidInputError` naming the first NaN / inf entry (row and column for 2-D input)."""
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.argwhere(bad)[0]
        value = arr[tuple(where)]
        kind = "NaN" if np.isnan(value) else ("inf" if value > 0 else "-inf")
        if arr.ndim == 2:
            raise InvalidInputError(
                f"{name}: row {where[0]} has {kind} in column {where[1]} "
                f"({int(bad.sum())} non-finite values in all)"
            )
        raise InvalidInputError(f"{name}: {kind} at index {tuple(int(w) for w in where)}")


def check_labels(
    labels: Any, n: int | None = None, name: str = "labels", *, min_length: int = 0
) -> np.ndarray:
    """Validate a 1-D array of integer labels (any integer ids, negative allowed) and return it as int64.

    Float arrays are accepted only when every value is integral (``[0., 1., 1.]``); strings are rejected
    (encode them first, e.g. with ``np.unique(y, return_inverse=True)[1]``).
    """
    try:
        arr = np.asarray(labels)
    except Exception as exc:
        raise InvalidInputError(f"{name}: cannot be converted to an array ({exc})") from exc
    if arr.ndim != 1:
        raise InvalidInputError(f"{name}: expected a 1-D array of labels, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise InvalidInputError(f"{name}: expected {n} labels, got {arr.shape[0]}")
    if arr.shape[0] < min_length:
        raise InvalidInputError(f"{name}: needs at least {min_length} labels, got {arr.shape[0]}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype == bool:
        return arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64, copy=False)
    if np.issubdtype(arr.dtype, np.floating):
        finite = np.isfinite(arr)
        if not finite.all():
            i = int(np.argmin(finite))
            raise InvalidInputError(f"{name}: entry {i} is {arr[i]}, labels must be integers")
        frac = arr != np.round(arr)
        if frac.any():
            i = int(np.argmax(frac))
            raise InvalidInputError(f"{name}: entry {i} is {arr[i]}, labels must be integers")
        return arr.astype(np.int64)
    raise InvalidInputError(
        f"{name}: expected integer labels, got dtype {arr.dtype}; encode them with "
        "np.unique(labels, return_inverse=True)[1]"
    )


def check_label_rows(labels: Any, n: int, name: str) -> np.ndarray:
    """Labellings of ``n`` items, int64, as given: shape (n,) or (r, n), each row checked as :func:`check_labels`
    checks one (e.g. a sampler's starting labels, one row per chain; the sampler checks ``r``)."""
    arr = np.asarray(labels)
    if arr.ndim not in (1, 2) or arr.shape[-1] != n or not arr.size:
        raise InvalidInputError(
            f"{name}: expected shape ({n},) or (n_chains, n) with n = {n}, got {arr.shape}"
        )
    rows = np.stack([check_labels(row, n=n, name=name) for row in np.atleast_2d(arr)])
    return rows[0] if arr.ndim == 1 else rows


def check_sample_weight(sample_weight: Any, n: int, dtype: Any = np.float64, name: str = "sample_weight"):
    """Return per-row weights (n,) of ``dtype``: None gives ones, a number is every row's weight, else an (n,)
    array of finite, non-negative numbers, not all zero (scikit-learn's ``sample_weight``); errors name the
    first offending index."""
    if sample_weight is None:
        return np.ones(n, dtype)
    if isinstance(sample_weight, bool | str | bytes):
        raise InvalidInputError(f"{name}: expected None, a number or {n} numbers, got {sample_weight!r}")
    if np.ndim(sample_weight) == 0:
        return np.full(n, check_float(sample_weight, name, minimum=0.0, strict=True), dtype)
    w = check_array(sample_weight, name, min_rows=0, ndim=1, dtype=np.float64)
    if w.shape != (n,):
        raise InvalidInputError(f"{name}: expected {n} weights (one per row of X), got shape {w.shape}")
    if (w < 0).any():
        i = int(np.argmax(w < 0))
        raise InvalidInputError(f"{name}: weights must be >= 0; index {i} is {float(w[i])!r}")
    if not w.any():
        raise InvalidInputError(f"{name}: every weight is 0; at least one row must weigh")
    out = w.astype(dtype)
    if not np.isfinite(out).all():
        i = int(np.argmax(~np.isfinite(out)))
        raise InvalidInputError(
            f"{name}: index {i} is {float(w[i])!r}, beyond the {np.dtype(dtype).name} range"
        )
    return out


def check_index(i: Any, n: int, name: str = "index") -> int:
    """Return ``i`` as a Python int after checking it is an integer in ``[0, n)``."""
    if isinstance(i, bool) or not isinstance(i, numbers.Integral | np.integer):
        if isinstance(i, numbers.Real) and float(i).is_integer() and not isinstance(i, bool):
            raise InvalidInputError(f"{name}: {i!r} is not an integer (got {type(i).__name__})")
        raise InvalidInputError(f"{name}: {i!r} is not an integer index")
    i = int(i)
    if not 0 <= i < n:
        raise InvalidInputError(f"{name}: {i} is out of range for {n} items (valid: 0..{n - 1})")
    return i


def check_positive(value: Any, name: str, *, strict: bool = True) -> float:
    """Return ``value`` as float after checking it is finite and > 0 (``>= 0`` when ``strict=False``)."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name}: expected a number, got {value!r}") from exc
    if not np.isfinite(v) or (v <= 0 if strict else v < 0):
        raise InvalidInputError(f"{name}: must be {'>' if strict else '>='} 0 and finite, got {value!r}")
    return v


# --- numbers in range: the rules behind check_int, check_float and declared hyperparameters ---------------------
class Int(NamedTuple):
    """An integer hyperparameter (not a bool, not a float) in ``[minimum, maximum]``; ``none``: None allowed."""

    minimum: int | None = None
    maximum: int | None = None
    none: bool = False

    def want(self) -> str:
        lo, hi = self.minimum, self.maximum
        text = (
            f"an int in [{lo}, {hi}]"
            if lo is not None and hi is not None
            else f"an int >= {lo}"
            if lo is not None
            else f"an int <= {hi}"
            if hi is not None
            else "an int"
        )
        return f"None or {text}" if self.none else text

    def check(self, value: Any) -> Any:
        if value is None and self.none:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Integral | np.integer):
            raise ValueError
        v = int(value)
        if (self.minimum is not None and v < self.minimum) or (self.maximum is not None and v > self.maximum):
            raise ValueError
        return v


class Real(NamedTuple):
    """A real hyperparameter in its bounds (``strict``: exclusive; ``allow_inf``: +-inf accepted when the bounds
    allow it; ``none``: None allowed). NaN, strings and bools are refused. ``words``: what messages say is
    expected, where the bounds alone would not tell a user what the number means."""

    minimum: float | None = None
    maximum: float | None = None
    strict: bool = False
    allow_inf: bool = False
    none: bool = False
    words: str | None = None

    def want(self) -> str:
        if self.words is not None:
            return self.words
        lo = "" if self.minimum is None else f"{'>' if self.strict else '>='} {self.minimum}"
        hi = "" if self.maximum is None else f"{'<' if self.strict else '<='} {self.maximum}"
        bounds = " and ".join(b for b in (lo, hi) if b)
        text = ("a number" if self.allow_inf else "a finite number") + (f" {bounds}" if bounds else "")
        return f"None or {text}" if self.none else text

    def check(self, value: Any) -> Any:
        if value is None and self.none:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real | np.integer | np.floating):
            raise ValueError
        v = float(value)
        if np.isnan(v) or (np.isinf(v) and not self.allow_inf):
            raise ValueError
        lo, hi = self.minimum, self.maximum
        if lo is not None and (v <= lo if self.strict else v < lo):
            raise ValueError
        if hi is not None and (v >= hi if self.strict else v > hi):
            raise ValueError
        return v


class Options(NamedTuple):
    """One of a few values (compared by equality, so ``"batch"`` and not ``"Batch"``)."""

    values: tuple

    def want(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def check(self, value: Any) -> Any:
        if not any(type(value) is type(v) and value == v for v in self.values):
            raise ValueError
        return value


class Function(NamedTuple):
    """A callable (``none``: or None)."""

    none: bool = False

    def want(self) -> str:
        return "None or a callable" if self.none else "a callable"

    def check(self, value: Any) -> Any:
        if (value is None and self.none) or callable(value):
            return value
        raise ValueError


class PerKey(NamedTuple):
    """A value under ``rule``, or a mapping of such values, one per ``key`` (e.g. an error rate per annotator);
    returned as given, each value checked."""

    rule: Any
    key: str = "key"

    def want(self) -> str:
        return f"{self.rule.want()}, or a dict of them per {self.key}"

    def check(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            for v in value.values():
                self.rule.check(v)
            return value
        self.rule.check(value)
        return value


class Reals(NamedTuple):
    """A value under the :class:`Real` ``rule``, or a 1-d array of such values (e.g. one per column); returned
    as a float or a float64 array, each value checked (``rule.none``: or None). The array's length is the
    caller's to check against the data."""

    rule: Real

    def want(self) -> str:
        return f"{self.rule.want()}, or a 1-d array of them"

    def check(self, value: Any) -> Any:
        if value is None or isinstance(value, numbers.Real | np.integer | np.floating):
            return self.rule.check(value)
        arr = np.asarray(value)
        if arr.ndim != 1 or arr.dtype.kind not in "iuf":
            raise ValueError
        return np.array([self.rule.check(v) for v in arr.tolist()], np.float64)


def check_rule(rule: Any, value: Any, name: str) -> Any:
    """``value`` checked by a declared ``rule`` (:class:`Int`, :class:`Real`, :class:`Options`, ...) and
    returned as the rule gives it; else :class:`~jaxclust.errors.InvalidInputError`
    ``"<name>: expected <what the rule wants>, got <value>"``."""
    try:
        return rule.check(value)
    except (ValueError, TypeError, OverflowError):
        raise InvalidInputError(f"{name}: expected {rule.want()}, got {value!r}") from None


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as a Python int after checking it is an integer (not a bool, not a float) in range.

    The message names the parameter as the user spelled it: ``"capacity: expected an int >= 1, got 'big'"``.
    """
    return check_rule(Int(minimum, maximum), value, name)


def check_float(
    value: Any,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    strict: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a float after checking it is a real number (not a string, not a bool, not NaN) in
    range; ``strict`` makes the bounds exclusive, ``allow_inf`` accepts +-inf (when the bounds allow it).
    """
    return check_rule(Real(minimum, maximum, strict, allow_inf), value, name)


def check_fitted(estimator: Any, attribute: str, method: str = "this method") -> None:
    """Raise :class:`jaxclust.errors.NotFittedError` (also scikit-learn's) unless ``estimator`` has ``attribute``.

    The message names the estimator and the method called: ``"KMeans.predict: this KMeans instance is not
    fitted yet; call fit first"``.
    """
    if not hasattr(estimator, attribute):
        cls = type(estimator).__name__
        from jaxclust.errors import NotFittedError  # deferred: built on first use from scikit-learn's class

        raise NotFittedError(f"{cls}.{method}: this {cls} instance is not fitted yet; call fit first")


def validate_params(
    estimator: Any, names: Iterable[str] | None = None, rules: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Check an estimator's hyperparameters against the rules its class declares in ``_parameter_constraints``
    (``{name: Int(...) | Real(...) | Options(...)}``; ``rules`` replaces them) and return them checked (ints as
    ``int``, reals as ``float``). A bad one raises :class:`~jaxclust.errors.InvalidInputError` written as the
    user spelled it: ``"KMeans(n_clusters=0): expected an int >= 1"``. ``names`` restricts the check to some."""
    rules = type(estimator)._parameter_constraints if rules is None else rules
    out = {}
    for name in rules if names is None else names:
        value = getattr(estimator, name)
        try:
            out[name] = rules[name].check(value)
        except (ValueError, TypeError, OverflowError):
            raise InvalidInputError(
                f"{type(estimator).__name__}({name}={value!r}): expected {rules[name].want()}"
            ) from None
    return out


_CONSTRAINT_KEYS = ("must_link", "cannot_link")


def looks_like_constraints(obj: Any) -> bool:
    """True for what jaxclust accepts as constraints: a :class:`~jaxclust.Constraints`, a mapping with a
    ``"must_link"`` or ``"cannot_link"`` key, or a pair ``(must_link, cannot_link)`` of pair lists.

    Used to stop constraints from vanishing into a ``y`` argument that an estimator ignores.
    """
    from collections.abc import Mapping

    # No import of jaxclust.constraints here (it imports this module): a Constraints object can only exist once
    # that module has been imported, so look it up where the import system keeps it.
    constraints_module = sys.modules.get("jaxclust.constraints")
    if constraints_module is not None and isinstance(obj, constraints_module.Constraints):
        return True
    if isinstance(obj, Mapping):
        return any(k in obj for k in _CONSTRAINT_KEYS)
    if isinstance(obj, tuple | list) and len(obj) == 2:
        return all(_is_pair_list(part) for part in obj) and any(len(part) for part in obj)
    return False


def _is_pair_list(part: Any) -> bool:
    if isinstance(part, str | bytes) or np.isscalar(part):
        return False
    try:
        arr = np.asarray(part, dtype=object)
    except Exception:
        return False
    return arr.size == 0 or (arr.ndim == 2 and arr.shape[1] == 2)


def reject_constraints_as_y(y: Any, where: str, hint: str, name: str = "y") -> None:
    """Raise :class:`~jaxclust.errors.ConstraintError` when constraints were passed as the argument ``name``
    (by default the ignored ``y``) of ``where`` (e.g. ``"KMeans.fit"``); ``hint`` says how to pass them."""
    if y is not None and looks_like_constraints(y):
        raise ConstraintError(
            f"{name}: {where} got constraints ({type(y).__name__}) as {name}, which it does not use; {hint}"
        )


def seed_from(random_state: Any) -> int:
    """An int seed from ``random_state`` (None -> 0, int -> itself, ``np.random.RandomState/Generator`` -> a draw).

    Every int in ``[0, 2**64)`` is its own seed (``2**32 + 5`` and ``5`` give different draws); larger ones
    raise ``InvalidInputError`` rather than being folded onto smaller ones.
    """
    if random_state is None:
        return 0
    if isinstance(random_state, bool):
        raise InvalidInputError(f"random_state: expected an int, got {random_state!r}")
    if isinstance(random_state, numbers.Integral | np.integer):
        seed = int(random_state)
        if seed < 0:
            raise InvalidInputError(f"random_state: must be >= 0, got {seed}")
        if seed >= 2**64:
            raise InvalidInputError(f"random_state: must be below 2**64, got {seed}")
        return seed
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    raise InvalidInputError(
        f"random_state: expected None, an int or a NumPy RNG, got {type(random_state).__name__}"
    )


@functools.cache
def _key_program():
    """``jax.random.key`` as one compiled program (eagerly it is two: the seed's copy to the device, then the
    key), built on first use so that importing this module does not import JAX."""
    import jax

    return jax.jit(jax.random.key)


def prng_key(random_state: Any = None):
    """A JAX PRNG key from ``random_state``: an existing key is returned as is, anything else goes via ``seed_from``."""
    import jax

    if isinstance(random_state, jax.Array):
        if jax.dtypes.issubdtype(random_state.dtype, jax.dtypes.prng_key):
            return random_state
        if random_state.dtype == np.uint32 and random_state.shape == (2,):  # legacy raw key
            return jax.random.wrap_key_data(random_state)
    seed = seed_from(random_state)
    # JAX keeps 32 bits of a seed: the high word is folded in
    key = _key_program()(np.uint32(seed & 0xFFFFFFFF))
    return jax.random.fold_in(key, seed >> 32) if seed >> 32 else key


def sklearn_seed(seed: int) -> int:
    """A seed for scikit-learn (which takes ``[0, 2**32)``) from one of ``seed_from``: itself when it fits,
    else a 32-bit draw of NumPy's seed sequence of the whole integer."""
    return seed if seed < 2**32 else int(np.random.SeedSequence(seed).generate_state(1)[0])
