"""The items of an annotation session: read from a file, or given from Python.

Files, by suffix:

* ``.txt``: one text per line (UTF-8); blank lines are skipped; item names are ``line <k>``.
* ``.jsonl`` / ``.ndjson``: one JSON object per line with the text in a field (``text`` unless
  ``text_column`` names another); ``name_column`` / ``context_column`` name optional fields shown with it.
* ``.npy``: a 2-D numeric array, one row of features (e.g. your own embeddings) per item.
* anything else is a CSV file with a header row. With ``text_column`` its items are the texts of that column
  (``name_column`` and ``context_column`` are shown with them; other columns are ignored). Without it every
  numeric column is a feature, the first non-numeric column names the items (or ``name_column``) and
  ``context_column`` is shown under each name.

Items that are texts are turned into features by :class:`jaxclust.text.TextFeaturizer` (see
:mod:`jaxclust.apps.features`); items that are numbers are used as they are (standardised).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaxclust.errors import DatasetNotFoundError, InvalidInputError
from jaxclust.validation import check_array

__all__ = [
    "Items",
    "read_items",
    "read_items_csv",
    "items_from_texts",
    "items_from_array",
    "file_kind",
    "check_data_file",
]

_JSONL = (".jsonl", ".ndjson")
#: Column names that hold gold labels in the data sets users bring: never clustered as features unless renamed.
GOLD_COLUMNS = frozenset({"label", "labels", "gold", "gold_label", "class", "target", "y", "category"})


@dataclass
class Items:
    """What a session clusters and shows.

    Attributes
    ----------
    kind : {"texts", "numbers"}
    names : list of str
        How each item is named in questions and in the labels file.
    texts : list of str or None
        ``kind == "texts"``: the texts, featurised and shown with each question.
    contexts : list of str or None
        A line shown under each name (the context column of a CSV).
    X : ndarray or None
        ``kind == "numbers"``: the features as read.
    columns : list of str
        ``kind == "numbers"``: the feature column names.
    source : Path or None
        The file the items came from.
    """

    kind: str
    names: list[str]
    texts: list[str] | None = None
    contexts: list[str] | None = None
    X: np.ndarray | None = None
    columns: list[str] | None = None
    source: Path | None = None

    def __len__(self) -> int:
        return len(self.names)

    @property
    def shown(self) -> list[str] | None:
        """The line shown under each name: the text, else the context."""
        return self.texts if self.texts is not None else self.contexts

    @property
    def label(self) -> str:
        """How messages name the items' origin: the file, or "the texts" / "X"."""
        if self.source is not None:
            return str(self.source)
        return "texts" if self.kind == "texts" else "X"


def file_kind(path: str | Path) -> str:
    """``"txt"``, ``"jsonl"``, ``"npy"`` or ``"csv"``, by the file suffix; any other suffix (a ``.tsv``, a
    ``.py``, none) raises ``InvalidInputError`` naming the file and the formats read."""
    suffix = Path(path).suffix.lower()
    if suffix == ".txt":
        return "txt"
    if suffix in _JSONL:
        return "jsonl"
    if suffix == ".npy":
        return "npy"
    if suffix == ".csv":
        return "csv"
    what = f"a {suffix} file" if suffix else "a file without a suffix"
    raise InvalidInputError(
        f"{path}: {what} is not read; items come from .csv (comma-separated, a header row), .txt (one text per "
        "line), .jsonl / .ndjson (one JSON object per line) or .npy (a 2-D array)"
        + ("; save a tab-separated file as .csv" if suffix == ".tsv" else "")
    )


