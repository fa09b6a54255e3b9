"""Command-line plumbing shared by :mod:`jaxclust.apps.cli` and :mod:`jaxclust.apps.cli_active`: one-line errors.

Every bad option or file ends the command with exit code 2 and a single line on stderr (``error: ...``), never a
traceback or a framed usage box: typer's parse errors go through :class:`OneLineErrors`, the commands turn a
:class:`~jaxclust.errors.JaxclustError` into the same line with :func:`fail`.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup

from jaxclust.apps.opening import check_sampler_options
from jaxclust.errors import InvalidInputError, JaxclustWarning
from jaxclust.validation import Int, check_rule

try:  # typer >= 0.20 vendors click
    from typer._click import exceptions as _cx
except ImportError:  # pragma: no cover - older typer on click
    import click.exceptions as _cx

__all__ = [
    "COMPILATION_CACHE_OPTION",
    "FEATURES_OPTION",
    "IGNORE_COLUMN_OPTION",
    "NAME_COLUMN_OPTION",
    "TEXT_COLUMN_OPTION",
    "N_BURNIN_OPTION",
    "MODEL_OPTION",
    "N_SAMPLES_OPTION",
    "N_CHAINS_OPTION",
    "SEED_OPTION",
    "MACHINE_URL_OPTION",
    "MACHINE_MODEL_OPTION",
    "MACHINE_KEY_ENV_OPTION",
    "MACHINE_CHECK_OPTION",
    "check_count",
    "machine_options",
    "sampler_options",
    "Command",
    "Group",
    "OneLineErrors",
    "fail",
    "one_line_warnings",
]

#: ``--no-compilation-cache``, the same on every command that fits (see jaxclust.apps.cache). One flag, not a
#: ``--x/--no-x`` pair: a pair's two names widen the option column of every command's help.
COMPILATION_CACHE_OPTION = typer.Option(
    False,
    "--no-compilation-cache",
    help="Do not keep compiled programs in ~/.cache/jaxclust/xla (or $JAXCLUST_CACHE_DIR); kept by default, so "
    "the next run starts faster.",
)

#: ``--features``, the same on every command that takes texts (see jaxclust.text.text_featurizer).
FEATURES_OPTION = typer.Option(
    None,
    "--features",
    metavar="HOW",
    help="Texts only: wordllama (the default when jaxclust[text] is installed: embeddings by meaning, offline), "
    "tfidf (shared words), a .npy of your embeddings (a row per text) or a sentence-transformers model folder. "
    "A resumed store keeps its own.",
)

#: The items' columns and the sampler's settings, the same on ``annotate`` and ``serve``.
NAME_COLUMN_OPTION = typer.Option(
    None,
    "--name-column",
    help="CSV column (JSON-lines field) naming the items (default: the first non-numeric column).",
)
IGNORE_COLUMN_OPTION = typer.Option(
    None,
    "--ignore-column",
    metavar="NAME",
    help="A CSV column that is neither a feature nor shown (a gold label, a comment); repeat for several.",
)
TEXT_COLUMN_OPTION = typer.Option(
    None,
    "--text-column",
    help="CSV column (JSON-lines field, default 'text') holding the texts to cluster; texts become features "
    "(see --features), saved with the store.",
)
N_BURNIN_OPTION = typer.Option(
    None,
    "--n-burnin",
    help="Sampler burn-in sweeps of the first fit (default: 50 with --model dpmm, 100 nested).",
)
MODEL_OPTION = typer.Option(
    "dpmm",
    "--model",
    help="dpmm (default): classes made of the model's components by the answers; nested: classes sampled "
    "inside the model, so that every correct answer helps, whoever gave it (slower refits).",
)
N_SAMPLES_OPTION = typer.Option(10, "--n-samples", help="Samples per chain.")
N_CHAINS_OPTION = typer.Option(4, "--n-chains", help="Sampler chains.")
SEED_OPTION = typer.Option(0, "--seed", help="Random seed (>= 0).")

#: A chat model that answers first (see jaxclust.active.chat.MachineFirst).
MACHINE_URL_OPTION = typer.Option(
    None,
    "--machine-url",
    metavar="URL",
    help="Texts only: a chat model answers first (an OpenAI-compatible endpoint, e.g. "
    "http://127.0.0.1:8080/v1); you answer where its replies split, where the model is sure of the opposite, "
    "and a share of the rest as checks. Its answers are stored under its name.",
)
MACHINE_MODEL_OPTION = typer.Option(None, "--machine-model", metavar="NAME", help="The chat model's name.")
MACHINE_KEY_ENV_OPTION = typer.Option(
    None, "--machine-key-env", metavar="VAR", help="Environment variable holding the endpoint's key."
)
MACHINE_CHECK_OPTION = typer.Option(
    None,
    "--machine-check",
    metavar="<share>",
    help="Share of the chat model's answers you also answer, to learn its error rates: one for both answers, or "
    "SAME,DIFFERENT (default 0.2,0.05: a fifth of its 'same's, a twentieth of its 'different's).",
)

_NO_ARGS = getattr(_cx, "NoArgsIsHelpError", ())


def fail(message: str, code: int = 2, prefix: str = "error") -> NoReturn:
    """Print ``<prefix>: <message>`` (one line) on stderr and exit with ``code``."""
    typer.echo(f"{prefix}: {' '.join(str(message).split())}", err=True)
    raise typer.Exit(code)


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """Show warnings raised inside as ``warning: <message>`` lines on stderr (no source line)."""

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ARG001
        typer.echo(f"warning: {' '.join(str(message).split())}", err=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always", JaxclustWarning)  # ours always reach the person; others as configured
        warnings.showwarning = show
        yield


class _ConventionalHelp:
    """``--help`` as most command-line tools write it: ``DATA`` (``[DATA]`` when optional) in the usage line, not
    typer's ``{data}``, and nothing after a flag (typer 0.29 writes ``<bool>``, as if it took a value)."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for p in params:
            if getattr(p, "is_flag", False) and p.metavar is None:
                p.metavar = ""
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = super().collect_usage_pieces(ctx)
        for p in self.get_params(ctx):
            if p.param_type_name != "argument":
                continue
            name = (p.metavar or p.name).upper() + ("..." if p.nargs != 1 else "")
            theirs = p.get_usage_pieces(ctx)
            pieces = [(name if p.required else f"[{name}]") if piece in theirs else piece for piece in pieces]
        return pieces


