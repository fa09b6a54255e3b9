"""``jaxclust annotate``: an interactive, resumable active-learning session on a user's own CSV data.

The CSV has a header row; numeric columns are features (standardised here), one optional text column names the
items (the first non-numeric column unless ``name_column`` is given) and another may give context shown with
each question::

    word,context,f1,f2,f3
    bank,"I deposited the cheque at the bank",0.12,3.40,-1.00
    shore,"we walked along the shore",1.50,0.20,0.70
    lender,"the lender raised the rate",0.10,3.10,-0.90

Every answer is made durable in the store before the next question, so the session can be stopped at any time
(``q``, Ctrl-D, Ctrl-C, or even a kill) and resumed by running the same command again; with the same data and
options the resumed session asks exactly the questions the uninterrupted one would have asked.

Defaults: the ``batch`` strategy with 5 questions per refit (the batch method of Vlachos et al. 2010: after each
answer, the samples that contradict it are set aside and the next question is the most uncertain pair under
the rest, so the model is refitted once per 5 questions, not after every answer), and a confidence stop at a
link entropy of 0.2 nats (see :data:`DEFAULT_STOP_ENTROPY`).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from jaxclust.errors import DatasetNotFoundError, InvalidInputError

__all__ = [
    "read_items_csv",
    "run_annotate",
    "check_annotate_options",
    "DEFAULT_STRATEGY",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_STOP_ENTROPY",
]

DEFAULT_STRATEGY = "batch"
DEFAULT_BATCH_SIZE = 5
#: Confidence stop (nats): the session ends when every unknown pair has a link entropy below this, i.e. a
#: co-clustering probability below about 0.05 or above about 0.95 (H(0.05) = 0.199 nats). With 40 samples
#: (the default 4 chains x 10) a pair on which at most 2 samples disagree counts as settled.
DEFAULT_STOP_ENTROPY = 0.2
_STRATEGIES = ("entropy", "naive_batch", "batch", "random")


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def read_items_csv(
    path: str | Path,
    name_column: str | None = None,
    context_column: str | None = None,
    spelled: dict[str, str] | None = None,
) -> tuple[np.ndarray, list[str], list[str] | None, list[str]]:
    """Read ``(X, names, contexts, feature_columns)`` from a CSV with a header row.

    Feature columns are all columns except the name and context columns; each must be numeric in every row
    (``InvalidInputError`` names the row and column otherwise). ``spelled`` maps ``name_column`` /
    ``context_column`` to the names error messages use (e.g. the command-line flags).
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetNotFoundError(f"data file {str(path)!r} not found")
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{path}: is not UTF-8 text (byte {exc.start}); save the CSV as UTF-8"
        ) from exc
    except csv.Error as exc:
        raise InvalidInputError(f"{path}: is not a readable CSV file ({exc})") from exc
    if len(rows) < 3:
        raise InvalidInputError(f"{path}: needs a header row and at least 2 items, got {len(rows)} rows")
    header, body = rows[0], [r for r in rows[1:] if r]
    for k, r in enumerate(body):
        if len(r) != len(header):
            raise InvalidInputError(f"{path}: row {k + 2} has {len(r)} fields, the header has {len(header)}")

    def numeric(col: int) -> bool:
        try:
            [float(r[col]) for r in body]
        except ValueError:
            return False
        return True

    for given, what in ((name_column, "name_column"), (context_column, "context_column")):
        if given is not None and given not in header:
            what = (spelled or {}).get(what, what)
            raise InvalidInputError(f"{what}: no column {given!r} in {path} (columns: {', '.join(header)})")
    if name_column is None:
        name_column = next((h for c, h in enumerate(header) if h != context_column and not numeric(c)), None)
    skip = {name_column, context_column}
    feats = [c for c, h in enumerate(header) if h not in skip]
    if not feats:
        raise InvalidInputError(f"{path}: no feature columns left after the name/context columns")
    X = np.empty((len(body), len(feats)))
    for k, r in enumerate(body):
        for t, c in enumerate(feats):
            try:
                X[k, t] = float(r[c])
            except ValueError as exc:
                raise InvalidInputError(
                    f"{path}: row {k + 2}, column {header[c]!r}: {r[c]!r} is not a number "
                    "(pass --name-column / --context-column for text columns)"
                ) from exc
    names = (
        [r[header.index(name_column)] for r in body]
        if name_column
        else [f"item {k}" for k in range(len(body))]
    )
    contexts = [r[header.index(context_column)] for r in body] if context_column else None
    return X, names, contexts, [header[c] for c in feats]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_annotate_options(
    data: str | Path,
    store: str | Path,
    n_queries: Any = 50,
    strategy: Any = DEFAULT_STRATEGY,
    batch_size: Any = DEFAULT_BATCH_SIZE,
    labels_out: str | Path | None = None,
    stop_entropy: Any = DEFAULT_STOP_ENTROPY,
    spelled: dict[str, str] | None = None,
) -> None:
    """Check every option of an annotate session before anything is read or created.

    ``InvalidInputError`` names the option as ``spelled`` maps it (the command line passes ``--n-queries``
    etc.; Python callers see the parameter names).
    """
    from jaxclust.active.store import check_store_path

    name = (spelled or {}).get

    def count(value: Any, key: str, low: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            what = "a positive integer" if low == 1 else "a non-negative integer"
            raise InvalidInputError(f"{name(key, key)}: expected {what}, got {value!r}")

    count(n_queries, "n_queries", 0)
    if strategy not in _STRATEGIES:
        raise InvalidInputError(
            f"{name('strategy', 'strategy')}: expected one of {', '.join(_STRATEGIES)}, got {strategy!r}"
        )
    count(batch_size, "batch_size", 1)
    if stop_entropy is not None and (
        isinstance(stop_entropy, bool)
        or not isinstance(stop_entropy, int | float | np.floating | np.integer)
        or not 0.0 <= float(stop_entropy) <= math.log(2.0)
    ):
        raise InvalidInputError(
            f"{name('stop_entropy', 'stop_entropy')}: expected a number of nats between 0 (never stop early) "
            f"and ln 2 = 0.693, got {stop_entropy!r}"
        )
    data, store = Path(data), Path(store)
    if not data.is_file():
        raise DatasetNotFoundError(f"data file {str(data)!r} not found")
    if _same_file(store, data):
        raise InvalidInputError(
            f"{name('store', 'store')}: {store} is the data file; pass another path for the answers"
        )
    check_store_path(store)
    if labels_out is not None:
        out = Path(labels_out)
        flag = name("labels_out", "labels_out")
        if out.is_dir():
            raise InvalidInputError(
                f"{flag}: {out} is a folder; pass a file path such as {out / 'clusters.csv'}"
            )
        if not out.parent.is_dir():
            raise InvalidInputError(f"{flag}: the folder {out.parent} does not exist")
        if _same_file(out, data) or _same_file(out, store):
            raise InvalidInputError(
                f"{flag}: {out} would overwrite the {'data' if _same_file(out, data) else 'store'}"
            )
        if out.exists() and not os.access(out, os.W_OK):
            raise InvalidInputError(f"{flag}: {out} is read-only")
        if not out.exists() and not os.access(out.parent, os.W_OK):
            raise InvalidInputError(f"{flag}: the folder {out.parent} is read-only")


def run_annotate(
    data: str | Path,
    store: str | Path,
    n_queries: int = 50,
    name_column: str | None = None,
    context_column: str | None = None,
    strategy: str = DEFAULT_STRATEGY,
    batch_size: int = DEFAULT_BATCH_SIZE,
    labels_out: str | Path | None = None,
    model: Any = None,
    random_state: int = 0,
    input_fn: Callable[[str], str] | None = None,
    output: TextIO | None = None,
    progress: bool = False,
    stop_entropy: float | None = DEFAULT_STOP_ENTROPY,
    spelled: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run (or resume) an interactive session; returns a summary dict.

    Parameters
    ----------
    data : path
        CSV with a header row (see :func:`read_items_csv` and the module docstring).
    store : path
        Answer store (``.sqlite``/``.db`` or ``.jsonl``); reused to resume.
    n_queries : int
        Total questions for the session, stored answers included.
    strategy, batch_size, random_state :
        Passed to :class:`~jaxclust.active.ActiveLearner`; default ``"batch"`` with 5 questions per refit.
    labels_out : path, optional
        Writes ``name,cluster`` for the final clustering.
    model : estimator, optional
        Default: ``DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3)`` on the standardised features.
    input_fn, output :
        Replace the terminal (tests, notebooks).
    stop_entropy : float or None
        Confidence stop (nats), see :data:`DEFAULT_STOP_ENTROPY`; ``0`` or ``None`` never stops early.
    spelled : dict, optional
        How error messages name the options (the command line passes ``{"n_queries": "--n-queries", ...}``).

    Returns
    -------
    dict
        ``n_items``, ``n_answers`` (stored in all), ``n_new`` (asked in this run), ``n_constraints``,
        ``n_unknown``, ``dropped``, ``n_clusters``, ``stopped`` and ``stop_reason`` (``"done"``, ``"stopped"``,
        ``"confident"`` or ``"exhausted"``).
    """
    import sys

    check_annotate_options(data, store, n_queries, strategy, batch_size, labels_out, stop_entropy, spelled)
    out = output if output is not None else sys.stdout
    X, names, contexts, features = read_items_csv(data, name_column, context_column, spelled)
    from jaxclust.validation import check_array

    X = check_array(X, name="X", min_rows=2)
    sd = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)  # constant columns stay 0
    if model is None:
        from jaxclust.dpmm import DPMM

        model = DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3, random_state=random_state)

    from jaxclust.active import ActiveLearner, InteractiveOracle
    from jaxclust.active.learner import data_fingerprint
    from jaxclust.active.store import AnswerStore

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    flag = (spelled or {}).get
    answers = AnswerStore(store, meta={"n": len(names), "fingerprint": data_fingerprint(X)})
    try:
        resumed = len(answers)
        say(
            f"{_plural(len(names), 'item')}, {_plural(len(features), 'feature')}; answers go to {store}"
            + (f" (resuming: {_plural(resumed, 'answer')} already stored)" if resumed else "")
        )
        oracle = InteractiveOracle(names, contexts, input_fn=input_fn, output=out)
        oracle.n_asked = resumed  # questions are numbered across sessions
        learner = ActiveLearner(
            model,
            oracle,
            strategy=strategy,
            batch_size=batch_size,
            random_state=random_state,
            store=answers,
            min_samples=4,
            progress=progress,
            stop_entropy=stop_entropy or None,
            status=say,
        )
        history = learner.run(X, n_queries)
        n_total = len(answers)
    finally:
        answers.close()
    labels = np.asarray(learner.model_.labels_)
    reason = learner.stop_reason_
    summary = {
        "n_items": len(names),
        "n_answers": history[-1]["n_queries"],
        "n_new": n_total - resumed,
        "n_constraints": history[-1]["n_constraints"],
        "n_unknown": history[-1]["n_unknown"],
        "dropped": learner.dropped_,
        "n_clusters": int(len(np.unique(labels))),
        "stopped": learner.stopped_,
        "stop_reason": reason,
        "max_entropy": learner.max_entropy_,
    }
    if labels_out is not None:
        _write_labels(Path(labels_out), names, labels)
    stored = (
        f"{_plural(n_total, 'answer')} stored in {store} ({_plural(summary['n_constraints'], 'constraint')}, "
        f"{summary['n_unknown']} don't know, {len(summary['dropped'])} dropped as contradictory); "
        f"{_plural(summary['n_clusters'], 'cluster')}"
        + (f", written to {labels_out}" if labels_out is not None else "")
        + "."
    )
    more = f"To ask more questions, run again with a larger {flag('n_queries', 'n_queries')}."
    if reason == "stopped":
        lines = ["Session stopped.", stored, "Run the same command again to continue."]
    elif reason == "confident":
        stop_flag = flag("stop_entropy", "stop_entropy")
        lines = [
            f"The model is confident about every remaining pair (highest link entropy {learner.max_entropy_:.3f} "
            f"nats, below {stop_flag} {float(stop_entropy):g}): it stops here instead of asking obvious questions.",
            stored,
            f"To keep asking, run again with a lower {stop_flag} (0 never stops early).",
        ]
    elif reason == "exhausted":
        lines = ['Nothing left to ask: every pair is known or answered "don\'t know".', stored]
    elif summary["n_new"] == 0:
        target = _plural(n_queries, "question")
        lines = [
            f"The target of {target} was already reached in an earlier session: nothing to ask.",
            stored,
            more,
        ]
    else:
        lines = [f"Done: the target of {_plural(n_queries, 'question')} is reached.", stored, more]
    text = "\n".join(lines)
    say("\n" + text)
    return summary


def _write_labels(path: Path, names: list[str], labels: np.ndarray) -> None:
    """Write ``name,cluster`` atomically (a temporary file, then ``os.replace``)."""
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["name", "cluster"])
    w.writerows(zip(names, np.unique(labels, return_inverse=True)[1].tolist(), strict=True))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            fh.write(buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        from jaxclust.errors import StoreError

        try:
            tmp.unlink()
        except OSError:
            pass
        raise StoreError(
            f"labels_out {path}: could not be written ({exc.strerror}); the answers are safe"
        ) from exc
