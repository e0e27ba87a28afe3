"""Messages raised in Cython (``.pyx``, ``.pxd``, ``.pxi``): ``raise X(...)`` and ``warnings.warn(...)``.

Cython is not Python, so a file is not parsed whole: each ``raise`` call (its parentheses found on the
masked text, so a message may run over lines) is parsed alone with ``ast``, and its message read by the
same code as a Python raise's (:func:`assistant.ingest.messages.message_parts`: literals, f-strings, ``%``
and ``.format``). ``msg = (...); raise X(msg)`` reads the assignment above. The function, class and
``if``/``except`` around a raise come from indentation.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from ..extract import Finding
from ..messages import Part, is_retrievable, message_parts
from .lexing import Source, one_line
from .templates import message_finding

_RAISE_RE = re.compile(r"\braise\s+([A-Za-z_][\w.]*)\s*\(")
_WARN_RE = re.compile(r"\bwarnings\s*\.\s*warn\s*\(")
_DEF_RE = re.compile(r"(?:async\s+)?(?:def|cdef|cpdef)\b[^(:=]*?\b(\w+)\s*\(")
_CLASS_RE = re.compile(r"(?:cdef\s+|cpdef\s+)?(?:public\s+|api\s+)*class\s+(?:[\w.]+\s+)?(\w+)\s*[:(\[]")
_MESSAGE_KEYWORDS = ("message", "msg", "detail")


def find_in_cython(text: str) -> tuple[list[Finding], Counter[str]]:
    """Every message one Cython file raises or warns with, and why others were skipped."""
    source = Source(text, "python")
    lines = source.text.splitlines()
    masked_lines = source.masked.splitlines()
    findings: list[Finding] = []
    skipped: Counter[str] = Counter()
    for kind, m in [
        *(("exception", m) for m in _RAISE_RE.finditer(source.masked)),
        *(("warning", m) for m in _WARN_RE.finditer(source.masked)),
    ]:
        open_at = m.end() - 1
        close = source.closing(open_at)
        call = _parse_call("f" + source.text[open_at : close + 1])
        if call is None:
            skipped["not a literal message"] += 1
            continue
        line = source.line(m.start())
        qualname, guards, function_line = _context(lines, masked_lines, line)
        if kind == "warning":
            category = call.args[1] if len(call.args) > 1 else None
            error_class = ast.unparse(category).split(".")[-1] if category is not None else "UserWarning"
            candidates = call.args[:1]
        else:
            error_class = m.group(1).split(".")[-1]
            candidates = [*call.args, *(kw.value for kw in call.keywords if kw.arg in _MESSAGE_KEYWORDS)]
        if not candidates:
            skipped["without a message"] += 1
            continue
        found = [
            parts
            for candidate in candidates
            if (parts := _parts(candidate, lines, masked_lines, function_line, line)) is not None
        ]
        usable = [parts for parts in found if is_retrievable(parts)]
        if not usable:
            skipped["too generic" if found else "not a literal message"] += 1
            continue
        findings.append(message_finding(kind, error_class, usable[0], line, source.line(close), qualname, guards))
    findings.sort(key=lambda f: f.line)
    return findings, skipped


def _parse_call(text: str) -> ast.Call | None:
    """``f(...)`` parsed as Python; Cython's casts (``<object>x``) and address-of make it fail: None."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    return node if isinstance(node, ast.Call) else None


def _parts(
    node: ast.expr, lines: list[str], masked_lines: list[str], function_line: int, line: int
) -> list[Part] | None:
    parts = message_parts(node)
    if parts is None and isinstance(node, ast.Name):
        value = _assignment(node.id, lines, masked_lines, function_line, line)
        parts = message_parts(value) if value is not None else None
    return parts


def _assignment(name: str, lines: list[str], masked_lines: list[str], first: int, line: int) -> ast.expr | None:
    """The value of the last ``name = ...`` between the function's first line and ``line`` (1-based)."""
    pattern = re.compile(rf"\s*{re.escape(name)}\s*=(?!=)")
    for number in range(line - 1, max(first, 1) - 1, -1):
        if pattern.match(masked_lines[number - 1]):
            text = lines[number - 1].split("=", 1)[1]
            depth = _depth(masked_lines[number - 1].split("=", 1)[1])
            follow = number
            while depth > 0 and follow < len(lines):  # a value over several lines, in brackets
                text += "\n" + lines[follow]
                depth += _depth(masked_lines[follow])
                follow += 1
            try:
                return ast.parse(text.strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError):
                return None
    return None


def _depth(masked: str) -> int:
    return sum(masked.count(c) for c in "([{") - sum(masked.count(c) for c in ")]}")


def _context(lines: list[str], masked_lines: list[str], line: int) -> tuple[str, list[str], int]:
    """(qualname, guards, first line of the function) of ``line``, from the less indented lines above it."""
    indent = _indent(masked_lines[line - 1])
    guards: list[str] = []
    names: list[str] = []
    function_line = 1
    for number in range(line - 1, 0, -1):
        text = masked_lines[number - 1]
        if not text.strip() or _indent(text) >= indent:
            continue
        if number > 1 and masked_lines[number - 2].rstrip().endswith("\\"):
            continue
        indent = _indent(text)
        head = text.strip()
        written = lines[number - 1][: len(text.rstrip())].strip()  # without a comment after it
        if re.match(r"(?:if|elif)\b", head) and not names:
            guards.insert(0, one_line(written.split(None, 1)[1].rstrip().rstrip(":")) if " " in written else written)
        elif re.match(r"except\b", head) and not names:
            guards.insert(0, one_line(written.rstrip(":")))
        elif (m := _DEF_RE.match(head)) and not names:
            names.insert(0, m.group(1))
            function_line = number
        elif m := _CLASS_RE.match(head):
            names.insert(0, m.group(1))
        if indent == 0:
            break
    return ".".join(names), guards, function_line


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())
