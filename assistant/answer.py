"""What errata returns: an Answer with its text, citations and the hits it was drawn from."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .retrieve import Hit


@dataclass(frozen=True)
class Citation:
    """``[number]`` in the answer text refers to this record."""

    number: int
    record_id: str
    repo: str
    error_class: str
    github_url: str | None
    solution: str | None = None


@dataclass(frozen=True)
class Answer:
    text: str
    citations: list[Citation] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    confidence: float = 0.0
    grounded: bool = False
    model: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view, as ``errata ask --json`` prints it."""
        return {
            "text": self.text,
            "confidence": round(self.confidence, 4),
            "grounded": self.grounded,
            "model": self.model,
            "notes": list(self.notes),
            "citations": [asdict(c) for c in self.citations],
            "hits": [
                {
                    "record_id": h.record.id,
                    "repo": h.record.repo,
                    "error_class": h.record.error_class,
                    "message": h.record.error_message,
                    "score": round(float(h.score), 4),
                    "why": list(h.why),
                    "github_url": h.record.github_url,
                }
                for h in self.hits
            ],
        }


def citation_for(number: int, hit: Hit, solution: str | None = None) -> Citation:
    record = hit.record
    return Citation(number, record.id, record.repo, record.error_class, record.github_url, solution)
