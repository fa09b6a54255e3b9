"""Keep JAX's compiled programs on disk, so that a new process skips compiling the samplers again.

Most of a first ``DPMM().fit`` on a CPU is XLA compiling the sampler (``benchmarks/RESULTS.md`` has the
measurements). JAX can store compiled programs in a directory and load them in a
later process with the same JAX version, backend and shapes; this turns that on, for every compiled function
(by default JAX only stores programs that took a second or more to compile)::

    import jaxclust
    jaxclust.enable_compilation_cache()          # ~/.cache/jaxclust/xla, or $JAXCLUST_CACHE_DIR
    jaxclust.DPMM().fit(X)                       # compiles and stores; a later process loads

It changes JAX's global configuration for the whole process (JAX's own setting, ``JAX_COMPILATION_CACHE_DIR``,
does the same from the environment). The directory grows with each new shape compiled; delete it at will.

In memory, a process keeps every program it compiled. On Linux each XLA:CPU program holds hundreds of memory
mappings (about 1,200 for one ``DPMM`` fit's programs) and the kernel allows a process ``vm.max_map_count`` of
them (65,530 by default), so a process that fits some fifty new shapes dies in LLVM ("Unable to allocate section
memory"). :func:`release_compiled_programs` drops them when the mappings run short; a long loop over data sets
calls it between fits (``jaxclust experiment run`` does, between runs).
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

from jaxclust.errors import InvalidInputError
from jaxclust.validation import Real, check_rule

__all__ = ["enable_compilation_cache", "default_cache_dir", "memory_maps", "release_compiled_programs"]


def default_cache_dir() -> Path:
    """``$JAXCLUST_CACHE_DIR``, else ``$XDG_CACHE_HOME/jaxclust/xla``, else ``~/.cache/jaxclust/xla``."""
    if os.environ.get("JAXCLUST_CACHE_DIR"):
        return Path(os.environ["JAXCLUST_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "jaxclust" / "xla"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path:
    """Store every program JAX compiles from now on in ``path`` (created if needed; default
    :func:`default_cache_dir`) and load it from there in later processes. Returns the directory.

    Call it before the first fit: programs compiled earlier in the process are not stored.
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache as cc

    if path is not None and not isinstance(path, str | os.PathLike):
        raise InvalidInputError(f"path: expected a folder path (str or os.PathLike) or None, got {path!r}")
    where = default_cache_dir() if path is None else Path(path).expanduser()
    if where.exists() and not where.is_dir():
        raise InvalidInputError(f"path: {str(where)!r} exists and is not a directory")
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError(
            f"path: cannot create the cache directory {str(where)!r} ({exc.strerror})"
        ) from None
    if not os.access(where, os.W_OK):
        raise InvalidInputError(f"path: the cache directory {str(where)!r} is not writable")
    jax.config.update("jax_compilation_cache_dir", str(where))
    # every program, not only those that took a second or more: the sampler's small helpers add up
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    cc.reset_cache()  # a cache JAX already set up (or found disabled) in this process is re-read from the config
    return where


def memory_maps() -> tuple[int, int] | None:
    """``(memory mappings this process holds, the most the kernel allows it)``, or None where the system does not
    say (not Linux)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            used = sum(1 for _ in f)
        limit = int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return None
    return used, limit


def release_compiled_programs(threshold: float = 0.5) -> bool:
    """Drop every compiled program JAX keeps in memory (:func:`jax.clear_caches`) when this process holds more
    than ``threshold`` of the memory mappings it may (see the module docstring; ``0`` drops them always). The
    next call of each function compiles again (or loads from the disk cache). Returns whether it dropped them.
    """
    threshold = check_rule(Real(0.0, 1.0), threshold, "threshold")
    maps = memory_maps()
    if threshold > 0 and (maps is None or maps[0] <= threshold * maps[1]):
        return False
    import jax

    jax.clear_caches()
    gc.collect()  # the programs' memory goes back when nothing refers to them
    return True