class Command(_ConventionalHelp, TyperCommand):
    """A typer command with conventional help (pass as ``app.command(cls=Command)``)."""


class Group(_ConventionalHelp, TyperGroup):
    """A typer group with conventional help (pass as ``typer.Typer(cls=Group)``)."""


class OneLineErrors(Group):
    """A typer group whose usage errors (unknown option, ``--n-queries abc``) print one line and exit 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)
        except _NO_ARGS as exc:  # `jaxclust` alone: the help text
            exc.show()
            sys.exit(exc.exit_code)
        except _cx.ClickException as exc:
            ctx = getattr(exc, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            message = " ".join(exc.format_message().split())
            typer.echo(f"error: {message}{hint}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("Aborted.", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


def check_count(value: int | None, flag: str, low: int) -> None:
    """End the command (:func:`fail`) when the integer option ``flag`` is below ``low`` (0 or 1)."""
    if value is None:
        return
    try:
        check_rule(Int(low), value, flag)
    except InvalidInputError as exc:
        fail(str(exc))


def sampler_options(
    n_chains: int, n_burnin: int | None, n_samples: int, seed: int, model: str = "dpmm"
) -> dict[str, Any]:
    """``--model``, ``--n-chains``, ``--n-burnin``, ``--n-samples`` and ``--seed`` checked; all but the seed as
    the apps' ``sampler_options`` (:func:`jaxclust.apps.opening.default_model`)."""
    try:
        check_sampler_options({"model": model}, lambda key, _: "--model")
    except InvalidInputError as exc:
        fail(str(exc))
    check_count(n_burnin, "--n-burnin", 0)
    check_count(n_samples, "--n-samples", 1)
    check_count(n_chains, "--n-chains", 1)
    check_count(seed, "--seed", 0)
    return {"model": model, "n_chains": n_chains, "n_burnin": n_burnin, "n_samples": n_samples}


def machine_options(
    url: str | None, model: str | None, key_env: str | None, check: str | None
) -> dict | None:
    """The ``--machine-*`` options as the apps' ``machine`` (None when no chat model is named); ``check`` as
    ``--machine-check`` spells it: one share, or two (``SAME,DIFFERENT``)."""
    if url is None and model is None:
        return None
    out = {"url": url, "model": model, "key_env": key_env}
    if check is not None:
        parts = str(check).split(",")
        try:
            shares = [float(v) for v in parts]
        except ValueError:
            shares = []
        if len(shares) not in (1, 2):
            raise InvalidInputError(
                f"--machine-check: expected SHARE or SAME,DIFFERENT (numbers), got {check!r}"
            )
        out["check"] = shares[0] if len(shares) == 1 else {"must": shares[0], "cannot": shares[1]}
    return out
