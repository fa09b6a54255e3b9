"""Fake experiment kinds for the grid runner's tests, loaded by file path (``kind = "fake_kinds.py:slow"``).

``slow`` leaves one marker file per call in ``markers``, so a test can count how often each run was computed,
across processes.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def fast(x, y=1, seed=0):
    return {"value": x * 10 + y + seed, "pid": os.getpid()}


def slow(i, delay=0.2, markers=None, fail_on=None, fail_flag=None, exit_on=None):
    if markers:
        Path(markers).mkdir(parents=True, exist_ok=True)
        (Path(markers) / f"{i}.{os.getpid()}.{time.monotonic_ns()}").touch()
    time.sleep(delay)
    if i == fail_on and (fail_flag is None or Path(fail_flag).exists()):
        raise RuntimeError(f"run {i} fails on purpose")
    if i == exit_on:
        raise SystemExit(3)  # a run that calls sys.exit(3)
    return {"square": i * i, "curve": [i, i + 1]}


def summarize(records, out_dir):
    ids = sorted(r["id"] for r in records)
    total = sum(r["result"].get("square", r["result"].get("value", 0)) for r in records)
    (Path(out_dir) / "fake_summary.json").write_text(json.dumps({"ids": ids, "total": total}))
    return {"files": ["fake_summary.json"], "n": len(ids)}
