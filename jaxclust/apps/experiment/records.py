"""The run records of an experiment folder: written atomically, read back only when complete and consistent.

Shared by :mod:`jaxclust.apps.experiment.runner` (which writes them) and :mod:`jaxclust.apps.experiment.summary`
(which reads them), so that neither imports the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jaxclust.apps.experiment.config import Run, canonical, params_hash
from jaxclust.errors import StoreError
from jaxclust.files import atomic_write

__all__ = ["FORMAT", "atomic_write_json", "read_record", "record_index", "jsonable"]

FORMAT = "jaxclust-experiment-run/1"


def jsonable(o: Any) -> Any:
    import numpy as np  # a dependency of jaxclust; imported only when a result needs it

    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (:func:`jaxclust.files.atomic_write`)."""
    path = Path(path)
    data = json.dumps(obj, indent=1, default=jsonable).encode("utf-8")
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise StoreError(f"{path}: cannot be written ({exc.strerror or exc})") from None


def read_record(path: Path, run: Run | None = None) -> tuple[dict | None, str]:
    """``(record, "")`` if ``path`` holds a finished run (of ``run``, when given), else ``(None, reason)``."""
    try:
        rec = json.loads(Path(path).read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None, "missing"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"not readable JSON ({type(exc).__name__}: {exc})"
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        return None, "not a jaxclust experiment run record"
    if rec.get("status") != "ok" or "result" not in rec:
        return None, "not a finished run"
    kind, params, rid = rec.get("kind"), rec.get("params"), rec.get("id")
    if not isinstance(kind, str) or not isinstance(params, dict) or not isinstance(rid, str):
        return None, "incomplete record"
    if rid.rsplit("-", 1)[-1] != params_hash(kind, params):
        return None, "its parameters do not match its id"
    if run is not None and (kind != run.kind or canonical(params) != canonical(run.params)):
        return None, "a different run's record"
    return rec, ""


def record_index(runs_dir: Path) -> dict[str, Path]:
    """hash -> record file, for the finished-run files of a folder (whatever their slug)."""
    out = {}
    for p in sorted(runs_dir.glob("*.json")):
        if p.name.endswith(".failed.json") or p.name.startswith("."):
            continue
        out[p.stem.rsplit("-", 1)[-1]] = p
    return out
