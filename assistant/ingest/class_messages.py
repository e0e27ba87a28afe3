"""Messages an exception class defines for itself, which no ``raise`` holds.

Many libraries put the message on the class and raise it with fields only: botocore's ``fmt = 'Unable to
locate credentials'`` (its base ``BotoCoreError`` formats ``self.fmt.format(**kwargs)``), ``ClientError``'s
``MSG_TEMPLATE``, pydantic v1's ``msg_template``, DRF's ``default_detail``; aiohttp's ``__str__`` returning
``"Cannot connect to host {0.host}:{0.port} ..."`` and its ``__init__`` setting ``message = "Server
disconnected"`` when none is given. Those printed texts were in no record. Here each becomes a
:class:`~.extract.Finding` of its class, at the line that writes the text:

- a string class attribute that the class or a base uses as the message (formats it, returns it from
  ``__str__``, passes it to ``super().__init__`` or assigns it to a message variable), or that has one of
  the names such attributes have across libraries (:data:`MESSAGE_ATTRIBUTES`: a base outside the package,
  DRF's ``APIException``, formats it); a subclass that sets its own gets its own record;
- a literal, f-string, ``%`` or ``.format`` template that ``__str__`` returns, with the ``self.x`` it
  prints filled from literal class attributes (a subclass that sets them gets its own record);
- a message assigned in ``__init__`` (``if message is None: message = "..."``) or given as the default of
  a message parameter.

Classes are looked up by name across the package (:func:`package_classes`), since bases live in other
modules; a class is an exception when it or an ancestor is named like one (``EXCEPTION_NAME_RE``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from .extract import EXCEPTION_NAME_RE, MESSAGE_KEYWORDS, Finding, callee_name, is_super_init
from .messages import Part, Placeholder, is_retrievable, merge_parts, message_parts, render_message, unparse

# Class attributes named so hold the message across libraries (compared in lower case).
MESSAGE_ATTRIBUTES = frozenset(
    {"fmt", "msg", "message", "msg_template", "message_template", "default_message", "default_msg", "default_detail"}
)
# Variables, parameters and ``self`` attributes that hold the message being built.
_MESSAGE_NAMES = frozenset({*MESSAGE_KEYWORDS, "description", "reason", "default_message", "error_message"})
_GETTEXT = frozenset({"_", "gettext", "gettext_lazy", "ugettext", "ugettext_lazy", "gettext_noop", "str"})
# Methods whose return value is the message: ``__str__``, a ``message`` property, ``format_message()``...
_MESSAGE_METHOD_RE = re.compile(r"^__str__$|^__unicode__$|message|msg|detail", re.IGNORECASE)
_FORMAT_FIELD_RE = re.compile(r"\{[A-Za-z_]\w*(?:[.\[][^{}]*)?(?:![rsa])?(?::[^{}]*)?\}")
_PERCENT_FIELD_RE = re.compile(r"%(?:\(\w+\))?[-#0 +]*\d*(?:\.\d+)?[sdrifx]")
_MODES = ("plain", "percent", "format")  # how a template attribute is filled, weakest first
_MAX_DEPTH = 8
Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class ClassFacts:
    """What one class says about its message: its literal attributes, how its methods use attributes as
    the message, and the templates its ``__str__`` returns."""

    node: ast.ClassDef
    bases: tuple[str, ...]
    module: int  # id() of the module's tree: a base named in the same module is looked up there first
    # name -> (statement, value): str, int or float class attributes (``_("...")`` read as its text).
    attributes: dict[str, tuple[ast.stmt, str | int | float]] = field(default_factory=dict)
    uses: dict[str, str] = field(default_factory=dict)  # attribute -> "format", "percent" or "plain"
    defines_str: bool = False
    str_returns: list[tuple[ast.Return, list[Part]]] = field(default_factory=list)


class ClassTable:
    """The classes of a package by name (a name defined twice keeps both) and by their node."""

    def __init__(self, facts: Iterable[ClassFacts]):
        self.by_name: dict[str, list[ClassFacts]] = {}
        self.by_node: dict[int, ClassFacts] = {}
        for one in facts:
            self.by_name.setdefault(one.node.name, []).append(one)
            self.by_node[id(one.node)] = one

    def lineage(self, facts: ClassFacts) -> list[ClassFacts]:
        """The class and its ancestors found in the package, nearest first (breadth first, bases in order).

        A name several modules define is taken from the naming class's module when it defines it there
        (pydantic's ``v1/errors.py`` and ``errors.py`` both have a ``PydanticErrorMixin``)."""
        out, seen = [facts], {id(facts)}
        queue = [(name, facts.module) for name in facts.bases]
        while queue and len(out) < 64:
            name, module = queue.pop(0)
            found = self.by_name.get(name, [])
            for one in [f for f in found if f.module == module] or found:
                if id(one) not in seen:
                    seen.add(id(one))
                    out.append(one)
                    queue.extend((base, one.module) for base in one.bases)
        return out

    def is_exception(self, facts: ClassFacts) -> bool:
        names = [n for one in self.lineage(facts) for n in (one.node.name, *one.bases)]
        return any(EXCEPTION_NAME_RE.search(name) for name in names)


def package_classes(trees: Iterable[ast.Module]) -> ClassTable:
    """Every class of a package's modules, for :func:`class_findings` to follow bases across modules."""
    return ClassTable(_facts(node, id(tree)) for tree in trees for node in _classes(tree.body))


def class_findings(tree: ast.Module, table: ClassTable | None = None, known: Iterable[Finding] = ()) -> list[Finding]:
    """The messages the exception classes of one module define; none twice, nor one that ``known`` (the
    module's raise findings) already has for that class."""
    table = table or package_classes([tree])
    seen = {(f.error_class, render_message(f.parts)) for f in known}
    out: list[Finding] = []
    for node in _classes(tree.body):
        facts = table.by_node.get(id(node)) or _facts(node, id(tree))
        if not table.is_exception(facts):
            continue
        for finding in _of_class(facts, table.lineage(facts)):
            key = (finding.error_class, render_message(finding.parts))
            if key not in seen and is_retrievable(finding.parts):
                seen.add(key)
                out.append(finding)
    return out


# --------------------------------------------------------------------------- one class's findings


def _of_class(facts: ClassFacts, lineage: list[ClassFacts]) -> Iterator[Finding]:
    name = facts.node.name
    docstring = ast.get_docstring(facts.node)
    printed: set[str] = set()  # attributes a __str__ record already prints
    owner = next((one for one in lineage if one.defines_str), None)  # the __str__ the class runs
    for ret, parts in owner.str_returns if owner else ():
        filled, used = _fill(parts, lineage)
        own = [facts.attributes[a][0] for a in used if a in facts.attributes]
        if owner is facts:
            yield _finding(name, filled, ret, f"{name}.__str__", docstring)
        elif own:  # a subclass that sets what its base's __str__ prints
            yield _finding(name, filled, min(own, key=lambda s: s.lineno), name, docstring)
        else:
            continue
        printed.update(used)
    uses: dict[str, str] = {}
    for one in reversed(lineage):  # the nearest class's use wins
        uses.update(one.uses)
    for attr, (statement, value) in facts.attributes.items():
        if not isinstance(value, str) or attr in printed:
            continue
        if attr in uses or attr.lower() in MESSAGE_ATTRIBUTES:
            yield _finding(name, _template(value, uses.get(attr)), statement, name, docstring)
    init = next((f for f in _methods(facts.node) if f.name == "__init__"), None)
    if init is not None:
        for statement, parts, guards in _init_messages(init):
            yield _finding(name, parts, statement, f"{name}.__init__", ast.get_docstring(init), guards)


def _finding(
    error_class: str,
    parts: list[Part],
    node: ast.AST,
    qualname: str,
    docstring: str | None,
    guards: tuple[str, ...] = (),
) -> Finding:
    parts = _optional_suffixes(merge_parts(parts))
    line = node.lineno  # type: ignore[attr-defined]
    return Finding(
        kind="exception",
        error_class=error_class,
        severity="error",
        parts=parts,
        line=line,
        end_line=getattr(node, "end_lineno", None) or line,
        qualname=qualname,
        docstring=docstring,
        guards=guards,
        class_of_init=error_class,
    )


def _template(text: str, mode: str | None) -> list[Part]:
    """An attribute's text as a template, filled the way the class fills it (or as it looks, when the
    filling happens outside the package): ``{field}`` placeholders keep the field's name."""
    if mode is None:
        mode = "format" if _FORMAT_FIELD_RE.search(text) else "percent" if _PERCENT_FIELD_RE.search(text) else "plain"
    if mode == "format":
        parts = message_parts(ast.Call(ast.Attribute(ast.Constant(text), "format"), [], []))
    elif mode == "percent":
        parts = message_parts(ast.BinOp(ast.Constant(text), ast.Mod(), ast.Tuple([])))
    else:
        parts = None
    return parts if parts is not None else [text]


def _fill(parts: list[Part], lineage: list[ClassFacts]) -> tuple[list[Part], list[str]]:
    """``{self.description}`` replaced by the nearest literal class attribute, and the attributes used."""
    out: list[Part] = []
    used: list[str] = []
    for part in parts:
        m = re.fullmatch(r"self\.(\w+)(?:!([rs]))?", part.expr) if isinstance(part, Placeholder) else None
        value = next((one.attributes[m[1]][1] for one in lineage if m[1] in one.attributes), None) if m else None
        if m is None or value is None:
            out.append(part)
            continue
        out.append(repr(value) if m[2] == "r" else str(value))
        used.append(m[1])
    return out, used


def _optional_suffixes(parts: list[Part]) -> list[Part]:
    """A placeholder written onto a word and followed by punctuation or the end (``operation{retry_info}:``)
    is a suffix the class may leave empty (botocore's ``ClientError`` without retries): its pattern must
    match it empty."""
    out = list(parts)
    for i, part in enumerate(out):
        if not isinstance(part, Placeholder) or i == 0 or not isinstance(out[i - 1], str):
            continue
        before, after = out[i - 1], out[i + 1] if i + 1 < len(out) else ""
        glued = isinstance(before, str) and before[-1:].isalnum()
        if glued and isinstance(after, str) and (not after or not (after[0].isalnum() or after[0].isspace())):
            out[i] = Placeholder(part.expr, optional=True)
    return out


# --------------------------------------------------------------------------- reading a class


def _classes(body: list[ast.stmt]) -> Iterator[ast.ClassDef]:
    """Classes at module level, nested in classes, or under a module-level ``if``/``try``."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield node
            yield from _classes(node.body)
        elif isinstance(node, (ast.If, ast.Try)):
            for name in ("body", "orelse", "finalbody"):
                yield from _classes(getattr(node, name, []))
            for handler in getattr(node, "handlers", []):
                yield from _classes(handler.body)


def _methods(node: ast.ClassDef) -> list[Function]:
    return [s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _facts(node: ast.ClassDef, module: int) -> ClassFacts:
    facts = ClassFacts(node, tuple(callee_name(base) for base in node.bases), module)
    for statement in node.body:
        target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else None
        if isinstance(statement, ast.AnnAssign):
            target = statement.target
        value = _literal(statement.value) if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(target, ast.Name) and value is not None:
            facts.attributes[target.id] = (statement, value)
    for function in _methods(node):
        _read_uses(function, facts)
        if function.name == "__str__":
            facts.defines_str = True
            for ret in _returns(function):
                parts = message_parts(ret.value) if ret.value is not None else None
                if parts is not None:
                    facts.str_returns.append((ret, parts))
    return facts


def _literal(node: ast.expr | None) -> str | int | float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (str, int, float):
        return node.value
    if isinstance(node, ast.Call) and callee_name(node.func) in _GETTEXT and len(node.args) == 1:
        arg = node.args[0]
        return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
    return None


def _returns(function: Function) -> Iterator[ast.Return]:
    """The function's own ``return`` statements (not those of functions defined inside it)."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _read_uses(function: Function, facts: ClassFacts) -> None:
    """The attributes this method uses as the message, and how: where the message goes (``super().__init__``,
    ``return`` from ``__str__`` or a message method, a message variable) is traced back to ``self.attr``."""
    params = [*function.args.posonlyargs, *function.args.args]
    if not params:
        return
    reader = _Reader(params[0].arg, function)
    sinks: list[ast.expr] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and is_super_init(node.func):
            sinks += [a for a in node.args if not (isinstance(a, ast.Name) and a.id == reader.owner)][:1]
        elif isinstance(node, ast.Return) and node.value is not None and _MESSAGE_METHOD_RE.search(function.name):
            sinks.append(node.value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(reader.is_message_target(t) for t in targets):
                value = node.value
                sinks.append(value.elts[0] if isinstance(value, ast.Tuple) and value.elts else value)
    for sink in sinks:
        for attr, mode in reader.reads(sink, 0):
            if _MODES.index(mode) >= _MODES.index(facts.uses.get(attr, "plain")):
                facts.uses[attr] = mode


class _Reader:
    """Follows a message expression of one method back to the class attributes it reads."""

    def __init__(self, owner: str, function: Function):
        self.owner = owner
        self.locals: dict[str, list[ast.expr]] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.locals.setdefault(node.targets[0].id, []).append(node.value)

    def is_message_target(self, target: ast.expr) -> bool:
        if isinstance(target, ast.Name):
            return target.id in _MESSAGE_NAMES
        return self.attribute(target) in (*_MESSAGE_NAMES, "args")

    def attribute(self, node: ast.expr) -> str | None:
        """``x`` of ``self.x``, ``cls.x``, ``type(self).x`` or ``self.__class__.x``."""
        if not isinstance(node, ast.Attribute):
            return None
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "type":
            value = value.args[0] if len(value.args) == 1 else value
        elif isinstance(value, ast.Attribute) and value.attr == "__class__":
            value = value.value
        return node.attr if isinstance(value, ast.Name) and value.id == self.owner else None

    def reads(self, node: ast.expr, depth: int) -> list[tuple[str, str]]:
        if depth > _MAX_DEPTH:
            return []
        attr = self.attribute(node)
        if attr is not None:
            return [(attr, "plain")]
        func = node.func if isinstance(node, ast.Call) else None
        formats = isinstance(func, ast.Attribute) and func.attr in ("format", "format_map")
        if formats and (attr := self.attribute(func.value)):  # type: ignore[union-attr]
            return [(attr, "format")]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and (attr := self.attribute(node.left)):
            return [(attr, "percent")]
        if isinstance(node, ast.Name):
            return [r for value in self.locals.get(node.id, ()) for r in self.reads(value, depth + 1)]
        if isinstance(node, ast.BoolOp):
            return [r for value in node.values for r in self.reads(value, depth + 1)]
        if isinstance(node, ast.IfExp):
            return self.reads(node.body, depth + 1) + self.reads(node.orelse, depth + 1)
        if isinstance(node, ast.Call) and callee_name(node.func) in _GETTEXT and len(node.args) == 1:
            return self.reads(node.args[0], depth + 1)
        return []


def _init_messages(init: Function) -> Iterator[tuple[ast.AST, list[Part], tuple[str, ...]]]:
    """Messages ``__init__`` writes itself: a message parameter's default (``message="Server
    disconnected"``), or a literal template assigned to a message variable, ``self.message`` or
    ``self.args`` (``if message is None: message = "..."``, ``self.msg = msg or f"..."``)."""
    args = init.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [
        *zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]
    for arg, default in defaults:
        if arg.arg in _MESSAGE_NAMES and default is not None and (parts := _default_parts(default)):
            yield default, parts, ()
    reader = _Reader(positional[0].arg if positional else "self", init)
    for statement, guards in _statements(init.body, ()):
        if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if any(reader.is_message_target(t) for t in targets):
            value = statement.value
            value = value.elts[0] if isinstance(value, ast.Tuple) and value.elts else value
            parts = _default_parts(value)
            if parts is not None:
                yield statement, parts, guards


def _default_parts(node: ast.expr) -> list[Part] | None:
    """The literal template of ``"..."``, ``x or "..."`` and ``x if x else "..."``."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        node = node.values[-1]
    elif isinstance(node, ast.IfExp):
        return _default_parts(node.orelse) or _default_parts(node.body)
    text = _literal(node)
    return [text] if isinstance(text, str) else message_parts(node)


def _statements(body: list[ast.stmt], guards: tuple[str, ...]) -> Iterator[tuple[ast.stmt, tuple[str, ...]]]:
    """Each statement of a function body with the ``if`` conditions around it (no nested functions)."""
    for statement in body:
        yield statement, guards
        if isinstance(statement, ast.If):
            yield from _statements(statement.body, (*guards, unparse(statement.test)))
            yield from _statements(statement.orelse, (*guards, f"not ({unparse(statement.test)})"))
        elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in ("body", "orelse", "finalbody"):
                yield from _statements(getattr(statement, name, None) or [], guards)
            for handler in getattr(statement, "handlers", None) or []:
                yield from _statements(handler.body, guards)
