"""Command-line entry points ``demo`` and ``annotate`` (registered on the main app in :mod:`jaxclust.apps.cli`).

They can also be run alone: ``python -m jaxclust.apps.cli_active demo --quick``.

Every option is checked before anything is read, created or compiled; a bad option or file prints one line
``error: ...`` on stderr (naming the option as typed) and exits with code 2.
"""

from __future__ import annotations

from pathlib import Path

import typer

from jaxclust.apps.annotate import run_annotate
from jaxclust.apps.cache import use_compilation_cache
from jaxclust.apps.cli_common import (
    COMPILATION_CACHE_OPTION,
    FEATURES_OPTION,
    IGNORE_COLUMN_OPTION,
    MACHINE_CHECK_OPTION,
    MACHINE_KEY_ENV_OPTION,
    MACHINE_MODEL_OPTION,
    MACHINE_URL_OPTION,
    MODEL_OPTION,
    N_BURNIN_OPTION,
    N_CHAINS_OPTION,
    N_SAMPLES_OPTION,
    NAME_COLUMN_OPTION,
    SEED_OPTION,
    TEXT_COLUMN_OPTION,
    Command,
    OneLineErrors,
    check_count,
    fail,
    machine_options,
    one_line_warnings,
    sampler_options,
)
from jaxclust.apps.demo import check_demo_options, run_demo
from jaxclust.errors import JaxclustError

__all__ = ["demo", "annotate", "app"]

# how error messages name the annotate options (the parameter names of run_annotate -> the flags)
ANNOTATE_FLAGS = {
    "n_queries": "--n-queries",
    "strategy": "--strategy",
    "batch_size": "--batch-size",
    "labels_out": "--labels-out",
    "stop_entropy": "--stop-entropy",
    "store": "--store",
    "name_column": "--name-column",
    "context_column": "--context-column",
    "ignore_columns": "--ignore-column",
    "text_column": "--text-column",
    "annotator": "--annotator",
    "shared": "--shared",
    "machine": "--machine-url",
    "machine_url": "--machine-url",
    "machine_model": "--machine-model",
    "machine_key_env": "--machine-key-env",
    "machine_check": "--machine-check",
}


