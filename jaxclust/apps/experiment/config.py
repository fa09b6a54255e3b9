"""Experiment-grid configs: a TOML file -> the list of runs, each with a stable id.

A config names an experiment *kind* (see :mod:`jaxclust.apps.experiment.registry`), parameters fixed for every run,
and grid axes (lists); the runs are the Cartesian product of the axes over the fixed parameters, plus explicit
``[[include]]`` runs, minus the runs matching an ``[[exclude]]`` entry::

    kind = "active_dpmm"
    description = "verb curves: active vs random, three DPMM seeds"

    [fixed]                      # every run gets these
    n_chains = 4
    prior_scale = 0.03

    [grid]                       # the Cartesian product of these lists
    set = ["general", "bio-top"]
    seed = [0, 1, 2]

    [linked]                     # an axis of parameters that vary together: each table is merged into the run
    curve = [
      { strategy = "batch", n_queries = 200 },
      { strategy = "random", n_queries = 1000 },
    ]

    [[include]]                  # one more run: fixed + these values
    set = "general-full"
    seed = 0

    [[exclude]]                  # drop every run whose values match all of these
    set = "bio-top"
    seed = 2

    [quick]                      # --quick: replaces the fixed values, axes, include or exclude it names
    fixed = { n_queries = 20 }
    grid = { set = ["bio-top"], seed = [0] }

The runs are the product of the ``[grid]`` and ``[linked]`` axes, in config order (the first axis varies
slowest). A run's id is a readable slug of the values that vary (its grid, linked and include keys) and a short
hash of the kind and *all* its parameters (``set-bio-top_seed-0-3f9a1c02e4``): the same parameters give the
same id in every invocation, different parameters a different hash. Numbers are hashed by value (``1`` and
``1.0`` are the same).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jaxclust.errors import ExperimentConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: the tomli backport (a dependency there)
    import tomli as tomllib

__all__ = ["Run", "ExperimentConfig", "load_config", "parse_config", "run_id", "params_hash", "canonical"]

TOP_KEYS = ("kind", "name", "description", "fixed", "grid", "linked", "include", "exclude", "quick")
QUICK_KEYS = ("fixed", "grid", "linked", "include", "exclude")
HASH_LEN = 10
SLUG_MAX = 80


@dataclass(frozen=True)
class Run:
    """One point of the grid: its id, the kind and the keyword arguments of the kind's run function."""

    id: str
    kind: str
    params: dict

    @property
    def hash(self) -> str:
        return self.id.rsplit("-", 1)[-1]


@dataclass
class ExperimentConfig:
    """A parsed config (see the module docstring). ``runs(quick)`` expands it."""

    kind: str
    name: str
    description: str = ""
    fixed: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    linked: dict = field(default_factory=dict)
    include: list = field(default_factory=list)
    exclude: list = field(default_factory=list)
    quick: dict = field(default_factory=dict)
    path: Path | None = None
    text: str = ""

    def where(self, table: str, key: str | None = None) -> str:
        """``"<file>, <table>.<key> (line N)"``: how error messages name a key of this config."""
        return _where(self.path, self.text, table, key)

    def settings(self, quick: bool = False) -> ExperimentConfig:
        """The config with the ``[quick]`` overrides applied (itself when ``quick`` is false)."""
        if not quick:
            return self
        q = self.quick
        fixed, grid, linked = dict(self.fixed), dict(self.grid), dict(self.linked)
        for k, v in q.get("fixed", {}).items():
            grid.pop(k, None)
            fixed[k] = v
        for k, v in q.get("grid", {}).items():
            fixed.pop(k, None)
            grid[k] = v
        for k, v in q.get("linked", {}).items():
            linked[k] = v
        return ExperimentConfig(
            kind=self.kind,
            name=self.name,
            description=self.description,
            fixed=fixed,
            grid=grid,
            linked=linked,
            include=list(q.get("include", self.include)),
            exclude=list(q.get("exclude", self.exclude)),
            quick={},
            path=self.path,
            text=self.text,
        )

    def runs(self, quick: bool = False) -> list[Run]:
        """The runs of the grid, in a fixed order (axes in config order, values in list order; then includes).

        Duplicates (an include that repeats a grid point) are kept once; exclusions apply to includes too.
        """
        cfg = self.settings(quick)
        axes = list(cfg.grid)
        lists = [cfg.grid[a] for a in axes] + list(cfg.linked.values())
        points = []
        for values in itertools.product(*lists):
            params, varying = dict(cfg.fixed), list(axes)
            for a, v in zip(axes, values[: len(axes)], strict=True):
                params[a] = v
            for table in values[len(axes) :]:
                params.update(table)
                varying += [k for k in table if k not in varying]
            points.append((params, varying))
        for extra in cfg.include:
            points.append(({**cfg.fixed, **extra}, [*axes, *(k for k in extra if k not in axes)]))
        runs, seen = [], set()
        for params, varying in points:
            if any(_matches(params, ex) for ex in cfg.exclude):
                continue
            rid = run_id(self.kind, params, [k for k in varying if k in params])
            if rid not in seen:
                seen.add(rid)
                runs.append(Run(rid, self.kind, params))
        return runs


