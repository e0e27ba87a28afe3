"""A release's public API read with ``ast``: modules, the names each binds, classes, functions, parameters.

The result is plain JSON (cached with the release's scan) and is what :mod:`.apidiff` compares. Public
means what a user can reach without a leading underscore: a module path with no ``_`` part, a name in
``__all__`` (or, without one, any name not starting with ``_`` that the module defines, or a package
imports from itself), the methods of public classes (``__init__`` included), inherited ones too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

Surface = dict[str, Any]
_MAX_HOPS = 10


def module_name(rel: str) -> str:
    module = rel[:-3] if rel.endswith(".py") else rel
    module = module.replace("/", ".")
    return module[: -len(".__init__")] if module.endswith(".__init__") else module


def is_public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def read_surface(modules: Iterable[tuple[str, ast.Module]]) -> Surface:
    """``{"modules": {name: {...}}, "defs": {module.Name: {...}}}`` for a release's parsed modules."""
    modules = list(modules)
    tops = {module_name(rel).split(".")[0] for rel, _tree in modules}
    out: Surface = {"modules": {}, "defs": {}}
    for rel, tree in modules:
        name = module_name(rel)
        package = name if rel.endswith("__init__.py") else name.rpartition(".")[0]
        info: dict[str, Any] = {"file": rel, "names": {}, "all": None, "getattr": None, "stars": []}
        for node in _top_statements(tree.body):
            _bind(node, name, package, tops, info, out["defs"], rel)
        if "__getattr__" in info["names"]:  # the names it may serve: lazy-import tables are module-level strings
            strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            info["getattr"] = sorted(strings)
        out["modules"][name] = info
    return out