def demo(
    quick: bool = typer.Option(
        False, "--quick", help="Small sampler, 2 seeds each, 30 questions (about 25 s)."
    ),
    out: Path = typer.Option(
        Path("jaxclust_demo"), "--out", help="Folder for demo.json and demo.png (demo_quick.* with --quick)."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed (>= 0)."),
    n_queries: int = typer.Option(None, "--n-queries", help="Override the number of questions (>= 1)."),
    model: str = typer.Option(
        "dpmm",
        "--model",
        help="dpmm (default): classes made of the DPMM's components by the answers; nested: classes sampled "
        "inside the model, so the random pairs' answers help too (slower; files demo_nested.*).",
    ),
    no_compilation_cache: bool = COMPILATION_CACHE_OPTION,
) -> None:
    """Active vs random constraint selection for the constrained DPMM on the wine data (no data needed)."""

    check_count(seed, "--seed", 0)
    check_count(n_queries, "--n-queries", 1)
    try:
        check_demo_options(
            out, n_queries, seed, spelled={"out_dir": "--out", "model": "--model"}, model=model
        )
    except JaxclustError as exc:
        fail(str(exc))

    with one_line_warnings():
        use_compilation_cache(not no_compilation_cache)
    try:
        run_demo(
            quick=quick,
            out_dir=out,
            random_state=seed,
            n_queries=n_queries,
            progress=True,
            echo=typer.echo,
            model=model,
        )
    except JaxclustError as exc:
        fail(str(exc))


def annotate(
    data: Path = typer.Argument(
        ...,
        help="The items: a CSV with a header row (numeric feature columns, an optional name column - the first "
        "non-numeric one - and an optional context column; or texts with --text-column), a .txt file with one "
        "text per line, JSON lines with a 'text' field, or a .npy array of embeddings.",
    ),
    store: Path = typer.Option(
        Path("answers.sqlite"),
        "--store",
        help="Answer store (.sqlite/.db or .jsonl); every answer is saved before the next question, reuse it "
        "to resume.",
    ),
    n_queries: int = typer.Option(50, "--n-queries", help="Total questions (stored answers included)."),
    name_column: str = NAME_COLUMN_OPTION,
    context_column: str = typer.Option(None, "--context-column", help="Column shown as context."),
    ignore_column: list[str] = IGNORE_COLUMN_OPTION,
    text_column: str = TEXT_COLUMN_OPTION,
    features: str = FEATURES_OPTION,
    annotator: str = typer.Option(
        None, "--annotator", help="Your name, stored with each answer (default: your user name)."
    ),
    shared: bool = typer.Option(
        False,
        "--shared",
        help="Several annotators on one SQLite store at once: each gets other questions, every answer is kept.",
    ),
    strategy: str = typer.Option(
        "explore",
        "--strategy",
        help="explore (default: first whether components kept apart, or large components, are one class; "
        "then the most uncertain pair), batch, entropy, naive_batch or random.",
    ),
    batch_size: int = typer.Option(
        1,
        "--batch-size",
        help="Questions per refit (default 1; the batch strategy with 5 picks each next question from the "
        "samples that agree with the answers so far, so you wait for the model once per 5 questions).",
    ),
    labels_out: Path = typer.Option(None, "--labels-out", help="Write name,cluster CSV at the end."),
    stop_entropy: float = typer.Option(
        0.2,
        "--stop-entropy",
        help="Stop when the model is confident: every unknown pair's link entropy below this many nats "
        "(0.2: co-clustering probability under ~5% or over ~95%); 0 never stops early.",
    ),
    machine_url: str = MACHINE_URL_OPTION,
    machine_model: str = MACHINE_MODEL_OPTION,
    machine_key_env: str = MACHINE_KEY_ENV_OPTION,
    machine_check: str | None = MACHINE_CHECK_OPTION,
    model: str = MODEL_OPTION,
    n_burnin: int | None = N_BURNIN_OPTION,
    n_samples: int = N_SAMPLES_OPTION,
    n_chains: int = N_CHAINS_OPTION,
    seed: int = SEED_OPTION,
    no_compilation_cache: bool = COMPILATION_CACHE_OPTION,
) -> None:
    """Interactive, resumable active clustering of your own texts or data: answer y / n / d (don't know) /
    u (undo) / q."""

    sampler = sampler_options(n_chains, n_burnin, n_samples, seed, model)
    try:
        with one_line_warnings():
            use_compilation_cache(not no_compilation_cache)
            run_annotate(
                data,
                store,
                n_queries=n_queries,
                name_column=name_column,
                context_column=context_column,
                ignore_columns=ignore_column or (),
                strategy=strategy,
                batch_size=batch_size,
                labels_out=labels_out,
                random_state=seed,
                sampler_options=sampler,
                stop_entropy=stop_entropy,
                spelled=ANNOTATE_FLAGS,
                text_column=text_column,
                featurizer=features,
                annotator=annotator,
                shared=shared,
                machine=machine_options(machine_url, machine_model, machine_key_env, machine_check),
            )
    except JaxclustError as exc:  # bad file, column, store: one clear line, no traceback
        fail(str(exc))
    except KeyboardInterrupt:
        fail(
            f"every answer given so far is saved in {store}; run the same command again to continue",
            code=130,
            prefix="interrupted",
        )


app = typer.Typer(
    cls=OneLineErrors,
    add_completion=False,
    no_args_is_help=True,
    help="jaxclust active-learning commands.",
)
app.command(cls=Command)(demo)
app.command(cls=Command)(annotate)

if __name__ == "__main__":  # pragma: no cover
    app()
