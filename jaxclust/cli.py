"""The ``jaxclust`` command line (typer). Subcommands live beside the code they drive."""

from __future__ import annotations

import typer

from jaxclust._cli import OneLineErrors

app = typer.Typer(
    cls=OneLineErrors,  # a bad option or file: one line on stderr, exit code 2
    name="jaxclust",
    help="Clustering with a little supervision: constrained/active DPMM, L3M, k-means/EM, ICC.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Clustering with a little supervision: constrained/active DPMM, L3M, k-means/EM, ICC."""


@app.command()
def info() -> None:
    """Print the versions of jaxclust and its numerical stack, and the JAX devices in use."""
    import jax

    import jaxclust

    typer.echo(f"jaxclust {jaxclust.__version__}")
    typer.echo(f"jax {jax.__version__}; backend {jax.default_backend()}; devices {jax.devices()}")


def _register() -> None:
    # Commands live beside the code they drive; importing these modules is cheap (no JAX until a command runs).
    from jaxclust.cli_active import annotate, demo

    app.command(help=demo.__doc__)(demo)
    app.command(help=annotate.__doc__)(annotate)


_register()


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
