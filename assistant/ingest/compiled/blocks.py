"""What surrounds a message in brace-delimited code (C, C++, Rust): the function it is in and the
conditions that guard it, read from the heads of the blocks around it (``if (...) {``, ``fn name(...) {``).

A guard is the condition as written (``n < 0``), or ``!(...)`` in the ``else`` of an ``if``; a C++
``catch (...)`` block reads as Python's ``except``, so a record says it happens while handling an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lexing import Source, one_line

_C_NOT_FUNCTIONS = frozenset(
    {"if", "while", "for", "switch", "catch", "return", "sizeof", "decltype", "alignof", "alignas", "__attribute__"}
    | {"defined", "static_assert", "noexcept", "throw", "new", "delete", "typeid", "__declspec"}
)
_C_CALLABLE_RE = re.compile(r"(?<![\w:~])(~?[A-Za-z_][\w]*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*(?:<[^;{}()]*>)?\s*\(")
_C_TYPE_RE = re.compile(
    r"^(?:template\s*<.*>\s*)?(?:class|struct)\s+(?:\w+\s+)*?(\w+)\s*(?:final\s*)?(?::[^{]*)?$", re.S
)
_RUST_FN_RE = re.compile(r"\bfn\s+(\w+)")
_RUST_IMPL_RE = re.compile(r"^(?:unsafe\s+)?impl\b(?:\s*<.*?>)?\s+(?:.*?\bfor\s+)?(?:[\w:]+::)?(\w+)", re.S)
_RUST_TYPE_RE = re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?(?:trait|mod)\s+(\w+)")


@dataclass(frozen=True)
class Block:
    open: int
    close: int


class Blocks:
    """The ``{...}`` blocks of one file, and what the heads of those around an offset say."""

    def __init__(self, source: Source):
        self.source = source
        stack: list[int] = []
        self.blocks: list[Block] = []
        for k, ch in enumerate(source.masked):
            if ch == "{":
                stack.append(k)
            elif ch == "}" and stack:
                self.blocks.append(Block(stack.pop(), k))
        self.blocks.sort(key=lambda b: b.open)
        self._by_close = {b.close: b for b in self.blocks}

    def head(self, block: Block) -> tuple[str, str]:
        """The text before a block's ``{``, from the end of the statement before it: masked (to tell what it
        is by) and as written (for the condition it states), of one length."""
        start = self.source.statement_start(block.open)
        return self.source.masked[start : block.open], self.source.text[start : block.open]

    def around(self, offset: int) -> list[Block]:
        """The blocks holding ``offset``, outermost first."""
        return [b for b in self.blocks if b.open < offset < b.close]

    def context(self, offset: int) -> tuple[str, list[str]]:
        """(qualname, guards) at ``offset``: the enclosing function (``Type::name``) and the conditions
        of the ``if``/``else``/``catch`` blocks between it and the offset, outermost first."""
        rust = self.source.language == "rust"
        owner = ""
        function = ""
        guards: list[str] = []
        for block in self.around(offset):
            head = self.head(block)
            kind, value = (_rust_head if rust else _c_head)(*head)
            if kind == "type":
                owner, function, guards = value, "", []
            elif kind == "function":
                function, guards = value, []
            elif kind == "guard":
                guards.append(value)
            elif kind == "else":
                previous = self._sibling_before(block)
                p_kind, p_value = "other", ""
                if previous is not None:
                    p_kind, p_value = (_rust_head if rust else _c_head)(*self.head(previous))
                elif not rust:  # if (cond) statement; else { ... }
                    p_value = self.statement_guard(self.source.statement_start(block.open) - 1, whole=True) or ""
                    p_kind = "guard" if p_value else "other"
                if p_kind == "guard" and not p_value.startswith("except"):
                    guards.append(f"!({p_value})")
        if function and owner and "::" not in function:
            function = f"{owner}::{function}"
        guard = self.statement_guard(offset)
        if guard:
            guards.append(guard)
        return function or owner, guards

    def statement_guard(self, offset: int, whole: bool = False) -> str | None:
        """The condition of a brace-less ``if (cond) <statement>`` whose statement starts at ``offset`` (with
        ``whole``: ends at ``offset``)."""
        if self.source.language == "rust":
            return None
        start = self.source.statement_start(offset)
        head = self.source.masked[start:offset]
        m = re.match(r"\s*(?:else\s+)?if\s*\(", head)
        if m is None:
            return None
        open_at = start + m.end() - 1
        close = self.source.closing(open_at)
        if (
            close >= offset
            or not whole
            and self.source.masked[close + 1 : offset].strip() not in ("", "throw", "return")
        ):
            return None
        return one_line(self.source.text[open_at + 1 : close])

    def _sibling_before(self, block: Block) -> Block | None:
        start = self.source.statement_start(block.open)
        k = start - 1
        return self._by_close.get(k)


def _c_head(masked: str, written: str) -> tuple[str, str]:
    """What a C or C++ block head is: ("guard", cond), ("else", ""), ("function", name), ("type", name).

    It is told from the masked head (no comments or literals to mislead it); a condition is given as written.
    """
    flat = one_line(masked)
    m = re.match(r"\s*(?:else\s+)?if\s*(?:constexpr\s*)?\(", masked)
    if m and flat.endswith(")"):
        return "guard", _written(written, m.end(), masked.rstrip().rfind(")"))
    if flat == "else":
        return "else", ""
    m = re.match(r"\s*catch\s*\(", masked)
    if m and flat.endswith(")"):
        caught = _written(written, m.end(), masked.rstrip().rfind(")"))
        return "guard", "except" if caught == "..." else f"except {caught}"
    if re.match(r"(?:while|for|switch|do|try|namespace|extern|enum|union)\b", flat) or flat.endswith("="):
        return "other", ""
    m = _C_TYPE_RE.match(flat)
    if m:
        return "type", m.group(1)
    if flat.startswith("[") or "=" in flat.split("(", 1)[0]:
        return "other", ""  # a lambda, an initializer
    for m in _C_CALLABLE_RE.finditer(flat):
        name = re.sub(r"\s+", "", m.group(1))
        if name.split("::")[-1] not in _C_NOT_FUNCTIONS and not name.isupper():
            return "function", name
    return "other", ""


def _rust_head(masked: str, written: str) -> tuple[str, str]:
    """What a Rust block head is, as :func:`_c_head` says it."""
    attributes = re.match(r"\s*(?:#\[[^\]]*\]\s*)*", masked)
    skip = attributes.end() if attributes else 0
    flat = one_line(masked[skip:])
    m = re.match(r"\s*(?:else\s+)?if\s+", masked[skip:])
    if m:
        return "guard", _written(written, skip + m.end(), len(masked.rstrip()))
    if flat == "else":
        return "else", ""
    m = _RUST_IMPL_RE.match(flat)
    if m:
        return "type", m.group(1)
    m = _RUST_TYPE_RE.match(flat)
    if m:
        return "type", m.group(1)
    m = _RUST_FN_RE.search(flat)
    if m and "=>" not in flat and "|" not in flat.split("fn", 1)[0]:
        return "function", m.group(1)
    return "other", ""


def _written(text: str, start: int, end: int) -> str:
    """A stretch of a head as written, without comments, on one line."""
    return one_line(re.sub(r"/\*.*?\*/|//[^\n]*", " ", text[start:end], flags=re.S))
