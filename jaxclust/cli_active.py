"""Command-line entry points ``demo`` and ``annotate`` (registered on the main app in :mod:`jaxclust.cli`).

They can also be run alone: ``python -m jaxclust.cli_active demo --quick``.
"""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["demo", "annotate", "app"]


def demo(
    quick: bool = typer.Option(False, "--quick", help="Small sampler and 20 questions (< 1 minute)."),
    out: Path = typer.Option(Path("jaxclust_demo"), "--out", help="Folder for demo.json and demo.png."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    n_queries: int = typer.Option(None, "--n-queries", help="Override the number of questions."),
) -> None:
    """Active vs random constraint selection for the constrained DPMM on the wine data (no data needed)."""
    from jaxclust.demo import run_demo

    run_demo(quick=quick, out_dir=out, random_state=seed, n_queries=n_queries, progress=True, echo=typer.echo)


def annotate(
    data: Path = typer.Argument(
        ..., help="CSV with a header row: numeric feature columns, optional name column."
    ),
    store: Path = typer.Option(
        Path("answers.sqlite"), "--store", help="Answer store (.sqlite or .jsonl); reuse it to resume."
    ),
    n_queries: int = typer.Option(50, "--n-queries", help="Total questions (stored answers included)."),
    name_column: str = typer.Option(
        None, "--name-column", help="Column naming the items (default: first non-numeric column)."
    ),
    context_column: str = typer.Option(None, "--context-column", help="Column shown as context."),
    strategy: str = typer.Option("batch", "--strategy", help="batch, entropy, naive_batch or random."),
    batch_size: int = typer.Option(1, "--batch-size", help="Questions per refit."),
    labels_out: Path = typer.Option(None, "--labels-out", help="Write name,cluster CSV at the end."),
    n_burnin: int = typer.Option(50, "--n-burnin", help="Sampler burn-in sweeps (first fit)."),
    n_samples: int = typer.Option(10, "--n-samples", help="Samples per chain."),
    n_chains: int = typer.Option(4, "--n-chains", help="Sampler chains."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
) -> None:
    """Interactive, resumable active clustering of your own data: answer y / n / d (don't know) / q."""
    from jaxclust.annotate import run_annotate
    from jaxclust.dpmm import DPMM
    from jaxclust.errors import JaxclustError

    model = DPMM(n_chains=n_chains, n_burnin=n_burnin, n_samples=n_samples, thin=3, random_state=seed)
    try:
        run_annotate(
            data,
            store,
            n_queries=n_queries,
            name_column=name_column,
            context_column=context_column,
            strategy=strategy,
            batch_size=batch_size,
            labels_out=labels_out,
            model=model,
            random_state=seed,
        )
    except JaxclustError as exc:  # bad file, column or option: one clear line, no traceback
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


app = typer.Typer(add_completion=False, no_args_is_help=True, help="jaxclust active-learning commands.")
app.command()(demo)
app.command()(annotate)

if __name__ == "__main__":  # pragma: no cover
    app()
