"""Run an experiment grid: locally in this process, or on Ray with one task per run; resume where it stopped.

Output folder layout (``--out DIR``)::

    DIR/grid.json              the expanded grid of the latest invocation (config text, run ids and parameters)
    DIR/runs/<id>.json         one finished run: {"id", "kind", "params", "status": "ok", "result", "seconds", ...}
    DIR/runs/<id>.failed.json  a run that raised (error and traceback); it is run again next time
    DIR/summary.json, .csv     made from whatever runs exist (see :mod:`jaxclust.apps.experiment.summary`)
    DIR/...                    the kind's own figures and tables

*Durability.* Each run's file is written when that run finishes, atomically (a temporary file in the same folder,
``fsync``, ``os.replace``, ``fsync`` of the folder): a file named ``<id>.json`` is always complete. A run counts as
finished only if its file parses, says ``"status": "ok"`` and carries exactly the run's parameters; anything else
found under that name (a truncated copy, an edited file) is moved aside to ``<id>.json.corrupt`` with a warning and
the run is run again. Killing the runner at any point (``kill -9`` included) loses at most the runs in progress;
running the same command again skips every finished run. One runner at a time per folder (``DIR/.lock``, an
``flock`` the system releases when the process dies).

On Ray the driver (this process) writes the files as the tasks' results come back, so the workers need no shared
file system; they need jaxclust and the kind's code (see :mod:`jaxclust.apps.experiment.registry`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jaxclust.apps.experiment.config import ExperimentConfig, Run, load_config
from jaxclust.apps.experiment.records import FORMAT, atomic_write_json, jsonable, read_record, record_index
from jaxclust.apps.experiment.registry import Kind, check_params, load_target, resolve_kind
from jaxclust.apps.experiment.summary import summarize as _summarize
from jaxclust.compilation_cache import release_compiled_programs
from jaxclust.errors import (
    ExperimentConfigError,
    ExperimentError,
    JaxclustWarning,
    MissingDependencyError,
    StoreError,
    StoreLockedError,
)

__all__ = ["GridReport", "run_grid", "plan", "execute", "read_record", "atomic_write_json", "import_ray"]

RAY_HINT = 'pip install "jaxclust[ray]"'


@dataclass
class GridReport:
    """What :func:`run_grid` did: run counts, the ids that failed, and the summary it wrote."""

    out: Path
    total: int
    skipped: int  # finished before this invocation
    ran: int = 0  # finished by this invocation
    failed: list[str] = field(default_factory=list)
    interrupted: bool = False
    summary: dict | None = None


# ----------------------------------------------------------------------------------------------------------
# files


def _set_aside(path: Path, reason: str) -> None:
    n, side = 0, path.with_name(path.name + ".corrupt")
    while side.exists():
        n += 1
        side = path.with_name(f"{path.name}.corrupt{n}")
    os.replace(path, side)
    warnings.warn(
        f"{path}: {reason}; moved to {side.name} and the run will be run again", JaxclustWarning, stacklevel=3
    )


def _clean_temporaries(runs_dir: Path) -> None:
    """Remove temporary files left by runners that were killed while writing (their pid is gone)."""
    for p in runs_dir.glob(".*.tmp.*"):
        pid = p.name.rsplit(".", 1)[-1]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                p.unlink()
        except OSError:
            pass


# ----------------------------------------------------------------------------------------------------------
# one run


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def execute(target: Any, params: dict) -> dict:
    """Perform one run (here or in a Ray worker): load the kind's run function, call it with ``params``.

    Never raises for a failing run: returns ``{"status": "ok", "result", ...}`` or ``{"status": "failed", "error",
    "traceback", ...}``. The result is passed through JSON, so what is returned is what will be written.
    """

    started, t0 = _now(), time.perf_counter()
    info = {"host": socket.gethostname(), "pid": os.getpid(), "started": started}
    try:
        fn = load_target(target)
        result = fn(**params)
        if not isinstance(result, dict):
            raise TypeError(f"the run function returned {type(result).__name__}, expected a dict")
        result = json.loads(json.dumps(result, default=jsonable))
    except (Exception, SystemExit) as exc:  # a failing run (sys.exit included) is recorded, the grid goes on
        return {
            "status": "failed",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
            "seconds": time.perf_counter() - t0,
            "finished": _now(),
            **info,
        }
    return {"status": "ok", "result": result, "seconds": time.perf_counter() - t0, "finished": _now(), **info}


# ----------------------------------------------------------------------------------------------------------
# planning


def _kind_and_check(cfg: ExperimentConfig, runs: list[Run]) -> Kind:
    base = cfg.path.parent if cfg.path is not None else Path.cwd()
    try:
        kind = resolve_kind(cfg.kind, base)
        fn = kind.run_function()
    except ExperimentConfigError as exc:
        raise ExperimentConfigError(f"{cfg.where('', 'kind')}: {str(exc).removeprefix('kind: ')}") from None
    for run in runs:
        unknown, missing = check_params(fn, run.params)
        if unknown:
            key = unknown[0]
            tables = ("grid", "fixed", "linked", "include", "quick.fixed", "quick.grid", "quick.linked")
            table = next((t for t in tables if _has(cfg, t, key)), "")
            raise ExperimentConfigError(
                f"{cfg.where(table, key)}: not a parameter of kind {cfg.kind!r} "
                f"(it takes: {', '.join(_param_names(fn))})"
            )
        if missing:
            raise ExperimentConfigError(
                f"{cfg.path or '<config>'}: run {run.id} lacks the required parameter {missing[0]!r} of kind "
                f"{cfg.kind!r} (set it in [fixed] or [grid])"
            )
    return kind


def _has(cfg: ExperimentConfig, table: str, key: str) -> bool:
    if table.startswith("quick."):
        found = cfg.quick.get(table.split(".", 1)[1], {})
    else:
        found = getattr(cfg, table)
    if table.endswith("linked"):
        return any(key in t for tables in found.values() for t in tables)
    if table == "include":
        return any(key in inc for inc in found)
    return key in found


def _param_names(fn: Callable) -> list[str]:
    import inspect

    return [p for p in inspect.signature(fn).parameters if p not in ("args", "kwargs")]


def plan(config: ExperimentConfig | str | Path, out: str | Path | None = None, quick: bool = False):
    """``(config, kind, runs, done)``: the expanded, checked grid and, with ``out``, the ids already finished."""
    cfg = config if isinstance(config, ExperimentConfig) else load_config(config)
    if quick and not cfg.quick:  # never run a long grid by accident
        raise ExperimentConfigError(
            f"--quick: {cfg.path or '<config>'} has no [quick] table (what --quick changes)"
        )
    runs = cfg.runs(quick)
    kind = _kind_and_check(cfg, runs)
    done: dict[str, dict] = {}
    if out is not None and (Path(out) / "runs").is_dir():
        done = _finished(Path(out) / "runs", runs, set_aside=False)
    return cfg, kind, runs, done


def _finished(runs_dir: Path, runs: list[Run], set_aside: bool) -> dict[str, dict]:
    index = record_index(runs_dir)
    done = {}
    for run in runs:
        path = index.get(run.hash)
        if path is None:
            continue
        rec, reason = read_record(path, run)
        if rec is not None:
            done[run.id] = rec
        elif set_aside and path.stem == run.id:
            _set_aside(path, reason)
    return done


# ----------------------------------------------------------------------------------------------------------
# the lock


@contextlib.contextmanager
def _lock(out: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform: no protection against a second runner
        yield
        return
    path = out / ".lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = json.loads(Path(path).read_text() or "{}")
            except (OSError, ValueError):
                holder = {}
            who = ", ".join(f"{k} {holder[k]}" for k in ("pid", "host", "since") if k in holder)
            raise StoreLockedError(
                f"{out}: in use by another grid runner ({who or 'unknown process'}); wait for it or use another --out",
                path=str(out),
                holder=holder,
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": _now()}).encode())
        yield
    finally:
        os.close(fd)  # releases the flock


# ----------------------------------------------------------------------------------------------------------
# running


def import_ray(option: str = "--ray"):
    """Import Ray, or raise :class:`~jaxclust.errors.MissingDependencyError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(
            f"{option}: Ray is not installed; install the extra with: {RAY_HINT}"
        ) from None
    return ray


def _prepare_out(out: Path) -> Path:
    if out.exists() and not out.is_dir():
        raise StoreError(f"--out {out}: is a file, expected a folder for the runs")
    try:
        (out / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"--out {out}: cannot create the folder ({exc.strerror or exc})") from None
    if not os.access(out / "runs", os.W_OK):
        raise StoreError(f"--out {out}: not writable")
    return out


def run_grid(
    config: ExperimentConfig | str | Path,
    out: str | Path,
    *,
    quick: bool = False,
    ray: bool = False,
    ray_address: str | None = None,
    ray_init: dict | None = None,
    cpus_per_run: float = 1.0,
    gpus_per_run: float = 0.0,
    fail_fast: bool = False,
    summarize: bool = True,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
) -> GridReport:
    """Run every run of ``config`` that ``out`` does not hold yet, writing each as it finishes; then summarise.

    Parameters
    ----------
    config : path or ExperimentConfig
        The grid (see :mod:`jaxclust.apps.experiment.config`).
    out : path
        Output folder (created). Finished runs found there are skipped.
    quick : bool
        Apply the config's ``[quick]`` overrides (a tiny version of the grid).
    ray, ray_address : bool, str
        Run on Ray, one task per run: ``ray=True`` starts a new local Ray (shut down at the end);
        ``ray_address`` connects to a running cluster (``"auto"`` for the one started on this machine by
        ``ray start``, ``"HEAD_IP:6379"``, ``"ray://HEAD_IP:10001"``). When Ray is already initialised in this
        process, that instance is used. Ray must be installed
        (``pip install "jaxclust[ray]"``), else :class:`~jaxclust.errors.MissingDependencyError`.
    ray_init : dict
        More keyword arguments for ``ray.init`` (e.g. ``num_cpus``); ignored when Ray is already initialised.
    cpus_per_run, gpus_per_run : float
        Ray resources each run's task asks for.
    fail_fast : bool
        Stop at the first failing run (otherwise it is recorded and the others go on).
    summarize : bool
        Write the summary and the kind's figures at the end (from all finished runs in ``out``).
    progress : bool
        A progress bar over runs (tqdm, on stderr).
    echo : callable
        Where status lines go (default: nowhere).
    """
    say = echo or (lambda s: None)
    use_ray = ray or ray_address is not None
    if use_ray:
        import_ray("--ray-address" if ray_address is not None and not ray else "--ray")  # before any work
    cfg, kind, runs, _ = plan(config, None, quick)
    out = Path(out)
    if out.exists() and not out.is_dir():  # before Ray starts: a bad --out is reported at once
        raise StoreError(f"--out {out}: is a file, expected a folder for the runs")
    started_ray = _connect_ray(ray_address, ray_init) if use_ray else False
    try:
        _prepare_out(out)
        report = _run(
            cfg,
            kind,
            runs,
            out,
            quick,
            use_ray,
            ray_address,
            cpus_per_run,
            gpus_per_run,
            fail_fast,
            progress,
            say,
        )
    finally:
        if started_ray:
            import_ray().shutdown()
    if summarize and not report.interrupted:
        report.summary = _summarize(out, echo=echo)
    return report


def _run(
    cfg, kind, runs, out, quick, use_ray, ray_address, cpus_per_run, gpus_per_run, fail_fast, progress, say
):
    with _lock(out):
        _clean_temporaries(out / "runs")
        done = _finished(out / "runs", runs, set_aside=True)
        atomic_write_json(
            out / "grid.json",
            {
                "config": cfg.name,
                "kind": cfg.kind,
                "description": cfg.description,
                "config_path": str(cfg.path) if cfg.path is not None else None,
                "config_text": cfg.text,
                "quick": quick,
                "written": _now(),
                "runs": [{"id": r.id, "params": r.params} for r in runs],
            },
        )
        todo = [r for r in runs if r.id not in done]
        report = GridReport(out, total=len(runs), skipped=len(done))
        where = f"Ray at {ray_address}" if ray_address else ("local Ray" if use_ray else "this process")
        say(f"{cfg.name}: {len(runs)} runs, {len(done)} finished earlier, {len(todo)} to run ({where})")
        bar = _bar(len(runs), len(done), cfg.name, progress)
        target = kind.run

        def record(run: Run, outcome: dict) -> bool:
            """Write one outcome; True if the grid should go on."""
            base = {
                "format": FORMAT,
                "id": run.id,
                "kind": run.kind,
                "config": cfg.name,
                "params": run.params,
            }
            rec = {**base, **outcome}
            if outcome["status"] == "ok":
                atomic_write_json(out / "runs" / f"{run.id}.json", rec)
                with contextlib.suppress(FileNotFoundError):
                    (out / "runs" / f"{run.id}.failed.json").unlink()
                report.ran += 1
            else:
                atomic_write_json(out / "runs" / f"{run.id}.failed.json", rec)
                report.failed.append(run.id)
                say(f"run {run.id} failed: {outcome['error']}")
            bar.update(1)
            return outcome["status"] == "ok" or not fail_fast

        try:
            if use_ray:
                _run_on_ray(todo, target, record, cpus_per_run, gpus_per_run)
            else:
                for run in todo:
                    bar.set_postfix_str(run.id, refresh=True)
                    if not record(run, execute(target, run.params)):
                        break
                    release_compiled_programs()  # a long grid of new shapes would run out of memory mappings
        except KeyboardInterrupt:
            report.interrupted = True
            say("interrupted: the finished runs are saved; run the same command again to resume")
        finally:
            bar.close()
    return report


def _bar(total: int, initial: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="run", disable=not enabled, dynamic_ncols=True)


def _connect_ray(address: str | None, init_kwargs: dict | None) -> bool:
    """Start a local Ray (``address`` None) or connect to a cluster, unless Ray is initialised already; True if
    this call did it (and so shuts it down at the end)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    # --ray: a new local instance (never one left running on this machine), no dashboard; a cluster: connect only
    kwargs = {"address": "local", "include_dashboard": False} if address is None else {"address": address}
    try:
        ray.init(**{**kwargs, **(init_kwargs or {})})
    except Exception as exc:  # unreachable cluster, bad address, authentication, bad init arguments
        what = f"--ray-address {address}: cannot connect to Ray" if address else "--ray: cannot start Ray"
        reason = (str(exc).strip().splitlines() or [""])[0]
        raise ExperimentError(f"{what} ({type(exc).__name__}: {reason})") from None
    return True


def _run_on_ray(todo, target, record, cpus, gpus) -> None:
    ray = import_ray()
    task = ray.remote(execute).options(num_cpus=cpus, num_gpus=gpus)
    pending = {task.remote(target, run.params): run for run in todo}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                run = pending.pop(ref)
                try:
                    outcome = ray.get(ref)
                except Exception as exc:  # the worker died (out of memory, node lost): record, go on
                    outcome = {"status": "failed", "error": f"{type(exc).__name__}: {exc}", "traceback": ""}
                if not record(run, outcome):
                    return
    finally:
        for ref in pending:  # interrupted or stopped: nothing more to compute
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
