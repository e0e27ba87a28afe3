"""Messages raised in C and C++: CPython's ``PyErr_SetString`` / ``PyErr_Format`` / ``PyErr_WarnEx``, C++
``throw X(msg)`` (pybind11's ``py::value_error`` among them) and projects' own check macros
(``FAISS_THROW_IF_NOT_FMT``, listed in ``macros.json``).

The printed class is what the binding makes of it: ``PyExc_ValueError`` is ``ValueError``; under pybind11
``std::invalid_argument`` is ``ValueError`` and a C++ type it registers (``py::register_exception<E>(m,
"Name")``) prints as that name; under SWIG (FAISS) every C++ exception prints as ``RuntimeError``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..extract import Finding
from ..messages import Part, Placeholder, is_retrievable
from .blocks import Blocks, _c_head
from .lexing import Source, one_line
from .status import ARROW_THROWN, read_statuses, uses_arrow_status
from .templates import brace_parts, c_literal, message_finding, printf_parts

PYBIND11 = "pybind11"
SWIG = "swig"
_PYBIND11_CLASSES = {
    "invalid_argument": "ValueError",
    "domain_error": "ValueError",
    "length_error": "ValueError",
    "range_error": "ValueError",
    "out_of_range": "IndexError",
    "overflow_error": "OverflowError",
    "bad_alloc": "MemoryError",
    "value_error": "ValueError",
    "type_error": "TypeError",
    "key_error": "KeyError",
    "index_error": "IndexError",
    "attribute_error": "AttributeError",
    "buffer_error": "BufferError",
    "import_error": "ImportError",
    "stop_iteration": "StopIteration",
}
# CPython's old names for one class print as the class.
_PY_ALIASES = {"IOError": "OSError", "EnvironmentError": "OSError", "WindowsError": "OSError"}
_PYERR_RE = re.compile(r"\b(PyErr_SetString|PyErr_Format|PyErr_WarnEx|PyErr_WarnFormat)\s*\(")
_THROW_RE = re.compile(r"\bthrow\s+(?:new\s+)?(:{0,2}[A-Za-z_][\w:]*(?:\s*<[^;{}()]*>)?)\s*([({])")
_REGISTERED_RE = re.compile(
    r"\b(?:register_exception|register_local_exception|exception)\s*<\s*([\w:]+)\s*>\s*\(\s*\w+\s*,\s*\"(\w+)\""
)
_NEW_EXCEPTION_RE = re.compile(r"(\w+)\s*=\s*PyErr_NewException(?:WithDoc)?\s*\(\s*\"([\w.]+)\"")
_FORMAT_MACRO_RE = re.compile(r"^(?:PRI([diouxX])\w*|SCN\w+|PY_FORMAT_SIZE_T|NPY_\w*_FMT)$")
_BRACE_FORMATTERS = {"format", "fmt::format", "std::format", "fmt::sprintf"}
# A message held in a local variable: the variable, its C string or its stream's text (msg, buf.c_str(), ss.str()).
_VARIABLE_RE = re.compile(r"([A-Za-z_]\w*)(?:\s*\.\s*(?:c_str|data|str)\s*\(\s*\))?")
_PRINTF_INTO = {"snprintf": 2, "PyOS_snprintf": 2, "std::snprintf": 2, "sprintf": 1, "std::sprintf": 1}
MAX_VALUES = 4  # values of one variable a raise is read with
_CONCATENATORS = {"StrCat", "absl::StrCat"}
# A function that raises the message it is given: Pillow's ``ImagingError_ValueError(const char *message)``.
_WRAPPER_DEF_RE = re.compile(r"\b([A-Za-z_]\w*)\s*\(([^()]*\bchar\s*\*\s*\w+[^()]*)\)\s*\{")
_WRAPPER_RAISE_RE = re.compile(r"\bPyErr_SetString\s*\(\s*(\w+)\s*,([^;]*)\)\s*;")
_NOT_FUNCTIONS = {"if", "while", "for", "switch", "return", "sizeof"}


@dataclass
class CContext:
    """What the whole tree says about how C++ exceptions reach Python, and the macros it defines."""

    binding: str = PYBIND11
    registered: dict[str, str] = field(default_factory=dict)  # C++ type or C variable -> Python class
    macro_definitions: dict[str, str] = field(default_factory=dict)  # NAME -> its #define line(s)
    wrappers: dict[str, tuple[str, int]] = field(default_factory=dict)  # function -> (class, message argument)
    arrow_status: bool = False  # Arrow's Status::Invalid(...) raised by pyarrow (.status)


def tree_context(files: dict[str, str]) -> CContext:
    """The binding (SWIG where a ``.i``/``.swig`` interface and no pybind11 include is found), the exception
    types registered with pybind11 or created with ``PyErr_NewException``, and the known macros' definitions."""
    has_swig = any(name.endswith((".i", ".swig")) for name in files)
    has_pybind = any("pybind11/" in text or "nanobind/" in text for text in files.values())
    context = CContext(binding=SWIG if has_swig and not has_pybind else PYBIND11)
    names = set(macros())
    if uses_arrow_status(files):
        context.arrow_status = True
        context.registered.update(ARROW_THROWN)
    for text in files.values():
        for m in _REGISTERED_RE.finditer(text):
            context.registered[m.group(1).split("::")[-1]] = m.group(2)
        for m in _NEW_EXCEPTION_RE.finditer(text):
            context.registered[m.group(1)] = m.group(2).rsplit(".", 1)[-1]
        if "PyErr_SetString" in text:
            context.wrappers.update(_raising_wrappers(text))
        if "#define" in text:
            for m in re.finditer(r"#\s*define\s+(\w+)\s*\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", text):
                if m.group(1) in names:
                    context.macro_definitions[m.group(1)] = m.group(0)
    return context