def _top_statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Module-level statements, also those under a top-level ``if`` / ``try`` (``if TYPE_CHECKING:`` too)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_statements(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_statements(node.body + node.orelse + [s for h in node.handlers for s in h.body])
        else:
            yield node


def _bind(node: ast.stmt, module: str, package: str, tops: set[str], info: dict, defs: dict, rel: str) -> None:
    names = info["names"]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names[node.name] = {"kind": "function", "line": node.lineno}
        defs[f"{module}.{node.name}"] = {**function_info(node, method=False), "kind": "function", "file": rel}
    elif isinstance(node, ast.ClassDef):
        names[node.name] = {"kind": "class", "line": node.lineno}
        defs[f"{module}.{node.name}"] = class_info(node, module, rel)
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    names.setdefault(sub.id, {"kind": "value", "line": node.lineno})
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            listed = _string_list(node.value)
            if listed is not None:
                info["all"] = (info["all"] or []) + listed if isinstance(node, ast.AugAssign) else listed
    elif isinstance(node, ast.Import):
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            names[bound] = {"kind": "import", "line": node.lineno, "internal": alias.name.split(".")[0] in tops}
    elif isinstance(node, ast.ImportFrom):
        source = _absolute(node, package)
        internal = source.split(".")[0] in tops
        for alias in node.names:
            if alias.name == "*":
                info["stars"].append(source)
                continue
            names[alias.asname or alias.name] = {
                "kind": "import",
                "line": node.lineno,
                "internal": internal,
                "target": f"{source}.{alias.name}",
            }


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join([*base, *([node.module] if node.module else [])])


def _string_list(node: ast.expr) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[union-attr]
    return None


def function_info(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> dict[str, Any]:
    """Parameters as ``[name, kind, line]`` (kind ``pos``, ``arg`` or ``kwonly``), ``*args`` / ``**kwargs`` flags."""
    args = node.args
    decorators = [ast.unparse(d).split("(")[0].rsplit(".", 1)[-1] for d in node.decorator_list]
    params = [[a.arg, "pos", a.lineno] for a in args.posonlyargs] + [[a.arg, "arg", a.lineno] for a in args.args]
    if method and "staticmethod" not in decorators and params:
        params = params[1:]  # self / cls
    params += [[a.arg, "kwonly", a.lineno] for a in args.kwonlyargs]
    return {
        "line": node.lineno,
        "params": params,
        "varargs": args.vararg is not None,
        "varkw": args.kwarg is not None,
        "decorators": decorators,
    }


def class_info(node: ast.ClassDef, module: str, rel: str) -> dict[str, Any]:
    methods = {}
    attrs = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods[item.name] = {**function_info(item, method=True), "owner": node.name}
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            attrs.update(t.id for t in targets if isinstance(t, ast.Name))
    return {
        "kind": "class",
        "module": module,
        "file": rel,
        "line": node.lineno,
        "bases": [ast.unparse(b) for b in node.bases],
        "methods": methods,
        "attrs": sorted(attrs),
    }


# --------------------------------------------------------------------------- queries


def resolve(surface: Surface, path: str) -> str | None:
    """The ``defs`` key a dotted path ends at, following imports (``httpx.Client`` -> ``httpx._client.Client``)."""
    for _ in range(_MAX_HOPS):
        if path in surface["defs"]:
            return path
        module, _, name = path.rpartition(".")
        info = surface["modules"].get(module, {})
        entry = info.get("names", {}).get(name)
        if entry and entry.get("target"):
            path = entry["target"]
            continue
        if entry:
            return None
        # ``from ._client import *``: the first star source that binds the name
        sources = [s for s in info.get("stars", ()) if name in surface["modules"].get(s, {}).get("names", {})]
        if not sources:
            return None
        path = f"{sources[0]}.{name}"
    return None


def bound_names(surface: Surface, module: str) -> set[str]:
    """Every name ``from module import NAME`` would find: bound in the module, by its ``*`` imports, or a
    submodule."""
    info = surface["modules"].get(module)
    if info is None:
        return set()
    names = set(info["names"])
    for source in info["stars"]:
        inner = surface["modules"].get(source)
        if inner is not None:
            star = inner["all"] if inner["all"] is not None else {n for n in inner["names"] if not n.startswith("_")}
            names |= set(star)
    submodules = {m.rsplit(".", 1)[-1] for m in surface["modules"] if m.rpartition(".")[0] == module}
    return names | submodules


def public_names(surface: Surface, module: str) -> set[str]:
    """What a module offers users: its ``__all__``, else its public definitions, and for a package
    (``__init__.py``) what it imports from its own package too; a plain module's imports are its own
    business (``from ._compat import WIN`` in ``click/termui.py`` is no API)."""
    info = surface["modules"][module]
    if info["all"] is not None:
        return set(info["all"])
    package = info["file"].endswith("__init__.py")
    return {
        name
        for name, entry in info["names"].items()
        if not name.startswith("_") and (entry["kind"] != "import" or (package and entry.get("internal")))
    }


def public_callables(surface: Surface) -> dict[str, str]:
    """``defs`` key -> the shortest public path that reaches it (``httpx._client.Client`` -> ``httpx.Client``)."""
    found: dict[str, str] = {}
    for module in surface["modules"]:
        if not is_public_module(module):
            continue
        for name in public_names(surface, module):
            key = resolve(surface, f"{module}.{name}")
            path = f"{module}.{name}"
            if key is not None and (key not in found or len(path) < len(found[key])):
                found[key] = path
    return found


def methods(surface: Surface, key: str, _depth: int = 0) -> dict[str, dict[str, Any]]:
    """A class's methods, inherited ones from classes of the same release included (own ones win)."""
    info = surface["defs"].get(key)
    if info is None or info["kind"] != "class" or _depth > _MAX_HOPS:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for base in info["bases"]:
        base_key = resolve(surface, f"{info['module']}.{base}")
        if base_key is not None:
            for name, method in methods(surface, base_key, _depth + 1).items():
                found.setdefault(name, method)
    return {**found, **info["methods"]}


def class_attributes(surface: Surface, key: str, _depth: int = 0) -> set[str]:
    """Names a class binds in its body or inherits, methods and plain attributes alike."""
    info = surface["defs"].get(key)
    if info is None or info["kind"] != "class" or _depth > _MAX_HOPS:
        return set()
    names = set(info["methods"]) | set(info["attrs"])
    for base in info["bases"]:
        base_key = resolve(surface, f"{info['module']}.{base}")
        if base_key is not None:
            names |= class_attributes(surface, base_key, _depth + 1)
    return names


def fully_known(surface: Surface, key: str, _depth: int = 0) -> bool:
    """Whether every base of a class is ``object`` or a class of the same release: only then does a
    missing method really mean the class has none."""
    info = surface["defs"].get(key)
    if info is None or _depth > _MAX_HOPS:
        return False
    for base in info["bases"]:
        if base in {"object", "Exception", "ValueError", "TypeError", "RuntimeError", "KeyError"}:
            continue
        base_key = resolve(surface, f"{info['module']}.{base}")
        if base_key is None or not fully_known(surface, base_key, _depth + 1):
            return False
    return True
