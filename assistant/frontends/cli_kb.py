"""``errata kb``: the knowledge-base builds, their flags and what each calls (the rest of the CLI is ``cli.py``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from ..settings import BUNDLED_KB_DIR, Settings


def _ecosystem_flags(e: argparse.ArgumentParser, releases_flags: Callable[..., None]) -> None:
    """The flags of a build over many packages' releases: ``build-ecosystem`` and ``update``."""
    e.add_argument(
        "--packages",
        type=Path,
        help="file of 'NAME SPEC [TAG_FORMAT [REPO]] [retired=SPEC]' lines (default: packages.txt)",
    )
    e.add_argument("--workers", type=int, help="processes for the (package, release) tasks (default: CPU count)")
    e.add_argument(
        "--ray",
        dest="ray_address",
        metavar="ADDRESS",
        help="run the tasks on a Ray cluster ('auto'; 'local': start one here)",
    )
    e.add_argument(
        "--retired",
        metavar="SPEC",
        help="also read these older releases ('spread:40') and add the raises none of the recent ones has",
    )
    e.add_argument("--json", action="store_true", help="print the report as JSON")
    e.add_argument("-v", "--verbose", action="store_true")
    releases_flags(e, ingest=False)


def add_kb_parser(sub: argparse._SubParsersAction, releases_flags: Callable[..., None]) -> None:
    """``errata kb ACTION``; ``releases_flags`` adds the flags every releases command shares (cli.py's)."""
    p = sub.add_parser("kb", help="knowledge-base builds")
    kb_sub = p.add_subparsers(dest="kb_command", required=True, metavar="ACTION")
    e = kb_sub.add_parser("build-ecosystem", help="ingest many packages over their recent releases, a file each")
    e.add_argument("-o", "--output", type=Path, required=True, help="folder for the <owner>__<name>.jsonl files")
    _ecosystem_flags(e, releases_flags)
    e = kb_sub.add_parser(
        "update",
        help="(maintainers) rebuild the release-built records the package ships: build, check, pack",
    )
    e.add_argument(
        "--work",
        type=Path,
        default=Path.home() / ".cache" / "errata" / "kb-update",
        help="folder for the build (default ~/.cache/errata/kb-update; run again to go on where it stopped)",
    )
    e.add_argument("--from", dest="built", type=Path, help="pack the records of a build already made, in this folder")
    _ecosystem_flags(e, releases_flags)
    kb_sub.add_parser("bundle-vectors", help="(maintainers, after refresh-kb) ship the bundled records' vectors")
    e = kb_sub.add_parser(
        "wordings", help="keep of an ingested build the records that add older wordings to curated records"
    )
    e.add_argument("source", type=Path, nargs="+", help="folders or .jsonl files of ingested records (build-ecosystem)")
    e.add_argument(
        "-o",
        "--output",
        type=Path,
        default=BUNDLED_KB_DIR / "wordings",
        help="folder for the <owner>__<name>.jsonl files (default: the bundled knowledge base's wordings/)",
    )


def run_kb(args: argparse.Namespace, settings: Settings) -> int:
    if args.kb_command == "bundle-vectors":
        from ..knowledge.bundle_vectors import bundle_vectors

        print(bundle_vectors(settings))
        return 0
    if args.kb_command == "wordings":
        from ..releases.earlier_wordings import extract_wordings

        print(f"{extract_wordings(settings.kb, args.source, args.output).summary()} -> {args.output}")
        return 0
    if args.kb_command == "update":
        return _update(args)
    from ..releases.cli import build_ecosystem_command

    return build_ecosystem_command(args, settings)


def _update(args: argparse.Namespace) -> int:
    from ..releases.ecosystem import read_targets
    from ..releases.update import update_release_records

    report = update_release_records(
        args.work,
        built=args.built,
        targets=read_targets(args.packages) if args.packages else None,
        show_progress=sys.stderr.isatty(),
        **(
            {}
            if args.built
            else {
                "cache": args.releases_cache,
                "pip_args": args.pip_args,
                "workers": args.workers,
                "ray_address": args.ray_address,
                "retired": args.retired,
            }
        ),
    )
    print(json.dumps(report.to_dict()) if args.json else report.summary())
    return 0 if report.shipped else 1