def _raising_wrappers(text: str) -> dict[str, tuple[str, int]]:
    """Functions whose body raises one of their ``char *`` parameters with ``PyErr_SetString``: name -> (the
    class, the parameter's position)."""
    found = {}
    for m in _WRAPPER_DEF_RE.finditer(text):
        if m.group(1) in _NOT_FUNCTIONS or m.group(1).startswith("PyErr_"):
            continue
        params = [re.findall(r"\w+", p)[-1:] for p in m.group(2).split(",")]
        body_end = text.find("\n}", m.end())
        raise_ = _WRAPPER_RAISE_RE.search(text, m.end(), body_end if body_end > 0 else m.end() + 600)
        if raise_ is None:
            continue
        used = re.match(r"[\s(]*(\w+)", raise_.group(2))  # the message, or a test of it: (message) ? ...
        position = next((i for i, p in enumerate(params) if p and used and used.group(1) == p[0]), None)
        if position is not None:
            found[m.group(1)] = (raise_.group(1), position)
    return found


@cache
def macros() -> dict[str, dict]:
    """The check macros ``macros.json`` lists."""
    data = json.loads((Path(__file__).with_name("macros.json")).read_text(encoding="utf-8"))
    return data["macros"]


def find_in_c(text: str, context: CContext | None = None) -> tuple[list[Finding], Counter[str]]:
    """Every message raised or warned in one C or C++ file, and why others were skipped."""
    context = context or tree_context({"": text})
    source = Source(text, "c")
    blocks = Blocks(source)
    reader = _Reader(source, blocks, context)
    for m in _PYERR_RE.finditer(source.masked):
        reader.pyerr(m)
    for m in _THROW_RE.finditer(source.masked):
        reader.throw(m)
    if context.wrappers:
        pattern = re.compile(r"(?<![\w.>])(" + "|".join(map(re.escape, context.wrappers)) + r")\s*\(")
        for m in pattern.finditer(source.masked):
            reader.wrapper(m, *context.wrappers[m.group(1)])
    if context.arrow_status:
        read_statuses(reader)
    known = macros()
    if known:
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, known)) + r")\s*\(")
        for m in pattern.finditer(source.masked):
            reader.macro(m, known[m.group(1)])
    reader.findings.sort(key=lambda f: f.line)
    return reader.findings, reader.skipped


