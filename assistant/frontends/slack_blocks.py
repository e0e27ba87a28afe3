"""Answers as Slack messages: markdown to Slack mrkdwn, and Block Kit blocks that respect Slack's limits.

Slack does not render markdown: bold is ``*x*``, links are ``<url|label>``, and ``&``, ``<``, ``>`` must be
escaped. The answer is sanitized first (only the records' own GitHub links stay links) and every text is
``verbatim``, so Slack links no bare URL and parses no mention of its own. A section's text holds at most
3,000 characters and a message at most 50 blocks, so long answers are split into several sections and,
past 50 blocks, several messages; nothing is cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..answering.answer import Answer
from ..answering.inert import github_link
from ..answering.sanitize import sanitize_reply
from .confidence import confidence_words
from .markdown_text import BOLD_RE, FENCE_RE, HEADING_RE, ITALIC_RE, STRIKE_RE, convert_inline

SECTION_LIMIT = 3000
BLOCKS_PER_MESSAGE = 50
CONTEXT_ELEMENTS = 10
BUTTON_VALUE_LIMIT = 2000
FEEDBACK_ACTION_PREFIX = "errata_feedback_"
HELPFUL_ACTION = FEEDBACK_ACTION_PREFIX + "helpful"
NOT_HELPFUL_ACTION = FEEDBACK_ACTION_PREFIX + "not_helpful"

Block = dict[str, Any]

_BULLET_RE = re.compile(r"^(?P<indent>\s*)[-*+]\s+")
_QUOTE_RE = re.compile(r"^\s{0,3}>\s?")
_SLACK_LINK_RE = re.compile(r"\[(?P<label>[^\]\n]+)\]\((?P<url>(?:https?|mailto):[^)\s]+)\)")
_CITATION_RE = re.compile(r"(?<![|<\w])\[(\d{1,3})\](?!\()")
_BOLD_MARK = "\x01"


def escape(text: str) -> str:
    """Escape the three characters Slack treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_mrkdwn(markdown: str, citations: Mapping[int, str] | None = None) -> str:
    """Slack mrkdwn for a markdown text: headings, bold, italics, links, bullets; code kept verbatim.

    ``citations`` maps citation numbers to URLs: each ``[n]`` outside code becomes a link to its source.
    """
    citations = dict(citations or {})
    out: list[str] = []
    in_fence = False
    for line in markdown.splitlines():
        if FENCE_RE.match(line):
            # Slack shows no language tags, so ```python becomes ```.
            out.append("```")
            in_fence = not in_fence
            continue
        if in_fence:
            out.append(escape(line))
            continue
        heading = HEADING_RE.match(line)
        if heading:
            title = heading[1].replace("**", "").replace("__", "")
            out.append(f"*{_inline(title, citations)}*")
            continue
        quote = _QUOTE_RE.match(line)
        if quote:  # Slack quotes need a literal ">" at the line start
            out.append(">" + _inline(line[quote.end() :], citations))
            continue
        bullet = _BULLET_RE.match(line)
        if bullet:
            line = bullet.group("indent") + "• " + line[bullet.end() :]
        out.append(_inline(line, citations))
    return "\n".join(out)


def _inline(text: str, citations: Mapping[int, str]) -> str:
    """Convert inline markdown outside code spans; code spans are only escaped, escapes are their character."""
    return convert_inline(
        text,
        lambda prose: _inline_plain(prose, citations),
        code=lambda _ticks, content: f"`{escape(content)}`",
        escaped=escape,
    )


def _inline_plain(text: str, citations: Mapping[int, str]) -> str:
    text = escape(text)
    text = _SLACK_LINK_RE.sub(lambda m: f"<{m.group('url')}|{m.group('label').replace('|', '/')}>", text)
    if citations:
        text = _CITATION_RE.sub(
            lambda m: (
                f"<{escape(citations[int(m.group(1))])}|[{m.group(1)}]>" if int(m.group(1)) in citations else m.group(0)
            ),
            text,
        )
    text = BOLD_RE.sub(lambda m: f"{_BOLD_MARK}{m.group(1) or m.group(2)}{_BOLD_MARK}", text)
    text = ITALIC_RE.sub(lambda m: f"_{m.group(1) or m.group(2)}_", text)
    text = STRIKE_RE.sub(r"~\1~", text)
    return text.replace(_BOLD_MARK, "*")


