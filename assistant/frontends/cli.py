"""The ``errata`` command: a thin shell over the API. Each subcommand parses flags, calls, prints."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import ConfigurationError, ErrataError
from ..settings import Settings
from .cli_kb import add_kb_parser, run_kb

EXAMPLES = """examples:
  errata ask "KeyError: 'OPENAI_API_KEY'"    answer an error line
  python job.py 2>&1 | errata ask -          answer what a failing job printed (its traceback)"""

ASK_EPILOG = (
    """Answers are composed offline from the knowledge base's records unless a model is set. To have an LLM
draft them, set ERRATA_MODEL (or --model) to a litellm model name, e.g. gpt-4o-mini or
anthropic/claude-3-5-haiku-latest. The provider's key is read from its usual environment variable
(OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); errata has no option of its own for keys.
ERRATA_API_BASE (or --api-base) points at another endpoint, e.g. a local OpenAI-compatible server.

"""
    + EXAMPLES
    + """
  ERRATA_MODEL=gpt-4o-mini OPENAI_API_KEY=... errata ask - < traceback.txt"""
)

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


def _positive(value: str) -> int:
    """An argparse type: a whole number of at least 1 (``--top-k 0`` retrieved nothing, yet said 0.98)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


PIP_ARG = "--pip-arg"


def _joined_pip_args(args: Sequence[str]) -> list[str]:
    """``--pip-arg --no-index`` as ``--pip-arg=--no-index``: argparse takes a value that starts with ``-`` for
    an option of its own ("expected one argument"), and a pip option always does. Not past ``--``."""
    out: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--":
            out += [word, *words]
            break
        following = next(words, None) if word == PIP_ARG else None
        out.append(word if following is None else f"{word}={following}")
    return out


