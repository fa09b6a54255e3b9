"""The summary of an experiment folder, made from whatever runs it holds (a partial grid included).

Writes ``summary.json`` (every finished run's id, parameters, time and scalar results; the runs of the latest
grid that are missing or failed; what the kind's summariser wrote) and ``summary.csv`` (one row per finished
run: id, seconds, parameters, the result's top-level numbers and strings), then calls each kind's ``summarize``
function (see :mod:`jaxclust.apps.experiment.registry`) for its own figures and tables.
"""

from __future__ import annotations

import csv
import io
import json
import warnings
from pathlib import Path

from jaxclust.apps.experiment.records import atomic_write_json, read_record, record_index
from jaxclust.apps.experiment.registry import resolve_kind
from jaxclust.errors import ExperimentConfigError, JaxclustWarning, StoreError
from jaxclust.files import atomic_write

__all__ = ["summarize", "load_records"]


def load_records(out: str | Path) -> tuple[list[dict], list[dict]]:
    """``(finished, failed)`` run records of a folder, in file-name order; unreadable files are skipped with a
    warning (they are never counted as finished)."""
    runs_dir = Path(out) / "runs"
    finished, failed = [], []
    if not runs_dir.is_dir():
        return finished, failed
    for path in record_index(runs_dir).values():
        rec, reason = read_record(path)
        if rec is None:
            warnings.warn(f"{path}: skipped ({reason})", JaxclustWarning, stacklevel=2)
            continue
        finished.append(rec)
    for path in sorted(runs_dir.glob("*.failed.json")):
        try:
            failed.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return finished, failed


def _scalars(result: dict) -> dict:
    return {k: v for k, v in result.items() if isinstance(v, (int, float, str, bool)) or v is None}


def summarize(out: str | Path, echo=None) -> dict:
    """Write the folder's summary (see the module docstring) and return it."""
    out = Path(out)
    if not out.is_dir():
        raise StoreError(f"{out}: no such experiment folder")
    say = echo or (lambda s: None)
    finished, failed = load_records(out)
    grid = {}
    if (out / "grid.json").is_file():
        try:
            grid = json.loads((out / "grid.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            grid = {}
    done_hashes = {r["id"].rsplit("-", 1)[-1] for r in finished}
    planned = grid.get("runs", [])
    missing = [r["id"] for r in planned if r["id"].rsplit("-", 1)[-1] not in done_hashes]
    summary = {
        "folder": str(out),
        "config": grid.get("config"),
        "kind": grid.get("kind"),
        "n_planned": len(planned),
        "n_finished": len(finished),
        "missing": missing,
        "failed": [
            {"id": f.get("id"), "error": f.get("error")}
            for f in failed
            if not planned or f.get("id") in missing
        ],
        "runs": [
            {
                "id": r["id"],
                "kind": r["kind"],
                "seconds": r.get("seconds"),
                "params": r["params"],
                **_scalars(r["result"]),
            }
            for r in finished
        ],
        "kinds": {},
    }
    by_kind: dict[str, list[dict]] = {}
    for r in finished:
        by_kind.setdefault(r["kind"], []).append(r)
    errors = []
    for kind_name, records in by_kind.items():
        fn = _summarizer(kind_name, grid)
        if fn is None:
            continue
        try:
            summary["kinds"][kind_name] = fn(records, out) or {}
        except Exception as exc:  # the runs are safe; report the summariser's failure
            summary["kinds"][kind_name] = {"error": f"{type(exc).__name__}: {exc}"}
            errors.append(f"{kind_name}: {type(exc).__name__}: {exc}")
    atomic_write_json(out / "summary.json", summary)
    _write_csv(out / "summary.csv", finished)
    say(
        f"{out}: {len(finished)} finished run(s)"
        + (f" of {len(planned)} planned, {len(missing)} missing" if planned else "")
        + f"; summary in {out / 'summary.json'}"
    )
    for e in errors:
        warnings.warn(f"summary of kind {e}", JaxclustWarning, stacklevel=2)
    summary["errors"] = errors
    return summary


def _summarizer(kind_name: str, grid: dict):

    base = Path(grid["config_path"]).parent if grid.get("config_path") else Path.cwd()
    try:
        return resolve_kind(kind_name, base).summarize_function()
    except ExperimentConfigError as exc:
        warnings.warn(f"no summary for kind {kind_name!r}: {exc}", JaxclustWarning, stacklevel=3)
        return None


def _write_csv(path: Path, records: list[dict]) -> None:
    params = list(dict.fromkeys(k for r in records for k in r["params"]))
    values = list(dict.fromkeys(k for r in records for k in _scalars(r["result"])))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["id", "seconds", *params, *(f"result.{k}" for k in values)])
    for r in records:
        p, s = r["params"], _scalars(r["result"])
        w.writerow(
            [
                r["id"],
                r.get("seconds"),
                *(json.dumps(p[k]) if isinstance(p.get(k), (list, dict)) else p.get(k, "") for k in params),
                *(s.get(k, "") for k in values),
            ]
        )
    try:
        atomic_write(path, buf.getvalue().encode("utf-8"))
    except OSError as exc:
        raise StoreError(f"{path}: cannot be written ({exc.strerror or exc})") from None
