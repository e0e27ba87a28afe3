"""Untrusted text made safe to show: an LLM's reply, or any answer text, as markdown every front end renders.

Why: a reply is text the model was steered to write, by its training or by a paste made to steer it.
Shown as it came, its raw ``<img src=…>`` made the browser fetch a URL of the writer's choosing, its links
(``[docs](https://evil…)``, a fake citation ``[1](https://evil…)``, bare URLs and e-mail addresses, which
chat renderers turn into links) looked like errata's sources, and in Slack ``<!channel>`` or ``<@U…>``
would notify people. Two passes, a line at a time with what the lines before left open:

1. tidying (this module): raw HTML is dropped, images become their alt text, links to other URLs their
   label, a link definition is dropped, Slack mentions become inline code;
2. the inert pass (:mod:`.inert`), the one that makes it safe whatever the first pass missed: nothing
   left can start a tag, link, image or autolink, and URLs other than the allowed ones are inline code.

:class:`ReplySanitizer` works on a reply arriving in pieces: it passes text on after a space, once no
link, tag or code span can still be open before it, so the pieces join up to what :func:`sanitize_reply`
gives for the whole text, however it was cut. :class:`ShownMarkdown` is for a page that redraws the
whole text so far at each piece.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from .inert import LineState, allowed_keys, code, inert_line, inert_text, is_allowed

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# One pass, left to right; the first alternative that matches at a place wins.
_TOKEN_RE = re.compile(
    r"(?P<escape>\\[!-/:-@\[-`{-~])"
    r"|(?P<code>(?P<run>`+)(?!`).*?(?<!`)(?P=run)(?!`))"
    r"|(?P<comment><!--.*?(?:-->|$))"
    r"|(?P<special><(?P<sigil>[!@#])(?P<target>[^>\s]{1,80})>)"
    r"|(?P<autolink><(?P<auto_url>[A-Za-z][A-Za-z0-9+.-]{1,31}:[^>\s]*)>)"
    r"|(?P<tag></?[A-Za-z][A-Za-z0-9-]*+(?:\s++[A-Za-z_:][\w.:-]*+(?:\s*+=\s*+(?:[^\s\"'=<>`]++|'[^']*+'|\"[^\"]*+\"))?+)*+\s*+/?>)"
    r"|(?P<image>!\[(?P<alt>(?:\\.|[^\]\\\n])*)\]\([^)\n]*\))"
    r"|(?P<link>\[(?P<label>(?:\\.|[^\]\\\n])*)\]\(\s*<?(?P<url>(?:[^()\s>]|\([^()\s]*\))*)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\))"
    r"|(?P<broadcast>(?<![\w@])@(?:channel|here|everyone)\b)",
    re.IGNORECASE,
)
_KINDS = ("escape", "code", "comment", "special", "autolink", "tag", "image", "link", "broadcast")
_DEFINITION_RE = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*\S+.*$")
_CITATION_RE = re.compile(r"\[\d+(?:\s*,\s*\d+)*\](?!\()")
_RISKY_RE = re.compile(r"[\[<`]")
_DONE_WORD_RE = re.compile(r"[A-Za-z0-9'\"(]*[A-Za-z0-9][:;,?)]")
_SCHEMES = ("http:", "https:", "ftp:")
_TICKS_RE = re.compile(r"`+")
_TAG_START_RE = re.compile(r"[A-Za-z/!?@#]")
_LABEL_RE = re.compile(r"(?:\\.|[^\]\\\n])*\]")


def _apart(m: re.Match[str], span: str) -> str:
    """A code span put where ``m`` was, kept apart from a backtick beside it (they would pair otherwise)."""
    before = " " if m.string[m.start() - 1 : m.start()] == "`" else ""
    after = " " if m.string[m.end() : m.end() + 1] == "`" else ""
    return before + span + after


def _finished_word(word: str) -> bool:
    """Whether the last word of a piece is done: a plain word closed by punctuation (``purpose:``) cannot
    grow into a URL, an e-mail address, an escape or a mention with the next piece."""
    return not word or (_DONE_WORD_RE.fullmatch(word) is not None and not word.lower().endswith(_SCHEMES))


def _may_open_a_block(start: str) -> bool:
    """Whether a line that starts so may still be a code fence, a link definition or a table's row."""
    lead = start.lstrip()
    return len(lead) < 3 or lead[0] in "`~[" or not start.strip(" \t|:-")