class _Parser(argparse.ArgumentParser):
    """argparse, taking the word after ``--pip-arg`` as its value whatever it starts with (its subcommands'
    parsers are of this class too)."""

    def parse_known_args(self, args=None, namespace=None):
        return super().parse_known_args(_joined_pip_args(sys.argv[1:] if args is None else args), namespace)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="errata",
        description="Answers for Python errors, with sources.",
        epilog=EXAMPLES + "\n\n'errata COMMAND --help' tells more of each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "ask",
        help="answer a traceback, error line or question",
        description="Answer a traceback, an error line or a question from the knowledge base, citing its records.",
        epilog=ASK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("text", help="what to ask; '-' reads standard input")
    p.add_argument("--top-k", dest="top_k", type=_positive, help="how many records to retrieve (default 5)")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    p.add_argument(
        "--model",
        help="litellm model that drafts the answer, e.g. gpt-4o-mini (default: env ERRATA_MODEL, else offline)",
    )
    p.add_argument(
        "--api-base", dest="api_base", help="API base URL for the model, e.g. a local server (env ERRATA_API_BASE)"
    )
    _add_common(p)

    p = sub.add_parser("build", help="build or update the vector index")
    p.add_argument("--force", action="store_true", help="re-embed every record")
    p.add_argument("--json", action="store_true", help="print the build report as JSON")
    _add_common(p)

    p = sub.add_parser("eval", help="measure retrieval on a query set (Hit@k, MRR, abstention, latency)")
    p.add_argument(
        "file",
        type=Path,
        help="JSONL of {id, query, style, relevant[, kind, ingested]}, e.g. the dev set errata bundles, "
        "assistant/data/eval/dev.jsonl in a checkout",
    )
    p.add_argument(
        "--labels",
        type=Path,
        help="JSONL of {id, ingested}: ingested answers added to the set's queries (see benchmarks/data)",
    )
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument("--outcomes", type=Path, help="also write each query's outcome, rank and top record (JSONL)")
    _add_common(p)

    p = sub.add_parser(
        "refresh-kb",
        help="for maintainers: validate the curated knowledge base and copy it into the bundled one",
    )
    p.add_argument(
        "source",
        nargs="?",
        type=Path,
        help="folder of *.jsonl records (default: shared/kb/records in the folder above the errata checkout, "
        "where errata's maintainers keep the curated knowledge base)",
    )
    p.add_argument("-v", "--verbose", action="store_true")

    p = sub.add_parser("ingest", help="make records from a Python package's source (raises, warnings, logs)")
    p.add_argument("path", nargs="?", type=Path, help="folder or file of Python source (or use --package)")
    p.add_argument("--package", help="an installed package to read instead of PATH, e.g. slack_bolt")
    p.add_argument("--repo", help="OWNER/NAME the records name (default: from the package's metadata)")
    p.add_argument("--sha", help="commit of the source, for githubUrl links")
    compiled = "read only the Python, not the C, Cython and Rust"
    p.add_argument("--no-compiled", dest="compiled", action="store_false", help=compiled)
    p.add_argument("--enrich", action="store_true", help="have the configured LLM write documentation and fixes")
    p.add_argument("--model", help="litellm model name for --enrich (default: settings.model)")
    p.add_argument("--api-base", dest="api_base", help="API base URL for the model")
    p.add_argument("--batch-size", dest="batch_size", type=int, default=5, help="records per LLM call (default 5)")
    p.add_argument("-o", "--output", type=Path, required=True, help="the .jsonl file to write (kept enriched records)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("-v", "--verbose", action="store_true")
    _add_releases_flags(p)

    add_kb_parser(sub, _add_releases_flags)

    p = sub.add_parser("serve", help="serve the web chat (the same as python app.py)")
    p.add_argument("--host", help="interface to listen on (default 127.0.0.1; env ERRATA_HOST)")
    p.add_argument("--port", type=int, help="port to listen on (default 7860; env ERRATA_PORT)")
    p.add_argument("--model", help="litellm model name for drafting (default: offline answers)")
    p.add_argument("--api-base", dest="api_base", help="API base URL for the model")
    _add_common(p)

    p = sub.add_parser("feedback", help="feedback given in the web chat and Slack")
    feedback_sub = p.add_subparsers(dest="feedback_command", required=True, metavar="ACTION")
    e = feedback_sub.add_parser("export", help="write the feedback as eval-style JSONL")
    e.add_argument("output", type=Path, help="the .jsonl file to write")
    e.add_argument("--db", type=Path, help="the feedback SQLite file (default: settings.feedback_db)")

    p = sub.add_parser("slack", help="run the Slack bot (Socket Mode with SLACK_APP_TOKEN, else HTTP mode)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--socket", dest="slack_mode", action="store_const", const="socket", help="use Socket Mode")
    mode.add_argument("--http", dest="slack_mode", action="store_const", const="http", help="serve /slack/events")
    p.add_argument("--host", help="interface for HTTP mode (default 127.0.0.1; env ERRATA_HOST)")
    p.add_argument("--port", dest="slack_port", metavar="PORT", type=int, help="default 3000; env ERRATA_SLACK_PORT")
    p.add_argument("--model", help="litellm model name for drafting (default: offline answers)")
    p.add_argument("--api-base", dest="api_base", help="API base URL for the model")
    _add_common(p)

    from . import mcp_server, run

    run.add_parser(sub)
    mcp_server.add_parser(sub)

    for extend in _EXTENSIONS:
        extend(sub)
    return parser


def _add_releases_flags(p: argparse.ArgumentParser, ingest: bool = True) -> None:
    """``ingest --package NAME --releases SPEC`` and ``kb build-ecosystem``: the flags of :mod:`assistant.releases`."""
    if ingest:
        p.add_argument(
            "--releases",
            metavar="SPEC",
            help="download and read these releases of --package from the index: '>=0.23', '0.27.2,0.28.0', 'last:N'"
            ", 'minors:N' (the newest of each of the last N minor versions) or 'spread:N' (N evenly spaced over all)",
        )
        p.add_argument("--tag-format", dest="tag_format", help="git tag of a release for links (default 'v{version}')")
        sdists = "also fetch each binary wheel's sdist and read its C, Cython and Rust (slow: pip prepares it)"
        p.add_argument("--compiled-sdists", action="store_true", help=sdists)
    p.add_argument(
        "--releases-cache",
        dest="releases_cache",
        type=Path,
        help="downloads and scans (default ~/.cache/errata/releases)",
    )
    p.add_argument(
        PIP_ARG,
        dest="pip_args",
        action="append",
        default=[],
        metavar="ARG",
        help="extra pip option, once per word: --pip-arg --no-index, --pip-arg=--no-index (repeatable)",
    )


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
    if args.command == "run":  # before errata sets up logging: the script's own stays as Python's
        from .run import main as run_main

        return run_main(args, settings_from_args(args))
    level = logging.INFO if getattr(args, "verbose", False) else logging.WARNING
    logging.basicConfig(level=level, format="errata: %(levelname)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)  # libraries that set DEBUG on their own loggers stay quiet too
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
    from ..api import Assistant, configure_serving_threads

    text = sys.stdin.buffer.read().decode("utf-8", errors="replace") if args.text == "-" else args.text
    if not text.strip():  # before loading anything
        raise ConfigurationError("nothing to ask: give a traceback, an error line or a question (or - for stdin)")
    configure_serving_threads(settings)
    assistant = Assistant(settings, show_progress=sys.stderr.isatty())
    if args.json:
        print(json.dumps(assistant.ask(text).to_dict(), indent=2, ensure_ascii=False))
        return 0
    from .ask_output import print_answer

    # Rendered markdown in a terminal, plain text when piped; the threshold is the answering Assistant's.
    print_answer(assistant.ask_stream(text), assistant.settings.confidence_threshold)
    return 0


@command("build")
def _build(args: argparse.Namespace, settings: Settings) -> int:
    from ..embedding.embedder import Embedder
    from ..knowledge.knowledge_base import open_knowledge_base

    embedder = Embedder(settings.embedder, batch_size=settings.embed_batch_size)
    # The same path a server takes at start: the vector index, then the signal index saved beside it.
    opened = open_knowledge_base(settings, embedder, show_progress=True, force=args.force)
    build, report = opened.build_report, opened.load_report
    if args.json:
        extra = {"skipped_records": report.skipped, "superseded_records": report.superseded}
        print(json.dumps({**build.__dict__, "index_dir": str(settings.index_dir), **extra}))
    else:
        print(f"{build.summary()} -> {settings.index_dir}")
        if report.skipped:
            print(f"skipped {report.skipped} malformed record line(s); run with --strict to stop on them")
        if report.superseded:
            print(f"{report.superseded} ingested record(s) gave way to curated records of the same raise")
    return 0


@command("eval")
def _eval(args: argparse.Namespace, settings: Settings) -> int:
    from ..api import Assistant, configure_serving_threads
    from ..retrieval.evaluate import evaluate, load_eval_set, write_outcomes

    queries = load_eval_set(args.file, args.labels)
    configure_serving_threads(settings)  # latency as a server measures it
    assistant = Assistant(settings, show_progress=sys.stderr.isatty())
    report = evaluate(assistant, queries)
    if args.outcomes:
        write_outcomes(args.outcomes, report)
    print(json.dumps(report.to_dict()) if args.json else report.table())
    return 0


@command("refresh-kb")
def _refresh_kb(args: argparse.Namespace, settings: Settings) -> int:
    from ..knowledge.knowledge_base import DEFAULT_SOURCE, refresh_bundled_kb

    changes = refresh_bundled_kb(args.source or DEFAULT_SOURCE)
    print(changes.summary())
    return 0


@command("ingest")
def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    from ..ingest import ingest_to_file

    if args.releases:
        from ..releases.cli import ingest_releases_command

        return ingest_releases_command(args, settings)
    report = ingest_to_file(
        args.output,
        args.path,
        package=args.package,
        repo=args.repo,
        sha=args.sha,
        enrich=args.enrich,
        settings=settings,
        batch_size=args.batch_size,
        show_progress=sys.stderr.isatty(),
        compiled=args.compiled,
    )
    print(json.dumps(report.to_dict()) if args.json else f"{report.summary()} -> {args.output}")
    return 0


@command("kb")
def _kb(args: argparse.Namespace, settings: Settings) -> int:
    return run_kb(args, settings)


@command("serve")
def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from .web_serve import serve

    serve(settings)
    return 0


@command("feedback")
def _feedback(args: argparse.Namespace, settings: Settings) -> int:
    from .feedback import FeedbackStore

    store = FeedbackStore(args.db or settings.feedback_db)
    count = store.export_jsonl(args.output)
    print(f"wrote {count} feedback row(s) from {store.path} -> {args.output}")
    return 0


@command("mcp")
def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    from .mcp_server import serve

    serve(settings)
    return 0


@command("slack")
def _slack(args: argparse.Namespace, settings: Settings) -> int:
    from .slack import run

    run(settings.replace(slack_port=args.slack_port), mode=args.slack_mode)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
