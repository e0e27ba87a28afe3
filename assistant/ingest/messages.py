"""A message as the source writes it, kept as parts: literal text and ``{expr}`` placeholders.

From a literal, an f-string, a ``%`` or ``.format`` string; rendered as ``errorMessage`` and turned into a
``messagePattern`` that matches the message as Python prints it. ``extract`` finds where messages are raised.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass

from ..knowledge.pattern_safety import unbounded_reason

# A message needs this much literal text to be worth retrieving on.
MIN_LETTERS = 10
MIN_WORDS = 2
WORD_RE = re.compile(r"[A-Za-z]{2,}")
_PERCENT_RE = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?(?P<conv>[diouxXeEfFgGcrsa%])"
)


@dataclass(frozen=True)
class Placeholder:
    """A part of a message only known at run time, written as ``{expr}``."""

    expr: str
    # Printed empty at times (a suffix the code may leave out, ``operation{retry_info}:``): matched by ``(.*?)``.
    optional: bool = False


Part = str | Placeholder


def render_message(parts: Iterable[Part]) -> str:
    """The message as written in the source, placeholders as ``{expr}``."""
    return "".join(p if isinstance(p, str) else "{" + p.expr + "}" for p in parts)


def bounded_message_pattern(parts: Iterable[Part]) -> str:
    """:func:`message_pattern`, or where that could backtrack for long (``(.+?)`` three times around short
    literals: ``` `{name}({old}=...)` is deprecated, use `{new}=` ```), the pattern of the stretch of the
    message with at most two placeholders and the most literal text: it still finds the message inside a
    pasted line, and a record whose pattern fails the knowledge base's safety check could not be loaded."""
    parts = merge_parts(parts)
    pattern = message_pattern(parts)
    if not pattern or unbounded_reason(pattern) is None:
        return pattern
    holes = [i for i, part in enumerate(parts) if isinstance(part, Placeholder)]
    best = ""
    best_letters = -1
    for first in range(len(holes) - 1):  # parts strictly between placeholder first-1 and first+2
        start = holes[first - 1] + 1 if first > 0 else 0
        end = holes[first + 2] if first + 2 < len(holes) else len(parts)
        window = parts[start:end]
        letters = len(literal_text(window))
        candidate = message_pattern(window)
        if letters > best_letters and candidate and unbounded_reason(candidate) is None:
            best, best_letters = candidate, letters
    return best


def message_pattern(parts: Iterable[Part]) -> str:
    """A regex for the rendered message: literal text escaped, placeholders as ``(.+?)``.

    The pattern starts and ends on literal text (leading and trailing placeholders are dropped) rather
    than on ``^``/``$``: the retriever searches it inside a pasted error line, which may quote the
    message, prefix it or join its wrapped lines. Whitespace runs match any whitespace for the same reason.
    """
    parts = merge_parts(parts)
    # Whitespace is no text to start or end on: celery's ``"...: %s.\n%s\n"`` ends on the ``.`` before them.
    while parts and (isinstance(parts[0], Placeholder) or not parts[0].strip()):
        parts.pop(0)
    while parts and (isinstance(parts[-1], Placeholder) or not parts[-1].strip()):
        parts.pop()
    if not parts:
        return ""
    parts[0] = parts[0].lstrip()
    parts[-1] = parts[-1].rstrip()
    out = []
    for part in parts:
        if isinstance(part, Placeholder):
            out.append("(.*?)" if part.optional else "(.+?)")
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


def merge_parts(parts: Iterable[Part]) -> list[Part]:
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, str) and not part:
            continue
        if merged and isinstance(part, str) and isinstance(merged[-1], str):
            merged[-1] += part
        elif merged and isinstance(part, Placeholder) and isinstance(merged[-1], Placeholder):
            merged[-1] = Placeholder(merged[-1].expr + "}{" + part.expr, merged[-1].optional and part.optional)
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
        left = message_parts(node.left) or [Placeholder(unparse(node.left))]
        right = message_parts(node.right) or [Placeholder(unparse(node.right))]
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


def unparse(node: ast.AST) -> str:
    return ast.unparse(node).strip()


def _fstring_parts(node: ast.JoinedStr) -> list[Part]:
    parts: list[Part] = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue):
            expr = unparse(value.value)
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
            expr = unparse(keyed[m["key"]]) if m["key"] in keyed else m["key"]
        elif index < len(args) and not isinstance(args[index], ast.Starred):
            expr = unparse(args[index])
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
            base = unparse(args[i]) if i < len(args) and not isinstance(args[i], ast.Starred) else head
        else:
            base = unparse(named[head]) if head in named else head
        expr = base + rest + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
        parts.append(Placeholder(expr))
    return parts
