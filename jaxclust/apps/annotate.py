"""``jaxclust annotate``: an interactive, resumable active-learning session on a user's own data.

The items come from a file (see :mod:`jaxclust.apps.items`): a CSV of numbers (numeric columns are features,
standardised; one text column names the items, another may give context shown with each question)::

    word,context,f1,f2,f3
    bank,"I deposited the cheque at the bank",0.12,3.40,-1.00
    shore,"we walked along the shore",1.50,0.20,0.70
    lender,"the lender raised the rate",0.10,3.10,-0.90

or texts: a ``.txt`` file with one text per line, a CSV with a text column (``text_column``), JSON lines with a
``text`` field; texts are turned into features by meaning (WordLlama embeddings, offline, when
``jaxclust[text]`` is installed, else TF-IDF -> truncated SVD -> standardised; ``--features`` picks, see
:func:`jaxclust.text.text_featurizer`), saved with the store (:mod:`jaxclust.apps.features`). Or
your own embeddings: a ``.npy`` array, or a CSV of numbers. Each question shows both items (their names and
texts, long texts cut at 300 characters).

Every answer is made durable in the store before the next question, so the session can be stopped at any time
(``q``, Ctrl-D, Ctrl-C, or even a kill) and resumed by running the same command again; with the same data and
options the resumed session asks exactly the questions the uninterrupted one would have asked. Each answer
records who gave it (``annotator``, default the operating-system user). With ``shared=True`` (an SQLite store)
several annotators work on one store at once, each on their own questions.

Defaults: the ``explore`` strategy, one question per refit, answers joining components into classes and
splitting a component a "different" answer falls inside (:mod:`jaxclust.active.classes`): the session first
asks whether components the model keeps apart are one class, whether each joined component belongs to its
class and whether large components are one class, then the pair of highest link entropy; and a confidence stop
at a link entropy of 0.2 nats (see :data:`DEFAULT_STOP_ENTROPY`) that never fires while such a belief is
untested. The previous default, ``--strategy batch --batch-size 5`` (the batch method of Vlachos et al. 2010)
with answers on their pairs only, is ``make_learner(..., propagation="pairs")`` from Python.
"""

from __future__ import annotations

import csv
import io
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from jaxclust.active.chat import MachineFirst
from jaxclust.active.rules import SESSION_RULES
from jaxclust.active.store import (
    check_annotator,
    check_shared_path,
    check_store_path,
    default_annotator,
)
from jaxclust.apps.items import check_columns_apply, check_data_file, read_items, read_items_csv
from jaxclust.apps.opening import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_STOP_ENTROPY,
    DEFAULT_STRATEGY,
    check_sampler_options,
    feature_words,
    open_machine,
    open_session,
)
from jaxclust.errors import InvalidInputError, JaxclustWarning, StoreError
from jaxclust.files import atomic_write
from jaxclust.validation import check_rule

__all__ = [
    "read_items_csv",
    "run_annotate",
    "labels_csv",
    "check_annotate_options",
]

