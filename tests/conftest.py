"""Shared pytest fixtures: the evaluation data directory and a fixed seed."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import jax
import pytest

REPO = Path(__file__).resolve().parents[1]


def _data_root() -> Path | None:
    env = os.environ.get("JAXCLUST_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "data")
    for path in candidates:
        if path.is_dir():
            return path
    return None


# The applications turn JAX's persistent compilation cache on by default; tests leave JAX's configuration alone
# (tests/apps/test_cache.py checks the default in a fresh process).
os.environ.setdefault("JAXCLUST_NO_COMPILATION_CACHE", "1")

_ROOT = _data_root()
if _ROOT is not None:
    # Loaders resolve JAXCLUST_DATA, so tests and the code see the same folder.
    os.environ.setdefault("JAXCLUST_DATA", str(_ROOT))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The evaluation data root (JAXCLUST_DATA, else ../shared/data beside the repo); skips when absent."""
    if _ROOT is None:
        pytest.skip("evaluation data not found: set JAXCLUST_DATA or place the data at ../shared/data")
    return _ROOT


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "data_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.data)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drops JAX's compiled programs after each test file.

    An XLA:CPU program keeps hundreds of memory mappings (about 1,200 for one DPMM fit's three programs), and the
    kernel refuses a process more than vm.max_map_count (65,530 by default): a worker that keeps every file's
    programs dies in LLVM ("Unable to allocate section memory", or a segmentation fault) late in the run. The
    programs a file shares are compiled once, as --dist loadfile keeps each file in one worker.
    """
    yield
    jax.clear_caches()
    gc.collect()
