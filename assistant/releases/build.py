"""``errata ingest --package NAME --releases SPEC``: every named release downloaded, read and merged
into one knowledge-base file, with API-change records for what each release removed.

Resumable at every step: archives and per-release scans are cached (see :mod:`.download`, :mod:`.scan`),
and records an LLM already enriched in the output file are kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..ingest.output import ENRICHED_TAG, read_records, write_records
from ..knowledge.records import Record, record_from_dict
from ..settings import Settings
from .apidiff import diff_surfaces
from .changes import change_record
from .download import default_cache, download_release
from .merge import merge_scans
from .scan import DEFAULT_TAG_FORMAT, Scan, cached_scan
from .versions import resolve_versions


@dataclass
class ReleasesReport:
    """What a releases ingest did, per release and in all."""

    package: str
    releases: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    raise_records: int = 0
    api_change_records: int = 0
    kept_enriched: int = 0
    skipped: list[str] = field(default_factory=list)  # releases not downloaded, and why (a time-out among them)
    seconds: float = 0.0

    def summary(self) -> str:
        versions = [r["version"] for r in self.releases]
        shown = ", ".join(versions) if len(versions) <= 6 else f"{versions[0]} … {versions[-1]}"
        cached = sum(r["cached"] for r in self.releases)
        return (
            f"{self.records} record(s) for {self.package} from {len(versions)} release(s) ({shown}; {cached} read "
            f"from the cache): {self.raise_records} raise(s), {self.api_change_records} API change(s), "
            f"in {self.seconds:.1f} s"
        ) + "".join(
            [f"\n  skipped {line}" for line in self.skipped]
            + [
                f"\n  {r['version']}: {r['compiledSkipped']}"
                for r in self.releases
                if isinstance(r.get("compiledSkipped"), str)
            ]
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def scan_releases(
    package: str,
    versions: Sequence[str],
    *,
    cache: Path,
    pip_args: Sequence[str] = (),
    repo: str | None = None,
    tag_format: str = DEFAULT_TAG_FORMAT,
    show_progress: bool = False,
    on_release: Callable[[Scan], None] | None = None,
    compiled_sources: bool = False,
    skipped: list[str] | None = None,
) -> list[Scan]:
    """Download (or reuse) and scan each release, oldest first, with a progress bar over releases;
    ``compiled_sources``: the sdist of a binary wheel too, for its C, Cython and Rust messages. A release
    that cannot be downloaded (or not in time) is left out, and why is added to ``skipped``."""
    from tqdm.auto import tqdm

    scans = []
    bar = tqdm(versions, desc=f"{package} releases", unit="release", disable=not show_progress)
    for version in bar:
        bar.set_postfix_str(version)
        try:
            archive = download_release(package, version, cache, pip_args, compiled_sources=compiled_sources)
        except ConfigurationError as exc:
            if skipped is None:
                raise
            skipped.append(f"{version}: {exc}")
            continue
        scan = cached_scan(archive, cache, repo=repo, tag_format=tag_format)
        scans.append(scan)
        if on_release is not None:
            on_release(scan)
    return scans


def records_from_scans(scans: Sequence[Scan], package: str) -> tuple[list[dict[str, Any]], int]:
    """Merged raise records, then one record per API change between consecutive releases."""
    records = merge_scans(scans)
    raises = len(records)
    # When the newest release was read: the same on every run that reuses the cached scans.
    analyzed_at = scans[-1].get("analyzedAt") or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    tags_at = {scan["version"]: scan["tag"] for scan in scans}
    warnings: list[tuple[str, dict[str, Any], str]] = []
    seen_ids = {r["id"] for r in records}
    slugs = {r["slug"] for r in records}
    for old, new in zip(scans, scans[1:], strict=False):
        warnings += [
            (old["version"], e["record"], e["qualname"])
            for e in old["entries"]
            if e["record"]["errorType"] == "warning"
        ]
        for change in diff_surfaces(old["surface"], new["surface"]):
            record = change_record(
                change,
                package=package,
                repo=new["repo"],
                old_version=old["version"],
                new_version=new["version"],
                newest_version=scans[-1]["version"],
                tags_at=tags_at,
                prefix=new["prefix"],
                warnings=warnings,
                analyzed_at=analyzed_at,
            )
            if record["id"] in seen_ids:
                continue
            seen_ids.add(record["id"])
            while record["slug"] in slugs:
                record["slug"] += "-2"
            slugs.add(record["slug"])
            records.append(record)
    return records, raises


def ingest_releases(
    package: str,
    spec: str,
    *,
    cache: Path | None = None,
    pip_args: Sequence[str] = (),
    repo: str | None = None,
    tag_format: str = DEFAULT_TAG_FORMAT,
    show_progress: bool = False,
    compiled_sources: bool = False,
) -> tuple[list[Record], ReleasesReport]:
    """Records for every raise in the releases of ``package`` that ``spec`` names, and for its API changes."""
    started = time.perf_counter()
    cache = Path(cache).expanduser() if cache else default_cache()
    versions = resolve_versions(package, spec, pip_args)
    report = ReleasesReport(package=package)
    scans = scan_releases(
        package,
        versions,
        cache=cache,
        pip_args=pip_args,
        repo=repo,
        tag_format=tag_format,
        show_progress=show_progress,
        compiled_sources=compiled_sources,
        skipped=report.skipped,
    )
    if not scans:
        raise ConfigurationError(f"no release of {package} could be read: {'; '.join(report.skipped)}")
    for scan in scans:
        report.releases.append(
            {
                "version": scan["version"],
                "archive": scan["archive"],
                "records": len(scan["entries"]),
                "files": scan["report"]["files"],
                "seconds": scan["report"]["seconds"],
                "cached": scan.get("fromCache", False),
                **{k: v for k, v in scan["report"].items() if k.startswith("compiled")},
            }
        )
    dicts, report.raise_records = records_from_scans(scans, package)
    records = [record_from_dict(d, source=f"{package}:{d['filePath']}:{d['lineNumber']}") for d in dicts]
    report.records = len(records)
    report.api_change_records = report.records - report.raise_records
    report.seconds = time.perf_counter() - started
    return records, report


def ingest_releases_to_file(
    output: str | Path,
    package: str,
    spec: str,
    *,
    enrich_with: Settings | None = None,
    batch_size: int = 5,
    **options: Any,
) -> ReleasesReport:
    """:func:`ingest_releases` into ``output``; records already enriched there (same id) are kept.

    With ``enrich_with`` (settings naming a model) the rest are enriched as ``errata ingest --enrich`` does.
    """
    if enrich_with is not None and not enrich_with.model:
        raise ConfigurationError("--enrich needs an LLM: pass --model NAME (litellm name) or set ERRATA_MODEL")
    records, report = ingest_releases(package, spec, **options)
    earlier = {r.id: r for r in read_records(output) if ENRICHED_TAG in r.tags}
    records = [earlier.get(r.id, r) for r in records]
    report.kept_enriched = sum(r.id in earlier for r in records)
    write_records(output, records)
    if enrich_with is not None:
        from ..ingest.enrich import enrich_records

        enrich_records(
            records,
            enrich_with,
            output=output,
            batch_size=batch_size,
            show_progress=options.get("show_progress", False),
        )
    return report
