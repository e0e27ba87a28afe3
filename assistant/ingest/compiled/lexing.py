"""Reading C, C++, Rust and Cython at the level of a lexer: nothing is compiled, parsed or preprocessed.

:func:`mask` gives a copy of the text of the same length in which comments, the contents of string and
character literals and (in C) preprocessor lines are blanked, so that regular expressions and bracket
matching run on code alone while the original text still gives the literals. :class:`Source` holds
both, finds where brackets close, splits arguments and tells the line of an offset.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}
_PY_STRING_RE = re.compile(r"(?i)(?:[rbuf]{0,2})(\"\"\"|'''|\"|')")
_RUST_RAW_RE = re.compile(r"b?r(#*)\"")
_C_RAW_RE = re.compile(r"(?:u8|[uUL])?R\"([^()\\\s]{0,16})\(")
_RUST_CHAR_RE = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.)|[^\\'\n])'")


def mask(text: str, language: str) -> str:
    """``text`` with comments, literal contents and (C, C++) preprocessor lines blanked; newlines kept.

    ``language`` is ``"c"`` (C and C++), ``"rust"`` or ``"python"`` (Cython). Quotes stay, so a literal
    still shows where it is.
    """
    out = list(text)
    n = len(text)
    i = 0
    line_start = True

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        ch = text[i]
        if ch == "\n":
            line_start = True
            i += 1
            continue
        if line_start and language == "c" and ch == "#":
            end = i
            while end < n and text[end] != "\n":  # a directive runs on over backslash-newlines
                end = text.find("\n", end)
                end = n if end < 0 else end
                if text[end - 1] == "\\":
                    end += 1
                    continue
                break
            blank(i, end)
            i = end
            continue
        if not ch.isspace():
            line_start = False
        if language == "python":
            if ch == "#":
                end = text.find("\n", i)
                end = n if end < 0 else end
                blank(i, end)
                i = end
                continue
            m = _PY_STRING_RE.match(text, i) if ch in "\"'rRbBuUfF" else None
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                end = _python_string_end(text, m.end(), m.group(1))
                blank(m.end(), end - len(m.group(1)))
                i = end
                continue
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
            continue
        if text.startswith("/*", i):
            end = _block_comment_end(text, i, nested=language == "rust")
            blank(i, end)
            i = end
            continue
        if language == "rust" and ch in "rb":
            m = _RUST_RAW_RE.match(text, i)
            if m and not _ident_before(text, i):
                close = '"' + m.group(1)
                end = text.find(close, m.end())
                end = n if end < 0 else end + len(close)
                blank(m.end(), end - len(close))
                i = end
                continue
        if language == "c" and ch in "uULR":
            m = _C_RAW_RE.match(text, i)
            if m and not _ident_before(text, i):
                close = ")" + m.group(1) + '"'
                end = text.find(close, m.end())
                end = n if end < 0 else end + len(close)
                blank(m.end(), end - len(close))
                i = end
                continue
        if ch == '"':
            end = _quoted_end(text, i + 1, '"', multiline=language == "rust")
            blank(i + 1, end - 1)
            i = end
            continue
        if ch == "'":
            if language == "rust":
                m = _RUST_CHAR_RE.match(text, i)
                if m is None:  # a lifetime ('a) or a label
                    i += 1
                    continue
                blank(i + 1, m.end() - 1)
                i = m.end()
                continue
            if i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                i += 1  # a C++14 digit separator: 1'000'000
                continue
            end = _quoted_end(text, i + 1, "'", multiline=False)
            blank(i + 1, end - 1)
            i = end
            continue
        i += 1
    return "".join(out)


def _ident_before(text: str, i: int) -> bool:
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def _block_comment_end(text: str, i: int, nested: bool) -> int:
    depth = 0
    k = i
    while k < len(text):
        if text.startswith("/*", k):
            depth += 1 if nested or depth == 0 else 0
            k += 2
        elif text.startswith("*/", k):
            depth -= 1
            k += 2
            if depth <= 0:
                return k
        else:
            k += 1
    return len(text)


def _quoted_end(text: str, k: int, quote: str, multiline: bool) -> int:
    """The offset just past the closing quote of a literal whose contents start at ``k``."""
    while k < len(text):
        ch = text[k]
        if ch == "\\":
            k += 2
            continue
        if ch == quote:
            return k + 1
        if ch == "\n" and not multiline:
            return k  # an unterminated literal ends with its line
        k += 1
    return len(text)


def _python_string_end(text: str, k: int, quote: str) -> int:
    while k < len(text):
        if text[k] == "\\":  # in a raw string too, a backslash keeps the quote after it
            k += 2
            continue
        if text.startswith(quote, k):
            return k + len(quote)
        if text[k] == "\n" and len(quote) == 1:
            return k
        k += 1
    return len(text)


@dataclass
class Source:
    """One file's text, its masked copy and where its lines start."""

    text: str
    language: str
    masked: str = ""
    _starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.masked = self.masked or mask(self.text, self.language)
        self._starts = [0] + [m.end() for m in re.finditer(r"\n", self.text)]

    def line(self, offset: int) -> int:
        """The 1-based line of ``offset``."""
        return bisect.bisect_right(self._starts, offset)

    def closing(self, open_at: int) -> int:
        """The offset of the bracket closing the one at ``open_at``; the end of the text when none does."""
        stack = []
        for k in range(open_at, len(self.masked)):
            ch = self.masked[k]
            if ch in _OPEN:
                stack.append(_OPEN[ch])
            elif ch in _CLOSE and (not stack or stack.pop() != ch or not stack):
                return k  # the bracket that closes the first one (or one that does not match)
        return len(self.masked)

    def split(self, start: int, end: int, separator: str = ",") -> list[tuple[int, int]]:
        """(start, end) of each top-level piece of ``text[start:end]`` between separators, spaces trimmed.

        A ``+`` separator skips ``++`` and ``+=``; angle brackets are not counted (``a < b, c`` is two).
        """
        pieces = []
        depth = 0
        piece = start
        k = start
        while k < end:
            ch = self.masked[k]
            if ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth -= 1
            elif ch == separator and depth == 0:
                double = separator == "+" and (self.masked[k + 1 : k + 2] in ("+", "=") or self.masked[k - 1] == "+")
                if not double:
                    pieces.append((piece, k))
                    piece = k + 1
            k += 1
        pieces.append((piece, end))
        return [trimmed for s, e in pieces if (trimmed := self.trim(s, e))[0] < trimmed[1]]

    def trim(self, start: int, end: int) -> tuple[int, int]:
        while start < end and self.masked[start].isspace():
            start += 1
        while end > start and self.masked[end - 1].isspace():
            end -= 1
        return start, end

    def statement_start(self, offset: int) -> int:
        """Where the statement holding ``offset`` starts: just past the ``;``, ``{`` or ``}`` before it."""
        k = offset - 1
        depth = 0
        while k >= 0:
            ch = self.masked[k]
            if ch in _CLOSE:
                if ch == "}" and depth == 0:
                    return k + 1
                depth += 1
            elif ch in _OPEN:
                if depth == 0:
                    return k + 1
                depth -= 1
            elif ch == ";" and depth == 0:
                return k + 1
            k -= 1
        return 0


def one_line(text: str) -> str:
    """Whitespace runs collapsed, as a condition is shown in a record (and as the preprocessor's ``#X``)."""
    return " ".join(text.split())
