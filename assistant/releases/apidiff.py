"""What a user's code hits between two releases: public modules, names, methods and keyword parameters
that one release has and the next lacks, each with the Python error its use then raises.

Only removals are reported (an addition breaks nothing), and only where the newer release is fully read:
a name a module-level ``__getattr__`` still serves, a parameter swallowed by ``**kwargs`` or a method that
a base class from another package might provide is left out rather than guessed.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from .surface import (
    Surface,
    bound_names,
    class_attributes,
    fully_known,
    is_public_module,
    methods,
    public_callables,
    public_names,
    resolve,
)

_SIMILAR = 0.6


@dataclass
class ApiChange:
    """One removal and the error it causes; ``file``/``line`` say where it was in the older release."""

    kind: str  # "module", "import", "attribute", "method", "parameter"
    error_class: str
    message: str
    pattern: str
    subject: str  # what a user names: httpx.Client, httpx.proxies, httpx.sub
    removed: str  # the module, name, method or parameter that went
    file: str
    line: int
    call: str  # how the user hits it, for the trigger text
    added: list[str] = field(default_factory=list)  # names added at the same place in the same release
    similar: str | None = None  # an added (or still present) name that looks like its replacement


def diff_surfaces(old: Surface, new: Surface) -> list[ApiChange]:
    """Every removal from ``old`` to ``new`` that makes a user's import, attribute or call fail."""
    changes = _modules(old, new)
    gone = {c.removed for c in changes}
    for module in sorted(old["modules"]):
        if not is_public_module(module) or module not in new["modules"] or _under(module, gone):
            continue
        changes += _names(old, new, module)
    changes += _members(old, new)
    return changes


def _under(module: str, gone: set[str]) -> bool:
    return any(module == g or module.startswith(g + ".") for g in gone)


def _modules(old: Surface, new: Surface) -> list[ApiChange]:
    out: list[ApiChange] = []
    removed = [m for m in sorted(old["modules"]) if is_public_module(m) and m not in new["modules"]]
    for module in removed:
        if _under(module.rpartition(".")[0], set(removed)):
            continue  # its parent went too: Python names the parent
        message = f"No module named '{module}'"
        info = old["modules"][module]
        out.append(
            ApiChange(
                "module",
                "ModuleNotFoundError",
                message,
                re.escape(message),
                module,
                module,
                info["file"],
                1,
                f"import {module}",
            )
        )
    return out


def _names(old: Surface, new: Surface, module: str) -> list[ApiChange]:
    """Public names of ``module`` that the new release no longer binds at all (dropping a name from
    ``__all__`` alone breaks no import)."""
    bound = bound_names(new, module)
    served = set(new["modules"][module].get("getattr") or ())  # strings of a module with __getattr__
    added = sorted(public_names(new, module) - public_names(old, module))
    out: list[ApiChange] = []
    for name in sorted(public_names(old, module) - bound):
        if name in served:
            continue
        entry = old["modules"][module]["names"].get(name, {})
        key = resolve(old, f"{module}.{name}")
        file = old["defs"][key]["file"] if key else old["modules"][module]["file"]
        line = old["defs"][key]["line"] if key else entry.get("line", 1)
        similar = _similar(name, added)
        import_message = f"cannot import name '{name}' from '{module}'"
        attribute_message = f"module '{module}' has no attribute '{name}'"
        common = {"subject": f"{module}.{name}", "removed": name, "file": file, "line": line}
        out.append(
            ApiChange(
                "import",
                "ImportError",
                import_message,
                re.escape(import_message),
                call=f"from {module} import {name}",
                added=added,
                similar=similar,
                **common,
            )
        )
        out.append(
            ApiChange(
                "attribute",
                "AttributeError",
                attribute_message,
                re.escape(attribute_message),
                call=f"{module}.{name}",
                added=added,
                similar=similar,
                **common,
            )
        )
    return out


