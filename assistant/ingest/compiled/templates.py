"""Messages as compiled code formats them, turned into errata's message parts (literal text and ``{expr}``).

printf formats (C, C++ and CPython's ``PyErr_Format`` with its ``%R``, ``%S``, ``%U``), brace formats
(Rust's ``format!`` with ``{}``, ``{0}``, ``{name}``, ``{:?}`` and ``{{``; C++'s ``fmt::format``), and the
literals themselves (C's escapes, Rust's line continuations). The parts then give ``errorMessage`` and
``messagePattern`` through :mod:`assistant.ingest.messages`, as a Python raise's do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..extract import Finding
from ..messages import Part, Placeholder, bounded_message_pattern, merge_parts, render_message

# printf conversions, CPython's own among them (%R repr, %S str, %U unicode, %V, %A ascii, %zd, %lld).
_PRINTF_RE = re.compile(
    r"%(?P<flags>[-+ #0']*)(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?"
    r"(?P<length>hh|h|ll|l|L|z|j|t|q|I64|I32|I)?(?P<conv>[diouxXeEfFgGaAcspnRSUVT%])"
)
_BRACE_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b"}
_C_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]+|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)", re.DOTALL)
_RUST_ESCAPE_RE = re.compile(r"\\(\n\s*|x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.)", re.DOTALL)


def c_literal(body: str) -> str:
    """The text of a C or C++ string literal's contents (between its quotes), escapes decoded."""
    return _C_ESCAPE_RE.sub(_c_escape, body)


def _c_escape(m: re.Match[str]) -> str:
    code = m.group(1)
    if code[0] in "xuU" and len(code) > 1:
        return _char(int(code[1:], 16))
    if code[0] in "01234567" and code != "0":
        return _char(int(code, 8))
    return _C_ESCAPES.get(code, code)


def rust_literal(body: str) -> str:
    """The text of a Rust string literal's contents; a backslash-newline drops the next line's indent."""

    def escape(m: re.Match[str]) -> str:
        code = m.group(1)
        if code.startswith("\n"):
            return ""
        if code[0] == "x":
            return _char(int(code[1:], 16))
        if code[0] == "u":
            return _char(int(code[2:-1], 16))
        return _C_ESCAPES.get(code, code)

    return _RUST_ESCAPE_RE.sub(escape, body)


def _char(code: int) -> str:
    try:
        return chr(code)
    except (ValueError, OverflowError):
        return "\ufffd"


def printf_parts(fmt: str, args: Sequence[str]) -> list[Part]:
    """A printf format with its arguments' source text: each conversion a placeholder named by its argument.

    ``%R`` is a repr (``{obj!r}``); a ``*`` width or precision takes an argument of its own.
    """
    parts: list[Part] = []
    position = 0
    index = 0
    for m in _PRINTF_RE.finditer(fmt):
        parts.append(fmt[position : m.start()])
        position = m.end()
        if m["conv"] == "%":
            parts.append("%")
            continue
        index += (m["width"] == "*") + (m["precision"] == "*")
        expr = args[index] if index < len(args) else f"args[{index}]"
        index += 1
        parts.append(Placeholder(" ".join(expr.split()) + ("!r" if m["conv"] == "R" else "")))
    parts.append(fmt[position:])
    return merge_parts(parts)


def brace_parts(fmt: str, positional: Sequence[str], named: dict[str, str] | None = None) -> list[Part]:
    """A brace format (Rust ``format!``, C++ ``fmt::format``): ``{}`` takes the next positional argument,
    ``{0}`` one by index, ``{name}`` a named argument or (Rust 2021) the variable of that name; a spec
    (``{:?}``, ``{name:>8}``) stays after the argument so the template says how it is shown."""
    named = named or {}
    parts: list[Part] = []
    position = 0
    auto = 0
    for m in _BRACE_RE.finditer(fmt):
        parts.append(fmt[position : m.start()])
        position = m.end()
        if m.group(0) in ("{{", "}}"):
            parts.append(m.group(0)[0])
            continue
        field, _, spec = m.group(1).partition(":")
        field = field.strip()
        if field == "":
            field, auto = str(auto), auto + 1
        if field.isdigit():
            i = int(field)
            expr = positional[i] if i < len(positional) else field
        else:
            expr = named.get(field, field)
        expr = " ".join(expr.split())
        parts.append(Placeholder(expr + (f":{spec}" if spec else "")))
    parts.append(fmt[position:])
    return merge_parts(parts)


def message_template(parts: Sequence[Part]) -> tuple[str, str]:
    """``errorMessage`` and ``messagePattern`` of a message's parts, as a Python raise's record has them."""
    return render_message(parts), bounded_message_pattern(parts)


def message_finding(
    kind: str,
    error_class: str,
    parts: list[Part],
    line: int,
    end_line: int,
    qualname: str,
    guards: Sequence[str],
) -> Finding:
    """A :class:`Finding` like the Python reader's, for a message found in compiled code."""
    return Finding(
        kind=kind,
        error_class=error_class,
        severity="warning" if kind == "warning" else "error",
        parts=merge_parts(parts),
        line=line,
        end_line=end_line,
        qualname=qualname,
        docstring=None,
        guards=tuple(guards),
        class_of_init=None,
    )
