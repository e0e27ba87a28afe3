"""``errata ingest``: records from a package's source into a knowledge-base file, optionally enriched.

Resumable: records already enriched in the output file (same id) are kept, not sent again.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigurationError
from ..settings import Settings
from .enrich import enrich_records
from .output import ENRICHED_TAG, IngestReport, read_records, write_records
from .raises import ingest


def ingest_to_file(
    output: str | Path,
    path: str | Path | None = None,
    *,
    package: str | None = None,
    repo: str | None = None,
    sha: str | None = None,
    enrich: bool = False,
    settings: Settings | None = None,
    batch_size: int = 5,
    show_progress: bool = False,
    compiled: bool = True,
) -> IngestReport:
    """Ingest into ``output``; records already enriched there (same id) are kept, not redone.

    With ``enrich`` the configured LLM then fills in each remaining record, writing ``output`` after
    every batch, so an interrupted run continues where it stopped. With ``compiled`` (the default) the
    tree's C/C++, Cython and Rust sources are read too (:mod:`assistant.ingest.compiled`).
    """
    if enrich and (settings is None or not settings.model):
        raise ConfigurationError("--enrich needs an LLM: pass --model NAME (litellm name) or set ERRATA_MODEL")
    records, report = ingest(path, package=package, repo=repo, sha=sha)
    if compiled:
        from .compiled import ingest_compiled

        more, found = ingest_compiled(path, package=package, repo=repo, sha=sha)
        known = {r.id for r in records}
        records += [r for r in more if r.id not in known]
        report.compiled_files, report.compiled_records = found.files, found.records
        report.skipped.update(found.skipped)
        report.records = len(records)
    earlier = {r.id: r for r in read_records(output) if ENRICHED_TAG in r.tags}
    records = [earlier.get(r.id, r) for r in records]
    report.kept_enriched = sum(r.id in earlier for r in records)
    write_records(output, records)
    if enrich and settings is not None:
        enrich_records(
            records, settings, output=output, batch_size=batch_size, show_progress=show_progress, report=report
        )
    return report
