"""``jaxclust.enable_compilation_cache``: a later process loads what an earlier one compiled."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import jaxclust
from jaxclust.compilation_cache import default_cache_dir
from jaxclust.errors import InvalidInputError

SCRIPT = textwrap.dedent(
    """
    import sys, numpy as np, jax
    import jaxclust
    hits = []
    jax.monitoring.register_event_listener(lambda name, **kw: hits.append(name) if "cache_hits" in name else None)
    jax.jit(lambda x: x - 1)(np.arange(2.0))  # compiled before: the call below must still take effect
    jaxclust.enable_compilation_cache(sys.argv[1])
    print(float(jax.jit(lambda x: (x * 2 + 1).sum())(np.arange(3.0))), len(hits))
    """
)


def _run(path):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path)], capture_output=True, text=True, check=True
    )
    value, hits = out.stdout.split()
    return float(value), int(hits)


def test_a_second_process_loads_the_compiled_program(tmp_path):
    cache = tmp_path / "xla"
    assert _run(cache) == (9.0, 0)  # compiled, stored
    assert any(cache.iterdir())
    assert _run(cache) == (9.0, 1)  # loaded from the directory


def test_bad_directory_and_default(tmp_path, monkeypatch):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(InvalidInputError, match="path: .*file.* not a directory"):
        jaxclust.enable_compilation_cache(not_a_dir)
    monkeypatch.setenv("JAXCLUST_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("JAXCLUST_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "jaxclust" / "xla"


def test_compiled_programs_are_released_when_the_memory_maps_run_short():
    """A process holds hundreds of memory mappings per compiled program (the kernel caps them): released, a
    function's compiled program is gone and its maps with it; below the threshold nothing is dropped."""
    import jax
    import numpy as np

    from jaxclust.compilation_cache import memory_maps, release_compiled_programs

    f = jax.jit(lambda x: jax.numpy.cumsum(jax.numpy.sin(x) * 3.0))
    f(np.arange(4.0))
    assert f._cache_size() == 1
    assert release_compiled_programs(threshold=1.0) is False  # no process holds all its mappings
    assert f._cache_size() == 1
    maps = memory_maps()
    assert maps is None or 0 < maps[0] < maps[1]
    assert release_compiled_programs(threshold=0) is True
    assert f._cache_size() == 0
    np.testing.assert_allclose(f(np.arange(4.0)), np.cumsum(np.sin(np.arange(4.0)) * 3.0), rtol=1e-6)
    for bad in (-0.1, 1.5, True, "half"):
        with pytest.raises(InvalidInputError, match="^threshold: expected a finite number >= 0.0 and <= 1.0"):
            release_compiled_programs(threshold=bad)
