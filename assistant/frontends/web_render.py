"""What the web chat shows of an Answer: markdown for the chat, HTML for the source cards, JSON for the API.

Pure functions of an ``Answer`` (no Gradio), so the page and its API render the same thing. Nothing here
shows text as it came: the chat's markdown (the answer and the user's own paste) goes through the
sanitizer, so only a record's own GitHub link is live, and the cards escape every record field, link only
to a record's checked GitHub URL and show at most ``MAX_CODE_CHARS`` of its code.
"""

from __future__ import annotations

import html
import re
from typing import Any

from ..answering.answer import Answer
from ..answering.inert import github_link, inert_markdown
from ..answering.sanitize import sanitize_reply
from .confidence import capitalized, confidence_words

MAX_SOURCES = 10
# A card shows at most this much of a record's code (a few hundred lines); the rest is on GitHub.
MAX_CODE_CHARS = 12_000
# The chat shows at most this much of a paste (its start and its end; errata reads its end).
MAX_PASTE_SHOWN = 20_000


def user_markdown(text: str) -> str:
    """The pasted text as the user sees it in the chat: multi-line pastes keep their layout in a code block,
    a line is shown inert (a pasted ``<img>`` or link is text, not an image to fetch); a huge paste is
    shown by its start and its end."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if len(text) > MAX_PASTE_SHOWN:
        half = MAX_PASTE_SHOWN // 2
        text = f"{text[:half]}\n… ({len(text) - 2 * half:,} characters not shown) …\n{text[-half:]}"
    if "\n" not in text:
        return inert_markdown(text)
    longest_run = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest_run + 1)
    return f"{fence}text\n{text}\n{fence}"


def answer_markdown(answer: Answer, threshold: float | None = None) -> str:
    """The final chat message: the answer, then one line saying how sure errata is.

    ``threshold``: the confidence the answering Assistant needs (its ``settings.confidence_threshold``),
    said beside a confidence that falls short of it.
    """
    text = sanitize_reply(answer.text, [h.record.github_url for h in answer.hits])
    if not answer.hits:
        return text
    if answer.grounded:
        footer = f"*Confidence {answer.confidence:.2f} · the sources are in the Sources panel.*"
    else:
        footer = (
            f"⚠️ *No confident match ({confidence_words(answer.confidence, threshold)}): "
            "the records in the Sources panel are only possibly related.*"
        )
    return f"{text}\n\n{footer}"


def citations_json(answer: Answer) -> list[dict[str, Any]]:
    """The citations as the API returns them (the one shape of ``Citation.to_dict``)."""
    return [c.to_dict() for c in answer.citations]


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _code_excerpt(code: str) -> str:
    """A record's code, cut to ``MAX_CODE_CHARS`` (a knowledge base may hold megabytes in one field)."""
    if len(code) <= MAX_CODE_CHARS:
        return _esc(code)
    cut = code.rfind("\n", 0, MAX_CODE_CHARS) + 1 or MAX_CODE_CHARS
    return f"{_esc(code[:cut])}\n… ({len(code) - cut:,} more characters: see the code on GitHub)"


_INLINE_CODE_RE = re.compile(r"`([^`\n]+)`")


def _prose(text: str) -> str:
    """Record prose as HTML: escaped, with its markdown `inline code` shown as code, not as backticks."""
    return _INLINE_CODE_RE.sub(lambda m: f"<code>{m.group(1)}</code>", _esc(text))


def _related_line(hit: Any, number: int | None) -> str:
    """A possibly related record, folded to one title line and its link (no fix steps to follow)."""
    r = hit.record
    label = f"[{number}] " if number is not None else ""
    url = github_link(r.github_url)
    link = f' · <a href="{_esc(url)}" target="_blank" rel="noopener noreferrer">code ↗</a>' if url else ""
    return (
        f'<details class="errata-related"><summary>{label}<b>{_esc(r.error_class)}</b>: '
        f"{_esc(r.error_message[:140])} <small>({_esc(r.repo)})</small>{link}</summary>"
        f'<div class="msg">{_prose(r.documentation)}</div></details>'
    )


def _card(hit: Any, number: int | None, confidence: float | None) -> str:
    """One source card: what the record is, where the code is, how to fix it."""
    r = hit.record
    label = f"[{number}] " if number is not None else ""
    meta = [_esc(r.repo), f"{_esc(r.file_path)}:{r.line_number}"]
    if confidence is not None:
        meta.append(f"confidence {confidence:.2f}")
    if hit.why:
        meta.append("matched by " + _esc(", ".join(hit.why)))
    parts = [
        '<div class="errata-card">',
        f"<h4>{label}{_esc(r.error_class)}</h4>",
        f'<div class="meta">{" · ".join(meta)}</div>',
        f'<div class="msg">{_esc(r.error_message)}</div>',
    ]
    if r.solutions:
        parts.append("<ol>" + "".join(f"<li>{_prose(s)}</li>" for s in r.solutions) + "</ol>")
    url = github_link(r.github_url)
    if url:
        parts.append(
            f'<a class="code-link" href="{_esc(url)}" target="_blank" rel="noopener noreferrer">'
            f"View the code on GitHub ↗</a>"
        )
    if r.source_code:
        parts.append(
            f"<details><summary>Code excerpt ({_esc(r.file_path)})</summary>"
            f"<pre><code>{_code_excerpt(r.source_code)}</code></pre></details>"
        )
    parts.append("</div>")
    return "".join(parts)


def _also_considered(hits: list[Any]) -> list[str]:
    """The remaining hits, folded away so that the cited ones stay in view (on a phone especially)."""
    if not hits:
        return []
    return [
        f"<details><summary>Also considered ({len(hits)})</summary>",
        *(_card(h, None, None) for h in hits),
        "</details>",
    ]


def sources_html(answer: Answer | None, *, pending: bool = False, threshold: float | None = None) -> str:
    """The panel beside the chat: a banner for how sure errata is, then a card per source.

    ``threshold`` as for :func:`answer_markdown`.
    """
    if pending:
        return '<div class="errata-sources"><p class="errata-empty">Searching the knowledge base…</p></div>'
    if answer is None:
        return '<div class="errata-sources"><p class="errata-empty">Sources for the answer appear here.</p></div>'
    if not answer.hits:
        return '<div class="errata-sources"><p class="errata-empty">No sources: nothing to search for yet.</p></div>'
    parts = ['<div class="errata-sources">']
    if answer.grounded:
        by_id = {h.record.id: h for h in answer.hits}
        cited = [(c.number, by_id[c.record_id]) for c in answer.citations if c.record_id in by_id]
        cited_ids = {h.record.id for _, h in cited}
        others = [h for h in answer.hits if h.record.id not in cited_ids]
        parts.append(
            f'<div class="errata-banner ok">Sources ({len(cited)} cited)'
            f"<small>Answer confidence {answer.confidence:.2f}</small></div>"
        )
        parts += [_card(hit, n, answer.confidence if n == 1 else None) for n, hit in cited]
        parts += _also_considered(others)
    else:
        parts.append(
            '<div class="errata-banner unsure">No confident match'
            f"<small>{_esc(capitalized(confidence_words(answer.confidence, threshold)))}. "
            "These records are only possibly related.</small></div>"
        )
        numbers = {c.record_id: c.number for c in answer.citations}
        related = [h for h in answer.hits if h.record.id in numbers] or answer.hits[:3]
        parts.append('<p class="errata-empty">Possibly related (folded; open one to read it):</p>')
        parts += [_related_line(hit, numbers.get(hit.record.id)) for hit in related]
    parts.append("</div>")
    return "".join(parts)
