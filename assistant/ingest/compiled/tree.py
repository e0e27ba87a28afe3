"""``errata ingest`` of a source tree's compiled half: the C/C++, Cython and Rust files beside its Python,
as records named and linked like the Python ones."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from ...knowledge.records import Record, record_from_dict
from ..raises import Origin, repo_from_metadata, resolve_package
from ..source_files import MAX_SOURCE_BYTES, unsafe_path_reason
from .sources import CompiledReport, compiled_files, compiled_records


def ingest_compiled(
    path: str | Path | None = None,
    *,
    package: str | None = None,
    repo: str | None = None,
    sha: str | None = None,
    analyzed_at: str | None = None,
) -> tuple[list[Record], CompiledReport]:
    """Records for the messages raised in the compiled sources under ``path`` (or an installed ``package``,
    which seldom ships any), with the repository and links :func:`assistant.ingest.raises.ingest` gives."""
    root = resolve_package(package) if package else Path(path).expanduser()  # type: ignore[arg-type]
    top = package.split(".")[0] if package else (root.name if (root / "__init__.py").exists() else root.stem)
    origin = Origin(repo=repo or repo_from_metadata(top) or f"local/{top}", sha=sha, package=top)
    analyzed_at = analyzed_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    base = root.parents[package.count(".")] if package else None
    files: dict[str, str] = {}
    report = CompiledReport()
    for file, rel in compiled_files(root, base):
        if unsafe_path_reason(rel) is not None:  # a name that would put markup or a path outside in a record
            report.skipped["unsafe file name"] += 1
            continue
        if file.stat().st_size > MAX_SOURCE_BYTES:
            report.skipped["file over the size limit"] += 1
            continue
        try:
            files[rel] = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            report.skipped["unreadable file"] += 1
    records = []
    seen: set[str] = set()
    for data, finding in compiled_records(files, origin, analyzed_at, report=report):
        if data["id"] in seen:
            continue
        seen.add(data["id"])
        try:
            records.append(
                record_from_dict(data, source=f"{data['filePath']}:{finding.line}", dataset_version=analyzed_at)
            )
        except ValueError:  # over a field limit (record_limits.py): counted, as ingest counts its own
            report.skipped["invalid record"] += 1
    return records, report
