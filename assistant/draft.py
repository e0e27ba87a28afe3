"""Drafting answers from retrieved records only. Here: the offline drafter, composed from the records."""

from __future__ import annotations

from .answer import Answer, citation_for
from .query import Query
from .retrieve import Retrieval


def offline_answer(query: Query, retrieval: Retrieval) -> Answer:
    """A deterministic markdown answer built from the records themselves, citing them as [n]."""
    hits = retrieval.hits
    if query.kind == "empty":
        return Answer(
            "Paste a traceback, an error line or a question about a Python error.",
            notes=query.notes,
        )
    if not hits or not retrieval.confident:
        lines = ["**No record in the knowledge base matches this error confidently.**"]
        if hits:
            lines.append("\nPossibly related:")
            for n, hit in enumerate(hits[:3], start=1):
                r = hit.record
                lines.append(f"- [{n}] `{r.error_class}: {r.error_message}` ({r.repo})")
        citations = [citation_for(n, h) for n, h in enumerate(hits[:3], start=1)]
        return Answer("\n".join(lines), citations, hits, retrieval.confidence, False, None, query.notes)
    top = hits[0].record
    lines = [f"**{top.error_class}: {top.error_message}** ({top.repo}) [1]", "", top.documentation]
    if top.trigger_scenarios:
        lines += ["", f"**Likely trigger:** {top.trigger_scenarios}"]
    if top.solutions:
        lines += ["", "**Fix:**"]
        lines += [f"{i}. {s} [1]" for i, s in enumerate(top.solutions, start=1)]
    if top.example_fix:
        lines += ["", "```python", top.example_fix.strip(), "```"]
    if top.github_url:
        lines += ["", f"Source: [{top.file_path}:{top.line_number}]({top.github_url})"]
    citations = [citation_for(1, hits[0], top.solutions[0] if top.solutions else None)]
    return Answer("\n".join(lines), citations, hits, retrieval.confidence, True, None, query.notes)
