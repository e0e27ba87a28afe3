"""The offline answer: markdown composed from the retrieved records themselves, with no LLM.

Record fields come from knowledge-base files and package archives that errata did not write (an archive
member's name becomes ``filePath``), so the composed text goes through the same sanitizer as an LLM's reply
(:mod:`.sanitize`): only each record's own GitHub link stays a live link. Prose fields are put on one line
so that a field cannot open a heading, a list or a code block in the middle of the answer.
"""

from __future__ import annotations

import math
import re

from ..knowledge.records import Record
from ..parse.query import Query
from ..parse.user_frame import user_line
from ..retrieval.ownership import PYTHON_REPO
from .answer import Answer, Citation, Hit, Retrieval, citation_for
from .general import general_explanation
from .inert import code as _inline_code
from .inert import github_link
from .sanitize import sanitize_reply

# A second record is shown when it is at least this likely relative to the first. Hit scores are the
# retriever's logits (a softmax over the records), so the ratio of likelihoods is exp(score2 - score1).
# On the dev set a confident answer with the right record second had it above 0.5 in most cases, while
# fewer than 5 % of confident answers with the right record first come that close.
NEAR_LIKELIHOOD = 0.5
# At most this many records are listed as "possibly related" when nothing matches confidently.
RELATED_MAX = 3


def offline_answer(query: Query, retrieval: Retrieval, note: str | None = None) -> Answer:
    """A deterministic markdown answer built from the records themselves, citing them as [n].

    ``note`` (e.g. why the LLM was not used) becomes the first line of the text and a note.
    """
    notes = (*query.notes, note) if note else query.notes
    hits = retrieval.hits
    if query.kind == "empty":
        return Answer("Paste a traceback, an error line or a question about a Python error.", notes=notes)
    general_for = None
    if not hits or not retrieval.confident:
        text, citations = _no_match(hits, query)
        grounded = False
    else:
        text, citations = _matched(hits, query)
        grounded = True
        if retrieval.general_for:
            general_for = retrieval.general_for
            text = f"{general_explanation(hits[0].record, general_for)}\n\n{text}"
    text = paste_notes(query) + text
    if note:
        text = f"{note}\n\n{text}"
    text = sanitize_reply(text, [h.record.github_url for h in hits])
    return Answer(text, citations, hits, retrieval.confidence, grounded, None, notes, general_for)


def paste_notes(query: Query) -> str:
    """What was done to the paste before reading it (binary data dropped, a long paste cut), as a
    line above the answer, so every front end shows it."""
    return f"_Note: {'; '.join(query.notes)}._\n\n" if query.notes else ""


def _matched(hits: list[Hit], query: Query) -> tuple[str, list[Citation]]:
    top = hits[0].record
    blocks = [f"**{_escape_markdown(f'{top.error_class}: {top.error_message}')}** ({_one_line(top.repo)}) [1]"]
    if top.repo == PYTHON_REPO and (line := user_line(query)) is not None:
        blocks.append(line.markdown())  # Python's own error: point at the user's line first
    blocks.append(f"**What it means:** {_one_line(top.documentation)} [1]")
    if top.trigger_scenarios:
        blocks.append(f"**Likely trigger:** {_one_line(top.trigger_scenarios)} [1]")
    if top.solutions:
        steps = "\n".join(f"{i}. {_one_line(s)} [1]" for i, s in enumerate(top.solutions, start=1))
        blocks.append(f"**Fix** (best first):\n{steps}")
    if top.example_fix and top.example_fix.strip():
        blocks.append(f"**Example fix:**\n{_code_block(top.example_fix)}")
    if github_link(top.github_url):
        blocks.append(f"**Source:** {_source_link(top)} [1]")
    citations = [citation_for(1, hits[0], _first(top.solutions))]
    second = _runner_up(hits)
    if second is not None:
        other = second.record
        blocks.append(
            f"**Nearly as likely** [2]: {_inline_code(f'{other.error_class}: {other.error_message}')} "
            f"({_one_line(other.repo)}). {_first_sentence(other.documentation)}"
            + (f" Fix: {_one_line(other.solutions[0])}" if other.solutions else "")
            + (f" Source: {_source_link(other)}" if github_link(other.github_url) else "")
        )
        citations.append(citation_for(2, second, _first(other.solutions)))
    return "\n\n".join(blocks), citations


def _no_match(hits: list[Hit], query: Query) -> tuple[str, list[Citation]]:
    blocks = ["**No record in the knowledge base matches this error.**", _looked_for(query)]
    related = hits[:RELATED_MAX]
    if related:
        blocks[0] += " The nearest records are listed as possibly related; check that one fits before following it."
        items = []
        for n, hit in enumerate(related, start=1):
            r = hit.record
            message = _inline_code(f"{r.error_class}: {r.error_message}")
            item = f"- [{n}] {message} ({_one_line(r.repo)}): {_first_sentence(r.documentation)}"
            if github_link(r.github_url):
                item += f" Source: {_source_link(r)}"
            items.append(item)
        blocks.append("**Possibly related:**\n" + "\n".join(items))
    citations = [citation_for(n, h, _first(h.record.solutions)) for n, h in enumerate(related, start=1)]
    return "\n\n".join(blocks), citations


def _looked_for(query: Query) -> str:
    """What errata read in the paste, and what to paste for a better chance: a refused user sees why."""
    read = []
    if query.exception_class:
        read.append(f"the error {_inline_code(query.error_line or query.exception_class)}")
    elif query.message:
        read.append(f"the message {_inline_code(query.message[:200])}")
    if query.libraries:
        read.append("libraries " + ", ".join(_inline_code(lib) for lib in query.libraries))
    if query.frames:
        read.append(f"{len(query.frames)} traceback frame(s)")
    looked = f"errata looked for {'; '.join(read)}." if read else "errata found no error line in the paste."
    if query.frames and query.exception_class:
        tip = "If the error comes from a library, the lines of its traceback inside that library help most."
    else:
        tip = (
            "Paste the whole traceback (from `Traceback (most recent call last):` to its last line), "
            "or the exact error line."
        )
    return f"{looked} {tip}"


def nearly_as_likely(hits: list[Hit]) -> bool:
    """Whether the second hit is at least ``NEAR_LIKELIHOOD`` times as likely as the first."""
    return len(hits) >= 2 and math.exp(min(0.0, hits[1].score - hits[0].score)) >= NEAR_LIKELIHOOD


def _runner_up(hits: list[Hit]) -> Hit | None:
    return hits[1] if nearly_as_likely(hits) else None


def _code_block(code: str) -> str:
    fence = "```"
    while fence in code:
        fence += "`"
    return f"{fence}python\n{code.strip()}\n{fence}"


def _source_link(record: Record) -> str:
    """The record's own GitHub link, labelled with its file and line (checked by the caller)."""
    return f"[{_escape_markdown(_one_line(record.file_path))}:{record.line_number}]({github_link(record.github_url)})"


def _one_line(text: str) -> str:
    """A record's prose field on one line: its line breaks cannot start a block in the answer."""
    return " ".join(text.split())


def _escape_markdown(text: str) -> str:
    """Plain text that markdown shows as written (``__init__.py`` stays ``__init__.py``), on one line."""
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", " ".join(text.split()))


def _first_sentence(text: str) -> str:
    # A sentence ends at . ! or ? followed by a capital (so "e.g. by" does not end one) or the end.
    text = _one_line(text)
    match = re.match(r"(.+?[.!?])(?=\s+[A-Z`(\[]|\s*$)", text)
    return match[1] if match else text


def _first(items: tuple[str, ...]) -> str | None:
    return items[0] if items else None
