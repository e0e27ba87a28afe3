"""How long a releases build takes, cold (empty cache: downloads and scans) and warm (all cached).

    python benchmarks/ecosystem.py                              # httpx, its last 10 releases
    python benchmarks/ecosystem.py httpx:last:10 click:">=8.1" --workers 2

Prints per package the releases, records (raises and API changes) and records per release, and the
build time of each run; the cold run uses a fresh cache folder, the warm one reuses it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from assistant.releases.ecosystem import Target, build_ecosystem


def parse_target(text: str) -> Target:
    package, _, spec = text.partition(":")
    return Target(package, spec or "last:10", "{version}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("targets", nargs="*", default=["httpx:last:10"], help="NAME:SPEC (default httpx:last:10)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", type=Path, help="cache folder (default: a fresh temporary one)")
    args = parser.parse_args()
    targets = [parse_target(t) for t in args.targets]
    with tempfile.TemporaryDirectory(prefix="errata-ecosystem-") as tmp:
        cache = args.cache or Path(tmp) / "cache"
        for run in ("cold", "warm"):
            started = time.perf_counter()
            report = build_ecosystem(targets, Path(tmp) / "kb", cache=cache, workers=args.workers)
            seconds = time.perf_counter() - started
            for p in report.packages:
                per_release = p["raise_records"] / p["releases"]
                print(
                    f"{run}: {p['package']} {p['first']}..{p['last']}: {p['releases']} releases, "
                    f"{p['records']} records "
                    f"({p['raise_records']} raises, {p['api_change_records']} API changes; "
                    f"{per_release:.1f} raise records per release)"
                )
            print(f"{run}: {report.summary()}; wall {seconds:.1f} s with {args.workers} worker(s)")
            if report.failed:
                print(json.dumps(report.failed, indent=1))


if __name__ == "__main__":
    main()
