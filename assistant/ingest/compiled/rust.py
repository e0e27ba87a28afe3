"""Messages raised from Rust through PyO3: ``PyValueError::new_err(...)``, ``PyErr::new::<PyTypeError, _>(...)``,
a crate's own exception types (``PydanticSerializationError::new_err``), and the error enums a crate maps
to Python classes (``impl From<MyError> for PyErr``), whose variants' messages come from thiserror's
``#[error("...")]`` or a ``Display`` impl's ``write!(f, "...")``.

A message may be a literal, ``format!`` with positional, indexed, named or captured arguments (``{}``,
``{0}``, ``{name}``, ``{:?}``), or ``"...".to_string()``. PyO3's ``PyValueError`` prints as ``ValueError``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..extract import Finding
from ..messages import Part, Placeholder, is_retrievable, merge_parts
from .blocks import Blocks
from .lexing import Source, one_line
from .templates import brace_parts, message_finding, rust_literal

_NEW_ERR_RE = re.compile(r"(?<![\w])((?:[\w]+::)*)(\w+)\s*::\s*new_err\s*\(")
_PYERR_NEW_RE = re.compile(r"\bPyErr\s*::\s*new\s*::\s*<\s*([\w:]+)\s*,\s*_\s*>\s*\(")
_EXCEPTION_NAME_RE = re.compile(r"(?:Error|Exception|Warning|Exit|Interrupt)$")
_FROM_IMPL_RE = re.compile(r"\bimpl\s+(?:[\w:]+::)?From\s*<\s*(?:[\w:]+::)?(\w+)\s*>\s+for\s+(?:[\w:]+::)?PyErr\b")
_DISPLAY_IMPL_RE = re.compile(r"\bimpl\s+(?:[\w:]+::)?Display\s+for\s+(?:[\w:]+::)?(\w+)\b")
_ENUM_RE = re.compile(r"\benum\s+(\w+)[^{;]*\{")
_ERROR_ATTR_RE = re.compile(r"#\[\s*error\s*\(")
_VARIANT_RE = re.compile(r"\s*(?:#\[[^\]]*\]\s*)*(\w+)")
_FORMAT_MACROS = ("format", "format_args")
_FN_RESULT_RE = re.compile(
    r"\bfn\s+(\w+)\s*(?:<[^>{;]*>)?\s*\([^{;]*?\)\s*->\s*(?:[\w:]+::)?Result\s*<[^{;]*?,\s*(?:[\w:]+::)?(\w+)\s*>"
)
# An error's own text as a message: format!("{}", e), format!("{e}"), e.to_string().
_DISPLAYED_RE = re.compile(
    r'\s*(?:format!\s*\(\s*"\{(\w*)\}"\s*(?:,\s*(\w+)\s*)?\)|(\w+)\s*\.\s*to_string\s*\(\s*\))\s*'
)
# An exception class a crate defines (``#[pyclass(extends=PyValueError)] struct ValidationError``), whose
# ``__str__`` gives the printed message; the methods it calls on ``self`` are followed this deep.
_PYCLASS_RE = re.compile(r"#\[\s*pyclass\s*\(")
_STRUCT_RE = re.compile(r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?struct\s+(\w+)")
_IMPL_BLOCK_RE = re.compile(r"\bimpl\s*(?:<[^>{;]*>\s*)?(?:[\w:]+::)?(\w+)\s*(?:<[^>{;]*>\s*)?\{")
_FN_DEF_RE = re.compile(r"\bfn\s+(\w+)\s*(?:<[^>{;]*>)?\s*\(")
_SELF_CALL_RE = re.compile(r"\b(?:self|slf|Self)\s*(?:\.|::)\s*(\w+)\s*\(")
_FORMAT_CALL_RE = re.compile(r"\bformat\s*!\s*\(")
MAX_FOLLOW = 3
# ``let plural = if count == 1 { "" } else { "s" };``: a value the message shows one of two ways.
_CHOICE_RE = re.compile(
    r'\blet\s+(\w+)(?:\s*:[^=;]+)?\s*=\s*if\b[^{;]*\{\s*"((?:[^"\\\n]|\\.)*)"\s*\}'
    r'\s*else\s*\{\s*"((?:[^"\\\n]|\\.)*)"\s*\}\s*;'
)
# A panic reaches Python as pyo3_runtime.PanicException with its message: ``.expect("...")``, ``panic!(...)``.
_PANIC_RE = re.compile(r"(?:\.\s*expect|\bpanic\s*!)\s*\(")
_TEST_CODE_RE = re.compile(r"#\[\s*(?:cfg\s*\(\s*test\s*\)|(?:\w+::)*test)\s*\]")
PANIC_CLASS = "PanicException"
_GENERIC_FROM_RE = re.compile(
    r"impl\s*<\s*T\s*>\s*From\s*<[^{]*<\s*T\s*>\s*>\s+for\s+PyResult\s*<\s*T\s*>[^{]*\{[^}]*$"
)


@dataclass
class RustContext:
    """What a crate's files say together of its errors: the error type of each function's ``Result``, the
    error types whose text a PyO3 exception carries (``Err(e) => PyKeyError::new_err(format!("{}", e))``
    after ``self.decode_bytes(..)``, tiktoken's), and the class every error prints as where one generic
    conversion maps them all (``impl<T> From<ToPyResult<T>> for PyResult<T>``, tokenizers')."""

    fn_errors: dict[str, str] = field(default_factory=dict)
    mapped: dict[str, str] = field(default_factory=dict)
    catch_all: str | None = None
    panics_reach_python: bool = False


def rust_context(files: Mapping[str, str]) -> RustContext:
    """The :class:`RustContext` of a tree's Rust files (name -> text)."""
    context = RustContext()
    sources = [Source(text, "rust") for name, text in files.items() if name.endswith(".rs")]
    context.panics_reach_python = any("pyo3" in source.masked for source in sources)
    for source in sources:
        for m in _FN_RESULT_RE.finditer(source.masked):
            context.fn_errors.setdefault(m.group(1), m.group(2))
    for source in sources:
        masked = source.masked
        for m in _NEW_ERR_RE.finditer(masked):
            args = source.split(m.end(), source.closing(m.end() - 1))
            shown = _DISPLAYED_RE.fullmatch(source.text[slice(*args[0])]) if len(args) == 1 else None
            if shown is None:
                continue
            error_class = python_class(m.group(2))
            if _GENERIC_FROM_RE.search(masked[max(0, m.start() - 400) : m.start()]):
                context.catch_all = context.catch_all or error_class
                continue
            calls = re.findall(r"\.\s*(\w+)\s*\(", masked[max(0, m.start() - 300) : m.start()])
            called = next((c for c in reversed(calls) if c in context.fn_errors), None)
            if called is not None:
                context.mapped.setdefault(context.fn_errors[called], error_class)
    return context


def python_class(name: str) -> str:
    """PyO3's ``PyValueError`` (or ``exceptions::PyValueError``) prints as ``ValueError``; a crate's own
    exception type keeps its name."""
    if name.startswith("Py") and name[2:3].isupper() and _EXCEPTION_NAME_RE.search(name):
        return name[2:]
    return name


def find_in_rust(text: str, context: RustContext | None = None) -> tuple[list[Finding], Counter[str]]:
    """Every message one Rust file raises into Python, and why others were skipped; ``context``: what the
    crate's other files say of its error types (:func:`rust_context`)."""
    source = Source(text, "rust")
    reader = _Reader(source)
    mappings = [(open_at, source.closing(open_at)) for open_at in reader.from_impls()]
    for m in _NEW_ERR_RE.finditer(source.masked):
        if any(start < m.start() < end for start, end in mappings):
            continue  # err.to_string() of an error enum: its variants' messages are read by enums()
        if _EXCEPTION_NAME_RE.search(m.group(2)) or m.group(2).startswith("Py"):
            reader.call(python_class(m.group(2)), m.start(), m.end() - 1)
    for m in _PYERR_NEW_RE.finditer(source.masked):
        reader.call(python_class(m.group(1).split("::")[-1]), m.start(), m.end() - 1)
    reader.enums()
    context = context or rust_context({"lib.rs": text})
    reader.displayed_errors(context)
    reader.str_messages()
    if context.panics_reach_python:
        reader.panics()
    reader.findings.sort(key=lambda f: f.line)
    return reader.findings, reader.skipped


class _Reader:
    def __init__(self, source: Source):
        self.source = source
        self.blocks = Blocks(source)
        self.findings: list[Finding] = []
        self.skipped: Counter[str] = Counter()

    def text(self, span: tuple[int, int]) -> str:
        return self.source.text[span[0] : span[1]]

    def call(self, error_class: str, start: int, open_at: int) -> None:
        close = self.source.closing(open_at)
        args = self.source.split(open_at + 1, close)
        if not args:
            self.skipped["without a message"] += 1
            return
        parts = self.message(args[0])
        if parts is not None and any(isinstance(p, str) and p.strip() for p in parts):
            self.add(error_class, parts, start, close, [])
        elif parts is None:
            self.skipped["not a literal message"] += 1
        else:
            self.skipped["too generic"] += 1

    def add(self, error_class: str, parts: list[Part], start: int, end: int, guards: list[str], qualname: str = ""):
        """``qualname``: what raises where no function holds the message (an error enum's variant), else
        the condition it raises on (``Error::Variant`` in a ``Display`` impl's ``fmt``)."""
        if not is_retrievable(parts):
            self.skipped["too generic"] += 1
            return
        found, around = self.blocks.context(start)
        if found and qualname:
            guards, qualname = [*guards, qualname], found
        qualname = qualname or found
        line, end_line = self.source.line(start), self.source.line(end)
        self.findings.append(
            message_finding("exception", error_class, parts, line, end_line, qualname, around + guards)
        )

    def literal(self, span: tuple[int, int]) -> str | None:
        """The text of a string literal (plain, raw ``r#"..."#`` or byte), or None for anything else."""
        start, end = self.source.trim(*span)
        expr = self.text((start, end))
        m = re.fullmatch(r'b?(r#*)?"(.*)"#*', expr, re.S)
        if m is None:
            return None
        return m.group(2) if m.group(1) else rust_literal(m.group(2))

    def message(self, span: tuple[int, int]) -> list[Part] | None:
        """``"..."``, ``"...".to_string()``/``.to_owned()``/``.into()``, ``String::from("...")``, ``&...``,
        ``format!(...)``; None for anything else (a variable, ``e.to_string()``)."""
        start, end = self.source.trim(*span)
        masked = self.source.masked
        while masked[start] == "&":
            start += 1
        expr = masked[start:end]
        literal = self.literal((start, end))
        if literal is not None:
            return [literal]
        m = re.search(r"\.\s*(?:to_string|to_owned|into)\s*\(\s*\)$", expr)
        if m:
            return self.message((start, start + m.start()))
        m = re.match(r"(?:String::from|std::string::String::from)\s*\(", expr)
        if m and self.source.closing(start + m.end() - 1) == end - 1:
            return self.message((start + m.end(), end - 1))
        m = re.match(r"(?:(?:std|alloc)::)?(\w+)\s*!\s*[(\[{]", expr)
        if m and m.group(1) in _FORMAT_MACROS and self.source.closing(start + m.end() - 1) == end - 1:
            return self.format_args(start + m.end(), end - 1)
        if expr.startswith("(") and self.source.closing(start) == end - 1:
            return self.message((start + 1, end - 1))
        return None

    def format_args(self, start: int, end: int, skip: int = 0) -> list[Part] | None:
        """The parts of ``format!``'s arguments (after ``skip`` leading ones, ``write!``'s ``f``)."""
        args = self.source.split(start, end)[skip:]
        if not args:
            return None
        fmt = self.literal(args[0])
        if fmt is None:
            return None
        positional: list[str] = []
        named: dict[str, str] = {}
        for arg in args[1:]:
            text = self.text(arg)
            m = re.match(r"\s*([A-Za-z_]\w*)\s*=(?!=)\s*(.*)", text, re.S)
            if m:
                named[m.group(1)] = one_line(m.group(2))
            else:
                positional.append(one_line(text))
        return brace_parts(fmt, positional, named)

    # ------------------------------------------------------------------ error enums

    def from_impls(self) -> dict[int, str]:
        """Where each ``impl From<E> for PyErr`` body opens, and E."""
        masked = self.source.masked
        found = {}
        for impl in _FROM_IMPL_RE.finditer(masked):
            open_at = masked.find("{", impl.end())
            if open_at >= 0:
                found[open_at] = impl.group(1)
        return found

    def enums(self) -> None:
        """Variants' messages of each enum a ``From<E> for PyErr`` impl maps, with the class it maps them to."""
        for open_at, enum in self.from_impls().items():
            classes = self._arm_classes(open_at, self.source.closing(open_at))
            messages = self._variant_messages(enum)
            for variant, (parts, start, end) in messages.items():
                error_class = classes.get(variant) or classes.get("_")
                if error_class is None:
                    self.skipped["not mapped to a Python class"] += 1
                    continue
                self.add(error_class, parts, start, end, [], f"{enum}::{variant}")

    def displayed_errors(self, context: RustContext) -> None:
        """The messages of this file's error types whose text the crate raises into Python elsewhere: each
        variant's (or the struct's) ``#[error(...)]`` or ``Display`` text, with the class it is raised as."""
        masked = self.source.masked
        done = set(self.from_impls().values())
        declared = re.findall(r"\b(?:enum|struct)\s+(\w+)", masked) + _DISPLAY_IMPL_RE.findall(masked)
        for name in dict.fromkeys(declared):
            error_class = context.mapped.get(name)
            if error_class is None and context.catch_all and self._is_error_type(name):
                error_class = context.catch_all
            if error_class is None or name in done:
                continue
            for variant, (parts, start, end) in self._variant_messages(name).items():
                self.add(error_class, parts, start, end, [], f"{name}::{variant}" if variant else name)

    def _is_error_type(self, name: str) -> bool:
        masked = self.source.masked
        derived = (
            r"derive\s*\([^)]*\bError\b[^)]*\)\s*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?"
            rf"(?:enum|struct)\s+{name}\b"
        )
        return bool(re.search(derived, masked) or re.search(rf"\bimpl\s+(?:[\w:]+::)?Error\s+for\s+{name}\b", masked))

    def _arm_classes(self, start: int, end: int) -> dict[str, str]:
        """Variant -> class from a ``from`` body's match arms (``E::A(..) | E::B => PyKeyError::new_err(..)``);
        ``_`` for the catch-all arm or a body without arms."""
        masked = self.source.masked
        found: dict[str, str] = {}
        for m in _NEW_ERR_RE.finditer(masked, start, end):
            error_class = python_class(m.group(2))
            arrow = masked.rfind("=>", start, m.start())
            if arrow < 0:
                found.setdefault("_", error_class)
                continue
            arm_start = max(
                masked.rfind(",", start, arrow), masked.rfind("{", start, arrow), masked.rfind("}", start, arrow)
            )
            pattern = masked[arm_start + 1 : arrow]
            variants = re.findall(r"(?:\w+|Self)::(\w+)", pattern)
            for variant in variants or (["_"] if pattern.strip() == "_" else []):
                found.setdefault(variant, error_class)
        return found

    def _variant_messages(self, enum: str) -> dict[str, tuple[list[Part], int, int]]:
        """Each variant's message: from ``#[error("...")]`` on the enum, else its ``Display`` impl's arms."""
        masked = self.source.masked
        found: dict[str, tuple[list[Part], int, int]] = {}
        for m in _ENUM_RE.finditer(masked):
            if m.group(1) != enum:
                continue
            body_end = self.source.closing(m.end() - 1)
            for attr in _ERROR_ATTR_RE.finditer(masked, m.end(), body_end):
                close = self.source.closing(attr.end() - 1)
                variant = _VARIANT_RE.match(masked, masked.find("]", close) + 1)
                parts = self.format_args(attr.end(), close)
                if variant and parts is not None:
                    found[variant.group(1)] = (parts, attr.start(), close)
        for impl in _DISPLAY_IMPL_RE.finditer(masked):
            if impl.group(1) != enum:
                continue
            open_at = masked.find("{", impl.end())
            body_end = self.source.closing(open_at)
            for write in re.finditer(r"\bwrite(?:ln)?\s*!\s*\(", masked[:body_end]):
                if write.start() < open_at:
                    continue
                arrow = masked.rfind("=>", open_at, write.start())
                variant = (
                    re.findall(r"(?:\w+|Self)::(\w+)", masked[max(arrow - 200, open_at) : arrow]) if arrow > 0 else [""]
                )
                close = self.source.closing(write.end() - 1)
                parts = self.format_args(write.end(), close, skip=1)
                if variant and parts is not None and variant[-1] not in found:
                    found[variant[-1]] = (parts, write.start(), close)
        return found

    # ------------------------------------------------------------------ __str__ and panics

    def exception_classes(self) -> dict[str, str]:
        """Each struct declared a Python exception with ``#[pyclass(extends=PyValueError, name="...")]`` and
        the class it prints as."""
        masked, text = self.source.masked, self.source.text
        found = {}
        for m in _PYCLASS_RE.finditer(masked):
            close = self.source.closing(m.end() - 1)
            attr = text[m.end() : close]
            base = re.search(r"\bextends\s*=\s*([\w:]+)", attr)
            struct = _STRUCT_RE.match(masked, masked.find("]", close) + 1)
            if base is None or struct is None or not _EXCEPTION_NAME_RE.search(python_class(base.group(1))):
                continue
            name = re.search(r'\bname\s*=\s*"(\w+)"', attr)
            found[struct.group(1)] = name.group(1) if name else struct.group(1)
        return found

    def methods(self, struct: str) -> dict[str, tuple[int, int]]:
        """The body (open, close) of each method in the file's ``impl`` blocks of ``struct``."""
        masked = self.source.masked
        found: dict[str, tuple[int, int]] = {}
        for impl in _IMPL_BLOCK_RE.finditer(masked):
            if impl.group(1) != struct or re.search(r"\bfor\s*$", masked[impl.start() : impl.end() - 1]):
                continue
            end = self.source.closing(impl.end() - 1)
            for fn in _FN_DEF_RE.finditer(masked, impl.end(), end):
                open_at = masked.find("{", self.source.closing(fn.end() - 1), end)
                if open_at > 0 and ";" not in masked[self.source.closing(fn.end() - 1) : open_at]:
                    found.setdefault(fn.group(1), (open_at, self.source.closing(open_at)))
        return found

    def str_messages(self) -> None:
        """The messages an exception class's ``__str__`` returns, following the methods it calls on itself
        (pydantic-core's ``ValidationError.__str__`` -> ``__repr__`` -> ``display``'s ``format!``)."""
        for struct, printed in self.exception_classes().items():
            methods = self.methods(struct)
            queue, seen = [("__str__", 0)], set()
            while queue:
                name, depth = queue.pop(0)
                if name in seen or name not in methods:
                    continue
                seen.add(name)
                start, end = methods[name]
                for call in _FORMAT_CALL_RE.finditer(self.source.masked, start, end):
                    close = self.source.closing(call.end() - 1)
                    parts = self.format_args(call.end(), close)
                    for variant in _variants(parts, self.choices(start, call.start())) if parts else []:
                        self.add(printed, _first_line(variant), call.start(), close, [f"{struct}.__str__"])
                if depth < MAX_FOLLOW:
                    queue += [(c, depth + 1) for c in _SELF_CALL_RE.findall(self.source.masked, start, end)]

    def choices(self, start: int, end: int) -> dict[str, tuple[str, str]]:
        """Variables a function binds to one of two literals before ``end`` (``let plural = if ...``)."""
        return {
            m.group(1): (rust_literal(m.group(2)), rust_literal(m.group(3)))
            for m in _CHOICE_RE.finditer(self.source.text, start, end)
        }

    def panics(self) -> None:
        """``.expect("...")`` and ``panic!(...)`` outside tests: PyO3 raises them as ``PanicException``."""
        masked = self.source.masked
        tests = []
        for m in _TEST_CODE_RE.finditer(masked):
            open_at = masked.find("{", m.end())
            if open_at > 0:
                tests.append((m.start(), self.source.closing(open_at)))
        for m in _PANIC_RE.finditer(masked):
            if any(start <= m.start() <= end for start, end in tests):
                continue
            close = self.source.closing(m.end() - 1)
            if masked[m.start()] == ".":
                args = self.source.split(m.end(), close)
                literal = self.literal(args[0]) if len(args) == 1 else None
                parts: list[Part] | None = [literal] if literal else None
            else:
                parts = self.format_args(m.end(), close)
            if parts is not None:
                self.add(PANIC_CLASS, parts, m.start(), close, ["panic"])


def _variants(parts: list[Part], choices: dict[str, tuple[str, str]]) -> list[list[Part]]:
    """The message once for each way its two-way values (``{plural}``) print."""
    variants: list[list[Part]] = [[]]
    for part in parts:
        options = choices.get(part.expr) if isinstance(part, Placeholder) else None
        variants = [[*v, option] for v in variants for option in options] if options else [[*v, part] for v in variants]
    return [merge_parts(v) for v in variants[:4]]


def _first_line(parts: list[Part]) -> list[Part]:
    """The printed error line: the message up to a line break followed by values only (``\\n{line_errors}``)."""
    for i, part in enumerate(parts):
        if isinstance(part, str) and "\n" in part:
            head, _, tail = part.partition("\n")
            if not any(isinstance(p, str) and re.search("[A-Za-z]", p) for p in [tail, *parts[i + 1 :]]):
                return merge_parts([*parts[:i], head])
            return parts
    return parts
