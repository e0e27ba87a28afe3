"""Reading Python source with ``ast``: where errors are raised, warned or logged, and their messages.

A message is kept as parts, literal text and ``{expr}`` placeholders, whether the source wrote it as a
literal, an f-string, a ``%`` or ``.format`` string (also on a module-level constant), a local variable
assigned one of those, or a call of a module-level helper that only returns one. :func:`find_in_source`
gives a :class:`Finding` per usable raise, ``assert`` with a message, ``warnings.warn``,
``logger.error|warning`` (also under other names: ``call_forms``) and pytest ``fail(...)`` call, and per
exception class whose ``__init__`` builds its own message (``super().__init__(f"Adapter {name} failed
...")``: the ``raise`` sites pass only fields), with the function and guards around it; ``raises`` turns
findings into records; ``messages`` holds the message parts.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from .call_forms import call_forms
from .messages import Part, Placeholder, is_retrievable, merge_parts, message_parts, unparse
from .module_facts import imports_pytest_fail, string_constants
from .own_attributes import attribute_of_self, class_named_by, property_messages

MESSAGE_KEYWORDS = ("message", "msg", "detail")
# A lowercase identifier passed before the message: an error code ("may_not_set_field"), see _is_code.
_CODE_RE = re.compile(r"[a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+")
# A class named so, or deriving from one named so, is an exception: its ``__init__`` may build the message.
EXCEPTION_NAME_RE = re.compile(r"(?:Error|Exception|Warning|Exit|Interrupt)$")


# --------------------------------------------------------------------------- the walk


@dataclass(frozen=True)
class _Context:
    scope: tuple[str, ...] = ()
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    scope_node: ast.AST | None = None
    # ("if", test), ("not", test) or ("except", type): turned into text only for findings.
    guards: tuple[tuple[str, ast.AST | None], ...] = ()
    is_init_of: str | None = None
    # The exception class this ``__init__`` belongs to, if it is one (see EXCEPTION_NAME_RE).
    exception_class: str | None = None
    # The class whose body (or method) this is: what ``self.x`` may be read from (own_attributes.py).
    owner: ast.ClassDef | None = None


@dataclass
class Finding:
    """One raise, warning or log call with a usable message, before it becomes a record."""

    kind: str  # "exception", "warning" or "log"
    error_class: str
    severity: str
    parts: list[Part]
    line: int
    end_line: int
    qualname: str
    docstring: str | None
    guards: tuple[str, ...]
    class_of_init: str | None
    http_status: int | None = None


Helpers = dict[str, tuple[list[str], list[Part]]]


def message_helpers(tree: ast.Module) -> Helpers:
    """Module-level functions that only return a message (``def error_x(name): return f"..."``).

    Libraries often build messages in such helpers; a raise calling one gets the helper's message.
    """
    helpers: Helpers = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        body = node.body[1:] if ast.get_docstring(node) is not None else node.body
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            parts = message_parts(body[0].value)
            if parts is not None:
                helpers[node.name] = ([a.arg for a in [*node.args.posonlyargs, *node.args.args]], parts)
    return helpers


def package_helpers(trees: Iterable[ast.Module]) -> Helpers:
    """The message helpers of a whole package: a name two modules define differently is left out (which one
    a ``raise`` calls cannot be told without importing)."""
    helpers: Helpers = {}
    ambiguous: set[str] = set()
    for tree in trees:
        for name, helper in message_helpers(tree).items():
            if name in helpers and helpers[name] != helper:
                ambiguous.add(name)
            helpers[name] = helper
    for name in ambiguous:
        del helpers[name]
    return helpers


def _helper_parts(call: ast.Call, helpers: Helpers) -> list[Part] | None:
    """The message a call of a message helper returns, its parameters replaced by the call's arguments."""
    found = helpers.get(callee_name(call.func))
    if found is None:
        return None
    params, parts = found
    bound = {p: unparse(a) for p, a in zip(params, call.args, strict=False) if not isinstance(a, ast.Starred)}
    bound.update({kw.arg: unparse(kw.value) for kw in call.keywords if kw.arg})
    out: list[Part] = []
    for part in parts:
        if isinstance(part, Placeholder):
            m = re.match(r"[A-Za-z_]\w*", part.expr)
            if m and m.group(0) in bound:
                part = Placeholder(bound[m.group(0)] + part.expr[m.end() :])
        out.append(part)
    return out


