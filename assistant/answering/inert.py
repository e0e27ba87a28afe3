"""Markdown that no renderer can turn into a request or a link, except to a record's own GitHub page.

Why: text from records, archives, pastes and LLMs is written by people errata does not know. Shown as
markdown in the web chat, a ``![x](//host/p.png)`` or ``<img src=…>`` made the browser fetch a stranger's
URL, and links and bare URLs or e-mail addresses became live links. Trying to recognise every dangerous
construct failed (a URL on the next line, an escaped backtick, a code span over two lines), so this pass
escapes what could start one instead, whatever it would have become:

- every ``<`` becomes ``\\<``: no tag, comment or autolink (``<*``!a@b.c>`` is one, backticks and all);
- every ``[`` becomes ``\\[``, except a citation ``[n]`` and a link to one of the ``allowed`` URLs, so no
  link, image or link definition can form;
- URLs (``http://``, ``https://``, ``ftp://``, ``www.``) and e-mail addresses become inline code, shown but
  not clickable; only the allowed URLs stay live;
- a backtick that opens no code span on its line is escaped, so every code span is one this pass saw,
  on one line, kept as written (with a space against a lone backslash or another span) but for an
  invisible word joiner where a tag, a link or a URL could start, in case a renderer reads the span
  as prose (marked does, when ``*`` or ``_`` before the span closes inside it);
- a table's delimiter row is escaped (table cells would split code spans at ``|``), and so is every
  ``~`` (marked's ``~~`` strikes through code spans; ``~~~`` opens a code block inside a list item);
- code blocks keep their content, behind fence lines rewritten at the line start (a code block ends
  where any renderer would end it: marked ends one at "```~", CommonMark does not).

The result is the same however the text is cut into lines before and after (each line is read once,
with the state the lines before it left), and reading it again changes nothing.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

_GITHUB_URL_RE = re.compile(r"https://github\.com/[A-Za-z0-9._~:/?#@!$&*+,;=%-]+")
_FENCE_RE = re.compile(r"^ {0,3}(?P<marker>`{3,}|~{3,})(?P<info>.*)$")
_DELIMITER_ROW_RE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
# Where a link definition could start: nothing but indentation and block quote or list markers before it.
_DEFINITION_PLACE_RE = re.compile(r"^(?:\s|>|[-+*]|\d{1,9}[.)])*$")
_CITE = r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\]"
_URL = r"(?:https?://|ftp://|www\.)[^\s<>()\[\]`\\]*[^\s<>()\[\]`\\.,;:!?'\"*_~]"
# An address, backslash escapes and all: "\\-@x.io" shows as "-@x.io", which a renderer links too.
_EMAIL = r"(?:\\[.+_-]|[\w.+-])++\\?@(?:\\[_-]|[\w-])+(?:\\?\.(?:\\[_-]|[\w-])+)+"
_EMAIL_RE = re.compile(_EMAIL)
_TOKEN_RE = re.compile(
    rf"(?P<email>(?<![\w.+-]){_EMAIL})"
    r"|(?P<escape>\\[!-/:-@\[-`{-~])"
    r"|(?P<ticks>`+)"
    r"|(?P<tildes>~+)"
    rf"|(?P<link>\[(?P<label>(?:\\.|[^\[\]\\\n])*)\]\((?P<dest>{_URL})\))"
    rf"|(?P<cite>{_CITE})"
    rf"|(?P<url>{_URL})"
    r"|(?P<broadcast>(?<![\w@])@(?:channel|here|everyone)\b)"
    r"|(?P<angle><)"
    r"|(?P<bracket>\[)"
    r"|(?P<backslash>\\)",
    re.IGNORECASE,
)
_TICKS_RE = re.compile(r"`+")
# Inside a code span, an invisible word joiner after "<" and "]" of what could read as a tag or a link
# (and, in a span fenced by two backticks or more, inside a URL's scheme and before an address's "@"):
# marked, the chat's renderer, lets "*" or "_" before such a span close inside it and reads the rest of
# the span as prose.
JOINER = "\u2060"
_JOINED_RE = re.compile(r"<(?=[A-Za-z/!?])|\](?=\()")
_LINKED_RE = re.compile(r"(?:https?|ftp)(?=://)|www(?=\.)|[\w.+-]@", re.IGNORECASE)
_LINES_RE = re.compile(r"(?:L\d+(?:-L\d+)?)?")
_LINK_END = re.compile(r"[.,;:!?)]*(?:\s|$)")


def github_link(url: str | None) -> str | None:
    """``url`` if it is a plain ``https://github.com/…`` address (no ``..``, quotes or spaces), else None."""
    if not url or not _GITHUB_URL_RE.fullmatch(url) or "/../" in url or url.endswith("/.."):
        return None
    return url


def url_key(url: str) -> str:
    """What two links to the same page share: the URL without its fragment or a trailing slash."""
    return url.strip().split("#", 1)[0].rstrip("/")


def allowed_keys(urls: Iterable[str | None]) -> frozenset[str]:
    """The keys of the URLs that may stay live: the records' own GitHub links, checked."""
    return frozenset(url_key(u) for u in map(github_link, urls) if u)


