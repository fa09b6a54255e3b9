"""``jaxclust annotate``: an interactive, resumable active-learning session on a user's own CSV data.

The CSV has a header row; numeric columns are features (standardised here), one optional text column names the
items (the first non-numeric column unless ``name_column`` is given) and another may give context shown with
each question. Every answer is made durable in the store before the next question, so the session can be
stopped at any time (``q``, Ctrl-D, or even a kill) and resumed by running the same command again.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from jaxclust.errors import DatasetNotFoundError, InvalidInputError

__all__ = ["read_items_csv", "run_annotate"]


def read_items_csv(
    path: str | Path, name_column: str | None = None, context_column: str | None = None
) -> tuple[np.ndarray, list[str], list[str] | None, list[str]]:
    """Read ``(X, names, contexts, feature_columns)`` from a CSV with a header row.

    Feature columns are all columns except the name and context columns; each must be numeric in every row
    (``InvalidInputError`` names the row and column otherwise).
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetNotFoundError(f"data file {str(path)!r} not found")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
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
            raise InvalidInputError(f"{what}: no column {given!r} in {path} (columns: {header})")
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


def run_annotate(
    data: str | Path,
    store: str | Path,
    n_queries: int = 50,
    name_column: str | None = None,
    context_column: str | None = None,
    strategy: str = "batch",
    batch_size: int = 1,
    labels_out: str | Path | None = None,
    model: Any = None,
    random_state: int = 0,
    input_fn: Callable[[str], str] | None = None,
    output: TextIO | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run (or resume) an interactive session; returns a summary dict.

    Parameters
    ----------
    data : path
        CSV with a header row (see :func:`read_items_csv`).
    store : path
        Answer store (``.sqlite`` or ``.jsonl``); reused to resume.
    n_queries : int
        Total questions for the session, stored answers included.
    strategy, batch_size, random_state :
        Passed to :class:`~jaxclust.active.ActiveLearner`.
    labels_out : path, optional
        Writes ``name,cluster`` for the final clustering.
    model : estimator, optional
        Default: ``DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3)`` on the standardised features.
    input_fn, output :
        Replace the terminal (tests, notebooks).
    """
    import sys

    from jaxclust.active import ActiveLearner, InteractiveOracle
    from jaxclust.validation import check_array

    out = output if output is not None else sys.stdout
    X, names, contexts, features = read_items_csv(data, name_column, context_column)
    X = check_array(X, name="X", min_rows=2)
    sd = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)  # constant columns stay 0
    if model is None:
        from jaxclust.dpmm import DPMM

        model = DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3, random_state=random_state)
    oracle = InteractiveOracle(names, contexts, input_fn=input_fn, output=out)
    learner = ActiveLearner(
        model,
        oracle,
        strategy=strategy,
        batch_size=batch_size,
        random_state=random_state,
        store=store,
        min_samples=4,
        progress=progress,
    )
    resumed = 0
    if Path(store).exists():
        from jaxclust.active import AnswerStore

        with AnswerStore(store) as st:
            resumed = len(st)
    print(
        f"{len(names)} items, {len(features)} features; answers go to {store}"
        + (f" (resuming: {resumed} answers already stored)" if resumed else ""),
        file=out,
        flush=True,
    )
    history = learner.run(X, n_queries)
    labels = np.asarray(learner.model_.labels_)
    summary = {
        "n_items": len(names),
        "n_answers": history[-1]["n_queries"],
        "n_constraints": history[-1]["n_constraints"],
        "n_unknown": history[-1]["n_unknown"],
        "dropped": learner.dropped_,
        "n_clusters": int(len(np.unique(labels))),
        "stopped": learner.stopped_,
    }
    if labels_out is not None:
        with open(labels_out, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["name", "cluster"])
            w.writerows(zip(names, np.unique(labels, return_inverse=True)[1].tolist(), strict=True))
    state = "stopped" if learner.stopped_ else "finished"
    print(
        f"\nSession {state}: {summary['n_answers']} answers stored ({summary['n_constraints']} constraints, "
        f"{summary['n_unknown']} don't know, {len(summary['dropped'])} dropped as contradictory); "
        f"{summary['n_clusters']} clusters. Run the same command again to continue.",
        file=out,
        flush=True,
    )
    return summary
