"""Keeping the bundled knowledge base in step with the curated one in ``../shared/kb``."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .records import kb_files, load_records
from .settings import BUNDLED_KB_DIR, PACKAGE_DIR

DEFAULT_SOURCE = PACKAGE_DIR.parent.parent / "shared" / "kb" / "records"


@dataclass
class RefreshReport:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    records: int = 0

    def summary(self) -> str:
        if not (self.added or self.changed or self.removed):
            return f"bundled knowledge base already up to date ({self.records} records)"
        parts = [f"{len(self.added)} file(s) added", f"{len(self.changed)} changed", f"{len(self.removed)} removed"]
        return f"bundled knowledge base refreshed: {', '.join(parts)}; {self.records} records"


def refresh_bundled_kb(source: Path, target: Path = BUNDLED_KB_DIR) -> RefreshReport:
    """Copy ``source``'s ``*.jsonl`` over the bundled copy, only after every record validates.

    Validation is strict, so a bad upstream line never replaces a good bundled file.
    """
    records = load_records([source], strict=True)
    report = RefreshReport(records=len(records))
    target.mkdir(parents=True, exist_ok=True)
    wanted = {p.name: p for p in kb_files([source])}
    for name, path in sorted(wanted.items()):
        destination = target / name
        if not destination.exists():
            report.added.append(name)
        elif destination.read_bytes() != path.read_bytes():
            report.changed.append(name)
        else:
            continue
        tmp = destination.with_suffix(".jsonl.tmp")
        shutil.copyfile(path, tmp)
        tmp.replace(destination)
    for stale in sorted(target.glob("*.jsonl")):
        if stale.name not in wanted:
            stale.unlink()
            report.removed.append(stale.name)
    return report
