"""A release's compiled sources, read from its sdist: the records of the messages its C/C++, Cython and Rust
raise, beside those of its Python (:mod:`assistant.ingest.compiled`).

A binary wheel holds no sources, so the sdist of the same release is read (``download.download_release``
fetches it beside the wheel); a release with wheels only is said so and skipped. Files are read from the
archive without unpacking it, up to a size each and in all.
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path
from typing import Any

from ..ingest.compiled import compiled_records, vendored_folders
from ..ingest.compiled.sources import CompiledReport, is_compiled_source
from ..ingest.raises import Origin
from .download import no_sdist_reason, sdist_beside

MAX_MEMBER_BYTES = 2_000_000
MAX_TOTAL_BYTES = 200_000_000


def is_binary_wheel(path: Path) -> bool:
    """A wheel built for a platform (``cp312-cp312-manylinux...``): its compiled half is not source."""
    return path.name.endswith(".whl") and not path.name.endswith("-any.whl")


def sdist_compiled_files(path: Path) -> dict[str, str]:
    """The compiled sources (and SWIG interfaces) of an sdist, named without its top folder."""
    found: dict[str, str] = {}
    total = 0

    def keep(name: str, size: int, read) -> None:
        nonlocal total
        inner = name.split("/", 1)[1] if "/" in name else name
        if not is_compiled_source(inner) or size > MAX_MEMBER_BYTES or total + size > MAX_TOTAL_BYTES:
            return
        total += size
        found[inner] = read().decode("utf-8", errors="replace")

    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    keep(info.filename, info.file_size, lambda info=info: archive.read(info))
    else:
        with tarfile.open(path) as archive:
            for member in archive.getmembers():
                if member.isfile():
                    keep(member.name, member.size, lambda member=member: archive.extractfile(member).read())
    return found


def compiled_entries(
    path: Path, name: str, version: str, origin: Origin, analyzed_at: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Scan entries (``{"record", "qualname"}``) for the compiled sources of the release ``path`` is an
    archive of, and what the scan report says of them (the sdist read, counts, or why none was)."""
    sdist = path if not path.name.endswith(".whl") else sdist_beside(path)
    if sdist is None:
        if not is_binary_wheel(path):
            return [], {}
        return [], {"compiledSkipped": f"compiled sources not read: {no_sdist_reason(path)}"}
    report = CompiledReport()
    files = sdist_compiled_files(sdist)
    vendored = vendored_folders(name, version)
    found = compiled_records(files, origin, analyzed_at, vendored=vendored, report=report)
    entries = [{"record": record, "qualname": finding.qualname} for record, finding in found]
    return entries, {
        "compiledFrom": sdist.name,
        "compiledFiles": report.files,
        "compiledRecords": dict(report.records),
        "compiledSkipped": dict(report.skipped),
    }