def check_columns_apply(
    path: str | Path,
    text_column: str | None = None,
    name_column: str | None = None,
    context_column: str | None = None,
    spelled: dict[str, str] | None = None,
    ignore_columns: Sequence[str] = (),
) -> None:
    """``InvalidInputError`` when a column option does not apply to the file's kind (reads nothing)."""
    kind = file_kind(path)
    name = (spelled or {}).get
    given = [
        (k, v)
        for k, v in (
            ("text_column", text_column),
            ("name_column", name_column),
            ("context_column", context_column),
            ("ignore_columns", list(ignore_columns) or None),
        )
        if v is not None
    ]
    if kind == "jsonl" and ignore_columns:
        raise InvalidInputError(
            f"{name('ignore_columns', 'ignore_columns')}: {path} is JSON lines; only the text field is read"
        )
    if kind == "txt" and given:
        raise InvalidInputError(
            f"{name(given[0][0], given[0][0])}: {path} is a text file with one text per line, it has no columns"
        )
    if kind == "npy" and given:
        raise InvalidInputError(
            f"{name(given[0][0], given[0][0])}: {path} is a NumPy array, it has no columns"
        )


def check_data_file(path: Path) -> Path:
    """``path`` if it is a file of items; a folder is an ``InvalidInputError`` that says so (not "not found"),
    anything else missing a ``DatasetNotFoundError``."""
    if path.is_dir():
        raise InvalidInputError(
            f"data file {str(path)!r} is a folder, not a file: pass the file of items in it (.txt, .csv, .jsonl, "
            ".npy)"
        )
    if not path.is_file():
        raise DatasetNotFoundError(f"data file {str(path)!r} not found")
    return path


