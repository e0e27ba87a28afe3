"""Reading Python source with ``ast``: where errors are raised, warned or logged, and their messages.

A message is kept as parts, literal text and ``{expr}`` placeholders, whether the source wrote it as a
literal, an f-string, a ``%`` or ``.format`` string, a local variable assigned one of those, or a call
of a module-level helper that only returns one. :func:`find_in_source` gives a :class:`Finding` per
usable raise / ``warnings.warn`` / ``logger.error|warning`` call, with the function and guards around it;
``assistant.ingest`` turns findings into records.
"""

from __future__ import annotations

import ast
import re
import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

# A message needs this much literal text to be worth retrieving on.
MIN_LETTERS = 10
MIN_WORDS = 2
WORD_RE = re.compile(r"[A-Za-z]{2,}")
_LOG_LEVELS = {"error": "error", "exception": "error", "critical": "critical", "warning": "warning", "warn": "warning"}
_LOGGER_NAME_RE = re.compile(r"(?:^|_)(?:log|logger)$", re.IGNORECASE)
_MESSAGE_KEYWORDS = ("message", "msg", "detail")
_PERCENT_RE = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?(?P<conv>[diouxXeEfFgGcrsa%])"
)


@dataclass(frozen=True)
class Placeholder:
    """A part of a message only known at run time, written as ``{expr}``."""

    expr: str


Part = str | Placeholder


def render_message(parts: Iterable[Part]) -> str:
    """The message as written in the source, placeholders as ``{expr}``."""
    return "".join(p if isinstance(p, str) else "{" + p.expr + "}" for p in parts)


def message_pattern(parts: Iterable[Part]) -> str:
    """A regex for the rendered message: literal text escaped, placeholders as ``(.+?)``.

    The pattern starts and ends on literal text (leading and trailing placeholders are dropped) rather
    than on ``^``/``$``: the retriever searches it inside a pasted error line, which may quote the
    message, prefix it or join its wrapped lines. Whitespace runs match any whitespace for the same reason.
    """
    parts = _merge_parts(parts)
    while parts and isinstance(parts[0], Placeholder):
        parts.pop(0)
    while parts and isinstance(parts[-1], Placeholder):
        parts.pop()
    if not parts:
        return ""
    parts[0] = parts[0].lstrip()
    parts[-1] = parts[-1].rstrip()
    out = []
    for part in parts:
        if isinstance(part, Placeholder):
            out.append("(.+?)")
        else:
            pieces = re.split(r"(\s+)", part)
            out.append(
                "".join(re.escape(p) if i % 2 == 0 else " " if p == " " else r"\s+" for i, p in enumerate(pieces))
            )
    return "".join(out)


def literal_text(parts: Iterable[Part]) -> str:
    return " ".join(p for p in parts if isinstance(p, str))


def is_retrievable(parts: list[Part]) -> bool:
    """Enough literal words to find the message by: a bare ``{e}`` or ``"failed: {e}"`` is not."""
    words = WORD_RE.findall(literal_text(parts))
    return len(words) >= MIN_WORDS and sum(len(w) for w in words) >= MIN_LETTERS


def _merge_parts(parts: Iterable[Part]) -> list[Part]:
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, str) and not part:
            continue
        if merged and isinstance(part, str) and isinstance(merged[-1], str):
            merged[-1] += part
        elif merged and isinstance(part, Placeholder) and isinstance(merged[-1], Placeholder):
            merged[-1] = Placeholder(merged[-1].expr + "}{" + part.expr)
        else:
            merged.append(part)
    return merged


