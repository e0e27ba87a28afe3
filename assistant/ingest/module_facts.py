"""What a module's top level says that changes how its calls are read: message templates kept in constants,
and whether a bare ``fail(...)`` is pytest's ``fail`` (``call_forms``: which calls warn or log)."""

from __future__ import annotations

import ast


def string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments: message templates some libraries keep apart."""
    constants: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            constants[target] = value.value
    return constants


def imports_pytest_fail(tree: ast.Module) -> bool:
    """``from _pytest.outcomes import fail`` (or ``from pytest import fail``) at module level."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module in {"_pytest.outcomes", "pytest"}
        and any(a.name == "fail" and a.asname is None for a in node.names)
        for node in tree.body
    )