def is_allowed(url: str, allowed: frozenset[str]) -> bool:
    """Whether ``url`` is one of the ``allowed`` GitHub links, pointing at a line or lines or at none."""
    page, _, lines = url.partition("#")
    return github_link(url) is not None and url_key(page) in allowed and _LINES_RE.fullmatch(lines) is not None


def code(text: str) -> str:
    """``text`` as one inline code span on one line, fenced by more backticks than it holds in a row."""
    text = " ".join(text.split())
    longest = max((len(run) for run in _TICKS_RE.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


@dataclass
class LineState:
    """What the lines read so far leave open: a code block's fence, and the previous line (for tables)."""

    fence: str | None = None
    previous: str = ""


def inert_line(line: str, state: LineState, allowed: frozenset[str]) -> str:
    """One whole line (without its newline) made inert; ``state`` is read and updated."""
    fence = _FENCE_RE.match(line)
    if state.fence is not None:
        closing = fence and fence["marker"][0] == state.fence[0] and len(fence["marker"]) >= len(state.fence)
        if closing and not fence["info"].strip(" \t`~"):  # marked also ends a fence at "```~"
            state.fence, state.previous = None, ""
            return fence["marker"]
        return line
    if fence:
        info = re.sub(r"[^\w+.#-]", "", fence["info"])[:40]
        state.fence, state.previous = fence["marker"], ""
        return fence["marker"] + info
    if _DELIMITER_ROW_RE.match(line) and ("|" in line or "|" in state.previous):
        line = line.replace("-", "\\-", 1)  # no table: its cells would split code spans at "|"
    out = inert_text(line, allowed)
    state.previous = out
    return out


def inert_text(text: str, allowed: frozenset[str], prefix: str = "", *, in_label: bool = False) -> str:
    """Part of a line made inert (outside a code block). ``prefix``: what the line held before it."""
    runs: dict[int, list[int]] = {}
    for run in _TICKS_RE.finditer(text):
        runs.setdefault(len(run[0]), []).append(run.start())
    out: list[str] = []
    pos = 0
    while (m := _EMAIL_RE.match(text, pos) if pos else None) or (m := _TOKEN_RE.search(text, pos)):
        out.append(text[pos : m.start()])
        pos = m.end()
        kind = m.lastgroup if m.re is _TOKEN_RE else "email"  # an address right after a token starts there
        if kind == "escape":
            out.append(m[0])
        elif kind == "ticks":
            pos = _code_span(text, m, runs, out)
        elif kind == "link":
            if not in_label and is_allowed(m["dest"], allowed):
                out.append(f"[{inert_text(m['label'], allowed, in_label=True)}]({m['dest']})")
            else:
                out.append("\\[")
                pos = m.start() + 1
        elif kind == "cite":
            after = text[pos : pos + 1]
            place = prefix + "".join(out)
            risky = after in ("(", "[") or (after == ":" and _DEFINITION_PLACE_RE.match(place)) or in_label
            out.append("\\" + m[0] if risky else m[0])
        elif kind == "url":
            live = not in_label and is_allowed(m[0], allowed) and _LINK_END.match(text, pos)
            out.append(m[0] if live else _separated(code(m[0]), out, text, pos))
        elif kind in ("email", "broadcast"):
            out.append(_separated(code(m[0]), out, text, pos))
        elif kind in ("angle", "bracket"):
            out.append("\\" + m[0])
        elif kind == "tildes":  # "~~" strikes through code spans in marked; "~~~" opens a block in a list
            out.append("\\~" * len(m[0]))
        else:  # a backslash that escapes nothing: shown as it is (a code span after it is kept apart)
            out.append(m[0])
    out.append(text[pos:])
    return "".join(out)


def _code_span(text: str, opener: re.Match[str], runs: dict[int, list[int]], out: list[str]) -> int:
    """A code span kept as written, or the backticks escaped where none closes on this line."""
    length = len(opener[0])
    starts = runs.get(length, [])
    i = bisect.bisect_left(starts, opener.end())
    if i == len(starts):
        out.append("\\`" * length)
        return opener.end()
    end = starts[i] + length
    content = _JOINED_RE.sub("\\g<0>" + JOINER, text[opener.end() : starts[i]])
    if length > 1:  # marked's emphasis breaks these spans open: no URL or address may be linked then
        content = _LINKED_RE.sub(lambda m: m[0][:-1] + JOINER + "@" if m[0][-1] == "@" else m[0] + JOINER, content)
    out.append(_separated(opener[0] + content + opener[0], out, text, end))
    return end


def _separated(span: str, out: list[str], text: str, end: int) -> str:
    """A code span with a space against any backtick beside it (two spans touching would pair wrongly)."""
    shown = "".join(out[-64:])
    lone_backslash = (len(shown) - len(shown.rstrip("\\"))) % 2 == 1
    before = " " if lone_backslash or shown.endswith("`") else ""
    after = " " if text[end : end + 1] == "`" else ""
    return before + span + after


def inert_markdown(text: str, allowed_urls: Iterable[str | None] = ()) -> str:
    """A whole markdown text made inert; links to ``allowed_urls`` (GitHub links only) stay live."""
    allowed = allowed_keys(allowed_urls)
    state = LineState()
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # a renderer ends a line at "\r" too
    return "\n".join(inert_line(line, state, allowed) for line in lines)
