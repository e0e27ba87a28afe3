"""What ingest writes and reads back: its report, its record tags, and knowledge-base JSONL files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KnowledgeBaseError
from ..knowledge.records import Record, parse_line
from ..storage.files import atomic_path

EXTRACTED_TAG = "extracted"  # text written from the code alone, not reviewed
ENRICHED_TAG = "enriched"  # text written by an LLM from the code


@dataclass
class IngestReport:
    """What one ingest run found: counts a user wants to see, and why messages were skipped."""

    root: str = ""
    files: int = 0
    unparsable_files: list[str] = field(default_factory=list)
    # "path: why" for files not read: a name unsafe to show, a module too big (source_files.py).
    skipped_files: list[str] = field(default_factory=list)
    records: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    # Enrichment: records kept from an earlier run, enriched now, and left as extracted after failures.
    kept_enriched: int = 0
    enriched: int = 0
    enrich_failed: int = 0
    # Compiled sources (C/C++, Cython, Rust): files read and records per language; their records are counted
    # in ``records`` too.
    compiled_files: int = 0
    compiled_records: Counter[str] = field(default_factory=Counter)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
        text = f"{self.records} record(s) from {self.files} file(s) under {self.root}"
        text += f"; skipped {self.skipped_total} message(s)" + (f" ({reasons})" if reasons else "")
        if self.unparsable_files:
            text += f"; {len(self.unparsable_files)} file(s) could not be parsed"
        if self.skipped_files:
            text += f"; {len(self.skipped_files)} file(s) skipped (first: {self.skipped_files[0]})"
        if self.compiled_files:
            names = {"c": "C/C++", "cython": "Cython", "rust": "Rust"}
            languages = ", ".join(f"{names.get(k, k)} {n}" for k, n in sorted(self.compiled_records.items()))
            text += f"; {sum(self.compiled_records.values())} from {self.compiled_files} compiled source file(s)"
            text += f" ({languages})" if languages else ""
        if self.kept_enriched or self.enriched or self.enrich_failed:
            text += f"; enriched {self.enriched} now, kept {self.kept_enriched} enriched earlier"
            text += f", {self.enrich_failed} left as extracted after invalid replies" if self.enrich_failed else ""
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "files": self.files,
            "records": self.records,
            "skipped": self.skipped_total,
            "skipped_by_reason": dict(self.skipped),
            "unparsable_files": self.unparsable_files,
            "skipped_files": self.skipped_files,
            "seconds": round(self.seconds, 3),
            "kept_enriched": self.kept_enriched,
            "enriched": self.enriched,
            "enrich_failed": self.enrich_failed,
            "compiled_files": self.compiled_files,
            "compiled_records": dict(self.compiled_records),
        }


def write_records(path: str | Path, records: Iterable[Record]) -> Path:
    """Write records as knowledge-base JSONL, atomically (a crash leaves the old file whole)."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for record in records:
            out.write(record.to_json_line() + "\n")
    return path


def read_records(path: str | Path) -> list[Record]:
    """Records already in an output file (for resuming); an absent file holds none."""
    path = Path(path).expanduser()
    if not path.exists():
        return []
    records = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):  # a BOM is no text
        if not line.strip():
            continue
        try:
            records.append(parse_line(line, f"{path}:{lineno}"))
        except (ValueError, KnowledgeBaseError):
            continue  # a damaged line is made again
    return records