def _closed(tail: str, at: int) -> int | None:
    """Where what starts at ``tail[at]`` (a ``[``, ``<`` or backtick) ends for good, whatever follows the
    tail; None while it may still grow into a link, an image, a tag or a code span."""
    before = tail[:at]
    if (len(before) - len(before.rstrip("\\"))) % 2:
        return at + 1  # escaped: a character like any other
    if tail[at] == "`":
        run = len(_TICKS_RE.match(tail, at)[0])
        closer = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(tail, at + run)
        return closer.end() if closer and closer.end() < len(tail) else None
    if tail[at] == "<" and at + 1 < len(tail):
        if not _TAG_START_RE.match(tail, at + 1):
            return at + 1
        token = _TOKEN_RE.match(tail, at)
        return token.end() if token and token[0].endswith(">") and token.end() < len(tail) else None
    if tail[at] == "[":
        token = _TOKEN_RE.match(tail, at - 1 if tail[at - 1 : at] == "!" else at)
        if token and (token["link"] or token["image"]):  # its label stays: no backtick may pair past it
            return token.end() if token.end() < len(tail) and "`" not in token[0] else None
        label = _LABEL_RE.match(tail, at + 1)  # up to the first "]": no link if "(" does not follow it
        return at + 1 if label and label.end() < len(tail) and tail[label.end()] != "(" else None
    return None