def _members(old: Surface, new: Surface) -> list[ApiChange]:
    """Removed methods of public classes and removed keyword parameters of public callables."""
    out: list[ApiChange] = []
    new_callables = {path: key for key, path in public_callables(new).items()}
    for old_key, path in sorted(public_callables(old).items(), key=lambda item: item[1]):
        new_key = new_callables.get(path) or resolve(new, path)
        if new_key is None:
            continue  # the name itself went: reported by _names
        old_def, new_def = old["defs"][old_key], new["defs"][new_key]
        if old_def["kind"] == "function" and new_def["kind"] == "function":
            out += _parameters(old_def, new_def, path, path.rsplit(".", 1)[-1], old_def["file"], f"{path}(")
            continue
        if old_def["kind"] != "class" or new_def["kind"] != "class":
            continue
        old_methods, new_methods = methods(old, old_key), methods(new, new_key)
        known = fully_known(new, new_key)
        class_name = new_key.rsplit(".", 1)[-1]
        if known:
            out += _removed_methods(
                old_methods, new_methods, class_attributes(new, new_key), path, class_name, old_def["file"]
            )
        for name in sorted(set(old_methods) & set(new_methods)):
            if name.startswith("_") and name != "__init__":
                continue
            method = new_methods[name]
            qualname = f"{method['owner']}.{name}"
            call = f"{path}(" if name == "__init__" else f"{path}(...).{name}("
            old_file = old["defs"].get(_owner_key(old, old_key, old_methods[name]["owner"]), old_def)["file"]
            out += _parameters(old_methods[name], method, f"{path}.{name}", qualname, old_file, call)
    return out


def _owner_key(surface: Surface, key: str, owner: str) -> str:
    """The ``defs`` key of the class (``key`` or a base of it) named ``owner``."""
    if key.rsplit(".", 1)[-1] == owner:
        return key
    for base in surface["defs"][key]["bases"]:
        base_key = resolve(surface, f"{surface['defs'][key]['module']}.{base}")
        if base_key is not None and base_key.rsplit(".", 1)[-1] == owner:
            return base_key
    return key


def _removed_methods(old_methods, new_methods, new_attrs, path, class_name, file) -> list[ApiChange]:
    out = []
    added = sorted(m for m in set(new_methods) - set(old_methods) if not m.startswith("_"))
    for name in sorted(set(old_methods) - new_attrs):
        if name.startswith("_"):
            continue
        method = old_methods[name]
        instance = f"'{class_name}' object has no attribute '{name}'"
        quoted = re.escape(class_name)
        pattern = rf"(?:'{quoted}' object|type object '{quoted}') has no attribute '{re.escape(name)}'"
        out.append(
            ApiChange(
                "method",
                "AttributeError",
                instance,
                pattern,
                f"{path}.{name}",
                name,
                file,
                method["line"],
                f"{path}(...).{name}",
                added,
                _similar(name, added),
            )
        )
    return out


def _parameters(old_fn, new_fn, subject: str, qualname: str, old_file: str, call: str) -> list[ApiChange]:
    """Keyword parameters the old signature took and the new one rejects (no ``**kwargs`` to catch them).

    Each change points at the parameter's line in the old release: what went, and one line per record.
    """
    if new_fn["varkw"]:
        return []
    old_names = [(p[0], p[2]) for p in old_fn["params"] if p[1] != "pos"]
    new_names = [p[0] for p in new_fn["params"]]
    added = [n for n in new_names if n not in {p[0] for p in old_fn["params"]}]
    out = []
    for name, line in old_names:
        if name in new_names:
            continue
        message = f"{qualname}() got an unexpected keyword argument '{name}'"
        owner, _, function = qualname.rpartition(".")
        prefix = f"(?:{re.escape(owner)}\\.)?" if owner else ""
        pattern = rf"(?<![\w.]){prefix}{re.escape(function)}\(\) got an unexpected keyword argument '{re.escape(name)}'"
        similar = _similar(name, added) or _similar(name, [n for n in new_names if n not in added])
        out.append(
            ApiChange(
                "parameter",
                "TypeError",
                message,
                pattern,
                subject,
                name,
                old_file,
                line,
                f"{call}{name}=...)",
                added,
                similar,
            )
        )
    return out


def _similar(name: str, candidates: list[str]) -> str | None:
    """The candidate most like ``name`` (``proxies`` -> ``proxy``), or the only one that contains it
    (``send`` -> ``send_request``)."""
    found = difflib.get_close_matches(name, candidates, n=1, cutoff=_SIMILAR)
    if found:
        return found[0]
    containing = [c for c in candidates if name.strip("_").lower() in c.lower()]
    return containing[0] if len(containing) == 1 else None