def canonical(value: Any) -> Any:
    """A JSON-able normal form for hashing: integral floats as ints, dict keys sorted (by ``json.dumps``)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return int(value)
        return repr(value) if not math.isfinite(value) else value
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return str(value)  # TOML dates and times


def params_hash(kind: str, params: dict) -> str:
    """The short hash of a run: the kind and all its parameters, by value."""
    blob = json.dumps({"kind": kind, "params": canonical(params)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:HASH_LEN]


def _slug_value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (list, tuple)):
        return "+".join(_slug_value(x) for x in v)
    if isinstance(v, dict):
        return "+".join(f"{k}={_slug_value(x)}" for k, x in v.items())
    return str(v)


def run_id(kind: str, params: dict, varying: list[str] | None = None) -> str:
    """``<slug>-<hash>``: the slug names the ``varying`` keys and their values (file-name safe, at most 80
    characters), the hash identifies all of ``params``."""
    keys = list(params) if varying is None else varying
    parts = [f"{k}-{_slug_value(params[k])}" for k in keys]
    slug = re.sub(r"[^A-Za-z0-9.+=-]+", "_", "_".join(parts)).strip("_.") or "run"
    if len(slug) > SLUG_MAX:
        slug = slug[:SLUG_MAX].rstrip("_.-")
    return f"{slug}-{params_hash(kind, params)}"


def _matches(params: dict, pattern: dict) -> bool:
    return all(k in params and canonical(params[k]) == canonical(v) for k, v in pattern.items())


# ----------------------------------------------------------------------------------------------------------
# parsing and checking


def _line_of(text: str, table: str, key: str | None) -> int | None:
    """Line (1-based) where ``key`` is set inside ``table`` (or where the table starts), else None.

    A light scan, not a TOML parser: headers ``[t]`` / ``[[t]]``, ``key = ...``, dotted keys (``grid.seed = ...``)
    and inline tables (``[quick]`` ... ``fixed = { key = ... }``).
    """
    current, table_line = "", None
    parent, _, leaf = table.rpartition(".")
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        header = re.match(r"^\[\[?\s*([^\]]+?)\s*\]\]?$", line)
        if header:
            current = header.group(1).replace(" ", "")
            if current == table and table_line is None:
                table_line = n
            continue
        assign = re.match(r"^([A-Za-z0-9_.\"'-]+)\s*=", line)
        if not assign:
            continue
        name = assign.group(1).replace('"', "").replace("'", "")
        if key is None:
            if table and current == parent and name == leaf and table_line is None:
                table_line = n  # an inline table
            continue
        if current == table and name == key:
            return n
        if (
            table
            and (current, name) in ((parent, leaf), ("", table))
            and re.search(rf"[{{,]\s*{re.escape(key)}\s*=", line)
        ):
            return n  # inline table: fixed = { key = ... }
        if current == "" and name == (f"{table}.{key}" if table else key):
            return n  # dotted key at the top level
        if current == parent and parent and name == f"{leaf}.{key}":
            return n
    if key is not None and table_line is not None:  # inside an array of inline tables: curve = [ { key = ...
        section = ""
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            header = re.match(r"^\[\[?\s*([^\]]+?)\s*\]\]?$", line)
            if header:
                section = header.group(1).replace(" ", "")
            elif section == table and n > table_line and re.search(rf"[{{,]\s*{re.escape(key)}\s*=", line):
                return n
    return table_line


def _where(path: Path | None, text: str, table: str, key: str | None) -> str:
    name = str(path) if path is not None else "<config>"
    dotted = f"{table}.{key}" if table and key else (key or table)
    line = _line_of(text, table, key) if text else None
    return f"{name}: {dotted}" + (f" (line {line})" if line else "")


def _err(cfg_path, text, table, key, message) -> ExperimentConfigError:
    return ExperimentConfigError(f"{_where(cfg_path, text, table, key)}: {message}")


def _type_name(v: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(v), type(v).__name__
    )


def parse_config(text: str, path: Path | str | None = None, name: str | None = None) -> ExperimentConfig:
    """Parse and check a config's text (see the module docstring); ``path`` only names it in errors.

    Raises :class:`~jaxclust.errors.ExperimentConfigError` naming the file, the key and its line.
    """
    path = Path(path) if path is not None else None
    label = str(path) if path is not None else "<config>"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentConfigError(f"{label}: not valid TOML: {exc}") from None
    for key in data:
        if key not in TOP_KEYS:
            raise _err(path, text, "", key, f"unknown key (expected one of: {', '.join(TOP_KEYS)})")
    if "kind" not in data:
        raise ExperimentConfigError(
            f'{label}: kind: missing (the experiment to run, e.g. kind = "active_dpmm")'
        )
    kind = data["kind"]
    if not isinstance(kind, str) or not kind.strip():
        raise _err(path, text, "", "kind", f"expected a non-empty string, got {kind!r}")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise _err(path, text, "", key, f"expected a string, got {_type_name(data[key])}")
    fixed = _table(data, "fixed", path, text)
    grid = _table(data, "grid", path, text)
    _check_grid(grid, "grid", path, text)
    for k in grid:
        if k in fixed:
            raise _err(path, text, "grid", k, "is also in [fixed]: give a parameter in one of them")
    linked = _table(data, "linked", path, text)
    _check_linked(linked, "linked", path, text, set(grid))
    include = _runs_list(data, "include", path, text)
    exclude = _runs_list(data, "exclude", path, text)
    known = set(fixed) | set(grid) | {k for inc in include for k in inc}
    known |= {k for tables in linked.values() for t in tables for k in t}
    for i, ex in enumerate(exclude):
        for k in ex:
            if k not in known:
                raise _err(path, text, "exclude", k, f"entry {i + 1} names a parameter no run has")
    quick = _table(data, "quick", path, text)
    for key in quick:
        if key not in QUICK_KEYS:
            raise _err(path, text, "quick", key, f"unknown key (expected one of: {', '.join(QUICK_KEYS)})")
    if "fixed" in quick:
        _table(quick, "fixed", path, text, prefix="quick.")
    if "grid" in quick:
        _table(quick, "grid", path, text, prefix="quick.")
        _check_grid(quick["grid"], "quick.grid", path, text)
    if "linked" in quick:
        _table(quick, "linked", path, text, prefix="quick.")
        _check_linked(quick["linked"], "quick.linked", path, text, set(quick.get("grid", {})))
    for key in ("include", "exclude"):
        if key in quick:
            _runs_list(quick, key, path, text, prefix="quick.")
    stem = path.stem if path is not None else "experiment"
    return ExperimentConfig(
        kind=kind.strip(),
        name=data.get("name", name or stem),
        description=data.get("description", ""),
        fixed=fixed,
        grid=grid,
        linked=linked,
        include=include,
        exclude=exclude,
        quick=quick,
        path=path,
        text=text,
    )


def _table(data: dict, key: str, path, text, prefix: str = "") -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise _err(path, text, prefix.rstrip("."), key, f"expected a table, got {_type_name(value)}")
    return dict(value)


def _check_grid(grid: dict, table: str, path, text) -> None:
    for k, values in grid.items():
        if not isinstance(values, list):
            raise _err(
                path,
                text,
                table,
                k,
                f"a grid axis must be a list of values, got {_type_name(values)} {values!r} "
                "(put a single value in [fixed])",
            )
        if not values:
            raise _err(path, text, table, k, "an empty list gives no runs")


def _check_linked(linked: dict, table: str, path, text, taken: set) -> None:
    """Each linked axis: a non-empty list of non-empty tables; a key in one axis only and not a grid axis (a
    linked value overrides a fixed one: [fixed] gives the default for tables that leave it out)."""
    owner: dict[str, str] = {}
    for name, tables in linked.items():
        if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) and t for t in tables):
            raise _err(
                path,
                text,
                table,
                name,
                "a linked axis must be a non-empty list of non-empty tables {key = value}",
            )
        for key in dict.fromkeys(k for t in tables for k in t):
            if key in taken:
                raise _err(path, text, table, key, "is also a grid axis: give it in one place")
            if owner.setdefault(key, name) != name:
                raise _err(path, text, table, key, f"is in two linked axes ({owner[key]!r} and {name!r})")


def _runs_list(data: dict, key: str, path, text, prefix: str = "") -> list[dict]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise _err(
            path,
            text,
            prefix.rstrip("."),
            key,
            f"expected an array of tables ([[{prefix}{key}]] entries), got {_type_name(value)}",
        )
    for i, entry in enumerate(value):
        if not entry:
            raise _err(path, text, f"{prefix}{key}", None, f"entry {i + 1} is empty")
    return [dict(v) for v in value]


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and check a config file (see :func:`parse_config`)."""
    path = Path(path)
    if path.is_dir():
        raise ExperimentConfigError(f"{path}: is a folder, expected a .toml config file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ExperimentConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ExperimentConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ExperimentConfigError(f"{path}: line {line} is not valid UTF-8") from None
    return parse_config(text, path)
