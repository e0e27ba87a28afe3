"""The ``errata`` command: a thin shell over the API. Each subcommand parses flags, calls, prints."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import ErrataError
from .settings import Settings

Command = Callable[[argparse.Namespace, Settings], int]
COMMANDS: dict[str, Command] = {}


def command(name: str):
    def register(func: Command) -> Command:
        COMMANDS[name] = func
        return func

    return register


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kb",
        action="append",
        type=Path,
        help="knowledge-base folder or .jsonl file (repeat for several; default: the bundled records)",
    )
    parser.add_argument("--index", dest="index_dir", type=Path, help="index folder (default: index/)")
    parser.add_argument("--embedder", help="sentence-transformers model name or local path")
    parser.add_argument(
        "--strict", action="store_true", default=None, help="fail on the first malformed record instead of skipping it"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what errata does")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="errata", description="Answers for Python errors, with sources.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("ask", help="answer a traceback, error line or question")
    p.add_argument("text", help="what to ask; '-' reads standard input")
    p.add_argument("--top-k", dest="top_k", type=int, help="how many records to retrieve (default 5)")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    _add_common(p)

    p = sub.add_parser("build", help="build or update the vector index")
    p.add_argument("--force", action="store_true", help="re-embed every record")
    p.add_argument("--json", action="store_true", help="print the build report as JSON")
    _add_common(p)

    p = sub.add_parser(
        "refresh-kb",
        help="copy a knowledge base (default ../shared/kb/records) into the bundled one, after validating it",
    )
    p.add_argument("source", nargs="?", type=Path, help="folder of *.jsonl records")
    p.add_argument("-v", "--verbose", action="store_true")

    for extend in _EXTENSIONS:
        extend(sub)
    return parser


# Other modules' subcommands register a parser builder here (see ``register_subcommand``).
_EXTENSIONS: list[Callable[[argparse._SubParsersAction], None]] = []


def register_subcommand(builder: Callable[[argparse._SubParsersAction], None]) -> None:
    _EXTENSIONS.append(builder)


def settings_from_args(args: argparse.Namespace) -> Settings:
    names = {"kb", "index_dir", "embedder", "strict", "top_k", "model", "api_base", "host", "port"}
    overrides = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    return Settings.load(**overrides)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="errata: %(levelname)s: %(message)s",
    )
    try:
        settings = settings_from_args(args)
        return COMMANDS[args.command](args, settings)
    except ErrataError as exc:
        print(f"errata: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


@command("ask")
def _ask(args: argparse.Namespace, settings: Settings) -> int:
    from .api import Assistant

    text = sys.stdin.buffer.read().decode("utf-8", errors="replace") if args.text == "-" else args.text
    assistant = Assistant(settings, show_progress=sys.stderr.isatty())
    answer = assistant.ask(text)
    if args.json:
        print(json.dumps(answer.to_dict(), indent=2, ensure_ascii=False))
        return 0
    print(answer.text)
    if answer.citations:
        print()
        for c in answer.citations:
            print(f"[{c.number}] {c.repo} {c.error_class} ({c.record_id}) {c.github_url or ''}".rstrip())
    print(f"\nconfidence: {answer.confidence:.2f}")
    return 0


@command("build")
def _build(args: argparse.Namespace, settings: Settings) -> int:
    from .embed import Embedder
    from .index import open_index
    from .records import LoadReport, load_records

    report = LoadReport()
    records = load_records(settings.kb, strict=settings.strict, report=report)
    embedder = Embedder(settings.embedder, batch_size=settings.embed_batch_size)
    _index, build = open_index(records, embedder, settings.index_dir, show_progress=True, force=args.force)
    if args.json:
        print(json.dumps({**build.__dict__, "index_dir": str(settings.index_dir), "skipped_records": report.skipped}))
    else:
        print(f"{build.summary()} -> {settings.index_dir}")
        if report.skipped:
            print(f"skipped {report.skipped} malformed record line(s); run with --strict to stop on them")
    return 0


@command("refresh-kb")
def _refresh_kb(args: argparse.Namespace, settings: Settings) -> int:
    from .kb import DEFAULT_SOURCE, refresh_bundled_kb

    changes = refresh_bundled_kb(args.source or DEFAULT_SOURCE)
    print(changes.summary())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
