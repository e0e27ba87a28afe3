"""One release read once: its raise/warn/log findings as records and its public API, cached as JSON.

The cache file is named by the archive's SHA-256 (and :data:`SCAN_VERSION`), so an unchanged archive is
never read twice and a changed extractor reads everything again. Findings keep the enclosing function
beside the record, which the merge across releases needs and the record schema has no field for.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..ingest.class_messages import class_findings, package_classes
from ..ingest.extract import find_in_source, package_helpers
from ..ingest.raises import Origin, make_record
from ..knowledge.records import record_from_dict
from ..storage.files import sha256_file
from .archive import ReleaseArchive, read_archive
from .compiled_sdist import compiled_entries
from .download import sdist_beside
from .surface import read_surface

# Bump when what a scan finds changes, so cached scans are made again.
SCAN_VERSION = 14  # 5: bounded message patterns (ingest.messages.bounded_message_pattern); 6: messages
# passed inside a data object (ingest.extract); 7: compiled sources from the sdist (.compiled_sdist); 8: bounded
# members, names and source excerpts, coding cookies (.archive, ingest.source_files); 9: C messages built in a
# local variable or buffer, Rust Display messages across a crate (ingest.compiled); 10: Rust __str__ and
# panics, C functions raising their argument, Arrow's Status errors, vendored and test folders skipped; 11: messages
# defined by exception classes (ingest.class_messages: fmt/MSG_TEMPLATE attributes, __str__, __init__ defaults)
# 12: warnings and log calls under other names (ingest.call_forms: `error = logger.error` aliases, `warnings`
# imported or passed under another name, `logger.warning_once`), module constants filled with logging's arguments
# 13: a raise reading its class and message from its own class (ingest.own_attributes: Jinja's
# `raise self._undefined_exception(self._undefined_message)`); 14: numpy's templated C (`.c.src`, `.h.src`)
DEFAULT_TAG_FORMAT = "v{version}"

Scan = dict[str, Any]


def release_tag(version: str, tag_format: str = DEFAULT_TAG_FORMAT) -> str:
    """The git tag a release is *guessed* to have: ``v{version}`` by default (some projects, httpx among
    them, tag bare ``{version}``; pass ``tag_format``). Nothing checks that the tag exists."""
    return tag_format.format(version=version, version_=version.replace(".", "_"))


def scan_archive(
    path: Path, repo: str | None = None, tag_format: str = DEFAULT_TAG_FORMAT, analyzed_at: str | None = None
) -> Scan:
    """Read one archive: ``{"name", "version", "repo", "tag", "entries": [{"record", "qualname"}], "surface",
    "report"}``. ``repo`` overrides the repository the metadata names."""
    started = time.perf_counter()
    archive = read_archive(path)
    repo = repo or archive.repo or f"local/{archive.name}"
    tag = release_tag(archive.version, tag_format)
    analyzed_at = analyzed_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    modules, unparsable = _parse(archive)
    origin = Origin(repo=repo, sha=tag, package=_main_package(archive))
    entries, skipped = _findings(archive, modules, origin, analyzed_at)
    compiled, compiled_report = compiled_entries(Path(path), archive.name, archive.version, origin, analyzed_at)
    return {
        "scanVersion": SCAN_VERSION,
        "name": archive.name,
        "version": archive.version,
        "repo": repo,
        "repoFromMetadata": archive.repo is not None,
        "tag": tag,
        "prefix": archive.prefix,
        "archive": Path(path).name,
        "analyzedAt": analyzed_at,
        "entries": entries + compiled,
        "surface": read_surface((rel, tree) for rel, _source, tree in modules),
        "report": {
            "files": len(archive.sources),
            "records": len(entries) + len(compiled),
            "skipped": dict(skipped),
            "unparsable_files": unparsable,
            "skipped_files": archive.skipped,
            **compiled_report,
            "seconds": round(time.perf_counter() - started, 3),
        },
    }


def cached_scan(path: Path, cache: Path, repo: str | None = None, tag_format: str = DEFAULT_TAG_FORMAT) -> Scan:
    """:func:`scan_archive`, kept in ``cache/scans/<sha256>.json`` and read from there next time."""
    key = f"{sha256_file(path)}-v{SCAN_VERSION}"
    sdist = sdist_beside(Path(path)) if str(path).endswith(".whl") else None
    if sdist is not None:  # the compiled sources read beside a binary wheel
        key += "-" + sha256_file(sdist)[:12]
    if repo or tag_format != DEFAULT_TAG_FORMAT:
        key += "-" + file_hash_text(f"{repo}\n{tag_format}")
    target = Path(cache).expanduser() / "scans" / f"{key}.json"
    if target.exists():
        try:
            return {**json.loads(target.read_text(encoding="utf-8")), "fromCache": True}
        except ValueError:
            pass  # a damaged cache file is made again
    scan = scan_archive(path, repo=repo, tag_format=tag_format)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(scan, out, ensure_ascii=False)
    os.replace(tmp, target)
    return {**scan, "fromCache": False}


def file_hash_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _main_package(archive: ReleaseArchive) -> str | None:
    """The top-level package named like the distribution, else the first one (its name goes into tags)."""
    wanted = archive.name.lower().replace("-", "_")
    return next(
        (t for t in archive.top_level if t.lower() == wanted), archive.top_level[0] if archive.top_level else None
    )


def _parse(archive: ReleaseArchive) -> tuple[list[tuple[str, str, ast.Module]], list[str]]:
    modules, unparsable = [], []
    for rel in sorted(archive.sources):
        try:
            modules.append((rel, archive.sources[rel], ast.parse(archive.sources[rel])))
        except (SyntaxError, ValueError, RecursionError):
            unparsable.append(rel)
    return modules, unparsable


def _findings(
    archive: ReleaseArchive, modules: list[tuple[str, str, ast.Module]], origin: Origin, analyzed_at: str
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """What ``errata ingest`` finds in these modules (the same extractor and record builder), with each
    finding's enclosing function kept beside its record."""
    helpers = package_helpers(tree for _rel, _source, tree in modules)
    classes = package_classes(tree for _rel, _source, tree in modules)
    entries: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    for rel, source, tree in modules:
        try:
            findings, why = find_in_source(tree, helpers)
            findings += class_findings(tree, classes, findings)  # messages defined by exception classes
        except RecursionError:
            continue
        skipped.update(why)
        lines = source.splitlines()
        for finding in findings:
            record = make_record(finding, archive.prefix + rel, lines, origin, analyzed_at)
            try:  # a field over its limit (a 30,000-character message) would stop the build that loads it
                record_from_dict(record, check_pattern=False)
            except ValueError as exc:
                skipped[f"invalid record ({str(exc).split(':', 1)[0]})"] += 1
                continue
            entries.append({"record": record, "qualname": finding.qualname})
    return entries, skipped
