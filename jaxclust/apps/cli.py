"""The ``jaxclust`` command line (typer): ``info`` and ``--version`` here; ``demo`` and ``annotate`` from
:mod:`jaxclust.apps.cli_active`, ``experiment`` from :mod:`jaxclust.apps.experiment.cli`, ``store`` from
:mod:`jaxclust.apps.cli_store`, ``serve`` from :mod:`jaxclust.apps.cli_serve`."""

from __future__ import annotations

import typer

from jaxclust.apps.cli_active import annotate, demo
from jaxclust.apps.cli_common import Command, OneLineErrors
from jaxclust.apps.cli_serve import serve
from jaxclust.apps.cli_store import app as store_app
from jaxclust.apps.experiment.cli import app as experiment_app

__all__ = ["app", "info", "main"]

app = typer.Typer(
    cls=OneLineErrors,  # a bad option or file: one line on stderr, exit code 2
    name="jaxclust",
    help="Clustering with a little supervision: constrained/active DPMM, L3M, k-means/EM, ICC.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        import jaxclust

        typer.echo(f"jaxclust {jaxclust.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Clustering with a little supervision: constrained/active DPMM, L3M, k-means/EM, ICC."""


# distributions whose versions `jaxclust info` prints: the numerical stack jaxclust is built on
STACK = ("jax", "jaxlib", "numpyro", "optax", "equinox", "numpy", "scipy", "scikit-learn", "matplotlib")


@app.command(cls=Command)
def info() -> None:
    """Print the versions of jaxclust and its numerical stack, and the JAX devices in use."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import jax

    import jaxclust

    typer.echo(f"jaxclust {jaxclust.__version__} (Python {platform.python_version()})")
    for name in STACK:
        try:
            typer.echo(f"  {name:<13} {version(name)}")
        except PackageNotFoundError:
            typer.echo(f"  {name:<13} not installed")
    devices = jax.devices()
    typer.echo(f"backend {jax.default_backend()}; {len(devices)} device(s):")
    for d in devices:
        kind = "" if d.device_kind.lower() == d.platform else f" ({d.device_kind})"
        typer.echo(f"  {d.platform}:{d.id}{kind}")


def _register() -> None:
    # Commands live beside the code they drive; importing these modules is cheap (no JAX until a command runs).

    app.command(cls=Command, help=demo.__doc__)(demo)
    app.command(cls=Command, help=annotate.__doc__)(annotate)
    app.command(cls=Command, help=serve.__doc__)(serve)

    app.add_typer(experiment_app, name="experiment")
    app.add_typer(store_app, name="store")


_register()


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # python -m jaxclust.apps.cli
    main()


if __name__ == "__main__":  # pragma: no cover
    main()
