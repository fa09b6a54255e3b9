"""Exceptions raised by jaxclust. Every message names the culprit (row, column, index, pair)."""

from __future__ import annotations

__all__ = [
    "JaxclustError",
    "InvalidInputError",
    "InvalidInputTypeError",
    "ConstraintError",
    "StoreError",
    "StoreLockedError",
    "JaxclustWarning",
    "StoreRecoveryWarning",
    "ConstraintConflictError",
    "DatasetNotFoundError",
    "InfeasibleConstraintsError",
    "NotFittedError",
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


class NotFittedError(JaxclustError, AttributeError):
    """An estimator method needs ``fit`` first."""
