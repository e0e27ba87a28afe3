"""What ``errata ask`` prints: the answer's markdown rendered by rich in a terminal, plain text when piped.

In a terminal the answer is drawn as it is drafted (rich's ``Live``, cleared at the end) and then printed
whole as rendered markdown: bold headings, numbered fixes, highlighted code. Piped or redirected, the
same answer is plain text, a line at a time as it is drafted: no ``**`` or ``_`` of emphasis, no markdown
escapes, links as ``label (url)``, code blocks indented instead of fenced, and no ANSI codes. ``--json``
does not come here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TextIO

from ..answering.answer import Answer
from .confidence import confidence_words
from .markdown_text import BOLD_RE, FENCE_RE, HEADING_RE, ITALIC_RE, LINK_RE, STRIKE_RE, convert_inline, first_group


class PlainText:
    """Markdown to plain text, a line at a time (a fence opened on one line closes on a later one)."""

    def __init__(self) -> None:
        self._fence: str | None = None

    def line(self, line: str) -> str | None:
        """The plain form of one line of markdown; ``None`` for a line that is only markup (a fence)."""
        fence = FENCE_RE.match(line)
        if self._fence is not None:
            if fence and fence[1].startswith(self._fence) and not line[fence.end() :].strip():  # its closing
                self._fence = None
                return None
            return f"    {line}" if line.strip() else ""
        if fence:
            self._fence = fence[1]
            return None
        return _inline(line)


def plain_text(markdown: str) -> str:
    """A whole markdown text as plain text (see :class:`PlainText`)."""
    converter = PlainText()
    lines = (converter.line(line) for line in markdown.split("\n"))
    return "\n".join(line for line in lines if line is not None)


def _inline(line: str) -> str:
    """One line's prose without its markup; code spans are shown as they are, escapes as their character."""
    return convert_inline(line, _unmarked)


def _unmarked(line: str) -> str:
    heading = HEADING_RE.match(line)
    if heading:
        line = heading[1]
    line = LINK_RE.sub(lambda m: f"{m[1]} ({m[2]})", line)
    for pattern in (BOLD_RE, ITALIC_RE, STRIKE_RE):
        line = pattern.sub(first_group, line)
    return line


def footer_lines(answer: Answer, threshold: float | None) -> list[str]:
    """The cited records, one a line, then how sure errata is (below the threshold: the threshold too)."""
    lines = []
    if answer.citations:
        lines.append("")
        for c in answer.citations:
            lines.append(f"[{c.number}] {c.repo} {c.error_class} ({c.record_id}) {c.github_url or ''}".rstrip())
    lines.append("")
    if answer.hits and not answer.grounded:
        lines.append(f"No confident match: {confidence_words(answer.confidence, threshold)}")
    else:
        lines.append(f"confidence: {answer.confidence:.2f}")
    return lines


def print_answer(pieces: Iterable[str | Answer], threshold: float | None, out: TextIO | None = None) -> Answer:
    """Print a streamed answer (text chunks, then the :class:`Answer`) to ``out``; returns the Answer.

    ``threshold``: the confidence the answering Assistant needs, said when the answer falls short of it.
    """
    out = out or sys.stdout
    if getattr(out, "isatty", lambda: False)():
        return _print_rendered(pieces, threshold, out)
    return _print_plain(pieces, threshold, out)


def _print_plain(pieces: Iterable[str | Answer], threshold: float | None, out: TextIO) -> Answer:
    converter = PlainText()
    pending = ""
    answer: Answer | None = None
    for piece in pieces:
        if isinstance(piece, Answer):
            answer = piece
            continue
        *lines, pending = (pending + piece).split("\n")
        _write_lines(out, converter, lines)
    _write_lines(out, converter, [pending])
    assert answer is not None, "an answer stream ends with its Answer"
    out.write("\n".join(footer_lines(answer, threshold)) + "\n")
    out.flush()
    return answer


def _write_lines(out: TextIO, converter: PlainText, lines: list[str]) -> None:
    shown = [plain for plain in map(converter.line, lines) if plain is not None]
    if shown:
        out.write("".join(f"{line}\n" for line in shown))
        out.flush()


def _print_rendered(pieces: Iterable[str | Answer], threshold: float | None, out: TextIO) -> Answer:
    from rich.console import Console
    from rich.live import Live
    from rich.markdown import Markdown

    console = Console(file=out)
    drafted = ""
    answer: Answer | None = None
    with Live(console=console, transient=True, refresh_per_second=8) as live:  # the draft so far, then cleared
        for piece in pieces:
            if isinstance(piece, Answer):
                answer = piece
            elif piece:
                drafted += piece
                live.update(Markdown(drafted))
    assert answer is not None, "an answer stream ends with its Answer"
    console.print(Markdown(answer.text))
    for line in footer_lines(answer, threshold):  # unwrapped: a link cut in two lines is no link
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return answer
