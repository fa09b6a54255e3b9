"""Experiment kinds: a name -> the function that performs ONE run (and, optionally, the one that summarises runs).

The built-in kinds are the scripts in the repository's ``experiments/`` folder; nothing is imported until a kind is
used. A kind's *run function* takes the run's parameters as keyword arguments and returns a JSON-serialisable
dict; its *summarize function* (optional) is called as ``summarize(records, out_dir)`` with the finished runs'
records (dicts with ``id``, ``params``, ``result``) and writes the kind's figures and tables from whatever runs
exist, returning a JSON-able dict (e.g. the files it wrote).

A kind is named in a config by its registered name (``kind = "active_dpmm"``) or by a target:
``"package.module:function"`` (importable) or ``"path/to/file.py:function"`` (a file; a relative path is taken
from the config's folder). A target's module may define ``summarize`` beside the run function.

Targets travel to Ray workers as strings and are loaded there, so a worker needs the same ``experiments/`` folder
(a checkout of the repository with ``pip install -e .``; or ``JAXCLUST_EXPERIMENTS=/path/to/experiments``) and
the same files for file targets.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxclust.errors import ExperimentConfigError

__all__ = ["Kind", "KINDS", "register_kind", "resolve_kind", "load_target", "experiments_dir", "check_params"]

# name -> (script in experiments/, run function, summarize function)
BUILTIN = {
    "active_dpmm": ("active_dpmm.py", "run_one", "summarize"),
    "kmeans_baselines": ("kmeans_baselines.py", "run_one", "summarize"),
    "l3m_coref": ("l3m_coref.py", "run_one", "summarize"),
    "l3m_posts": ("l3m_posts.py", "run_one", "summarize"),
    "icc": ("icc.py", "run_one", "summarize"),
    "metrics_baselines": ("metrics_baselines.py", "run_one", "summarize"),
    "dataset_signal": ("dataset_signal.py", "run_one", "summarize"),
    "noisy_annotators": ("noisy_annotators.py", "run_one", "summarize"),
    "active_suite": ("active_suite.py", "run_one", "summarize"),
}


@dataclass(frozen=True)
class Kind:
    """A resolved kind: its name and where its functions live.

    ``run`` and ``summarize`` are targets (``"@experiments/active_dpmm.py:run_one"``, ``"/abs/file.py:f"``,
    ``"pkg.mod:f"``) or callables; ``summarize`` may be None.
    """

    name: str
    run: str | Callable
    summarize: str | Callable | None = None

    def run_function(self) -> Callable:
        return load_target(self.run)

    def summarize_function(self) -> Callable | None:
        if self.summarize is None:
            return None
        return load_target(self.summarize, missing_ok=True)


KINDS: dict[str, Kind] = {
    name: Kind(name, f"@experiments/{script}:{run}", f"@experiments/{script}:{summ}")
    for name, (script, run, summ) in BUILTIN.items()
}


def register_kind(name: str, run: str | Callable, summarize: str | Callable | None = None) -> Kind:
    """Register (or replace) a kind under ``name``; ``run``/``summarize``: targets or callables.

    A callable works in the local runner and, when it can be pickled (a module-level function of an importable
    module), on Ray; a ``"file.py:function"`` target works everywhere the file exists.
    """
    if isinstance(run, str):
        run = _absolute_target(run, Path.cwd())
    if isinstance(summarize, str):
        summarize = _absolute_target(summarize, Path.cwd())
    kind = Kind(name, run, summarize)
    KINDS[name] = kind
    return kind


def experiments_dir() -> Path:
    """The ``experiments/`` folder: ``$JAXCLUST_EXPERIMENTS``, else the one beside the installed package."""
    env = os.environ.get("JAXCLUST_EXPERIMENTS")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "experiments"


def _absolute_target(target: str, base: Path) -> str:
    path, sep, func = target.rpartition(":")
    if sep and path.endswith(".py") and not path.startswith("@") and not Path(path).is_absolute():
        return f"{(base / path).resolve()}:{func}"
    return target


def resolve_kind(spec: str, base: Path | None = None) -> Kind:
    """The kind a config names: a registered name or a target (relative files from ``base``)."""
    if spec in KINDS:
        return KINDS[spec]
    if ":" in spec:
        target = _absolute_target(spec, base or Path.cwd())
        module = target.rpartition(":")[0]
        return Kind(spec, target, f"{module}:summarize")
    raise ExperimentConfigError(
        f"kind: unknown experiment kind {spec!r} (registered: {', '.join(sorted(KINDS))}; or give "
        "'package.module:function' or 'file.py:function')"
    )


def _default_data_dir() -> None:
    # the experiment scripts' own default: the checkout's sibling data folder, when JAXCLUST_DATA is unset
    shared = experiments_dir().resolve().parent.parent / "shared" / "data"
    if "JAXCLUST_DATA" not in os.environ and shared.is_dir():
        os.environ["JAXCLUST_DATA"] = str(shared)


def _load_file_module(path: Path) -> Any:
    name = "jaxclust_experiment_" + "".join(c if c.isalnum() else "_" for c in str(path.with_suffix("")))
    if name in sys.modules:
        return sys.modules[name]
    if not path.is_file():
        hint = ""
        if path.parent == experiments_dir():
            hint = (
                " (the built-in kinds run the scripts of a repository checkout: install jaxclust with "
                "'pip install -e .' from the checkout, or set JAXCLUST_EXPERIMENTS to its experiments folder)"
            )
        raise ExperimentConfigError(f"kind: {path} not found{hint}")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_target(target: str | Callable, missing_ok: bool = False) -> Callable | None:
    """The function a target names (``"@experiments/x.py:f"``, ``"/abs/x.py:f"``, ``"pkg.mod:f"``).

    With ``missing_ok``, a module without that function gives None (an optional ``summarize``).
    """
    if callable(target):
        return target
    module_name, sep, func = target.rpartition(":")
    if not sep or not module_name or not func:
        raise ExperimentConfigError(f"kind: {target!r} is not 'module:function' or 'file.py:function'")
    if module_name.startswith("@experiments/"):
        _default_data_dir()
        module = _load_file_module(experiments_dir() / module_name.removeprefix("@experiments/"))
    elif module_name.endswith(".py"):
        module = _load_file_module(Path(module_name))
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ExperimentConfigError(f"kind: cannot import {module_name!r} ({exc})") from None
    fn = getattr(module, func, None)
    if fn is None:
        if missing_ok:
            return None
        raise ExperimentConfigError(f"kind: {module_name} has no function {func!r}")
    return fn


def check_params(fn: Callable, params: dict) -> tuple[list[str], list[str]]:
    """``(unknown, missing)``: parameter names ``fn`` does not take, and required ones ``params`` lacks."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return [], []
    ps = sig.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in ps):
        unknown = []
    else:
        names = {p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        unknown = [k for k in params if k not in names]
    missing = [
        p.name
        for p in ps
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in params
    ]
    return unknown, missing
