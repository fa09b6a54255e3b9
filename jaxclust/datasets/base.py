"""The ``Dataset`` and ``CorefDocument`` records and data-directory resolution.

Evaluation data sets live outside the package (their licences forbid shipping them). A loader finds them
under a data directory: the ``data_dir`` argument, else the ``JAXCLUST_DATA`` environment variable. Each
data set is one folder of that directory (e.g. ``verbs_general_verbnet33_valex/``), laid out as in the
shared data release.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jaxclust.errors import DatasetNotFoundError, InvalidInputError, JaxclustError
from jaxclust.metrics.conll import ConllDocument

__all__ = [
    "DATA_ENV",
    "Dataset",
    "CorefDocument",
    "Mention",
    "resolve_data_dir",
    "dataset_folder",
    "encode_labels",
    "check_choice",
    "check_setting",
    "read_text",
    "read_jsonl",
    "read_csv_rows",
    "file_errors",
]

DATA_ENV = "JAXCLUST_DATA"


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled data set ready for clustering.

    Attributes
    ----------
    name : str
        Short identifier, e.g. ``"verbs_general/balanced"``.
    X : np.ndarray of shape (n, d), scipy.sparse matrix or None
        Feature matrix (float64), or None for text-only sets.
    texts : list of str or None
        One text per item, or None for feature-only sets.
    labels : dict of str -> np.ndarray of shape (n,)
        Gold labelings by name, integer-coded 0..k-1 (the clustering-benchmark battery keeps its own coding,
        0 = noise and clusters 1..k, flagged by ``extra["noise_label"]``).
    label_names : dict of str -> list of str
        For each labeling, ``label_names[key][id]`` is the original class string of id ``id``.
    item_names : list of str
        One name per item (verb, instance id, document id...).
    feature_names : list of str or None
        One name per column of ``X``.
    target : str
        The key of ``labels`` chosen by the loader's ``label`` argument; ``y`` returns it.
    description, source, license : str
        Free text; ``source`` names where the data came from, ``license`` its terms of use.
    extra : dict
        Task-specific fields (counts, splits, token lists...), each of length n unless noted.
    """

    name: str
    X: Any
    texts: list[str] | None
    labels: dict[str, np.ndarray]
    label_names: dict[str, list[str]]
    item_names: list[str]
    feature_names: list[str] | None
    target: str
    description: str = ""
    source: str = ""
    license: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def y(self) -> np.ndarray:
        """The target labeling ``labels[target]``, shape (n,)."""
        return self.labels[self.target]

    @property
    def n_items(self) -> int:
        """Number of items n."""
        return len(self.item_names)

    @property
    def n_classes(self) -> int:
        """Number of distinct classes in the target labeling, not counting ``extra["noise_label"]``."""
        present = np.unique(self.y)
        noise = self.extra.get("noise_label")
        return int(np.sum(present != noise)) if noise is not None else len(present)

    def __len__(self) -> int:
        return self.n_items

    def __repr__(self) -> str:
        shape = None if self.X is None else tuple(self.X.shape)
        labs = ", ".join(f"{k}: {len(v)}" for k, v in self.label_names.items())
        return (
            f"Dataset(name={self.name!r}, n={self.n_items}, X={shape}, texts={self.texts is not None}, "
            f"target={self.target!r}, classes={{{labs}}})"
        )


@dataclass(frozen=True)
class Mention:
    """One gold mention of a coreference document.

    ``start``/``end`` are document-level token offsets (end exclusive) into ``CorefDocument.words``.
    Fields that a corpus does not annotate are None (LitBank has no syntax: ``head``, ``upos``, ``feats``).
    """

    start: int
    end: int
    text: str
    entity: int
    sentence: int
    head: int | None = None
    head_word: str | None = None
    upos: str | None = None
    feats: tuple[tuple[str, str], ...] = ()
    mention_type: str | None = None
    entity_type: str | None = None
    infstat: str | None = None
    link: str | None = None
    identity: str | None = None
    mention_id: str | None = None

    @property
    def morph(self) -> dict[str, str]:
        """UD morphology of the head token as a dict (e.g. ``{"Number": "Sing"}``), empty if none."""
        return dict(self.feats)


