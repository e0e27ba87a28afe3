"""An LLM's reply made safe to show: untrusted text in, markdown that every front end can render out.

Why: a reply is text the model was steered to write, by its training or by a paste made to steer it.
Shown as it came, its raw ``<img src=…>`` made the browser fetch a URL of the writer's choosing, its links
(``[docs](https://evil…)``, a fake citation ``[1](https://evil…)``, bare URLs, which chat renderers turn
into links) looked like errata's sources, and in Slack ``<!channel>`` or ``<@U…>`` would notify people.
So, outside code: raw HTML is dropped, images become their alt text, links are kept only when they point
at one of the retrieved records' URLs (the others become their label, or the URL as inline code, shown
but not clickable), and Slack mentions and broadcasts become inline code. Code blocks and spans are
left as written: every renderer shows them as text.

:class:`ReplySanitizer` works on a reply arriving in pieces: it passes on text as soon as no link, tag or
code span can still be open in it, and holds back the rest until the line ends.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
# One pass, left to right; the first alternative that matches at a place wins.
_TOKEN_RE = re.compile(
    r"(?P<comment><!--.*?(?:-->|$))"
    r"|(?P<special><(?P<sigil>[!@#])(?P<target>[^>\s]{1,80})>)"
    r"|(?P<autolink><(?P<auto_url>(?:https?|mailto|ftp|javascript|data):[^>\s]*)>)"
    r"|(?P<tag></?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>)"
    r"|(?P<opener><(?=[A-Za-z/!?]))"
    r"|(?P<image>!\[(?P<alt>[^\]\n]*)\]\([^)\n]*\))"
    r"|(?P<link>\[(?P<label>[^\]\n]*)\]\(\s*<?(?P<url>(?:[^()\s>]|\([^()\s]*\))*)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\))"
    r"|(?P<bare>(?:https?://|www\.)[^\s<>()\[\]`]*[^\s<>()\[\]`.,;:!?'\"])"
    r"|(?P<broadcast>(?<![\w@])@(?:channel|here|everyone)\b)",
    re.IGNORECASE,
)
_DEFINITION_RE = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*\S+.*$")
_CITATION_RE = re.compile(r"\[\d+(?:\s*,\s*\d+)*\](?!\()")
_RISKY = "[<`"


def _finished_word(word: str) -> bool:
    """Whether the last, maybe unfinished, word of a line cannot grow into a link, tag or mention."""
    lower = word.lower()
    if any(c in word for c in _RISKY + "!@") or lower.startswith(("http", "www.")):
        return False
    return not any(start.startswith(lower) for start in ("https://", "http://", "www."))


def _key(url: str) -> str:
    return url.strip().split("#", 1)[0].rstrip("/")


def _code(text: str) -> str:
    return f"`{text.replace('`', '')}`"


class ReplySanitizer:
    """Sanitizes a reply piece by piece; ``allowed_urls`` are the only link targets kept."""

    def __init__(self, allowed_urls: Iterable[str] = ()):
        self._allowed = {_key(u) for u in allowed_urls if u}
        self._pending = ""
        self._in_fence = False
        self._line_start = True
        self.dropped: list[str] = []  # what was removed or made inert, for the notes

    def feed(self, piece: str) -> str:
        text = self._pending + piece
        out: list[str] = []
        while "\n" in text:
            line, text = text.split("\n", 1)
            out.append(self._line(line, whole=True) + "\n")
        cut = self._safe_cut(text)
        if cut:
            out.append(self._line(text[:cut], whole=False))
            text = text[cut:]
        self._pending = text
        return "".join(out)

    def close(self) -> str:
        text, self._pending = self._pending, ""
        return self._line(text, whole=True) if text else ""

    def _safe_cut(self, tail: str) -> int:
        """How much of an unfinished line can be sanitized now: up to its last space, and before the first
        character that may open a link, tag or code span still unfinished (a complete ``[n]`` is safe)."""
        if self._in_fence:
            return 0
        if self._line_start and (len(tail.lstrip()) < 3 or tail.lstrip()[0] in "`~["):
            return 0  # may still be a fence or a link definition: known at the line's end
        space = max(tail.rfind(" "), tail.rfind("\t"))
        masked = _CITATION_RE.sub(lambda m: "0" * len(m[0]), tail[: space + 1])
        risky = [i for i in (masked.find(c) for c in _RISKY) if i >= 0]
        cut = min([space + 1, *risky])
        if cut < space + 1:
            return cut - 1 if tail[cut - 1 : cut] == "!" else cut  # "![" opens an image
        return len(tail) if _finished_word(tail[space + 1 :]) else cut

    def _line(self, text: str, *, whole: bool) -> str:
        starts_line = self._line_start
        self._line_start = whole
        if starts_line and _FENCE_RE.match(text):
            self._in_fence = not self._in_fence
            return text
        if self._in_fence:
            return text
        if starts_line and _DEFINITION_RE.match(text):  # "[1]: https://…" would turn [1] into a link
            self.dropped.append("a link definition")
            return ""
        parts: list[str] = []
        last = 0
        for span in _CODE_SPAN_RE.finditer(text):
            parts.append(self._inline(text[last : span.start()]))
            parts.append(span[0])
            last = span.end()
        parts.append(self._inline(text[last:]))
        return "".join(parts)

    def _inline(self, text: str) -> str:
        return _TOKEN_RE.sub(self._replace, text)

    def _replace(self, m: re.Match[str]) -> str:
        kind = next(k for k in _KINDS if m.group(k) is not None)
        if kind in ("comment", "tag"):
            self.dropped.append("HTML")
            return ""
        if kind == "opener":  # "<img" without its ">": no longer the start of a tag
            return "< "
        if kind == "special":
            self.dropped.append("a Slack mention")
            sigil = "@" if m["sigil"] == "!" else m["sigil"]
            return _code(sigil + m["target"].split("|")[0])
        if kind == "broadcast":
            self.dropped.append("a Slack mention")
            return _code(m[0])
        if kind == "image":
            self.dropped.append("an image")
            return m["alt"].strip()
        if kind == "autolink":
            return m[0] if self._ok(m["auto_url"]) else self._inert(m["auto_url"])
        if kind == "link":
            if self._ok(m["url"]):
                return m[0]
            self.dropped.append("a link")
            label = m["label"].strip()
            return f"[{label}]" if re.fullmatch(r"\d+(?:\s*,\s*\d+)*", label) else label
        return m[0] if self._ok(m["bare"]) else self._inert(m["bare"])

    def _ok(self, url: str) -> bool:
        return url.lower().startswith("https://") and _key(url) in self._allowed

    def _inert(self, url: str) -> str:
        self.dropped.append("a link")
        return _code(url)


_KINDS = ("comment", "special", "autolink", "tag", "opener", "image", "link", "bare", "broadcast")


def sanitize_reply(text: str, allowed_urls: Iterable[str] = ()) -> str:
    """The whole of a reply, sanitized at once (the same result as feeding it in any pieces)."""
    sanitizer = ReplySanitizer(allowed_urls)
    return sanitizer.feed(text) + sanitizer.close()