class ReplySanitizer:
    """Sanitizes a text piece by piece; ``allowed_urls`` (records' GitHub links) are the only live links."""

    def __init__(self, allowed_urls: Iterable[str | None] = ()):
        self._allowed = allowed_keys(allowed_urls)
        self._state = LineState()
        self._pending = ""
        self._line = ""  # what this line has shown so far, when it was passed on in parts
        self.dropped: list[str] = []  # what was removed or made inert, for the notes

    def feed(self, piece: str) -> str:
        text = self._pending + piece
        carried = "\r" if text.endswith("\r") else ""  # the first half of a "\r\n", maybe
        text = _lines(text[: len(text) - len(carried)])
        out: list[str] = []
        while "\n" in text:
            line, text = text.split("\n", 1)
            out.append(self._whole(line) + "\n")
        cut = self._safe_cut(text)
        if cut and not self._line and _may_open_a_block(self._tidied(text[:cut])):
            cut = 0  # tidied, the line may still start a code block or a table: known at the line's end
        if cut:
            out.append(self._part(text[:cut]))
            text = text[cut:]
        self._pending = text + carried
        return "".join(out)

    def close(self) -> str:
        shown = self.feed("\n" if self._pending.endswith("\r") else "")  # a last lone "\r" ends its line
        text, self._pending = self._pending, ""
        return shown + (self._whole(text) if text or self._line else "")

    def preview(self, limit: int) -> str:
        """What :meth:`close` would give now (at most ``limit`` characters of it read), leaving this as it is."""
        ahead = ReplySanitizer()
        ahead._allowed, ahead._state, ahead._line = self._allowed, replace(self._state), self._line
        ahead._pending = self._pending[:limit]
        return ahead.close() + ("…" if len(self._pending) > limit else "")

    def _safe_cut(self, tail: str) -> int:
        """How much of an unfinished line can be passed on now: up to a space before which no link, tag
        or code span is still open (a complete ``[n]`` is safe) and after which no word is cut."""
        if self._state.fence is not None:
            return 0
        if not self._line and _may_open_a_block(tail):
            return 0  # may still be a fence, a link definition or a table's row: known at the line's end
        masked = _CITATION_RE.sub(lambda m: "0" * len(m[0]), tail)
        settled = 0
        while (risky := _RISKY_RE.search(masked, settled)) is not None:
            closed = _closed(tail, risky.start())
            if closed is None:
                masked = masked[: risky.start()]
                break
            masked = masked[: risky.start()] + "0" * (closed - risky.start()) + masked[closed:]  # never cut inside
            settled = closed
        space = max(masked.rfind(" "), masked.rfind("\t")) + 1
        return len(tail) if len(masked) == len(tail) and _finished_word(tail[space:]) else space

    def _tidied(self, text: str) -> str:
        """What the first pass makes of ``text``, noting nothing."""
        dropped = len(self.dropped)
        tidied = self._tidy(text)
        del self.dropped[dropped:]
        return tidied

    def _whole(self, line: str) -> str:
        """The rest of a line, now that it has ended."""
        if not self._line and (self._state.fence is not None or _FENCE_RE.match(line)):
            return inert_line(line, self._state, self._allowed)  # code: shown as written
        if not self._line:
            if _DEFINITION_RE.match(line):  # "[1]: https://…" would turn [1] into a link
                self.dropped.append("a link definition")
                self._state.previous = ""
                return ""
            return inert_line(self._tidy(line), self._state, self._allowed)
        shown = self._part(line)
        self._state.previous, self._line = self._line, ""
        return shown

    def _part(self, text: str) -> str:
        shown = inert_text(self._tidy(text), self._allowed, prefix=self._line)
        self._line += shown
        return shown

    def _tidy(self, text: str) -> str:
        return _TOKEN_RE.sub(self._replace, text)

    def _replace(self, m: re.Match[str]) -> str:
        kind = next(k for k in _KINDS if m.group(k) is not None)
        if kind in ("escape", "code"):
            return m[0]
        if kind in ("comment", "tag"):
            self.dropped.append("HTML")
            return ""
        if kind == "special":
            self.dropped.append("a Slack mention")
            sigil = "@" if m["sigil"] == "!" else m["sigil"]
            return _apart(m, code(sigil + m["target"].split("|")[0]))
        if kind == "broadcast":
            self.dropped.append("a Slack mention")
            return _apart(m, code(m[0]))
        if kind == "image":
            self.dropped.append("an image")
            return m["alt"].strip()
        if kind == "autolink":
            return m["auto_url"] if self._ok(m["auto_url"]) else _apart(m, code(m["auto_url"]))
        if self._ok(m["url"]):
            return f"[{m['label']}]({m['url']})"
        self.dropped.append("a link")
        label = m["label"].strip()
        return f"[{label}]" if re.fullmatch(r"\d+(?:\s*,\s*\d+)*", label) else label

    def _ok(self, url: str) -> bool:
        return is_allowed(url, self._allowed)


def _lines(text: str) -> str:
    """Line ends as ``\n`` only: a renderer also ends a line at a lone ``\r``, so the sanitizer must too."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def sanitize_reply(text: str, allowed_urls: Iterable[str | None] = ()) -> str:
    """The whole of a text, sanitized at once (the same result as feeding it in any pieces)."""
    sanitizer = ReplySanitizer(allowed_urls)
    return sanitizer.feed(text) + sanitizer.close()


class ShownMarkdown:
    """The safe form of a text that grows, for a page that redraws all of it at each new piece.

    Each call shows the whole text so far sanitized as a whole (never a piece on its own): what can no
    longer change is kept from the call before, the rest (what is still open of the line being written,
    up to ``PREVIEW_CHARS`` of it, then "…") is sanitized as if the text ended there.
    """

    PREVIEW_CHARS = 400  # a line still open is read again at each piece: a bounded cost per piece

    def __init__(self, allowed_urls: Iterable[str | None] = ()):
        self._allowed_urls = tuple(allowed_urls)
        self._reset()

    def _reset(self) -> None:
        self._sanitizer = ReplySanitizer(self._allowed_urls)
        self._read = ""
        self._shown = ""

    def show(self, text: str) -> str:
        if not text.startswith(self._read):
            self._reset()
        self._shown += self._sanitizer.feed(text[len(self._read) :])
        self._read = text
        return self._shown + self._sanitizer.preview(self.PREVIEW_CHARS)
