"""Griffe extension of the documentation build: the Sphinx roles of jaxclust's docstrings become cross-references.

The docstrings name other objects the Sphinx way (``:class:`KMeans```, ``:func:`~jaxclust.kmeans.lloyd```,
``:mod:`jaxclust.metrics.coref```), which IDEs and ``help()`` show as they are. For the site, each role becomes an
mkdocs-autorefs reference to the object's canonical path (``[`KMeans`][jaxclust.kmeans.lloyd_kmeans.KMeans]``),
resolved the way Sphinx resolves it: an absolute path, else relative to the class, the module, then the packages
around it. Names a package exports lazily (PEP 562: ``jaxclust.DPMM``, ``jaxclust.active.ActiveLearner``, listed in
the package's ``_LAZY`` table) resolve to where they are defined. A name from outside jaxclust that Python can
import (``equinox.Module``, ``input``) is shown as code, without a link (the site has no inventory of other
projects' docs). Nothing else is dropped: a name that resolves to nothing stays a reference to itself, so
``mkdocs build --strict`` fails on it (autorefs: "Could not find cross-reference target") and the docstring gets
fixed.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re

import griffe

# A role in jaxclust.dpmm that names no object; that package is being reworked on another branch and is not edited
# here, so its one-word docstring fix waits for that work: (module, name as written) -> the object meant. Remove
# the entry once the docstring names the object itself.
PENDING_DPMM_FIXES = {
    ("jaxclust.dpmm.subcluster", "family.group_loglik"): "jaxclust.dpmm.families.NormalGamma.group_loglik",
}

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj):`(~?)([^`]+)`")
EXPLICIT = re.compile(r"^(.*?)\s*<([^<>\s]+)>$")  # :meth:`claims <AnswerStore.claim>`


def _lazy_exports(module: griffe.Object) -> dict[str, str]:
    """A package's PEP 562 table ``_LAZY = {name: "module.path"}``, read from its source (empty if none)."""
    table = module.members.get("_LAZY") if module.is_module else None
    if table is None or table.is_alias or getattr(table, "value", None) is None:
        return {}
    try:
        return ast.literal_eval(str(table.value))
    except (ValueError, SyntaxError):
        return {}


def _lookup(scope: griffe.Object, dotted: str) -> griffe.Object | griffe.Alias | None:
    """``scope[dotted]``, following the lazy exports of the packages on the way."""
    errors = (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError)
    try:
        return scope[dotted]
    except errors:
        pass
    head, _, rest = dotted.partition(".")
    lazy = _lazy_exports(scope)
    if head in lazy:
        try:
            found = scope.modules_collection[lazy[head]][head]
            return found[rest] if rest else found
        except errors:
            return None
    sub = scope.members.get(head)
    if rest and sub is not None and not sub.is_alias and sub.is_module:
        return _lookup(sub, rest)
    return None


def importable(name: str) -> bool:
    """True when ``name`` is an object Python can import (a module attribute path, or a builtin)."""
    if hasattr(builtins, name):
        return True
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _canonical(found: griffe.Object | griffe.Alias) -> str:
    if isinstance(found, griffe.Alias):
        try:
            return found.final_target.path
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return found.path
    return found.path


def resolve(obj: griffe.Object, name: str, package: griffe.Module) -> str | None:
    """The canonical path of ``name`` as written in the docstring of ``obj``, or None."""
    root = package.name + "."
    if name == package.name:
        return package.path
    if name.startswith(root):
        found = _lookup(package, name[len(root) :])
        return _canonical(found) if found is not None else None
    scope: griffe.Object | None = obj if obj.is_class or obj.is_module else obj.parent
    while scope is not None:
        found = _lookup(scope, name)
        if found is not None:
            return _canonical(found)
        scope = scope.parent
    return None


def rewrite(text: str, obj: griffe.Object, package: griffe.Module) -> str:
    def ref(match: re.Match) -> str:
        tilde, name = match.groups()
        explicit = EXPLICIT.match(name)
        if explicit:
            text, name = explicit.groups()
        name = name.strip().rstrip("()")
        title = name.rsplit(".", 1)[-1] if tilde else name
        target = resolve(obj, name, package) or PENDING_DPMM_FIXES.get((obj.module.path, name))
        if target is None and not name.startswith(package.name + ".") and importable(name):
            return text if explicit else f"`{title}`"  # another project's object: shown, not linked
        return f"[{text}][{target or name}]" if explicit else f"[`{title}`][{target or name}]"

    return ROLE.sub(ref, text)


def _objects(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


class SphinxRoles(griffe.Extension):
    """Turn ``:role:`name``` into autorefs cross-references in every docstring of the loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for obj in _objects(pkg):
            if obj.docstring is not None and ":`" in obj.docstring.value:
                obj.docstring.value = rewrite(obj.docstring.value, obj, pkg)
