"""The package layout: no import circles, the library never imports the apps, no private names imported across
modules, no module that only points elsewhere, no module or function too long to read, and every public name
importable from its module.

The import graph is built statically with ``ast`` from every module under ``jaxclust/``, with the imports inside
functions and classes included (they run later, but a circle through them is still a circle: the one between
``kmeans.py`` and ``constrained_kmeans.py`` went through a module-level ``__getattr__``). Imports under
``if TYPE_CHECKING:`` never run and are left out.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import jaxclust

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "jaxclust"

# ``jaxclust.kmeans.__all__`` when it was one module (kmeans.py): each name still imports from it
OLD_KMEANS_ALL = (
    "KMeansResult kmeans_plusplus lloyd kmeans assign chunk_size bucket_rows KMeans COPKMeans PCKMeans"
)

# Private names still imported from another module, each with its reason. Nothing else may be added here.
PRIVATE_IMPORTS_ALLOWED: dict[tuple[str, str, str], str] = {}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}
# the applications: jaxclust.apps and its modules
APP_MODULES = {m for m in MODULES if m == "jaxclust.apps" or m.startswith("jaxclust.apps.")}
LIBRARY_MODULES = sorted(set(MODULES) - APP_MODULES)


def _type_checking_only(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Name)
        and test.id == "TYPE_CHECKING"
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _import_nodes(tree: ast.AST):
    """Every import statement of a module, at any depth, except under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                stack.extend(child.orelse)
            else:
                stack.append(child)


def _resolve(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str) -> list[tuple[str, str | None, int]]:
    """``(imported module, name or None, line)`` for each jaxclust import of ``module``.

    ``from a.b import c`` is an import of the module ``a.b.c`` when that is a module, else of ``a.b`` (for its
    name ``c``); importing a submodule imports its parent packages too, which is left implicit (a package's
    ``__init__`` importing its own submodules is no circle).
    """
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name in MODULES]
            continue
        base = _resolve(node, module, path.name == "__init__.py")
        for alias in node.names:
            if f"{base}.{alias.name}" in MODULES:
                out.append((f"{base}.{alias.name}", None, node.lineno))
            elif base in MODULES:
                out.append((base, alias.name, node.lineno))
    return out


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line importing it}, over the modules of jaxclust."""
    graph: dict[str, dict[str, int]] = {}
    for m in MODULES:
        edges: dict[str, int] = {}
        for target, _name, line in imports_of(m):
            if target != m:
                edges.setdefault(target, line)
        graph[m] = edges
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import circle as ``[a, b, ..., a]``, or None (depth-first search, three colours)."""
    colour = dict.fromkeys(graph, 0)  # 0 unseen, 1 on the current path, 2 done
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        colour[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if colour[w] == 1:
                return path[path.index(w) :] + [w]
            if colour[w] == 0 and (cycle := visit(w)):
                return cycle
        path.pop()
        colour[v] = 2
        return None

    for v in sorted(graph):
        if colour[v] == 0 and (cycle := visit(v)):
            return cycle
    return None


def describe(cycle: list[str], graph) -> str:
    steps = [f"{a} (line {graph[a][b]})" for a, b in zip(cycle[:-1], cycle[1:], strict=True)]
    return " -> ".join(steps + [cycle[-1]])


def test_the_cycle_finder_finds_a_circle_through_a_function_level_import():
    graph = {"a": {"b": 3}, "b": {"c": 7}, "c": {"a": 120}, "d": {"a": 1}}
    cycle = find_cycle(graph)
    assert cycle == ["a", "b", "c", "a"]
    assert describe(cycle, graph) == "a (line 3) -> b (line 7) -> c (line 120) -> a"
    assert find_cycle({"a": {"b": 1}, "b": {}, "c": {"a": 2, "b": 3}}) is None


def test_function_level_imports_count_and_type_checking_ones_do_not():
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from jaxclust.constraints import Constraints\n"
        "def f():\n    from jaxclust.validation import check_int\n"
        "class A:\n    def g(self):\n        import jaxclust.errors\n"
    )
    found = {a.name for node in _import_nodes(tree) for a in node.names}
    assert found == {"TYPE_CHECKING", "check_int", "jaxclust.errors"}


def test_no_import_circles():
    graph = import_graph()
    assert len(graph) > 80 and "jaxclust.kmeans.constrained" in graph["jaxclust.kmeans"]
    cycle = find_cycle(graph)
    assert cycle is None, f"import circle: {describe(cycle, graph)}"


