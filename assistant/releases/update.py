"""``errata kb update``: the maintainers' rebuild of the release-built records the package ships.

Why: the shipped records (``knowledge/release_records.py``) are made by ``errata kb build-ecosystem`` over the
packages of ``packages.txt``: most of an hour of downloads and scans, cached, so a run that stops is taken up
where it stopped by running it again. This builds into a work folder, checks every record as a load from a
user's folder would (strictly: schema, limits, patterns timed on hostile texts), leaves out and counts the lines
that fail, and only then packs what is left over the package's copy, so a half-built or unchecked record never
ships.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..knowledge.records import parse_line
from ..knowledge.release_records import ShippedFile, pack_release_records
from ..storage.files import atomic_path
from .ecosystem import EcosystemReport, Target, build_ecosystem, default_targets


@dataclass
class UpdateReport:
    """What a run built, what it left out, and what the package now ships."""

    build: EcosystemReport | None
    shipped: list[ShippedFile] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # "file:line: why", the lines that failed the checks

    def summary(self) -> str:
        records = sum(f.records for f in self.shipped)
        text = f"shipped {records:,} release-built records of {len(self.shipped)} packages"
        if self.dropped:
            text += f"; left out {len(self.dropped)} line(s) that failed the checks, first: {self.dropped[0]}"
        if self.build is not None and self.build.failed:
            text += f"; {len(self.build.failed)} package(s) failed to build: " + "; ".join(self.build.failed[:3])
        return text + ". Then: python -m assistant.knowledge.coverage --write README.md"

    def to_dict(self) -> dict:
        return {
            "build": None if self.build is None else self.build.to_dict(),
            "shipped": [f.__dict__ for f in self.shipped],
            "dropped": self.dropped,
        }


def update_release_records(
    work: Path,
    *,
    built: Path | None = None,
    targets: Sequence[Target] | None = None,
    dest: Path | None = None,
    show_progress: bool = False,
    **build_options,
) -> UpdateReport:
    """Build the release-built records into ``work/kb`` (or take those already built in ``built``), check them,
    and pack them into ``dest`` (default: the package's ``data/releases``)."""
    work = Path(work).expanduser()
    report = None
    if built is None:
        built = work / "kb"
        report = build_ecosystem(
            list(targets) if targets is not None else default_targets(),
            built,
            show_progress=show_progress,
            **build_options,
        )
    checked = work / "checked"
    shutil.rmtree(checked, ignore_errors=True)
    checked.mkdir(parents=True)
    dropped = _checked_copy(Path(built), checked, show_progress=show_progress)
    shipped = pack_release_records(checked, dest)
    shutil.rmtree(checked, ignore_errors=True)
    return UpdateReport(report, shipped, dropped)


def _checked_copy(source: Path, target: Path, *, show_progress: bool) -> list[str]:
    """Copy each ``*.jsonl`` of ``source`` into ``target`` without the lines that fail a strict load."""
    from tqdm.auto import tqdm

    dropped: list[str] = []
    files = sorted(p for p in source.glob("*.jsonl") if p.is_file())
    for path in tqdm(files, desc="checking records", unit="file", disable=not show_progress):
        with (
            path.open(encoding="utf-8", errors="surrogateescape") as lines,
            atomic_path(target / path.name) as tmp,
            tmp.open("w", encoding="utf-8") as out,
        ):
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                where = f"{path.name}:{number}"
                try:
                    line.encode("utf-8")  # undecodable bytes come back as lone surrogates
                    parse_line(line, where, check_pattern=True)
                except (ValueError, UnicodeError) as exc:
                    dropped.append(f"{where}: {exc}")
                    continue
                out.write(line if line.endswith("\n") else line + "\n")
    return dropped