def message_parts(node: ast.expr, extra_args: list[ast.expr] | None = None) -> list[Part] | None:
    """The parts of a message expression, or None when it is not built from a string literal.

    ``extra_args`` are logging-style arguments (``logger.error("x %s", y)``) for ``%`` placeholders.
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if extra_args:
            return _percent_parts(node.value, extra_args)
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return _fstring_parts(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            right = node.right
            args = list(right.elts) if isinstance(right, ast.Tuple) else [right]
            return _percent_parts(node.left.value, args, mapping=right if isinstance(right, ast.Dict) else None)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = message_parts(node.left) or [Placeholder(_unparse(node.left))]
        right = message_parts(node.right) or [Placeholder(_unparse(node.right))]
        parts = left + right
        return parts if any(isinstance(p, str) and p for p in parts) else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return _format_parts(node.func.value.value, node.args, node.keywords)
    return None


def _unparse(node: ast.AST) -> str:
    return ast.unparse(node).strip()


def _fstring_parts(node: ast.JoinedStr) -> list[Part]:
    parts: list[Part] = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue):
            expr = _unparse(value.value)
            if value.conversion != -1:
                expr += "!" + chr(value.conversion)
            if value.format_spec is not None:
                expr += ":" + render_message(_fstring_parts(value.format_spec))  # type: ignore[arg-type]
            parts.append(Placeholder(expr))
    return parts


def _percent_parts(text: str, args: list[ast.expr], mapping: ast.Dict | None = None) -> list[Part]:
    keyed = {}
    if mapping is not None:
        keyed = {k.value: v for k, v in zip(mapping.keys, mapping.values, strict=False) if isinstance(k, ast.Constant)}
    parts: list[Part] = []
    position = 0
    index = 0
    for m in _PERCENT_RE.finditer(text):
        parts.append(text[position : m.start()])
        position = m.end()
        if m["conv"] == "%":
            parts.append("%")
            continue
        if m["key"] is not None:
            expr = _unparse(keyed[m["key"]]) if m["key"] in keyed else m["key"]
        elif index < len(args) and not isinstance(args[index], ast.Starred):
            expr = _unparse(args[index])
        else:
            expr = f"args[{index}]"
        index += 1
        parts.append(Placeholder(expr + ("!r" if m["conv"] == "r" else "")))
    parts.append(text[position:])
    return parts


def _format_parts(text: str, args: list[ast.expr], keywords: list[ast.keyword]) -> list[Part] | None:
    named = {kw.arg: kw.value for kw in keywords if kw.arg}
    parts: list[Part] = []
    auto = 0
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return None
    for literal, field_name, spec, conversion in parsed:
        parts.append(literal)
        if field_name is None:
            continue
        head = re.match(r"[^.\[]*", field_name).group(0)  # type: ignore[union-attr]
        rest = field_name[len(head) :]
        if head == "":
            head, auto = str(auto), auto + 1
        if head.isdigit():
            i = int(head)
            base = _unparse(args[i]) if i < len(args) and not isinstance(args[i], ast.Starred) else head
        else:
            base = _unparse(named[head]) if head in named else head
        expr = base + rest + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
        parts.append(Placeholder(expr))
    return parts


# --------------------------------------------------------------------------- the walk


@dataclass(frozen=True)
class _Context:
    scope: tuple[str, ...] = ()
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    scope_node: ast.AST | None = None
    # ("if", test), ("not", test) or ("except", type): turned into text only for findings.
    guards: tuple[tuple[str, ast.AST | None], ...] = ()
    is_init_of: str | None = None


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


def _helper_parts(call: ast.Call, helpers: Helpers) -> list[Part] | None:
    """The message a call of a message helper returns, its parameters replaced by the call's arguments."""
    found = helpers.get(_callee_name(call.func))
    if found is None:
        return None
    params, parts = found
    bound = {p: _unparse(a) for p, a in zip(params, call.args, strict=False) if not isinstance(a, ast.Starred)}
    bound.update({kw.arg: _unparse(kw.value) for kw in call.keywords if kw.arg})
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
        self._warn_names = {"warn"} if _imports_warn(tree) else set()

    def run(self) -> None:
        self._walk(self.tree, _Context(scope_node=self.tree))

    def _walk(self, node: ast.AST, ctx: _Context) -> None:
        """Visit statements only: raises are statements, and warn/log calls are expression statements."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owner = ctx.scope[-1] if ctx.scope and ctx.function is None else None
            inner = _Context(
                scope=(*ctx.scope, node.name),
                function=node,
                scope_node=node,
                is_init_of=owner if node.name == "__init__" else None,
            )
            self._body(node.body, inner)
        elif isinstance(node, ast.ClassDef):
            self._body(node.body, _Context(scope=(*ctx.scope, node.name), scope_node=ctx.scope_node))
        elif isinstance(node, ast.Raise):
            self._raise(node, ctx)
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
            error_class = _callee_name(exc.func)
            candidates = list(exc.args) + [kw.value for kw in exc.keywords if kw.arg in _MESSAGE_KEYWORDS]
            if not candidates:
                self.skipped["without a message"] += 1
                return
            self._add("exception", error_class, "error", candidates, [], node, ctx)
            status = _http_status(exc)
            if status is not None and self.findings and self.findings[-1].line == node.lineno:
                self.findings[-1].kind, self.findings[-1].http_status = "http", status
        elif isinstance(exc, (ast.Name, ast.Attribute)) and _callee_name(exc)[:1].isupper():
            self.skipped["without a message"] += 1

    def _call(self, node: ast.Call, ctx: _Context) -> None:
        func = node.func
        is_warn = (
            isinstance(func, ast.Attribute)
            and func.attr == "warn"
            and isinstance(func.value, ast.Name)
            and func.value.id == "warnings"
        ) or (isinstance(func, ast.Name) and func.id in self._warn_names)
        if is_warn:
            if not node.args and not any(kw.arg == "message" for kw in node.keywords):
                return
            category = node.args[1] if len(node.args) > 1 else _keyword(node, "category")
            error_class = _callee_name(category) if category is not None else "UserWarning"
            first = node.args[0] if node.args else _keyword(node, "message")
            self._add("warning", error_class, "warning", [first], [], node, ctx)
            return
        if isinstance(func, ast.Attribute) and func.attr in _LOG_LEVELS and _is_logger(func.value) and node.args:
            level = _LOG_LEVELS[func.attr]
            error_class = f"logging.{'WARNING' if level == 'warning' else level.upper()}"
            self._add("log", error_class, level, [node.args[0]], list(node.args[1:]), node, ctx)

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
        parts = None
        for candidate in candidates:
            parts = message_parts(candidate, extra_args)
            if parts is None and isinstance(candidate, ast.Name):
                parts = self._resolve(candidate.id, node.lineno, ctx)
            if parts is None and isinstance(candidate, ast.Call):
                parts = _helper_parts(candidate, self.helpers)
            if parts is not None:
                break
        if parts is None:
            self.skipped["not a literal message"] += 1
            return
        if not is_retrievable(parts):
            self.skipped["too generic"] += 1
            return
        docstring = ast.get_docstring(ctx.function) if ctx.function is not None else None
        self.findings.append(
            Finding(
                kind=kind,
                error_class=error_class,
                severity=severity,
                parts=_merge_parts(parts),
                line=node.lineno,
                end_line=getattr(node, "end_lineno", None) or node.lineno,
                qualname=".".join(ctx.scope),
                docstring=docstring,
                guards=tuple(_guard_text(kind, node) for kind, node in ctx.guards),
                class_of_init=ctx.is_init_of,
            )
        )

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
    return _Context(ctx.scope, ctx.function, ctx.scope_node, (*ctx.guards, guard), ctx.is_init_of)


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
        return f"except {_unparse(node)}" if node is not None else "except"
    return _negate(node) if kind == "not" else _unparse(node)  # type: ignore[arg-type]


def _negate(test: ast.AST) -> str:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _unparse(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _FLIPPED:
        return f"{_unparse(test.left)} {_FLIPPED[type(test.ops[0])]} {_unparse(test.comparators[0])}"
    return f"not ({_unparse(test)})"


def _http_status(call: ast.Call) -> int | None:
    """The HTTP status an exception is built with (``HTTPException(status_code=404, ...)``), if literal."""
    for node in [_keyword(call, "status_code"), _keyword(call, "status"), *call.args[:1]]:
        if isinstance(node, ast.Constant) and type(node.value) is int and 100 <= node.value <= 599:
            return node.value
    return None


def _callee_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _callee_name(node.func)
    return _unparse(node)


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in node.keywords if kw.arg == name), None)


def _is_logger(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "logging" or bool(_LOGGER_NAME_RE.search(name))


def _imports_warn(tree: ast.Module) -> bool:
    """``from warnings import warn`` at module level (also under a top-level ``if`` or ``try``)."""
    statements = list(tree.body)
    for node in tree.body:
        if isinstance(node, (ast.If, ast.Try)):
            statements += node.body
    return any(
        isinstance(node, ast.ImportFrom) and node.module == "warnings" and any(a.name == "warn" for a in node.names)
        for node in statements
    )


def find_in_source(source: str | ast.Module, helpers: Helpers | None = None) -> tuple[list[Finding], Counter[str]]:
    """Every usable raise, warning and log call in one module's source, and why others were skipped.

    ``helpers`` are message helpers found anywhere in the package (see :func:`message_helpers`); the
    module's own are always used.
    """
    tree = ast.parse(source) if isinstance(source, str) else source
    walker = _Walker(tree, {**message_helpers(tree), **(helpers or {})})
    walker.run()
    return walker.findings, walker.skipped