def dynamic_imports(module: str) -> list[tuple[str, int]]:
    """``(name, line)`` of each ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return [
        (node.args[0].value, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func) in ("importlib.import_module", "import_module", "__import__")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]


def test_app_and_library_modules_are_told_apart():
    assert {"jaxclust.apps.cli", "jaxclust.apps.experiment.runner"} <= APP_MODULES
    assert {"jaxclust.kmeans.mixture", "jaxclust.kmeans.lloyd_kmeans", "jaxclust.dpmm.model"} <= set(
        LIBRARY_MODULES
    )
    assert not APP_MODULES & set(LIBRARY_MODULES)


@pytest.mark.parametrize("module", LIBRARY_MODULES)
def test_library_modules_never_import_the_apps(module):
    offenders = [
        f"line {line}: {target}" + (f" ({name})" if name else "")
        for target, name, line in imports_of(module)
        if target in APP_MODULES or (target == "jaxclust" and name == "apps")
    ]
    offenders += [
        f"line {line}: {name}"
        for name, line in dynamic_imports(module)
        if name in APP_MODULES or name.startswith("jaxclust.apps.")
    ]
    assert offenders == [], f"{module} imports an application module"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_attribute_uses(module: str, source: str | None = None) -> list[tuple[str, str, int]]:
    """``(other module, name, line)`` for each ``m._name`` where ``m`` is another jaxclust module imported here
    (``import jaxclust.a.b as m``, ``from jaxclust.a import b``)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8") if source is None else source)
    local: dict[str, str] = {}
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            local.update({a.asname: a.name for a in node.names if a.asname and a.name in MODULES})
        elif node.module and node.module.startswith("jaxclust"):
            for a in node.names:
                if f"{node.module}.{a.name}" in MODULES:
                    local[a.asname or a.name] = f"{node.module}.{a.name}"
    return [
        (local[node.value.id], node.attr, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in local
        and local[node.value.id] != module
        and _private(node.attr)
    ]


def test_private_attribute_uses_are_found():
    source = (
        "import jaxclust.kmeans.lloyd_kmeans as km\nfrom jaxclust import errors\nkm._can_split = errors._x\n"
    )
    assert private_attribute_uses("jaxclust.kmeans", source) == [
        ("jaxclust.kmeans.lloyd_kmeans", "_can_split", 3),
        ("jaxclust.errors", "_x", 3),
    ]


def test_no_private_names_imported_across_modules():
    found = {}
    for module in MODULES:
        for target, name, line in imports_of(module):
            if name and _private(name):
                found[(module, target, name)] = line
        for target, name, line in private_attribute_uses(module):
            found[(module, target, name)] = line
    unexpected = [
        f"{m}:{line} imports {n} from {t}"
        for (m, t, n), line in found.items()
        if (m, t, n) not in PRIVATE_IMPORTS_ALLOWED
    ]
    assert unexpected == [], (
        "private names imported from another module (make them public in a shared module)"
    )
    stale = set(PRIVATE_IMPORTS_ALLOWED) - set(found)
    assert not stale, f"allowed private imports that no longer exist (remove them from the list): {stale}"


def test_no_module_only_points_elsewhere():
    """A module that only re-exports another (``from x import *`` and nothing else) is a room that only points
    elsewhere; package ``__init__`` files that gather their own submodules are the exception."""
    for name, path in MODULES.items():
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        stars = [n for n in body if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)]
        assert not stars or len(stars) < len(body) - 1, f"{name} only re-exports {stars[0].module}"


MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100  # code: a function's docstring documents it and is not counted


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines from its ``def`` to its end, its docstring left out."""
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_code_lines_leave_the_docstring_out():
    tree = ast.parse('def f(x):\n    """Two\n    lines."""\n    y = x\n    return y\n')
    assert code_lines(tree.body[0]) == 3


def test_no_module_or_function_too_long_to_read():
    long_modules, long_functions = [], []
    for name, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules.append((name, len(text.splitlines())))
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and code_lines(node) > MAX_FUNCTION_LINES
            ):
                long_functions.append((f"{name}.{node.name}", code_lines(node)))
    assert long_modules == [], f"modules over {MAX_MODULE_LINES} lines: {long_modules}"
    assert long_functions == [], f"functions over {MAX_FUNCTION_LINES} lines of code: {long_functions}"


def public_modules() -> list[str]:
    """Every module of the package whose dotted name has no private part, found by walking the package."""
    names = ["jaxclust"]
    for info in pkgutil.walk_packages(jaxclust.__path__, "jaxclust."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def test_public_modules_are_the_files():
    assert set(public_modules()) == {m for m in MODULES if not any(p.startswith("_") for p in m.split("."))}


@pytest.mark.parametrize("module", public_modules())
def test_every_public_name_imports(module):
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    assert names is not None, f"{module} has no __all__"
    assert len(set(names)) == len(names), f"{module}.__all__ has duplicates"
    missing = [n for n in names if not hasattr(mod, n)]
    assert missing == [], f"{module}.__all__ names what it does not define"
    if names:  # as users spell it
        exec(f"from {module} import {', '.join(names)}", {})


def test_old_kmeans_names_import_from_the_package():
    from jaxclust import kmeans

    assert [n for n in OLD_KMEANS_ALL.split() if n not in kmeans.__all__] == []
    assert kmeans.COPKMeans is importlib.import_module("jaxclust.kmeans.constrained").COPKMeans
    assert kmeans.GaussianMixture is importlib.import_module("jaxclust.kmeans.mixture").GaussianMixture
    assert jaxclust.KMeans is kmeans.KMeans and jaxclust.COPKMeans is kmeans.COPKMeans
    assert jaxclust.GaussianMixture is kmeans.GaussianMixture


def test_the_command_line_module_runs():
    out = subprocess.run(
        [sys.executable, "-m", "jaxclust.apps.cli", "--version"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout == f"jaxclust {jaxclust.__version__}\n"


def test_console_script_points_at_the_apps():
    from importlib.metadata import entry_points

    (ep,) = [ep for ep in entry_points(group="console_scripts") if ep.name == "jaxclust"]
    assert ep.value == "jaxclust.apps.cli:app"
    assert ep.load() is importlib.import_module("jaxclust.apps.cli").app


# Libraries whose import a module defers by importing inside a function (JAX and what builds on it take
# seconds; ``jaxclust --help`` and ``import jaxclust`` must not pay for them).
HEAVY = (
    "jax",
    "jaxlib",
    "numpyro",
    "optax",
    "equinox",
    "sklearn",
    "scipy",
    "matplotlib",
    "ipywidgets",
    "ray",
)


def _top_level_imports(module: str) -> tuple[set[str], set[str]]:
    """(jaxclust modules, other top-level packages) imported when ``module`` is imported (not in functions)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    ours, others = set(), set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if isinstance(node, ast.ClassDef):
                stack.extend(node.body)
            continue
        if _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                (ours if a.name in MODULES else others).add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, MODULES[module].name == "__init__.py")
            for a in node.names:
                if f"{base}.{a.name}" in MODULES:
                    ours.add(f"{base}.{a.name}")
                elif base in MODULES:
                    ours.add(base)
                elif not node.level:
                    others.add(base)
        stack.extend(ast.iter_child_nodes(node) if isinstance(node, ast.If | ast.Try | ast.With) else ())
    return ours, {o.split(".")[0] for o in others}