class _Walker:
    """Collects findings from one module's AST, with the guards and function around each."""

    def __init__(self, tree: ast.Module, helpers: Helpers | None = None):
        self.tree = tree
        self.helpers = helpers or {}
        self.findings: list[Finding] = []
        self.skipped: Counter[str] = Counter()
        self._assignments: dict[int, dict[str, list[tuple[int, ast.expr]]]] = {}
        # The names it warns and logs through: ``warnings.warn``, ``logger.error`` and their aliases.
        self._forms = call_forms(tree)
        self._fail_names = {"fail"} if imports_pytest_fail(tree) else set()
        self._constants = string_constants(tree)

    def run(self) -> None:
        self._walk(self.tree, _Context(scope_node=self.tree))

    def _walk(self, node: ast.AST, ctx: _Context) -> None:
        """Visit statements only: raises are statements, and warn/log calls are expression statements."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owner = ctx.scope[-1] if ctx.scope and ctx.function is None else None
            is_init = node.name == "__init__"
            inner = _Context(
                scope=(*ctx.scope, node.name),
                function=node,
                scope_node=node,
                is_init_of=owner if is_init else None,
                exception_class=ctx.exception_class if is_init and owner else None,
                owner=ctx.owner,
            )
            self._body(node.body, inner)
        elif isinstance(node, ast.ClassDef):
            names = [node.name, *(callee_name(base) for base in node.bases)]
            is_exception = any(EXCEPTION_NAME_RE.search(name) for name in names)
            inner = _Context(
                scope=(*ctx.scope, node.name),
                scope_node=ctx.scope_node,
                exception_class=node.name if is_exception else None,
                owner=node,
            )
            self._body(node.body, inner)
        elif isinstance(node, ast.Raise):
            self._raise(node, ctx)
        elif isinstance(node, ast.Assert):
            if node.msg is not None:
                self._add(
                    "exception", "AssertionError", "error", [node.msg], [], node, _guarded(ctx, ("not", node.test))
                )
        elif isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Call):
                self._call(node.value, ctx)
        elif isinstance(node, (ast.If, ast.While)):
            constant = isinstance(node.test, ast.Constant)
            self._body(node.body, ctx if constant else _guarded(ctx, ("if", node.test)))
            self._body(node.orelse, _guarded(ctx, ("not", node.test)))
        elif isinstance(node, ast.ExceptHandler):
            self._body(node.body, _guarded(ctx, ("except", node.type)))
        elif isinstance(node, ast.Module):
            self._body(node.body, ctx)
        else:  # for, with, try, match: their statement lists, unguarded
            for name in ("body", "handlers", "orelse", "finalbody", "cases"):
                for child in getattr(node, name, None) or ():
                    self._walk(child, ctx)

    def _body(self, statements: list[ast.stmt], ctx: _Context) -> None:
        for statement in statements:
            self._walk(statement, ctx)

    # ----------------------------------------------------------------- raise / warn / log

    def _raise(self, node: ast.Raise, ctx: _Context) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call):
            error_class = callee_name(exc.func)
            attribute = attribute_of_self(exc.func)
            if attribute and ctx.owner is not None:  # ``raise self._undefined_exception(...)``
                error_class = class_named_by(ctx.owner, attribute) or error_class
            candidates = list(exc.args) + [kw.value for kw in exc.keywords if kw.arg in MESSAGE_KEYWORDS]
            if not candidates:
                self.skipped["without a message"] += 1
                return
            read = attribute_of_self(candidates[0])  # the message read from the class: ``self._undefined_message``
            returned = property_messages(ctx.owner, read) if read and ctx.owner is not None else []
            for value in returned:  # ``(self._undefined_message)``: each message the property returns
                self._add("exception", error_class, "error", [value], [], node, ctx)
            if returned:
                return
            self._add("exception", error_class, "error", candidates, [], node, ctx)
            status = _http_status(exc)
            if status is not None and self.findings and self.findings[-1].line == node.lineno:
                self.findings[-1].kind, self.findings[-1].http_status = "http", status
        elif isinstance(exc, (ast.Name, ast.Attribute)) and callee_name(exc)[:1].isupper():
            self.skipped["without a message"] += 1

    def _call(self, node: ast.Call, ctx: _Context) -> None:
        func = node.func
        if self._forms.is_warn(func):
            if not node.args and not any(kw.arg == "message" for kw in node.keywords):
                return
            category = node.args[1] if len(node.args) > 1 else _keyword(node, "category")
            error_class = callee_name(category) if category is not None else "UserWarning"
            first = node.args[0] if node.args else _keyword(node, "message")
            self._add("warning", error_class, "warning", [first], [], node, ctx)
            return
        level = self._forms.call_level(func)
        if level is not None and node.args:
            error_class = f"logging.{'WARNING' if level == 'warning' else level.upper()}"
            self._add("log", error_class, level, [node.args[0]], list(node.args[1:]), node, ctx)
            return
        if is_super_init(func) and ctx.exception_class and ctx.function is not None:
            # The message this exception class builds for itself; its raise sites pass only fields.
            candidates = [arg for arg in node.args if not _is_self(arg, ctx.function)][:1]
            # Passing a parameter through (``super().__init__(detail)``) is no message of its own.
            if candidates and self._parts(candidates[0], [], node.lineno, ctx) is not None:
                self._add("exception", ctx.exception_class, "error", candidates, [], node, ctx)
            return
        is_fail = (isinstance(func, ast.Name) and func.id in self._fail_names) or (
            isinstance(func, ast.Attribute) and func.attr == "fail" and _is_name(func.value, "pytest")
        )
        if is_fail and node.args:
            self._add("exception", "Failed", "error", [node.args[0]], [], node, ctx)

    def _add(
        self,
        kind: str,
        error_class: str,
        severity: str,
        candidates: list[ast.expr],
        extra_args: list[ast.expr],
        node: ast.stmt | ast.expr,
        ctx: _Context,
    ) -> None:
        found = [parts for c in candidates if (parts := self._parts(c, extra_args, node.lineno, ctx)) is not None]
        # The first retrievable one that is not an error code: PydanticCustomError("may_not_set_field",
        # "This field is not to be set by the user.", {}).
        usable = [p for p in found if is_retrievable(p)]
        parts = next((p for p in usable if not _is_code(p)), usable[0] if usable else None)
        if parts is None:
            self.skipped["too generic" if found else "not a literal message"] += 1
            return
        docstring = ast.get_docstring(ctx.function) if ctx.function is not None else None
        self.findings.append(
            Finding(
                kind=kind,
                error_class=error_class,
                severity=severity,
                parts=merge_parts(parts),
                line=node.lineno,
                end_line=getattr(node, "end_lineno", None) or node.lineno,
                qualname=".".join(ctx.scope),
                docstring=docstring,
                guards=tuple(_guard_text(kind, node) for kind, node in ctx.guards),
                class_of_init=ctx.is_init_of,
            )
        )

    def _parts(self, candidate: ast.expr, extra_args: list[ast.expr], line: int, ctx: _Context) -> list[Part] | None:
        parts = message_parts(candidate, extra_args)
        if parts is None and isinstance(candidate, ast.Name):
            parts = self._resolve(candidate.id, line, ctx)
            if parts is None and candidate.id in self._constants:
                # ``error(CONNECTION_ERROR, uri, exc)``: logging fills the constant's ``%s`` with the arguments.
                parts = message_parts(ast.Constant(self._constants[candidate.id]), extra_args)
        if parts is None and isinstance(candidate, ast.Call):
            parts = _helper_parts(candidate, self.helpers) or self._constant_format(candidate)
            inner = next((kw.value for kw in candidate.keywords if kw.arg in MESSAGE_KEYWORDS), None)
            if parts is None and inner is not None and not isinstance(inner, ast.Call):
                # A message passed inside the data object the exception wraps: the MCP SDK's
                # ``McpError(ErrorData(code=..., message=f"Timed out while waiting for ..."))``.
                parts = self._parts(inner, [], line, ctx)
        return parts

    def _constant_format(self, call: ast.Call) -> list[Part] | None:
        """``TEMPLATE.format(symbol=symbol)`` with ``TEMPLATE`` a module-level string constant."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Name):
            text = self._constants.get(func.value.id)
            if text is not None:
                literal = ast.Call(ast.Attribute(ast.Constant(text), "format"), call.args, call.keywords)
                return message_parts(literal)
        return None

    def _resolve(self, name: str, line: int, ctx: _Context) -> list[Part] | None:
        """``msg = f"..."; raise X(msg)``: the last message-shaped assignment to ``name`` above ``line``."""
        scope = ctx.scope_node or self.tree
        table = self._assignments.get(id(scope))
        if table is None:
            table = {}
            for sub in ast.walk(scope):
                if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
                    table.setdefault(sub.targets[0].id, []).append((sub.lineno, sub.value))
                elif isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name) and sub.value is not None:
                    table.setdefault(sub.target.id, []).append((sub.lineno, sub.value))
            self._assignments[id(scope)] = table
        before = [(lineno, value) for lineno, value in table.get(name, ()) if lineno < line]
        if not before:
            return None
        return message_parts(max(before, key=lambda item: item[0])[1])