def _read_text(path: Path) -> str:
    check_data_file(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInputError(
            f"{path}: line {line} is not valid UTF-8 (byte {exc.start}); save it as UTF-8"
        ) from exc


def read_items(
    path: str | Path,
    text_column: str | None = None,
    name_column: str | None = None,
    context_column: str | None = None,
    spelled: dict[str, str] | None = None,
    ignore_columns: Sequence[str] = (),
) -> Items:
    """Read the items of a session from ``path`` (see the module docstring for the formats).

    ``ignore_columns``: CSV columns that are neither features nor shown (a label, a comment).
    ``spelled`` maps the parameter names to the names error messages use (e.g. the command-line flags).
    Every problem is an ``InvalidInputError`` (or ``DatasetNotFoundError``) naming the file and the line, row
    or column.
    """
    path = Path(path)
    check_columns_apply(path, text_column, name_column, context_column, spelled, ignore_columns)
    kind = file_kind(path)
    if kind == "txt":
        items = _read_txt(path)
    elif kind == "jsonl":
        items = _read_jsonl(path, text_column or "text", name_column, context_column, spelled)
    elif kind == "npy":
        items = _read_npy(path)
    elif text_column is not None:
        items = _read_text_csv(path, text_column, name_column, context_column, spelled)
    else:
        X, names, contexts, columns = read_items_csv(
            path, name_column, context_column, spelled, ignore_columns
        )
        items = Items("numbers", names, contexts=contexts, X=X, columns=columns)
    items.source = path
    return items


def _at_least_two(path: Path, n: int, what: str) -> None:
    if n < 2:
        raise InvalidInputError(f"{path}: needs at least 2 {what}, got {n}")


def _read_txt(path: Path) -> Items:
    texts, names = [], []
    for k, line in enumerate(_read_text(path).splitlines(), 1):
        if line.strip():
            texts.append(line.strip())
            names.append(f"line {k}")
    _at_least_two(path, len(texts), "non-blank lines (one text per line)")
    return Items("texts", names, texts=texts)


def _read_jsonl(path: Path, field: str, name_field, context_field, spelled) -> Items:
    flag = (spelled or {}).get
    texts, names, contexts = [], [], []
    for k, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise InvalidInputError(f"{path}: line {k} is not valid JSON ({str(exc).split(':')[0]})") from exc
        if not isinstance(obj, dict):
            raise InvalidInputError(f"{path}: line {k} is a JSON {type(obj).__name__}, not an object")
        for key, what in (
            (field, "text_column"),
            (name_field, "name_column"),
            (context_field, "context_column"),
        ):
            if key is not None and key not in obj:
                hint = f" (pass {flag(what, what)} to pick another)" if what == "text_column" else ""
                raise InvalidInputError(
                    f"{path}: line {k} has no field {key!r}{hint}; its fields: {', '.join(map(str, obj)) or 'none'}"
                )
        if not isinstance(obj[field], str):
            raise InvalidInputError(
                f"{path}: line {k}, field {field!r} is a {type(obj[field]).__name__}, not a text"
            )
        texts.append(obj[field])
        names.append(str(obj[name_field]) if name_field is not None else f"line {k}")
        if context_field is not None:
            contexts.append(str(obj[context_field]))
    _at_least_two(path, len(texts), "texts (one JSON object per line)")
    return Items("texts", names, texts=texts, contexts=contexts or None)


def _read_npy(path: Path) -> Items:
    check_data_file(path)
    try:
        X = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InvalidInputError(f"{path}: is not a readable .npy array ({exc})") from exc
    if X.ndim != 2:
        raise InvalidInputError(f"{path}: expected a 2-D array (items x features), got shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise InvalidInputError(f"{path}: expected numbers, got an array of dtype {X.dtype}")
    _at_least_two(path, X.shape[0], "rows (items)")
    return Items(
        "numbers",
        [f"item {k}" for k in range(X.shape[0])],
        X=X.astype(np.float64),
        columns=[f"column {c}" for c in range(X.shape[1])],
    )


def _csv_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """Header and non-empty rows of a UTF-8 CSV (see :func:`_csv_lines`)."""
    header, body, _ = _csv_lines(path)
    return header, body


def _csv_lines(path: Path) -> tuple[list[str], list[list[str]], list[int]]:
    """``(header, non-empty rows, the file line each row starts on)`` of a UTF-8 CSV (a byte-order mark is
    dropped); a folder, a repeated column name or a row of another width is an error naming the file."""
    check_data_file(path)
    rows, lines = [], []
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            for row in reader:
                rows.append(row)
                lines.append(reader.line_num)
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{path}: is not UTF-8 text (byte {exc.start}); save the CSV as UTF-8"
        ) from exc
    except csv.Error as exc:
        raise InvalidInputError(f"{path}: is not a readable CSV file ({exc})") from exc
    if len(rows) < 3:
        raise InvalidInputError(f"{path}: needs a header row and at least 2 items, got {len(rows)} rows")
    header = rows[0]
    seen: dict[str, int] = {}
    for c, name in enumerate(header):
        if name in seen:
            raise InvalidInputError(
                f"{path}: the header repeats the column name {name!r} (columns {seen[name] + 1} and {c + 1}); "
                "give every column its own name"
            )
        seen[name] = c
    keep = [k for k in range(1, len(rows)) if rows[k]]
    body, at = [rows[k] for k in keep], [lines[k] for k in keep]
    for r, line in zip(body, at, strict=True):
        if len(r) != len(header):
            raise InvalidInputError(f"{path}: line {line} has {len(r)} fields, the header has {len(header)}")
    return header, body, at


def _check_given(path: Path, header: list[str], spelled, **given) -> None:
    for what, col in given.items():
        if col is not None and col not in header:
            what = (spelled or {}).get(what, what)
            raise InvalidInputError(f"{what}: no column {col!r} in {path} (columns: {', '.join(header)})")


def _read_text_csv(path: Path, text_column: str, name_column, context_column, spelled) -> Items:
    header, body = _csv_rows(path)
    _check_given(
        path, header, spelled, text_column=text_column, name_column=name_column, context_column=context_column
    )
    t = header.index(text_column)
    texts = [r[t] for r in body]
    names = (
        [r[header.index(name_column)] for r in body]
        if name_column
        else [f"row {k + 2}" for k in range(len(body))]
    )
    contexts = [r[header.index(context_column)] for r in body] if context_column else None
    return Items("texts", names, texts=texts, contexts=contexts)


def read_items_csv(
    path: str | Path,
    name_column: str | None = None,
    context_column: str | None = None,
    spelled: dict[str, str] | None = None,
    ignore_columns: Sequence[str] = (),
) -> tuple[np.ndarray, list[str], list[str] | None, list[str]]:
    """Read ``(X, names, contexts, feature_columns)`` from a CSV of numbers with a header row.

    Feature columns are all columns except the name and context columns; each must be numeric in every row
    (``InvalidInputError`` names the row and column otherwise). ``spelled`` maps ``name_column`` /
    ``context_column`` to the names error messages use (e.g. the command-line flags).
    """
    path = Path(path)
    header, body, lines = _csv_lines(path)

    def numeric(col: int) -> bool:
        try:
            [float(r[col]) for r in body]
        except ValueError:
            return False
        return True

    _check_given(path, header, spelled, name_column=name_column, context_column=context_column)
    for col in ignore_columns:
        _check_given(path, header, spelled, ignore_columns=col)
    ignored = set(ignore_columns)
    if name_column is None:
        name_column = next(
            (h for c, h in enumerate(header) if h != context_column and h not in ignored and not numeric(c)),
            None,
        )
    skip = {name_column, context_column} | ignored
    feats = [c for c, h in enumerate(header) if h not in skip]
    spell = (spelled or {}).get
    flag = spell("text_column", "text_column")
    shown = f"{spell('name_column', 'name_column')} / {spell('context_column', 'context_column')}"
    leave = spell("ignore_columns", "ignore_columns")
    if not feats:
        raise InvalidInputError(
            f"{path}: no feature columns left after the name/context columns (pass {flag} to cluster a column "
            "of texts)"
        )
    X = np.empty((len(body), len(feats)))
    for k, r in enumerate(body):
        for t, c in enumerate(feats):
            try:
                X[k, t] = float(r[c])
            except ValueError as exc:
                if not r[c].strip():
                    raise InvalidInputError(
                        f"{path}: line {lines[k]}, column {header[c]!r}: the cell is empty (a feature column needs "
                        f"a number in every row; {leave} {header[c]} leaves the column out)"
                    ) from exc
                raise InvalidInputError(
                    f"{path}: line {lines[k]}, column {header[c]!r}: {r[c]!r} is not a number (pass {flag} to "
                    f"cluster a column of texts, {shown} for columns shown with the items, {leave} for a "
                    "column that is neither, such as a gold label or a comment)"
                ) from exc
            if not np.isfinite(X[k, t]):
                raise InvalidInputError(
                    f"{path}: line {lines[k]}, column {header[c]!r}: {r[c]!r} is not a finite number"
                )
    for c in feats:  # numeric gold labels among the features would make every clustering an answer key
        if header[c].strip().lower() in GOLD_COLUMNS:
            raise InvalidInputError(
                f"{path}: column {header[c]!r} looks like gold labels, which would be clustered as a feature: pass "
                f"{leave} {header[c]} to leave it out (rename the column to use it as a feature)"
            )
    names = (
        [r[header.index(name_column)] for r in body]
        if name_column
        else [f"item {k}" for k in range(len(body))]
    )
    contexts = [r[header.index(context_column)] for r in body] if context_column else None
    return X, names, contexts, [header[c] for c in feats]


def items_from_texts(texts, names=None) -> Items:
    """Items from a list of texts (names default to ``text <k>``)."""
    from jaxclust.text.featurize import check_texts

    texts = check_texts(texts)
    names = [f"text {k}" for k in range(len(texts))] if names is None else [str(x) for x in names]
    if len(names) != len(texts):
        raise InvalidInputError(f"names: {len(names)} names for {len(texts)} texts")
    return Items("texts", names, texts=texts)


def items_from_array(X, names=None, texts=None) -> Items:
    """Items from a feature matrix (your own embeddings); ``texts`` (optional) are shown with the questions."""

    X = check_array(X, name="X", min_rows=2)
    names = [f"item {k}" for k in range(len(X))] if names is None else [str(x) for x in names]
    if len(names) != len(X):
        raise InvalidInputError(f"names: {len(names)} names for {len(X)} rows of X")
    if texts is not None:
        from jaxclust.text.featurize import check_texts

        texts = check_texts(texts)
        if len(texts) != len(X):
            raise InvalidInputError(f"texts: {len(texts)} texts for {len(X)} rows of X")
    return Items("numbers", names, contexts=texts, X=X, columns=[f"column {c}" for c in range(X.shape[1])])
