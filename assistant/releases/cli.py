"""What the ``errata`` command calls for releases: ``ingest --releases`` and ``kb build-ecosystem``.

Parsing stays in :mod:`assistant.cli`; this module turns the parsed flags into calls and prints reports.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import ConfigurationError
from ..settings import Settings
from .build import ingest_releases_to_file
from .scan import DEFAULT_TAG_FORMAT


def ingest_releases_command(args: argparse.Namespace, settings: Settings) -> int:
    """``errata ingest --package NAME --releases SPEC -o FILE``."""
    if not args.package or args.path:
        raise ConfigurationError("--releases reads releases from the package index: give --package NAME, not a PATH")
    if args.sha:
        raise ConfigurationError("--sha names one commit; with --releases each release links to its tag (--tag-format)")
    report = ingest_releases_to_file(
        args.output,
        args.package,
        args.releases,
        cache=args.releases_cache,
        pip_args=args.pip_args,
        repo=args.repo,
        tag_format=args.tag_format or DEFAULT_TAG_FORMAT,
        show_progress=sys.stderr.isatty(),
        enrich_with=settings if args.enrich else None,
        batch_size=args.batch_size,
        compiled_sources=args.compiled_sdists,
    )
    print(json.dumps(report.to_dict()) if args.json else f"{report.summary()} -> {args.output}")
    return 0


def build_ecosystem_command(args: argparse.Namespace, settings: Settings) -> int:
    """``errata kb build-ecosystem -o DIR [--packages FILE] [--workers N] [--ray ADDRESS]``."""
    from .ecosystem import build_ecosystem, default_targets, read_targets

    targets = read_targets(args.packages) if args.packages else default_targets()
    report = build_ecosystem(
        targets,
        args.output,
        cache=args.releases_cache,
        pip_args=args.pip_args,
        workers=args.workers,
        ray_address=args.ray_address,
        retired=args.retired,
        show_progress=sys.stderr.isatty(),
    )
    print(json.dumps(report.to_dict()) if args.json else f"{report.summary()} -> {args.output}")
    return 1 if report.failed and not report.packages else 0
