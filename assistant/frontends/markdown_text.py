"""Answer markdown read a line at a time, for the front ends that turn it into something else.

The terminal's plain text (``ask_output``) and Slack's mrkdwn (``slack_blocks``) read the same markdown the
same way: code spans and backslash escapes are held out of the conversion (``\\*`` is a star, not emphasis;
inside code nothing is markup), then headings, links and emphasis are rewritten. The answer text is already
safe when it comes here (:mod:`assistant.answering.sanitize`); this only changes its notation.
"""

from __future__ import annotations

import re
from collections.abc import Callable

FENCE_RE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
LINK_RE = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
BOLD_RE = re.compile(r"(?<![\w*])\*\*(?=\S)(.+?)(?<=\S)\*\*(?![\w*])|(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")
ITALIC_RE = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])|(?<!\w)_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)")
STRIKE_RE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
# Left to right, as CommonMark reads them: an escaped backtick opens no code span, and inside a code
# span a backslash is only a backslash.
_HELD_SOURCE_RE = re.compile(r"\\(?P<escaped>[!-/:-@\[-`{-~])|(?P<ticks>`+)(?P<code>.+?)(?<!`)(?P=ticks)(?!`)")
_HOLD = "\x00{}\x00"
_HELD_RE = re.compile("\x00(\\d+)\x00")


def first_group(match: re.Match[str]) -> str:
    """The text of whichever alternative matched (the patterns above have one group per alternative)."""
    return next(g for g in match.groups() if g is not None)


def convert_inline(
    line: str,
    convert: Callable[[str], str],
    *,
    code: Callable[[str, str], str] = lambda ticks, content: f"{ticks}{content}{ticks}",
    escaped: Callable[[str], str] = lambda char: char,
) -> str:
    """``line`` with ``convert`` applied to its prose only; ``code(ticks, content)`` gives each code span's
    form and ``escaped(char)`` each backslash-escaped character's."""
    held: list[str] = []

    def hold(match: re.Match[str]) -> str:
        if match["escaped"] is not None:
            held.append(escaped(match["escaped"]))
        else:  # without the word joiners the sanitizer put in code for the web chat's renderer
            held.append(code(match["ticks"], match["code"].replace("\u2060", "")))
        return _HOLD.format(len(held) - 1)

    line = convert(_HELD_SOURCE_RE.sub(hold, line.replace("\x00", "")))
    return _HELD_RE.sub(lambda m: held[int(m[1])], line)
