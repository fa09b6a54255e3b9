"""``jaxclust store stats | export``: what an answer store holds, and its answers as JSON lines.

``stats`` prints the answers in effect, undone and dropped, per annotator, and how far the annotators agree on
the pairs two or more of them answered (Cohen's kappa per two annotators, Krippendorff's alpha overall:
:func:`jaxclust.active.agreement.store_agreement`); ``--disagreements`` lists the pairs answered both ways,
``--json`` prints everything as one JSON object (an undefined kappa or alpha is
``null``). It also gives each annotator's error rate, the weight their answers get where two annotators
answered a pair both ways (:func:`jaxclust.active.agreement.error_rates`). ``export`` writes the answers, with
who gave them, one JSON object per line. Neither changes the store's answers. A SQLite store is opened as one
more annotator of a shared store, so both work while shared sessions run (``jaxclust serve`` included); a store
another process holds alone is refused with a message that names the process.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import typer

from jaxclust.active.agreement import error_rates, store_agreement
from jaxclust.active.answer_log import is_sqlite_path
from jaxclust.active.store import AnswerStore
from jaxclust.apps.cli_common import Command, Group, fail, one_line_warnings
from jaxclust.errors import JaxclustError

__all__ = ["app", "stats", "export"]

app = typer.Typer(
    cls=Group,
    name="store",
    help="What an answer store holds: counts, agreement between annotators, and its answers as JSON lines.",
    no_args_is_help=True,
    add_completion=False,
)


def _open(path: Path):
    if not path.is_file():
        fail(f"STORE: {path} is not a file")
    return AnswerStore(path, shared=is_sqlite_path(path), readonly=True)


def _number(x: float) -> str:
    return "undefined" if math.isnan(x) else f"{x:.3f}"


def _or_none(x: float) -> float | None:
    return None if math.isnan(x) else x


@app.command("stats", cls=Command)
def stats(
    store: Path = typer.Argument(..., help="The answer store (.sqlite or .jsonl)."),
    disagreements: bool = typer.Option(False, "--disagreements", help="List the pairs answered both ways."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Answers per annotator and agreement between annotators (kappa, alpha) in STORE."""
    try:
        with one_line_warnings(), _open(store) as s:
            every = s.all_answers
            agree = store_agreement(s.records)
            rates = error_rates(s.records)
            n_items = s.meta.get("n")
    except JaxclustError as exc:
        fail(str(exc))
    summary = {
        "store": str(store),
        "items": n_items,
        "answers": sum(not a["undone"] for a in every),
        "undone": sum(a["undone"] for a in every),
        "dropped": sum(not a["kept"] and not a["undone"] for a in every),
        **agree,
        "error_rates": rates,
    }
    if as_json:
        # an undefined kappa or alpha is null: NaN is not JSON
        out = {
            **summary,
            "alpha": _or_none(summary["alpha"]),
            "pairs": [
                {**p, "annotators": list(p["annotators"]), "kappa": _or_none(p["kappa"])}
                for p in summary["pairs"]
            ],
        }
        if not disagreements:
            out["disagreements"] = len(out["disagreements"])
        typer.echo(json.dumps(out, indent=1, allow_nan=False))
        return
    typer.echo(
        f"{store}: {summary['answers']} answers in effect ({summary['undone']} undone, {summary['dropped']} "
        f"dropped as contradicting earlier ones)" + (f", {n_items} items" if n_items is not None else "")
    )
    for who, c in sorted(agree["annotators"].items()):
        typer.echo(f"  {who}: {c['must']} same, {c['cannot']} different, {c['unknown']} don't know")
    if not agree["doubly_answered"]:
        typer.echo("No pair was answered by two annotators: no agreement to measure.")
        return
    typer.echo(
        f"{agree['doubly_answered']} pairs answered by two or more annotators; Krippendorff's alpha "
        f"{_number(agree['alpha'])}; {len(agree['disagreements'])} answered both ways"
    )
    for p in agree["pairs"]:
        a, b = p["annotators"]
        typer.echo(
            f"  {a} / {b}: {p['n']} pairs, {p['agreement']:.0%} alike, Cohen's kappa {_number(p['kappa'])}"
        )
    typer.echo(
        "Error rate of a disputed answer (from agreement): "
        + ", ".join(f"{who} {rate:.3f}" for who, rate in sorted(rates.items()))
    )
    if disagreements:
        for d in agree["disagreements"]:
            said = ", ".join(f"{who}: {ans}" for who, ans in sorted(d["answers"].items()))
            typer.echo(f"  {d['i']}-{d['j']}: {said}")


def _is_part_of(path: Path, store: Path) -> bool:
    """Whether writing ``path`` would write the store: the same file under any name (a link, a hard link), or
    one of the files beside it that hold its state (SQLite's journals, the lock, the set-aside records)."""
    if path.exists() and store.exists() and os.path.samefile(path, store):
        return True
    real, base = os.path.realpath(path), os.path.realpath(store)
    return real == base or any(
        real == base + tail for tail in ("-wal", "-shm", "-journal", ".lock", ".corrupt")
    )


@app.command("export", cls=Command)
def export(
    store: Path = typer.Argument(..., help="The answer store (.sqlite or .jsonl)."),
    answers: Path = typer.Option(..., "--answers", help="Write the answers here, one JSON object per line."),
    include_undone: bool = typer.Option(False, "--all", help="Also the undone answers (with undone: true)."),
) -> None:
    """Write STORE's answers (i, j, answer, annotator, kept, round) as JSON lines."""
    if _is_part_of(answers, store):
        fail("--answers: that is the store itself (or one of its files); choose another file")
    try:
        with one_line_warnings(), _open(store) as s:
            rows = s.export_rows(include_undone)
    except JaxclustError as exc:
        fail(str(exc))
    try:
        with open(answers, "w", encoding="utf-8") as f:
            for a in rows:
                f.write(json.dumps(a) + "\n")
    except OSError as exc:
        fail(f"--answers: cannot write {answers}: {exc.strerror or exc}")
    typer.echo(f"{len(rows)} answers written to {answers}")