def _guarded(ctx: _Context, guard: tuple[str, ast.AST | None]) -> _Context:
    return _Context(ctx.scope, ctx.function, ctx.scope_node, (*ctx.guards, guard), ctx.is_init_of, ctx.exception_class)


_FLIPPED = {
    ast.Is: "is not",
    ast.IsNot: "is",
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.In: "not in",
    ast.NotIn: "in",
    ast.Lt: ">=",
    ast.LtE: ">",
    ast.Gt: "<=",
    ast.GtE: "<",
}


def _guard_text(kind: str, node: ast.AST | None) -> str:
    if kind == "except":
        return f"except {unparse(node)}" if node is not None else "except"
    return _negate(node) if kind == "not" else unparse(node)  # type: ignore[arg-type]


def _negate(test: ast.AST) -> str:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return unparse(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _FLIPPED:
        return f"{unparse(test.left)} {_FLIPPED[type(test.ops[0])]} {unparse(test.comparators[0])}"
    return f"not ({unparse(test)})"


def _http_status(call: ast.Call) -> int | None:
    """The HTTP status an exception is built with (``HTTPException(status_code=404, ...)``), if literal."""
    for node in [_keyword(call, "status_code"), _keyword(call, "status"), *call.args[:1]]:
        if isinstance(node, ast.Constant) and type(node.value) is int and 100 <= node.value <= 599:
            return node.value
    return None


def callee_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return callee_name(node.func)
    return unparse(node)


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in node.keywords if kw.arg == name), None)