_MAX_CONFLICTS_SHOWN = 10


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


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
    *,
    text_column: str | None = None,
    name_column: str | None = None,
    context_column: str | None = None,
    annotator: Any = None,
    shared: bool = False,
    ignore_columns: Any = (),
    sampler_options: dict[str, Any] | None = None,
) -> None:
    """Check every option of an annotate session before anything is read or created.

    ``InvalidInputError`` (or ``StoreError`` for the store) names the option as ``spelled`` maps it (the command
    line passes ``--n-queries`` etc.; Python callers see the parameter names).
    """

    name = (spelled or {}).get
    for key, value in (
        ("n_queries", n_queries),
        ("strategy", strategy),
        ("batch_size", batch_size),
        ("stop_entropy", stop_entropy),
    ):
        check_rule(SESSION_RULES[key], value, name(key, key))
    check_annotator(annotator, name("annotator", "annotator"))
    check_sampler_options(sampler_options, name)
    data, store = check_data_file(Path(data)), Path(store)
    check_columns_apply(data, text_column, name_column, context_column, spelled, tuple(ignore_columns or ()))
    if _same_file(store, data):
        raise InvalidInputError(
            f"{name('store', 'store')}: {store} is the data file; pass another path for the answers"
        )
    if shared:
        check_shared_path(store, name("shared", "shared"))
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
    text_column: str | None = None,
    annotator: str | None = None,
    shared: bool = False,
    featurizer: Any = None,
    ignore_columns: Any = (),
    sampler_options: dict[str, int] | None = None,
    machine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run (or resume) an interactive session; returns a summary dict.

    Parameters
    ----------
    data : path
        The items: a CSV of numbers, a CSV with a text column (``text_column``), a ``.txt`` file (one text per
        line), JSON lines (a ``text`` field, or ``text_column``) or a ``.npy`` array (:mod:`jaxclust.apps.items`).
    store : path
        Answer store (``.sqlite``/``.db`` or ``.jsonl``); reused to resume.
    n_queries : int
        Total questions for the session, stored answers included (shared store: everybody's answers).
    name_column, context_column, text_column, ignore_columns :
        CSV columns (JSON-lines fields): the items' names, a line shown under each name, the texts; columns that
        are neither features nor shown (a gold label, a comment).
    strategy, batch_size, random_state, stop_entropy :
        Passed to :class:`~jaxclust.active.ActiveLearner`: default ``"explore"``, one question per refit, a
        confidence stop at :data:`DEFAULT_STOP_ENTROPY` nats (``0`` or ``None`` never stops early).
    labels_out : path, optional
        Writes ``name,cluster`` (``name,cluster,text`` for texts) for the final clustering.
    model : estimator, optional
        Default: :func:`~jaxclust.apps.opening.default_model` on the features, built after every option is
        checked; ``sampler_options`` (``model``: ``"dpmm"`` or ``"nested"``, ``n_chains``, ``n_burnin``,
        ``n_samples``) set it (ignored when ``model`` is given).
    input_fn, output, progress :
        Replace the terminal (tests, notebooks); a progress bar over each fit.
    spelled : dict, optional
        How error messages name the options (the command line passes ``{"n_queries": "--n-queries", ...}``).
    annotator, shared :
        Who answers, stored with every answer (default: the operating-system user name); several annotators
        on one SQLite store at once (:class:`~jaxclust.active.AnswerStore`).
    featurizer : transformer, optional
        Texts only: replaces :func:`jaxclust.text.text_featurizer` when the store is created; a resumed store
        refuses one that would make other features.
    machine : dict, optional
        Texts only: a chat model answers first (:class:`~jaxclust.active.chat.MachineFirst`; the settings of
        :func:`~jaxclust.apps.opening.open_machine`: ``url``, ``model``, ``key_env``, ``check``, ``n_replies``,
        ``max_requests``) and you answer where it matters; its answers are stored under its name.

    Returns
    -------
    dict
        ``n_items``, ``n_answers`` (stored in all), ``n_new`` (asked in this run), ``n_constraints``,
        ``n_unknown``, ``dropped``, ``conflicts`` (a message for each dropped answer, naming the answers it
        contradicts and who gave them), ``n_clusters``, ``max_entropy``, ``stopped`` and ``stop_reason``
        (``"done"``, ``"stopped"``, ``"confident"`` or ``"exhausted"``).
    """
    check_annotate_options(
        data,
        store,
        n_queries,
        strategy,
        batch_size,
        labels_out,
        stop_entropy,
        spelled,
        text_column=text_column,
        name_column=name_column,
        context_column=context_column,
        annotator=annotator,
        shared=shared,
        ignore_columns=ignore_columns,
        sampler_options=sampler_options,
    )
    out = output if output is not None else sys.stdout
    items = read_items(data, text_column, name_column, context_column, spelled, tuple(ignore_columns or ()))

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    flag = (spelled or {}).get
    who = annotator if annotator is not None else default_annotator()
    person, oracle, error_rate = _annotators(items, input_fn, out, machine, flag, random_state, say, store)
    opened = open_session(
        items,
        store,
        shared=shared,
        model=model,
        random_state=random_state,
        sampler_options=sampler_options,
        featurizer=featurizer,
        say=say,
        oracle=oracle,
        strategy=strategy,
        batch_size=batch_size,
        stop_entropy=stop_entropy,
        annotator=who,
        progress=progress,
        status=say,
        error_rate=error_rate,
    )
    greeting = _greeting(opened, items, store, who if shared else None, person, oracle if machine else None)
    history, n_total, n_new = _ask(opened, n_queries, lambda: say(greeting()))
    learner = opened.learner
    summary = _summary(len(items), history, learner, n_new)
    if labels_out is not None:
        _write_labels(Path(labels_out), items.names, np.asarray(learner.labels_), items.texts)
    lines = _ending(summary, learner, n_queries, n_total, store, labels_out, stop_entropy, flag)
    say("\n" + "\n".join(lines + ([_machine_rates(oracle)] if machine is not None else [])))
    return summary


def _greeting(opened, items, store, shared_as: str | None, person, routed: MachineFirst | None):
    """What to do and say as the questions begin, once the store is open: ``greeting() -> text``."""

    def greeting() -> str:
        if routed is not None:
            # a resumed session's checks, with the votes kept beside the store
            routed.calibrate(opened.store.records)
        person.n_asked = opened.resumed  # questions are numbered across sessions
        text = _opening(items, opened.X.shape[1], opened.store, store, opened.resumed)
        if shared_as is not None:
            text += (
                f"\nShared store: you answer as {shared_as}; the other annotators' answers are taken in as "
                "they come."
            )
        return text

    return greeting


def _annotators(items, input_fn, out, machine, flag, random_state, say, store):
    """Who answers a session's questions: ``(person, oracle, error_rate)``, the oracle being the person, or a
    chat model that answers first and routes some pairs to the person (``machine``'s settings)."""
    from jaxclust.active import InteractiveOracle

    person = InteractiveOracle(items.names, items.shown, input_fn=input_fn, output=out)
    if machine is None:
        return person, person, 0.0
    routed = open_machine(
        items,
        machine,
        flag,
        lambda chat, check: MachineFirst(chat, person, check=check, random_state=random_state, tell=say),
        store,
    )
    return person, routed, routed.error_rates()


def _ask(opened, n_queries: int, greet: Callable[[], None]) -> tuple[list[dict], int, int]:
    """``greet()``, run the opened session's questions, then close its store (whatever happens):
    ``(history, answers stored, answers added)``."""
    answers = opened.store
    try:
        greet()
        with warnings.catch_warnings():
            # the DPMM names constant columns at every fit; once is enough
            warnings.filterwarnings("once", message=r"X: columns .* constant", category=JaxclustWarning)
            history = opened.learner.run(opened.X, n_queries)
        answers.refresh()
        return history, len(answers), answers.n_appended
    finally:
        answers.close()


def _machine_rates(routed: MachineFirst) -> str:
    """The chat model's error rates as learned so far, in words (those of its answers by the majority of split
    replies once it gave one)."""
    r, split = routed.rates, routed.split_rates
    line = (
        f"{routed.machine.annotator}: says same about a pair you call different {r.false_same:.2f} of the time, "
        f"different about a pair you call the same {r.false_different:.2f} (from {r.n_checked} checked pairs, "
        f"{r.n_unchecked} answers of its nobody checked and a prior); its answers count at these rates."
    )
    if split.n_checked + split.n_unchecked:
        line += (
            f" Where its replies split, their majority: {split.false_same:.2f} and {split.false_different:.2f} "
            f"(from {split.n_checked} checked, {split.n_unchecked} unchecked)."
        )
    return line


def _opening(items, n_features: int, answers, store, resumed: int) -> str:
    """The session's first line: what is clustered, on which features, where the answers go."""
    if items.kind == "texts":
        how = feature_words((answers.meta.get("featurizer") or {}).get("featurizer"))
        what = f"{_plural(len(items), 'text')}, {_plural(n_features, 'feature')} ({how})"
    else:
        what = f"{_plural(len(items), 'item')}, {_plural(n_features, 'feature')}"
    return f"{what}; answers go to {store}" + (
        f" (resuming: {_plural(resumed, 'answer')} already stored)" if resumed else ""
    )


def _summary(n_items: int, history: list[dict], learner, n_new: int) -> dict[str, Any]:
    """What :func:`run_annotate` returns (see its docstring)."""
    return {
        "n_items": n_items,
        "n_answers": history[-1]["n_queries"],
        "n_new": n_new,
        "n_constraints": history[-1]["n_constraints"],
        "n_unknown": history[-1]["n_unknown"],
        "dropped": learner.dropped_,
        "conflicts": [c["message"] for c in learner.conflicts_],
        "n_clusters": int(len(np.unique(np.asarray(learner.labels_)))),
        "stopped": learner.stopped_,
        "stop_reason": learner.stop_reason_,
        "max_entropy": learner.max_entropy_,
    }


def _ending(summary, learner, n_queries, n_total, store, labels_out, stop_entropy, flag) -> list[str]:
    """The lines that close a session: why it ended, what is stored, how to go on, the contradictions."""
    reason = summary["stop_reason"]
    stored = (
        f"{_plural(n_total, 'answer')} stored in {store} ({_plural(summary['n_constraints'], 'constraint')}, "
        f"{summary['n_unknown']} don't know, {len(summary['dropped'])} dropped as contradictory); "
        f"{_plural(summary['n_clusters'], 'cluster')}"
        + (f", written to {labels_out}" if labels_out is not None else "")
        + "."
    )
    more = f"To ask more questions, run again with a larger {flag('n_queries', 'n_queries')}."
    if reason == "stopped":
        why = f" ({learner.stop_detail_})" if getattr(learner, "stop_detail_", None) else ""
        lines = [f"Session stopped{why}.", stored, "Run the same command again to continue."]
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
    elif n_queries == 0:
        lines = [
            f"Nothing asked ({flag('n_queries', 'n_queries')} 0): the clusters are the model's alone.",
            stored,
        ]
    elif summary["n_new"] == 0:
        target = _plural(n_queries, "question")
        lines = [
            f"The target of {target} was already reached in an earlier session: nothing to ask.",
            stored,
            more,
        ]
    else:
        lines = [f"Done: the target of {_plural(n_queries, 'question')} is reached.", stored, more]
    if summary["conflicts"]:
        shown = summary["conflicts"][:_MAX_CONFLICTS_SHOWN]
        lines.append(
            "Contradictory answers (all kept in the store; the earlier answers are the constraints):"
        )
        lines += [f"  - {m}" for m in shown]
        if len(summary["conflicts"]) > len(shown):
            lines.append(f"  ... and {len(summary['conflicts']) - len(shown)} more")
    return lines


def labels_csv(names: list[str], labels: np.ndarray, texts: list[str] | None = None) -> str:
    """The clustering as CSV text: ``name,cluster`` (and ``text`` for texts), clusters numbered from 0. A name or
    text a spreadsheet would run as a formula (starting with ``= + - @``, a tab or a carriage return, and not a
    number) is written after a ``'``, which spreadsheets show as text."""
    buf = io.StringIO()
    w = csv.writer(buf)
    clusters = np.unique(labels, return_inverse=True)[1].tolist()
    names = [csv_cell(v) for v in names]
    if texts is None:
        w.writerow(["name", "cluster"])
        w.writerows(zip(names, clusters, strict=True))
    else:
        w.writerow(["name", "cluster", "text"])
        w.writerows(zip(names, clusters, [csv_cell(v) for v in texts], strict=True))
    return buf.getvalue()


def csv_cell(value) -> str:
    """``value`` as a CSV cell no spreadsheet runs as a formula (see :func:`labels_csv`)."""
    text = str(value)
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def _write_labels(path: Path, names: list[str], labels: np.ndarray, texts: list[str] | None = None) -> None:
    """Write :func:`labels_csv` atomically (:func:`jaxclust.files.atomic_write`)."""
    try:
        atomic_write(path, labels_csv(names, labels, texts).encode("utf-8"))
    except OSError as exc:
        raise StoreError(
            f"labels_out {path}: could not be written ({exc.strerror}); the answers are safe"
        ) from exc
