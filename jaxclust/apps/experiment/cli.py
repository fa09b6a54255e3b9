"""``jaxclust experiment run | summarize | list``: experiment grids from the command line.

A bad config or option is one line ``error: ...`` on stderr and exit code 2 (checked before any run starts); runs
that fail are recorded and the command exits with code 1 after the others; an interrupted grid exits with 130.
"""

from __future__ import annotations

from pathlib import Path

import typer

from jaxclust.apps.cache import use_compilation_cache
from jaxclust.apps.cli_common import (
    COMPILATION_CACHE_OPTION,
    Command,
    Group,
    check_count,
    fail,
    one_line_warnings,
)
from jaxclust.apps.experiment.runner import plan, run_grid
from jaxclust.apps.experiment.summary import summarize as _summarize
from jaxclust.errors import JaxclustError

__all__ = ["app"]

app = typer.Typer(
    cls=Group,
    name="experiment",
    help="Experiment grids from a TOML config: run locally or on Ray, resume, summarise.",
    no_args_is_help=True,
    add_completion=False,
)


@app.command("run", cls=Command)
def run(
    config: Path = typer.Argument(
        ..., help="Grid config (TOML), e.g. experiments/configs/verbs_general_eb.toml."
    ),
    out: Path = typer.Option(..., "--out", help="Output folder: one JSON per run; rerun to resume."),
    quick: bool = typer.Option(False, "--quick", help="Apply the config's quick overrides (a tiny grid)."),
    ray: bool = typer.Option(
        False, "--ray", help="Run on a local Ray (one task per run); needs the ray extra."
    ),
    ray_address: str = typer.Option(
        None, "--ray-address", help="Run on the Ray cluster at ADDR ('auto', 'ray://head:10001')."
    ),
    ray_num_cpus: int = typer.Option(
        None, "--ray-num-cpus", help="CPUs of the local Ray that --ray starts (default: all of them)."
    ),
    cpus_per_run: float = typer.Option(1.0, "--cpus-per-run", help="CPUs each run's Ray task asks for."),
    gpus_per_run: float = typer.Option(0.0, "--gpus-per-run", help="GPUs each run's Ray task asks for."),
    fail_fast: bool = typer.Option(False, "--fail-fast", help="Stop at the first failing run."),
    summary: bool = typer.Option(True, "--summary/--no-summary", help="Summarise the folder at the end."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="A progress bar over runs."),
    no_compilation_cache: bool = COMPILATION_CACHE_OPTION,
) -> None:
    """Run every run of CONFIG that --out does not hold yet (each saved as it finishes), then summarise."""

    if cpus_per_run < 0 or gpus_per_run < 0:
        fail(f"{'--cpus-per-run' if cpus_per_run < 0 else '--gpus-per-run'}: expected a number >= 0")
    check_count(ray_num_cpus, "--ray-num-cpus", 1)
    if ray_num_cpus is not None and (ray_address is not None or not ray):
        fail("--ray-num-cpus: only with --ray (a local Ray; a cluster has its own CPUs)")
    try:
        with one_line_warnings():
            use_compilation_cache(not no_compilation_cache)
            report = run_grid(
                config,
                out,
                quick=quick,
                ray=ray,
                ray_address=ray_address,
                ray_init=None if ray_num_cpus is None else {"num_cpus": ray_num_cpus},
                cpus_per_run=cpus_per_run,
                gpus_per_run=gpus_per_run,
                fail_fast=fail_fast,
                summarize=summary,
                progress=progress,
                echo=lambda s: typer.echo(s, err=True),
            )
    except JaxclustError as exc:
        fail(str(exc))
    if report.interrupted:
        raise typer.Exit(130)
    if report.failed:
        ids = ", ".join(report.failed[:5]) + (", ..." if len(report.failed) > 5 else "")
        fail(
            f"{len(report.failed)} of {report.total} runs failed ({ids}); see {out}/runs/*.failed.json",
            code=1,
        )
    if report.summary and report.summary.get("errors"):
        fail(f"summary: {'; '.join(report.summary['errors'])}", code=1)


@app.command("summarize", cls=Command)
def summarize(out: Path = typer.Argument(..., help="An experiment output folder.")) -> None:
    """Write the summary and the kind's figures from whatever runs the folder holds."""

    try:
        with one_line_warnings():
            result = _summarize(out, echo=lambda s: typer.echo(s, err=True))
    except JaxclustError as exc:
        fail(str(exc))
    if result.get("errors"):
        fail(f"summary: {'; '.join(result['errors'])}", code=1)


@app.command("list", cls=Command)
def list_runs(
    config: Path = typer.Argument(..., help="Grid config (TOML)."),
    quick: bool = typer.Option(False, "--quick", help="Apply the config's quick overrides."),
    out: Path = typer.Option(None, "--out", help="Also say which runs this folder already holds."),
) -> None:
    """Print the grid's runs (id and parameters), one per line, without running anything."""
    import json

    try:
        cfg, _, runs, done = plan(config, out, quick)
    except JaxclustError as exc:
        fail(str(exc))
    for r in runs:
        status = ("done    " if r.id in done else "pending ") if out is not None else ""
        typer.echo(f"{status}{r.id}  {json.dumps(r.params, sort_keys=True)}")
    typer.echo(f"{len(runs)} runs" + (f", {len(done)} done" if out is not None else ""), err=True)