def split_text(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    """Pieces of at most ``limit`` characters, split between lines (a longer line at a space).

    A piece that ends inside a code block closes it and the next piece reopens it, so each piece renders
    on its own. No text is dropped: the pieces hold every line of ``text``, in order.
    """
    if limit < 32:
        raise ValueError("limit must leave room for code fences")
    pieces: list[str] = []
    lines: list[str] = []
    size = 0  # len("\n".join(lines))
    in_fence = False

    def flush() -> None:
        nonlocal lines, size
        body = "\n".join(lines) + ("\n```" if in_fence else "")
        if body.replace("```", "").strip():
            pieces.append(body)
        lines = ["```"] if in_fence else []
        size = 3 if in_fence else 0

    for segment in _segments(text, limit - 8):  # room to reopen and close a code block around any segment
        if lines and size + 1 + len(segment) + 4 > limit:
            flush()
        size += (1 if lines else 0) + len(segment)
        lines.append(segment)
        if FENCE_RE.match(segment):
            in_fence = not in_fence
    if lines:
        flush()
    return pieces


def _segments(text: str, width: int):
    """The lines of ``text``, each longer line cut into parts of at most ``width`` (at a space if one is near)."""
    for line in text.splitlines():
        while len(line) > width:
            cut = line.rfind(" ", width // 2, width)
            cut = cut + 1 if cut > 0 else width
            yield line[:cut]
            line = line[cut:]
        yield line


def feedback_value(query: str, record_ids: Sequence[str]) -> str:
    """The button value: the cited record ids and the end of the query (where the error line is)."""
    ids = list(record_ids)[:10]
    base = len(json.dumps({"r": ids, "q": ""}))
    room = BUTTON_VALUE_LIMIT - base - 16
    tail = query[-room:] if room > 0 else ""
    value = json.dumps({"r": ids, "q": tail})
    while len(value) > BUTTON_VALUE_LIMIT and tail:  # JSON escapes can grow the text
        tail = tail[len(tail) // 4 + 1 :]
        value = json.dumps({"r": ids, "q": tail})
    return value


def parse_feedback_value(value: str) -> tuple[list[str], str]:
    """Record ids and query tail from a button value written by :func:`feedback_value`."""
    try:
        data = json.loads(value)
        return [str(r) for r in data.get("r", [])], str(data.get("q", ""))
    except (ValueError, AttributeError, TypeError):  # not JSON, not an object, "r" not a list
        return [], ""


def source_blocks(answer: Answer) -> list[Block]:
    """Context blocks linking each cited record (at most 10 elements per block)."""
    elements = []
    for c in answer.citations:
        label = escape(f"{c.repo} · {c.error_class}".replace("`", "'"))
        url = github_link(c.github_url)  # the record's own GitHub page, or no link
        link = f"<{escape(url)}|{label}>" if url else label
        record_id = escape(c.record_id.replace("`", "'"))
        elements.append({"type": "mrkdwn", "text": f"[{c.number}] {link} · `{record_id}`", "verbatim": True})
    return [
        {"type": "context", "elements": elements[i : i + CONTEXT_ELEMENTS]}
        for i in range(0, len(elements), CONTEXT_ELEMENTS)
    ]


def confidence_text(answer: Answer, threshold: float | None = None) -> str:
    """How sure errata is; below ``threshold`` (the answering Assistant's), the threshold is said too."""
    model = f" · drafted by {escape(answer.model)}" if answer.model else ""
    if answer.grounded:
        return f"confidence {answer.confidence:.2f} · grounded in the records{model}"
    return f"no confident match · {confidence_words(answer.confidence, threshold)}{model}"


def answer_blocks(answer: Answer, query: str, threshold: float | None = None) -> list[Block]:
    """Every block of an answer: its text sections, the sources, the confidence and feedback buttons.

    ``threshold``: the confidence the answering Assistant needs, said beside a confidence below it."""
    records = [h.record.github_url for h in answer.hits] + [c.github_url for c in answer.citations]
    text = sanitize_reply(answer.text, records)  # whatever wrote it: only the records' own links stay live
    links = {c.number: url for c in answer.citations if (url := github_link(c.github_url))}
    blocks: list[Block] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": piece, "verbatim": True}}
        for piece in split_text(to_mrkdwn(text, links))
    ]
    blocks += source_blocks(answer)
    confidence = {"type": "mrkdwn", "text": confidence_text(answer, threshold), "verbatim": True}
    blocks.append({"type": "context", "elements": [confidence]})
    if answer.hits:
        value = feedback_value(query, [c.record_id for c in answer.citations])
        blocks.append(
            {
                "type": "actions",
                "block_id": "errata_feedback",
                "elements": [
                    {
                        "type": "button",
                        "action_id": HELPFUL_ACTION,
                        "text": {"type": "plain_text", "text": "Helpful"},
                        "style": "primary",
                        "value": value,
                    },
                    {
                        "type": "button",
                        "action_id": NOT_HELPFUL_ACTION,
                        "text": {"type": "plain_text", "text": "Not helpful"},
                        "value": value,
                    },
                ],
            }
        )
    return blocks


def split_messages(blocks: list[Block], per_message: int = BLOCKS_PER_MESSAGE) -> list[list[Block]]:
    """Blocks grouped into messages of at most ``per_message`` blocks, in order."""
    return [blocks[i : i + per_message] for i in range(0, len(blocks), per_message)] or [[]]


def fallback_text(blocks: Sequence[Block], limit: int = SECTION_LIMIT) -> str:
    """The notification text of a message: its first section's text, shortened for the preview."""
    for block in blocks:
        if block.get("type") == "section":
            text = block["text"]["text"]
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return "errata answer"