def heavy_modules() -> set[str]:
    """jaxclust modules whose import loads one of ``HEAVY`` (themselves, or through what they import)."""
    tops = {m: _top_level_imports(m) for m in MODULES}
    for ours, _ in tops.values():  # importing a.b.c runs a/__init__ and a/b/__init__ first
        ours |= {".".join(t.split(".")[:k]) for t in list(ours) for k in range(2, t.count(".") + 1)}
    heavy = {m for m, (_, others) in tops.items() if others & set(HEAVY)}
    changed = True
    while changed:
        new = {m for m, (ours, _) in tops.items() if m not in heavy and ours & heavy}
        changed = bool(new)
        heavy |= new
    return heavy


def function_level_imports(module: str) -> list[tuple[str, int, str]]:
    """``(imported jaxclust module, line, the line's text)`` of each import inside a function of ``module``."""
    source = MODULES[module].read_text(encoding="utf-8")
    lines = source.splitlines()
    out = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxclust"):
                base = node.module
                target = next((f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES), base)
                out.append((target, node.lineno, lines[node.end_lineno - 1]))
            elif isinstance(node, ast.Import):
                out += [
                    (a.name, node.lineno, lines[node.lineno - 1]) for a in node.names if a.name in MODULES
                ]
    return out


def test_function_level_imports_only_defer_heavy_libraries_or_break_a_circle():
    """An import inside a function hides the real import graph: it is allowed only for a module whose import
    loads JAX or another heavy library (deferred until the function runs), or with the reason in a comment on
    the import: ``# circle:`` (it breaks an import circle) or ``# deferred:`` (a name built on first use)."""
    heavy = heavy_modules()
    assert {"jaxclust.dpmm.model", "jaxclust.active.learner"} <= heavy and "jaxclust.errors" not in heavy
    # a package that imports its names lazily (a module-level ``__getattr__``) loads them on first use
    heavy |= {
        m
        for m in MODULES
        if MODULES[m].name == "__init__.py"
        and "def __getattr__" in MODULES[m].read_text(encoding="utf-8")
        and any(h.startswith(m + ".") for h in heavy)
    }
    offenders = [
        f"{m}:{line} imports {target}"
        for m in MODULES
        for target, line, text in function_level_imports(m)
        if target not in heavy and "# circle:" not in text and "# deferred:" not in text
    ]
    assert offenders == [], "import these at the top of the module:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("jaxclust.dpmm", "jaxclust.active"),
        ("jaxclust.kmeans", "jaxclust.active"),
        ("jaxclust.icc", "jaxclust.active"),
    ],
)
def test_the_sampler_and_the_baselines_never_import_active_learning(low, high):
    """Active learning is built on the models, never the other way round (shared pieces such as
    ``jaxclust.coclustering`` and the answer kinds of ``jaxclust.constraints`` live below both)."""
    offenders = [
        f"{m}:{line} imports {target}"
        for m in MODULES
        if m == low or m.startswith(low + ".")
        for target, _name, line in imports_of(m)
        if target == high or target.startswith(high + ".")
    ]
    assert offenders == []