class _Reader:
    def __init__(self, source: Source, blocks: Blocks, context: CContext):
        self.source = source
        self.blocks = blocks
        self.context = context
        self.findings: list[Finding] = []
        self.skipped: Counter[str] = Counter()

    def args(self, open_at: int) -> tuple[list[tuple[int, int]], int]:
        close = self.source.closing(open_at)
        return self.source.split(open_at + 1, close), close

    def text(self, span: tuple[int, int]) -> str:
        return self.source.text[span[0] : span[1]]

    def pyerr(self, m: re.Match[str]) -> None:
        args, close = self.args(m.end() - 1)
        name = m.group(1)
        kind = "warning" if name.startswith("PyErr_Warn") else "exception"
        if name == "PyErr_WarnFormat":  # (category, stacklevel, format, ...)
            args = args[:1] + args[2:]
        if len(args) < 2:
            self.skipped["without a message"] += 1
            return
        error_class = self.python_class(self.text(args[0]))
        if name in ("PyErr_Format", "PyErr_WarnFormat"):
            self.add(kind, error_class, self.printf(args[1], [self.text(a) for a in args[2:]]), m.start(), close, [])
            return
        for parts in self.messages(args[1]):
            self.add(kind, error_class, parts, m.start(), close, [])

    def wrapper(self, m: re.Match[str], error_class: str, position: int) -> None:
        """A call of a function that raises its message argument (not the function's own definition)."""
        args, close = self.args(m.end() - 1)
        if len(args) <= position or self.source.masked[close + 1 : close + 40].lstrip().startswith("{"):
            return
        if self.literal(args[position]) is None and not re.search(r"\w\s*$", self.text(args[position])):
            return
        for parts in self.messages(args[position]):
            if parts is not None:
                self.add("exception", self.python_class(error_class), parts, m.start(), close, [])

    def throw(self, m: re.Match[str]) -> None:
        args, close = self.args(m.end() - 1)
        if not args:
            self.skipped["without a message"] += 1
            return
        cpp_type = re.sub(r"\s*<.*", "", m.group(1)).lstrip(":")
        if self.context.arrow_status and cpp_type.split("::")[-1] not in self.context.registered:
            self.skipped["not raised into Python"] += 1  # Arrow reports errors as Status; a throw stays in C++
            return
        for parts in self.messages(args[0]):
            self.add("exception", self.cpp_class(cpp_type), parts, m.start(), close, [])

    def macro(self, m: re.Match[str], spec: dict) -> None:
        args, close = self.args(m.end() - 1)
        params = spec["params"]
        fixed = [p for p in params if p != "..."]
        if len(args) < len(fixed):
            self.skipped["without a message"] += 1
            return
        bound = {p: args[i] for i, p in enumerate(fixed)}
        rest = [self.text(a) for a in args[len(fixed) :]]
        template = spec["message"]
        definition = self.context.macro_definitions.get(m.group(1), "")
        for defined_as, other in spec.get("when_defined_as", {}).items():
            if re.search(defined_as, definition):
                template = other
        parts: list[Part] | None = []
        for piece in re.split(r"(\{#?\w+\})", template):
            if parts is None:  # a format or message that is not literal: no record
                break
            name = piece[1:-1].lstrip("#") if piece.startswith("{") else None
            if name is None or name not in bound:
                parts.append(piece)  # type: ignore[union-attr]
            elif piece.startswith("{#"):
                parts.append(one_line(self.text(bound[name])))  # type: ignore[union-attr]
            elif name == "FMT":
                found = self.printf(bound[name], rest)
                parts = None if found is None or parts is None else parts + found
            elif name == "MSG":
                found = self.message(bound[name])
                parts = None if found is None or parts is None else parts + found
            else:
                parts.append(Placeholder(one_line(self.text(bound[name]))))  # type: ignore[union-attr]
        guards = []
        if "raises_unless" in spec:
            guards.append(f"!({one_line(self.text(bound[spec['raises_unless']]))})")
        elif "raises_when" in spec:
            guards.append(one_line(self.text(bound[spec["raises_when"]])))
        self.add("exception", spec["class"], parts, m.start(), close, guards)

    def add(self, kind: str, error_class: str, parts: list[Part] | None, start: int, end: int, guards: list[str]):
        if parts is None:
            self.skipped["not a literal message"] += 1
            return
        if not is_retrievable(parts):
            self.skipped["too generic"] += 1
            return
        qualname, around = self.blocks.context(start)
        finding = message_finding(
            kind, error_class, parts, self.source.line(start), self.source.line(end), qualname, [*around, *guards]
        )
        self.findings.append(finding)

    # ------------------------------------------------------------------ classes

    def python_class(self, expr: str) -> str:
        """``PyExc_ValueError`` -> ``ValueError``; a module's own exception object -> the name it was made with."""
        name = re.findall(r"\w+", expr)[-1] if re.search(r"\w", expr) else expr
        if name in self.context.registered:
            return self.context.registered[name]
        name = name.removeprefix("PyExc_")
        return _PY_ALIASES.get(name, name)

    def cpp_class(self, cpp_type: str) -> str:
        short = cpp_type.split("::")[-1]
        if short in self.context.registered:
            return self.context.registered[short]
        if self.context.binding == SWIG:
            return "RuntimeError"
        return _PYBIND11_CLASSES.get(short, "RuntimeError")

    # ------------------------------------------------------------------ messages

    def printf(self, span: tuple[int, int], args: list[str]) -> list[Part] | None:
        """A printf call's parts, when its format is made of literals."""
        fmt = self.literal(span)
        return None if fmt is None else printf_parts(fmt, args)

    def messages(self, span: tuple[int, int]) -> list[list[Part] | None]:
        """The parts of a raise's message; for a local variable (``msg``, ``buf``, ``ss.str()``), those of each
        value the function gives it before the raise: assigned, initialised, ``snprintf``'d or streamed."""
        parts = self.message(span)
        start, end = self.source.trim(*span)
        variable = _VARIABLE_RE.fullmatch(self.source.masked[start:end])
        if parts is not None or variable is None:
            return [parts]
        return self.values(variable.group(1), start)[:MAX_VALUES] or [None]

    def values(self, name: str, before: int) -> list[list[Part]]:
        """The messages given to the variable ``name`` in the function holding ``before``, nearest first."""
        masked = self.source.masked
        low = next(
            (b.open for b in reversed(self.blocks.around(before)) if _c_head(*self.blocks.head(b))[0] == "function"),
            max(0, before - 4000),
        )
        found: list[tuple[int, list[Part]]] = []
        streamed: list[Part] = []
        pattern = re.compile(rf"(?<![\w.>])({re.escape(name)})\s*(?:\[[^\]]*\]\s*)?(=(?!=)|<<|\(|\{{)")
        for m in pattern.finditer(masked, low, before):
            end = masked.find(";", m.end(), before)
            if end < 0:
                continue
            if m.group(2) == "=":
                parts = self._message((m.end(), end))
            elif m.group(2) == "<<":
                for piece in re.split(r"<<", self.text((m.end(), end))):
                    literal = re.fullmatch(r'\s*"([^"]*)"\s*', piece)
                    streamed.append(c_literal(literal.group(1)) if literal else Placeholder(one_line(piece)))
                continue
            elif re.search(r"[\w>&*]\s*$", masked[low : m.start()]):  # std::string msg("..."), a declaration
                args, _ = self.args(m.end() - 1)
                parts = self._message(args[0]) if len(args) == 1 else None
            else:
                continue
            if parts is not None:
                found.append((m.start(), parts))
        for call, fmt_at in _PRINTF_INTO.items():
            for m in re.finditer(rf"(?<![\w:]){re.escape(call)}\s*\(\s*{re.escape(name)}\s*,", masked[:before]):
                if m.start() < low:
                    continue
                args, _ = self.args(masked.index("(", m.start()))
                found += self._printed_into(args, fmt_at, m.start())
        if streamed:
            found.append((before, streamed))
        values = [parts for _at, parts in sorted(found, key=lambda item: -item[0])]
        worded = [p for p in values if any(isinstance(x, str) and x.strip() for x in p)]
        return [p for i, p in enumerate(worded) if p not in worded[:i]]

    def _printed_into(self, args: list[tuple[int, int]], fmt_at: int, at: int) -> list[tuple[int, list[Part]]]:
        """``snprintf(buf, n, fmt, ...)``'s message: its format a literal or a variable holding one."""
        if len(args) <= fmt_at:
            return []
        fmt = self.literal(args[fmt_at])
        if fmt is None and (variable := _VARIABLE_RE.fullmatch(self.source.masked[slice(*args[fmt_at])].strip())):
            held = [p[0] for p in self.values(variable.group(1), at) if len(p) == 1 and isinstance(p[0], str)]
            fmt = held[0] if held else None
        return [] if fmt is None else [(at, printf_parts(fmt, [self.text(a) for a in args[fmt_at + 1 :]]))]

    def literal(self, span: tuple[int, int]) -> str | None:
        """The text of adjacent literals (``"a" "b"``, ``"%" PRId64 " rows"``), or None for anything else."""
        text, masked = self.source.text, self.source.masked
        pieces: list[str] = []
        k = span[0]
        while k < span[1]:
            ch = masked[k]
            if ch.isspace():
                k += 1
            elif ch == '"' or (ch in "uUL" and '"' in masked[k : k + 3]):
                quote = masked.index('"', k)
                end = quote + 1
                while end < span[1] and masked[end] != '"':
                    end += 1
                pieces.append(c_literal(text[quote + 1 : end]))
                k = end + 1
            else:
                m = re.match(r"\w+", masked[k:])
                if m is None:
                    return None
                macro = _FORMAT_MACRO_RE.match(m.group(0))
                if macro is None:
                    return None
                pieces.append("ll" + (macro.group(1) or "d") if macro.group(1) or "_FMT" in m.group(0) else "z")
                k += m.end()
        return "".join(pieces) if pieces else None

    def message(self, span: tuple[int, int]) -> list[Part] | None:
        """A message expression's parts: literals, ``+`` concatenation, ``std::string(...)``, ``.c_str()``,
        ``fmt::format`` / ``absl::StrFormat`` / ``absl::StrCat`` and ``std::to_string(x)``."""
        parts = self._message(span)
        return parts if parts is not None and any(isinstance(p, str) and p.strip() for p in parts) else None

    def _message(self, span: tuple[int, int]) -> list[Part] | None:
        start, end = self.source.trim(*span)
        masked = self.source.masked
        pieces = self.source.split(start, end, "+")
        if len(pieces) > 1:
            out: list[Part] = []
            for piece in pieces:
                out += self._message(piece) or [Placeholder(one_line(self.text(piece)))]
            return out
        literal = self.literal((start, end))
        if literal is not None:
            return [literal]
        expr = masked[start:end]
        if expr.endswith(".c_str()") or expr.endswith(".data()"):
            return self._message((start, start + expr.rindex(".")))
        if expr.startswith("(") and self.source.closing(start) == end - 1:
            return self._message((start + 1, end - 1))
        call = re.match(r"([A-Za-z_][\w:]*)\s*(?:<[^()]*>)?\s*[({]", expr)
        if call and self.source.closing(start + call.end() - 1) == end - 1:
            name = call.group(1)
            args, _ = self.args(start + call.end() - 1)
            short = name.split("::")[-1]
            if short in ("string", "String", "str") and len(args) == 1:
                return self._message(args[0])
            if short == "to_string" and len(args) == 1:
                return [Placeholder(one_line(self.text(args[0])))]
            if name in _BRACE_FORMATTERS and args and (fmt := self.literal(args[0])) is not None:
                return brace_parts(fmt, [self.text(a) for a in args[1:]])
            if ("printf" in short.lower() or short == "StrFormat") and args:
                fmt = self.literal(args[0])
                return None if fmt is None else printf_parts(fmt, [self.text(a) for a in args[1:]])
            if short in _CONCATENATORS:
                out = []
                for arg in args:
                    out += self._message(arg) or [Placeholder(one_line(self.text(arg)))]
                return out
        fmt_call = re.match(r"(?:py|pybind11|nb)::str\s*\(", expr)
        if fmt_call:  # py::str("... {}").format(x)
            close = self.source.closing(start + fmt_call.end() - 1)
            rest = masked[close + 1 : end]
            if rest.startswith(".format(") and self.source.closing(close + 8) == end - 1:
                fmt = self.literal((start + fmt_call.end(), close))
                args, _ = self.args(close + 8)
                if fmt is not None:
                    return brace_parts(fmt, [self.text(a) for a in args])
        return None
