"""How long a releases build takes, cold (empty cache: downloads and scans) and warm (all cached).

    python benchmarks/ecosystem.py                              # httpx, its last 10 releases
    python benchmarks/ecosystem.py httpx:last:10 click:">=8.1" --workers 2
    python benchmarks/ecosystem.py --builtin --cache ~/.cache/errata/releases --index   # the built-in list
    python benchmarks/ecosystem.py --builtin --retired spread:40 --cache ~/.cache/errata/releases  # and retired

Prints per package the releases, records (raises and API changes) and records per release, and the
build time of each run; the cold run uses a fresh cache folder, the warm one reuses it. With
``--index``, the records are then indexed with the bundled ones (``errata build``) and measured on the
dev set (``errata eval``, each a process of its own): index build time and size, retrieval p50 and the
peak RSS of the process answering.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from measured import run_measured  # benchmarks/measured.py

from assistant.releases.ecosystem import Target, build_ecosystem, default_targets
from assistant.settings import BUNDLED_EVAL_DIR, BUNDLED_KB_DIR


def parse_target(text: str) -> Target:
    package, _, spec = text.partition(":")
    return Target(package, spec or "last:10", "{version}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("targets", nargs="*", default=["httpx:last:10"], help="NAME:SPEC (default httpx:last:10)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", type=Path, help="cache folder (default: a fresh temporary one)")
    parser.add_argument("--builtin", action="store_true", help="the built-in package list of build-ecosystem")
    parser.add_argument("--retired", metavar="SPEC", help="older releases whose retired raises are added")
    parser.add_argument("--index", action="store_true", help="also index and measure retrieval (minutes)")
    args = parser.parse_args()
    targets = default_targets() if args.builtin else [parse_target(t) for t in args.targets]
    with tempfile.TemporaryDirectory(prefix="errata-ecosystem-") as tmp:
        cache = args.cache or Path(tmp) / "cache"
        for run in ("cold", "warm"):
            started = time.perf_counter()
            report = build_ecosystem(targets, Path(tmp) / "kb", cache=cache, workers=args.workers, retired=args.retired)
            seconds = time.perf_counter() - started
            for p in report.packages:
                per_release = p["raise_records"] / p["releases"]
                print(
                    f"{run}: {p['package']} {p['first']}..{p['last']}: {p['releases']} releases, "
                    f"{p['records']} records "
                    f"({p['raise_records']} raises, {p['api_change_records']} API changes, "
                    f"{p['retired_records']} retired raises of {p['older_releases']} older releases; "
                    f"{per_release:.1f} raise records per release)"
                )
            print(f"{run}: {report.summary()}; wall {seconds:.1f} s with {args.workers} worker(s)")
            if report.failed:
                print(json.dumps(report.failed, indent=1))
        if args.index:
            measure_index(Path(tmp) / "kb", Path(tmp) / "index")


def measure_index(kb: Path, index: Path) -> None:
    errata = [sys.executable, "-m", "assistant"]
    kbs = ["--kb", str(BUNDLED_KB_DIR), "--kb", str(kb)]
    build_s, build_rss, _out = run_measured([*errata, "build", *kbs, "--index", str(index)])
    size = sum(f.stat().st_size for f in index.rglob("*") if f.is_file()) / 1e6
    print(f"index: built in {build_s:.0f} s (peak RSS {build_rss / 1024:.0f} MB), {size:.0f} MB on disk")
    dev = BUNDLED_EVAL_DIR / "dev.jsonl"
    _seconds, rss, out = run_measured([*errata, "eval", "--json", *kbs, "--index", str(index), str(dev)], capture=True)
    figures = json.loads(out)
    latency = figures["latency_ms"]
    print(
        f"retrieval on {dev.name}: p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms; "
        f"peak RSS of the answering process {rss / 1024:.0f} MB; Hit@1 {figures['styles']['all']['hit@1']:.3f}"
    )


if __name__ == "__main__":
    main()
