"""``jaxclust serve``: the web annotator for a team (registered on the main app in :mod:`jaxclust.apps.cli`).

The pages, the API and the security rules are in :mod:`jaxclust.apps.serve`; the session logic (questions from a
pool, second opinions, refits in the background) in :mod:`jaxclust.active.team`. Starlette and Uvicorn are the
optional extra ``jaxclust[serve]``; this module imports neither, so ``jaxclust --help`` stays fast without them.
"""

from __future__ import annotations

from pathlib import Path

import typer

from jaxclust.apps.cache import use_compilation_cache
from jaxclust.apps.cli_active import ANNOTATE_FLAGS
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
    fail,
    machine_options,
    one_line_warnings,
    sampler_options,
)
from jaxclust.errors import JaxclustError

__all__ = ["serve", "SERVE_FLAGS"]

# how error messages name the options: annotate's, and --double
SERVE_FLAGS = {**ANNOTATE_FLAGS, "double": "--double", "token": "--token"}


def serve(
    data: Path = typer.Argument(
        ...,
        help="The items: a .txt file (one text per line), a CSV (numbers or a text column), JSON lines, .npy.",
    ),
    store: Path = typer.Option(..., "--store", help="Answer store (.sqlite recommended); reused to resume."),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="Address to listen on (default: this machine only; any other needs the token).",
    ),
    port: int = typer.Option(8000, "--port", help="Port (0: any free port, printed at start)."),
    token: str = typer.Option(
        None, "--token", help="Access token (default: none on 127.0.0.1, a random one printed otherwise)."
    ),
    double: float = typer.Option(
        0.1, "--double", help="Share of the pairs asked of two annotators, to measure agreement (0 to 1)."
    ),
    n_queries: int = typer.Option(None, "--n-queries", help="Stop asking new pairs at this many answers."),
    name_column: str = NAME_COLUMN_OPTION,
    context_column: str = typer.Option(
        None,
        "--context-column",
        help="CSV column shown under each name (an image file path shows the image).",
    ),
    ignore_column: list[str] = IGNORE_COLUMN_OPTION,
    text_column: str = TEXT_COLUMN_OPTION,
    features: str = FEATURES_OPTION,
    strategy: str = typer.Option(
        "explore", "--strategy", help="explore (default), entropy, naive_batch, random."
    ),
    stop_entropy: float = typer.Option(
        0.2, "--stop-entropy", help="Stop asking when every unknown pair's link entropy is below this (nats)."
    ),
    model: str = MODEL_OPTION,
    n_burnin: int | None = N_BURNIN_OPTION,
    n_samples: int = N_SAMPLES_OPTION,
    n_chains: int = N_CHAINS_OPTION,
    seed: int = SEED_OPTION,
    machine_url: str = MACHINE_URL_OPTION,
    machine_model: str = MACHINE_MODEL_OPTION,
    machine_key_env: str = MACHINE_KEY_ENV_OPTION,
    machine_check: str | None = MACHINE_CHECK_OPTION,
    no_compilation_cache: bool = COMPILATION_CACHE_OPTION,
) -> None:
    """A web page where a team answers the model's questions together (needs jaxclust\\[serve])."""
    sampler = sampler_options(n_chains, n_burnin, n_samples, seed, model)
    if not 0 <= port <= 65535:
        fail(f"--port: expected a port number 0..65535, got {port}")
    try:
        from jaxclust.apps.serve_run import run_serve  # loads JAX, Starlette and Uvicorn
    except ImportError as exc:
        fail(str(exc))
    try:
        with one_line_warnings():
            use_compilation_cache(not no_compilation_cache)
            run_serve(
                data,
                store,
                host=host,
                port=port,
                token=token,
                say=lambda text: typer.echo(text),
                n_queries=n_queries,
                double=double,
                strategy=strategy,
                stop_entropy=stop_entropy,
                random_state=seed,
                sampler_options=sampler,
                text_column=text_column,
                featurizer=features,
                name_column=name_column,
                context_column=context_column,
                ignore_columns=ignore_column or (),
                machine=machine_options(machine_url, machine_model, machine_key_env, machine_check),
                spelled=SERVE_FLAGS,
            )
    except JaxclustError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        pass  # Uvicorn takes the first Ctrl-C itself; a second one lands here
    typer.echo(f"stopped; every acknowledged answer is in {store}")
