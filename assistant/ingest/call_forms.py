"""Which calls in a module warn or log: the names it binds to ``warnings.warn`` and to a logger's methods.

Libraries rarely call ``warnings.warn`` and ``logger.error`` only under those names: aiohttp warns through
``def __del__(self, _warnings=warnings)``, celery logs through ``error = logger.error`` aliases at module
level, and transformers adds level-named methods of its own (``logger.warning_once``). One pass over a
module's statements (not its expressions: bindings are statements) finds these names, so that
``extract`` reads the calls made through them like the plain ones.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

# Logger methods whose calls become records, and the level each logs at.
LOG_LEVELS = {"error": "error", "exception": "error", "critical": "critical", "warning": "warning", "warn": "warning"}
_LOGGER_NAME_RE = re.compile(r"(?:^|_)(?:log|logger)$", re.IGNORECASE)
# Last words that make ``warning_count``, ``error_messages`` a tally or store kept on a logger-like object
# rather than a way of logging at that level (``warning_once``, ``warning_advice``, ``error_rank_zero``).
_NOT_A_WAY_TO_LOG = frozenset(
    {"count", "counts", "total", "totals", "rate", "calls", "messages", "records", "level", "levels", "list"}
)


def is_logger(node: ast.expr) -> bool:
    """``logging`` itself, or a name or attribute named like a logger (``logger``, ``self._log``)."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "logging" or bool(_LOGGER_NAME_RE.search(name))


def log_level(method: str) -> str | None:
    """The level a logger method logs at: its own name (``error``), or the level it starts with
    (``warning_once``, ``warning_advice``: helpers libraries add to ``logging.Logger``)."""
    if method in LOG_LEVELS:
        return LOG_LEVELS[method]
    prefix, _, rest = method.partition("_")
    if prefix in LOG_LEVELS and rest and rest.rsplit("_", 1)[-1] not in _NOT_A_WAY_TO_LOG:
        return LOG_LEVELS[prefix]
    return None


@dataclass
class CallForms:
    """The names one module warns and logs through: ``warnings.warn``, ``logger.<level>`` and their aliases."""

    # Names of the ``warnings`` module: ``import warnings as _w``, a ``_warnings=warnings`` parameter.
    warnings_modules: set[str] = field(default_factory=lambda: {"warnings"})
    # Names of ``warnings.warn``: ``from warnings import warn as _warn``, ``_warn=warnings.warn``.
    warn_functions: set[str] = field(default_factory=set)
    # Bare names bound at module level to a logger's method (``error = logger.error``), and its level.
    log_functions: dict[str, str] = field(default_factory=dict)

    def is_warn(self, func: ast.expr) -> bool:
        """Whether a call of ``func`` is ``warnings.warn``."""
        if isinstance(func, ast.Name):
            return func.id in self.warn_functions
        return self._is_module_warn(func)

    def call_level(self, func: ast.expr) -> str | None:
        """The level a call of ``func`` logs at, or None when it is no logging call."""
        if isinstance(func, ast.Name):
            return self.log_functions.get(func.id)
        if isinstance(func, ast.Attribute) and is_logger(func.value):
            return log_level(func.attr)
        return None

    def _is_module_warn(self, node: ast.expr | None) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "warn"
            and isinstance(node.value, ast.Name)
            and node.value.id in self.warnings_modules
        )

    def _bind(self, name: str, value: ast.expr | None) -> None:
        """A module-level ``name = value`` (None: anything else): the later binding wins, as when it runs."""
        self.log_functions.pop(name, None)
        self.warn_functions.discard(name)
        self.warnings_modules.discard(name)
        level = log_level(value.attr) if isinstance(value, ast.Attribute) and is_logger(value.value) else None
        if level is not None:
            self.log_functions[name] = level
        elif self._is_module_warn(value):
            self.warn_functions.add(name)
        elif isinstance(value, ast.Name) and value.id in self.warnings_modules:
            self.warnings_modules.add(name)

    def read(self, node: ast.stmt, module_level: bool) -> None:
        """What one statement binds; only module-level bindings can be called bare from anywhere."""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                if module is None and alias.name == "warnings":
                    self.warnings_modules.add(name)
                elif module == "warnings" and alias.name == "warn":
                    self.warn_functions.add(name)
                elif module_level:
                    self._bind(name, None)
        elif isinstance(node, ast.Assign) and module_level:
            for target in node.targets:
                for name, value in _pairs(target, node.value):
                    self._bind(name, value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if module_level:
                self._bind(node.name, None)
            if not isinstance(node, ast.ClassDef):
                for argument, default in _defaults(node.args):  # ``def __del__(self, _warnings=warnings)``
                    if isinstance(default, ast.Name) and default.id in self.warnings_modules:
                        self.warnings_modules.add(argument.arg)
                    elif self._is_module_warn(default):
                        self.warn_functions.add(argument.arg)


def call_forms(tree: ast.Module) -> CallForms:
    """The names ``tree`` warns and logs through (see :class:`CallForms`), read in source order."""
    forms = CallForms()
    for node, module_level in _statements(tree.body, True):
        forms.read(node, module_level)
    return forms


def _defaults(arguments: ast.arguments) -> Iterator[tuple[ast.arg, ast.expr]]:
    positional = [*arguments.posonlyargs, *arguments.args]
    yield from zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True)
    yield from ((a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is not None)


def _pairs(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr | None]]:
    """The names an assignment binds, each with the expression it gets where that can be told:
    ``debug, error = (logger.debug, logger.error)`` binds ``error`` to ``logger.error``."""
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
        if values is not None and len(values) != len(target.elts):
            values = None
        for i, element in enumerate(target.elts):
            yield from _pairs(element, values[i]) if values is not None else _names(element)


def _names(target: ast.expr) -> Iterator[tuple[str, None]]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id, None


def _statements(body: Iterable[ast.AST], module_level: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """Every statement in ``body`` and the blocks inside it, in source order, and whether it runs at module
    level (not inside a ``def`` or ``class``); expressions are not entered."""
    for node in body:
        if isinstance(node, ast.stmt):
            yield node, module_level
        inner = module_level and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for name in ("body", "orelse", "handlers", "finalbody"):
            yield from _statements(getattr(node, name, None) or (), inner)
        for case in getattr(node, "cases", None) or ():
            yield from _statements(case.body, inner)
