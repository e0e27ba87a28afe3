"""What the web chat shows of an Answer: markdown for the chat, HTML for the source cards, JSON for the API.

Pure functions of an ``Answer`` (no Gradio), so the page and its API render the same thing.
"""

from __future__ import annotations

import html
import re
from typing import Any

from ..answering.answer import Answer
from .confidence import capitalized, confidence_words

MAX_SOURCES = 10


def user_markdown(text: str) -> str:
    """The pasted text as the user sees it in the chat: multi-line pastes keep their layout in a code block."""
    text = text.strip("\n")
    if "\n" not in text:
        return text
    longest_run = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest_run + 1)
    return f"{fence}text\n{text}\n{fence}"


def answer_markdown(answer: Answer, threshold: float | None = None) -> str:
    """The final chat message: the answer, then one line saying how sure errata is.

    ``threshold``: the confidence the answering Assistant needs (its ``settings.confidence_threshold``),
    said beside a confidence that falls short of it.
    """
    if not answer.hits:
        return answer.text
    if answer.grounded:
        footer = f"*Confidence {answer.confidence:.2f} · the sources are in the Sources panel.*"
    else:
        footer = (
            f"⚠️ *No confident match ({confidence_words(answer.confidence, threshold)}): "
            "the records in the Sources panel are only possibly related.*"
        )
    return f"{answer.text}\n\n{footer}"


def citations_json(answer: Answer) -> list[dict[str, Any]]:
    """The citations as the API returns them (the one shape of ``Citation.to_dict``)."""
    return [c.to_dict() for c in answer.citations]


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _safe_url(url: str | None) -> str | None:
    return url if url and url.startswith(("https://", "http://")) else None


_INLINE_CODE_RE = re.compile(r"`([^`\n]+)`")


def _prose(text: str) -> str:
    """Record prose as HTML: escaped, with its markdown `inline code` shown as code, not as backticks."""
    return _INLINE_CODE_RE.sub(lambda m: f"<code>{m.group(1)}</code>", _esc(text))


def _related_line(hit: Any, number: int | None) -> str:
    """A possibly related record, folded to one title line and its link (no fix steps to follow)."""
    r = hit.record
    label = f"[{number}] " if number is not None else ""
    url = _safe_url(r.github_url)
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
    url = _safe_url(r.github_url)
    if url:
        parts.append(
            f'<a class="code-link" href="{_esc(url)}" target="_blank" rel="noopener noreferrer">'
            f"View the code on GitHub ↗</a>"
        )
    if r.source_code:
        parts.append(
            f"<details><summary>Code excerpt ({_esc(r.file_path)})</summary>"
            f"<pre><code>{_esc(r.source_code)}</code></pre></details>"
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
