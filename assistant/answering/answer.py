"""What errata returns: the hits retrieval found, and an Answer with its text, citations and those hits.

One JSON shape for each, used by every front end (the CLI's ``--json``, the web API, MCP): the keys are the
knowledge-base schema's own names (``recordId``, ``errorClass``, ``githubUrl``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..knowledge.records import Record


@dataclass(frozen=True)
class Hit:
    """A record that may answer the query, its score, and which signals found it."""

    record: Record
    score: float
    why: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        record = self.record
        return {
            "recordId": record.id,
            "repo": record.repo,
            "errorClass": record.error_class,
            "message": record.error_message,
            "score": round(float(self.score), 4),
            "why": list(self.why),
            "githubUrl": record.github_url,
        }


@dataclass(frozen=True)
class Retrieval:
    """The ranked hits and how confident errata is that the first one answers the query."""

    hits: list[Hit]
    confidence: float
    confident: bool
    # The library whose own cause errata has no record of, when the first record is only Python's general
    # explanation of an error raised inside or through it (retrieval.ownership.unrecorded_owner).
    general_for: str | None = None


@dataclass(frozen=True)
class Citation:
    """``[number]`` in the answer text refers to this record."""

    number: int
    record_id: str
    repo: str
    error_class: str
    github_url: str | None
    solution: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "recordId": self.record_id,
            "repo": self.repo,
            "errorClass": self.error_class,
            "githubUrl": self.github_url,
            "solution": self.solution,
        }


@dataclass(frozen=True)
class Answer:
    text: str
    citations: list[Citation] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    confidence: float = 0.0
    grounded: bool = False
    model: str | None = None
    notes: tuple[str, ...] = ()
    general_for: str | None = None  # as in Retrieval: the answer is a general explanation, not this library's cause

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view, as ``errata ask --json`` prints it."""
        return {
            "text": self.text,
            "confidence": round(self.confidence, 4),
            "grounded": self.grounded,
            "model": self.model,
            "notes": list(self.notes),
            "generalFor": self.general_for,
            "citations": [c.to_dict() for c in self.citations],
            "hits": [h.to_dict() for h in self.hits],
        }


def citation_for(number: int, hit: Hit, solution: str | None = None) -> Citation:
    record = hit.record
    return Citation(number, record.id, record.repo, record.error_class, record.github_url, solution)
