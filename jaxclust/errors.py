"""Exceptions raised by jaxclust. Every message names the culprit (row, column, index, pair, parameter).

``except JaxclustError`` catches every error jaxclust raises on purpose. The classes also derive from the
built-in class that scikit-learn (and Python) would use for the same problem, so existing handlers keep working:
bad input is a ``ValueError`` (and a ``TypeError`` where the type is wrong), a missing data set a
``FileNotFoundError``, and :class:`~jaxclust.errors.NotFittedError` is scikit-learn's ``NotFittedError`` (itself a
``ValueError`` and an ``AttributeError``), so scikit-learn's estimator checks accept it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "JaxclustError",
    "InvalidInputError",
    "InvalidInputTypeError",
    "ConstraintError",
    "StoreError",
    "StoreLockedError",
    "StoreMismatchError",
    "QuestionError",
    "MissingDependencyError",
    "JaxclustWarning",
    "StoreRecoveryWarning",
    "ConstraintConflictError",
    "DatasetNotFoundError",
    "InfeasibleConstraintsError",
    "NotFittedError",  # noqa: F822 - built on first access, see __getattr__
    "NumericalError",
    "ChatError",
    "ExperimentConfigError",
    "ExperimentError",
    "DistributedError",
]


class JaxclustError(Exception):
    """Base class of every jaxclust exception."""


class InvalidInputError(JaxclustError, ValueError):
    """Bad features, labels or hyperparameters (NaN/inf, wrong shape, too few rows, wrong dtype)."""


class InvalidInputTypeError(InvalidInputError, TypeError):
    """Input of a type that cannot be used at all (e.g. a dict inside an object array)."""


class ConstraintError(JaxclustError, ValueError):
    """A malformed constraint: index out of range, non-integer index, a self cannot-link."""


class ConstraintConflictError(ConstraintError):
    """Must-links join a cannot-linked pair.

    Attributes
    ----------
    pair : tuple[int, int]
        The cannot-linked pair ``(i, j)`` that the must-links join.
    chain : list[tuple[int, int]]
        The must-link edges that connect ``i`` to ``j``, in path order.
    """

    def __init__(self, message: str, pair: tuple[int, int] | None = None, chain=None):
        super().__init__(message)
        self.pair = pair
        self.chain = list(chain) if chain is not None else []


class StoreError(JaxclustError, OSError):
    """An answer store (or an output file) that cannot be opened or written: a folder, a file that is not a
    jaxclust store, no write permission, a full disk. The message names the path and says what to do.
    """


class StoreLockedError(StoreError):
    """Another process has the answer store open.

    Attributes
    ----------
    path : str
        The store.
    holder : dict
        What the other process wrote into the lock file (``pid``, ``host``, ``since``), if it could be read.
    """

    def __init__(self, message: str, path: str = "", holder: dict | None = None):
        super().__init__(message)
        self.path = path
        self.holder = dict(holder or {})


class StoreMismatchError(InvalidInputError):
    """An existing answer store was started on other data (other items, features or texts): resuming would
    attach its answers to the wrong items. The message names the store and, where known, the data file.

    Attributes
    ----------
    key : str
        What differs (``"n"``, ``"fingerprint"``, ``"texts"``, ...).
    stored, given :
        The store's value and this session's.
    """

    def __init__(self, message: str, key: str = "", stored: Any = None, given: Any = None):
        super().__init__(message)
        self.key = key
        self.stored = stored
        self.given = given


class QuestionError(InvalidInputError):
    """An answer about a pair the annotator does not hold in a team session (never handed to them, handed to
    someone else, or already answered): it is not stored. The message names the pair and the annotator;
    ``already`` is True when it is the pair they answered last (a form sent twice)."""

    def __init__(self, message: str, already: bool = False):
        super().__init__(message)
        self.already = already


class MissingDependencyError(JaxclustError, ImportError):
    """An optional dependency is not installed; the message names the package and the ``pip install`` line
    (e.g. ``pip install "jaxclust[notebooks]"`` for the notebook annotator's ipywidgets, ``jaxclust[ray]`` for
    ``jaxclust experiment run --ray``)."""


class JaxclustWarning(UserWarning):
    """Base class of every jaxclust warning."""


class StoreRecoveryWarning(JaxclustWarning):
    """Opening an answer store found damaged records: they were set aside in ``<store>.corrupt``, every intact
    record was kept.
    """


class InfeasibleConstraintsError(JaxclustError, ValueError):
    """A constrained algorithm finds no feasible assignment (e.g. COP-KMeans: an item with no allowed cluster)."""


class DatasetNotFoundError(JaxclustError, FileNotFoundError):
    """A dataset's folder or files are missing from the data directory; the message says what is expected."""


class NumericalError(JaxclustError, ValueError):
    """A computation would give a non-finite or singular result (overflow from the scale of ``X``, a singular
    covariance); the message says which input caused it and what to change. Raised instead of returning NaN or
    inf."""


class ExperimentConfigError(JaxclustError, ValueError):
    """A bad experiment-grid config (``jaxclust experiment``): the message names the file, the key and, where it
    can, the line."""


class ExperimentError(JaxclustError, RuntimeError):
    """An experiment grid cannot run at all (e.g. the Ray cluster cannot be reached); the message says why."""


class ChatError(JaxclustError, RuntimeError):
    """A chat-model endpoint (:mod:`jaxclust.active.chat`) cannot answer: the key is missing or refused, the
    model or URL is wrong, or a request still failed after its retries. The message names the URL and what it
    said."""


class DistributedError(JaxclustError, RuntimeError):
    """The multi-process runtime (``jax.distributed``, :mod:`jaxclust.dpmm.distributed`) cannot start as asked,
    or the processes disagree: a process count other than the one asked for, JAX started before the runtime,
    processes given different data. The message names the setting, variable or process at fault."""


def _make_not_fitted_error() -> type:
    # Built on first use: deriving from scikit-learn's class needs scikit-learn imported (about a second), which
    # `import jaxclust.errors` (CLI start-up, constraints) should not pay for.
    from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

    cls = type(
        "NotFittedError",
        (JaxclustError, _SklearnNotFittedError),
        {
            "__doc__": "An estimator method needs ``fit`` first. Also scikit-learn's ``NotFittedError`` "
            "(a ``ValueError`` and an ``AttributeError``).",
            "__module__": __name__,
        },
    )
    cls.__qualname__ = "NotFittedError"
    return cls


def __getattr__(name: str) -> Any:
    if name == "NotFittedError":
        cls = _make_not_fitted_error()
        globals()["NotFittedError"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
