"""``errata kb wordings``: of a build over many releases, only the ingested records that add older wordings
to curated records, small enough to ship in the bundled knowledge base (``assistant/data/kb/wordings/``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KnowledgeBaseError
from ..ingest.output import write_records
from ..knowledge.records import INGESTED_TAG, Record, choice_entry, choose_curated, scan_records
from ..knowledge.wordings import curated_samples, inherited_patterns
from .patterns import REWORDED_TAG


@dataclass
class WordingsReport:
    """What :func:`extract_wordings` kept: ingested records per output file, and the curated records they
    add wordings to."""

    files: dict[str, int] = field(default_factory=dict)
    curated: int = 0

    def summary(self) -> str:
        kept = sum(self.files.values())
        return f"{kept} ingested record(s) in {len(self.files)} file(s) add wordings to {self.curated} curated records"


def extract_wordings(curated_kb: Sequence[Path], ingested_kb: Sequence[Path], output: Path) -> WordingsReport:
    """Write to ``output`` (a ``<owner>__<name>.jsonl`` per file of ``ingested_kb``) only the ingested records
    that give way to a curated record of ``curated_kb`` and add a wording to it.

    Why: the releases of the last years, merged (``errata kb build-ecosystem``), are tens of thousands of
    records; the wordings they add to curated records are a few dozen, small enough to ship in the bundled
    knowledge base (``assistant/data/kb/wordings/``), where each gives way at load and leaves its pattern.
    """
    found = list(scan_records([*curated_kb, *ingested_kb], strict=True))
    records = [f.record for f in found]
    choice = choose_curated([choice_entry(r) for r in records])
    if choice is None:  # every record curated
        raise KnowledgeBaseError(f"{', '.join(map(str, ingested_kb))} holds no ingested records")
    inherited = inherited_patterns(records.__getitem__, choice.heirs, curated_samples(records, INGESTED_TAG))
    kept: dict[str, list[Record]] = {}
    for curated, ingested in sorted(choice.heirs.items()):
        if curated not in inherited:
            continue
        for i in ingested:
            if REWORDED_TAG in records[i].tags and records[i].message_pattern != records[curated].message_pattern:
                kept.setdefault(found[i].path.name, []).append(records[i])
    report = WordingsReport(curated=len(inherited))
    for name, chosen in sorted(kept.items()):
        write_records(output / name, sorted(chosen, key=lambda r: r.id))
        report.files[name] = len(chosen)
    return report