def _is_code(parts: list[Part]) -> bool:
    """A literal identifier such as ``"may_not_set_field"``: an error code, not a message."""
    return len(parts) == 1 and isinstance(parts[0], str) and bool(_CODE_RE.fullmatch(parts[0]))


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def is_super_init(func: ast.expr) -> bool:
    """``super().__init__`` or ``SomeBase.__init__``."""
    if not (isinstance(func, ast.Attribute) and func.attr == "__init__"):
        return False
    value = func.value
    return isinstance(value, ast.Name) or (isinstance(value, ast.Call) and _is_name(value.func, "super"))


def _is_self(node: ast.expr, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The method's first parameter (``Base.__init__(self, message)`` passes it explicitly)."""
    params = [*function.args.posonlyargs, *function.args.args]
    return bool(params) and _is_name(node, params[0].arg)


def find_in_source(source: str | ast.Module, helpers: Helpers | None = None) -> tuple[list[Finding], Counter[str]]:
    """Every usable raise, warning and log call in one module's source, and why others were skipped.

    ``helpers`` are message helpers found anywhere in the package (see :func:`message_helpers`); the
    module's own are always used.
    """
    tree = ast.parse(source) if isinstance(source, str) else source
    walker = _Walker(tree, {**message_helpers(tree), **(helpers or {})})
    walker.run()
    return walker.findings, walker.skipped