@dataclass(frozen=True, eq=False)
class CorefDocument:
    """A document with gold mentions in document order (start ascending, end descending).

    Attributes
    ----------
    doc_id : str
    tokens : tuple of tuple of str
        Sentences of tokens.
    mentions : tuple of Mention
        Gold mentions sorted left to right; ``mentions[i].entity`` is the gold cluster id (numbered by
        first mention).
    genre, license, source : str
    extra : dict
        Token-level fields where the corpus has them (GUM: ``lemmas``, ``upos``, ``xpos``, ``feats``,
        ``heads``, ``deprels`` as tuples over ``words``; ``speakers`` per sentence, so a mention's speaker is
        ``speakers[mention.sentence]``), ``relations`` (LitBank COP/APPOS links).

    Notes
    -----
    Loaders cache parsed documents in-process and return the same (immutable) records on every call: treat
    ``extra`` as read-only.
    """

    doc_id: str
    tokens: tuple[tuple[str, ...], ...]
    mentions: tuple[Mention, ...]
    genre: str = ""
    license: str = ""
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def words(self) -> tuple[str, ...]:
        """Flat token sequence; mention offsets index into it (computed once per document)."""
        return tuple(w for sent in self.tokens for w in sent)

    @property
    def n_mentions(self) -> int:
        return len(self.mentions)

    @property
    def spans(self) -> np.ndarray:
        """Mention spans, int64 array of shape (m, 2): ``[start, end)``."""
        return np.array([(m.start, m.end) for m in self.mentions], dtype=np.int64).reshape(-1, 2)

    @property
    def entities(self) -> np.ndarray:
        """Gold entity id per mention, int64 array of shape (m,): the gold clustering of the mentions."""
        return np.array([m.entity for m in self.mentions], dtype=np.int64)

    @property
    def clusters(self) -> list[list[tuple[int, int]]]:
        """Gold entities as lists of ``(start, end)`` spans, in entity-id order (singletons included)."""
        out: list[list[tuple[int, int]]] = [[] for _ in range(len({m.entity for m in self.mentions}))]
        for m in self.mentions:
            out[m.entity].append((m.start, m.end))
        return out

    def to_conll(self, labels: Sequence[int] | np.ndarray | None = None):
        """This document as a :class:`jaxclust.metrics.conll.ConllDocument` (inclusive spans), for the
        coreference scores and ``write_conll``.

        Parameters
        ----------
        labels : array-like of int, shape (m,), optional
            A predicted cluster id per mention (a system response); default the gold entities.
        """

        ids = self.entities if labels is None else np.asarray(labels)
        if ids.shape != (self.n_mentions,):
            raise InvalidInputError(
                f"labels: expected {self.n_mentions} cluster ids (one per mention), got shape {ids.shape}"
            )
        groups: dict[Any, list[tuple[int, int]]] = {}
        for m, k in zip(self.mentions, ids.tolist(), strict=True):
            groups.setdefault(k, []).append((m.start, m.end - 1))
        return ConllDocument.from_clusters(
            self.doc_id,
            list(groups.values()),
            sentence_lengths=[len(s) for s in self.tokens],
            words=self.words,
        )

    def __repr__(self) -> str:
        n_tok = sum(len(s) for s in self.tokens)
        return (
            f"CorefDocument(doc_id={self.doc_id!r}, sentences={len(self.tokens)}, tokens={n_tok}, "
            f"mentions={self.n_mentions}, entities={len(set(m.entity for m in self.mentions))})"
        )


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Return the data root: ``data_dir`` if given, else ``$JAXCLUST_DATA``.

    Raises
    ------
    DatasetNotFoundError
        When neither is set, or the directory does not exist.
    """
    if data_dir is None:
        env = os.environ.get(DATA_ENV)
        if not env:
            raise DatasetNotFoundError(
                f"no data directory given: pass data_dir=... or set the environment variable {DATA_ENV} "
                "to the folder holding the evaluation data sets (e.g. export JAXCLUST_DATA=/path/to/data)"
            )
        root, how = Path(env).expanduser(), f"${DATA_ENV}"
    else:
        root, how = Path(data_dir).expanduser(), "data_dir"
    if not root.is_dir():
        raise DatasetNotFoundError(
            f"data directory {str(root)!r} (from {how}) does not exist; pass data_dir=... or set {DATA_ENV}"
        )
    return root


def dataset_folder(folder: str, files: Sequence[str], data_dir: str | os.PathLike | None = None) -> Path:
    """Return ``<data root>/<folder>`` after checking that every file in ``files`` exists there.

    Raises
    ------
    DatasetNotFoundError
        Naming the folder, the files expected in it, which are missing, and how to point jaxclust at the data.
    """
    try:
        root = resolve_data_dir(data_dir)
    except DatasetNotFoundError as err:
        raise DatasetNotFoundError(
            f"data set folder {folder!r} (files: {', '.join(files)}) not found: {err}"
        ) from None
    path = root / folder
    missing = [f for f in files if not (path / f).is_file()]
    if missing:
        raise DatasetNotFoundError(
            f"data set folder {folder!r} under {str(root)!r} is missing {', '.join(missing)} "
            f"(expected files: {', '.join(files)}); copy the folder there, or pass data_dir=... / set "
            f"{DATA_ENV} to a data root that holds it"
        )
    return path


def encode_labels(values: Sequence[Any], order: Sequence[Any] | None = None) -> tuple[np.ndarray, list[str]]:
    """Integer-code ``values``: returns ``(codes (n,) int64, names)``, ``names[code]`` the original string.

    Classes are numbered in sorted order unless ``order`` gives them (every value must then be in ``order``).
    """
    if order is None:
        names = sorted(set(values), key=str)
    else:
        names = list(order)
    index = {v: i for i, v in enumerate(names)}
    codes = np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))
    return codes, [str(v) for v in names]


def check_choice(value: Any, name: str, choices: Sequence[Any]) -> Any:
    """Raise ``InvalidInputError`` naming ``name`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise InvalidInputError(f"{name}={value!r} is not one of {', '.join(repr(c) for c in choices)}")
    return value


def check_setting(value: Any, name: str, rule: Any) -> Any:
    """``value`` checked by a :mod:`jaxclust.validation` rule; ``InvalidInputError`` written as the loaders write
    them (``"min_posts=0 is not an int >= 1"``) otherwise."""
    try:
        return rule.check(value)
    except (ValueError, TypeError, OverflowError):
        raise InvalidInputError(f"{name}={value!r} is not {rule.want()}") from None


# -- reading data files: every problem is an InvalidInputError naming the file (and line where known) ----------


def read_text(path: str | os.PathLike, opener: Callable[..., Any] = open) -> str:
    """The UTF-8 text of a file (``opener``: ``open`` or ``gzip.open``); bytes that are not UTF-8 raise
    :class:`~jaxclust.errors.InvalidInputError` naming the file and line."""
    with opener(path, "rb") as fh:
        raw = fh.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InvalidInputError(
            f"{os.fspath(path)}: line {line} is not valid UTF-8 ({exc.reason} at byte {exc.start}); the file "
            "is damaged or in another encoding"
        ) from None


def read_jsonl(
    path: str | os.PathLike, opener: Callable[..., Any] = open, required: Sequence[str] = ()
) -> tuple[dict, ...]:
    """The JSON objects of a JSON-lines file, blank lines skipped. A line that is not a JSON object, or lacks
    one of the ``required`` fields, raises :class:`~jaxclust.errors.InvalidInputError` naming the file and line
    (extra fields are ignored)."""
    out = []
    for k, line in enumerate(read_text(path, opener).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"{os.fspath(path)}: line {k} is not valid JSON ({exc.msg}, column {exc.colno})"
            ) from None
        if not isinstance(obj, dict):
            raise InvalidInputError(
                f"{os.fspath(path)}: line {k} is not a JSON object ({type(obj).__name__})"
            )
        missing = [f for f in required if f not in obj]
        if missing:
            raise InvalidInputError(
                f"{os.fspath(path)}: line {k} has no field {missing[0]!r} (expected fields: {', '.join(required)})"
            )
        out.append(obj)
    return tuple(out)


def read_csv_rows(
    path: str | os.PathLike, delimiter: str = ",", header: bool = True, required: Sequence[str] = ()
) -> list:
    """Rows of a UTF-8 CSV/TSV file: dicts by column name (``header=True``) or lists. A header without one of
    the ``required`` columns raises :class:`~jaxclust.errors.InvalidInputError` naming the file and column."""
    text = read_text(path)
    with file_errors(path):
        fh = io.StringIO(text, newline="")
        if not header:
            return list(csv.reader(fh, delimiter=delimiter))
        reader = csv.DictReader(fh, delimiter=delimiter)
        missing = [c for c in required if c not in (reader.fieldnames or ())]
        if missing:
            raise InvalidInputError(
                f"{os.fspath(path)}: the header has no column {missing[0]!r} (expected columns: "
                f"{', '.join(required)})"
            )
        return list(reader)


@contextlib.contextmanager
def file_errors(path: str | os.PathLike) -> Iterator[None]:
    """Turn what goes wrong while parsing ``path`` (a missing field, a value of the wrong type, bytes that are
    not UTF-8) into :class:`~jaxclust.errors.InvalidInputError` naming the file; jaxclust's own errors pass."""
    try:
        yield
    except JaxclustError:
        raise
    except KeyError as exc:
        raise InvalidInputError(
            f"{os.fspath(path)}: a record has no field {exc.args[0]!r}; the file is damaged or not in the "
            "expected layout"
        ) from exc
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{os.fspath(path)}: not valid UTF-8 ({exc.reason})") from exc
    except (ValueError, TypeError, IndexError, csv.Error) as exc:
        raise InvalidInputError(
            f"{os.fspath(path)}: unexpected content ({type(exc).__name__}: {exc}); the file is damaged or not in "
            "the expected layout"
        ) from exc
