"""What the bundled knowledge base covers, as the short markdown listing README.md shows.

    python -m assistant.knowledge.coverage                     # print the listing
    python -m assistant.knowledge.coverage --write README.md   # replace the block between the markers
    python -m assistant.knowledge.coverage --check README.md   # exit 1 when the block is out of date

The listing is made from the records themselves (the top-level ``*.jsonl`` files of the bundled knowledge
base, loaded as errata loads them), so it stays true when ``errata refresh-kb`` adds or drops a library.
The older wordings in ``wordings/`` lend patterns to curated records and are not counted.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..errors import KnowledgeBaseError
from ..settings import BUNDLED_KB_DIR
from .records import Record, load_records
from .release_records import shipped_files

START = "<!-- knowledge:start -->"
END = "<!-- knowledge:end -->"
PYTHON_REPO = "python/cpython"
AI = "AI libraries"
ECOSYSTEM = "Python and the wider ecosystem"
OTHER = "Other libraries"  # a repository not named below: listed by its repository's name until it is
GROUPS = (AI, ECOSYSTEM, OTHER)

# repo -> (the name people install or import it by, its group). A library missing here is still listed.
LIBRARIES: dict[str, tuple[str, str]] = {
    "567-labs/instructor": ("instructor", AI),
    "UKPLab/sentence-transformers": ("sentence-transformers", AI),
    "anthropics/anthropic-sdk-python": ("anthropic", AI),
    "crewAIInc/crewAI": ("crewai", AI),
    "facebookresearch/faiss": ("faiss", AI),
    "google/adk-python": ("google-adk", AI),
    "gradio-app/gradio": ("gradio", AI),
    "huggingface/accelerate": ("accelerate", AI),
    "huggingface/datasets": ("datasets", AI),
    "huggingface/huggingface_hub": ("huggingface_hub", AI),
    "huggingface/peft": ("peft", AI),
    "huggingface/smolagents": ("smolagents", AI),
    "huggingface/tokenizers": ("tokenizers", AI),
    "huggingface/transformers": ("transformers", AI),
    "langchain-ai/langgraph": ("langgraph", AI),
    "modelcontextprotocol/python-sdk": ("mcp", AI),
    "ollama/ollama-python": ("ollama", AI),
    "openai/openai-agents-python": ("openai-agents", AI),
    "openai/openai-python": ("openai", AI),
    "openai/tiktoken": ("tiktoken", AI),
    "pydantic/pydantic-ai": ("pydantic-ai", AI),
    "pytorch/pytorch": ("torch", AI),
    "qdrant/qdrant-client": ("qdrant-client", AI),
    "stanfordnlp/dspy": ("dspy", AI),
    "vllm-project/vllm": ("vllm", AI),
    "encode/httpx": ("httpx", ECOSYSTEM),
    "fastapi/fastapi": ("fastapi", ECOSYSTEM),
    "numpy/numpy": ("numpy", ECOSYSTEM),
    "pandas-dev/pandas": ("pandas", ECOSYSTEM),
    "psf/requests": ("requests", ECOSYSTEM),
    "pydantic/pydantic": ("pydantic", ECOSYSTEM),
    "pypa/pip": ("pip", ECOSYSTEM),
    "pypa/setuptools": ("setuptools", ECOSYSTEM),
    "pytest-dev/pytest": ("pytest", ECOSYSTEM),
    "slackapi/bolt-python": ("slack_bolt", ECOSYSTEM),
    "urllib3/urllib3": ("urllib3", ECOSYSTEM),
}
_RELEASE_TAG = re.compile(r"/blob/v?(\d+\.\d+(?:\.\d+)?)/")


def bundled_records(kb_dir: Path = BUNDLED_KB_DIR) -> list[Record]:
    """The curated records: the top-level ``*.jsonl`` files of ``kb_dir`` (not ``wordings/``)."""
    files = sorted(p for p in Path(kb_dir).glob("*.jsonl") if p.is_file())
    if not files:
        raise KnowledgeBaseError(f"no *.jsonl record files found in {kb_dir}")
    return load_records(files)


def _python_release(records: Sequence[Record]) -> str | None:
    """The one CPython release all of Python's records link to (``3.13.5``), if they agree on one."""
    releases = {m.group(1) if (m := _RELEASE_TAG.search(r.github_url or "")) else None for r in records}
    return releases.pop() if len(releases) == 1 else None


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _where(kb_dir: Path) -> str:
    if Path(kb_dir).resolve() == BUNDLED_KB_DIR.resolve():
        return "The bundled knowledge base (`assistant/data/kb/`)"
    return f"The knowledge base in `{kb_dir}`"


def knowledge_block(kb_dir: Path = BUNDLED_KB_DIR) -> str:
    """The markdown listing of what the knowledge base in ``kb_dir`` covers, without the markers."""
    records = bundled_records(kb_dir)
    counts = Counter(r.repo for r in records)
    python = [r for r in records if r.repo == PYTHON_REPO]
    groups: dict[str, list[tuple[str, int]]] = {g: [] for g in GROUPS}
    for repo, count in counts.items():
        if repo != PYTHON_REPO:
            name, group = LIBRARIES.get(repo, (repo.rsplit("/", 1)[-1], OTHER))
            groups[group].append((name, count))
    libraries = len(counts) - (1 if python else 0)
    sources = _count(libraries, "library", "libraries") + (" and Python itself" if python else "")
    lines = [
        f"{_where(kb_dir)} holds {_count(len(records), 'error record', 'error records')} from {sources};"
        " each name is followed by its number of records.",
        "",
    ]
    if python:
        release = _python_release(python)
        version = f"CPython {release}" if release else "CPython"
        lines.append(
            f"- **Python's own errors** ({version}: the interpreter, built-in types, standard library): {len(python)}"
        )
    for group in GROUPS:
        if groups[group]:
            listed = ", ".join(f"{name} {n}" for name, n in sorted(groups[group], key=lambda e: e[0].lower()))
            lines.append(f"- **{group}**: {listed}")
    shipped = shipped_files() if Path(kb_dir).resolve() == BUNDLED_KB_DIR.resolve() else []
    if shipped:
        repos = ((f.name.removesuffix(".jsonl").split("__", 1)[-1], f.records) for f in shipped)
        by_repo = sorted(repos, key=lambda entry: entry[0].lower())
        lines += [
            "",
            f"With them come {sum(n for _r, n in by_repo):,} records built from the releases of {len(by_repo)} "
            "packages (`assistant/data/releases/`: one per place an error is raised, extracted from the source, "
            "not reviewed; `ERRATA_RELEASE_RECORDS=false` leaves them out): "
            + ", ".join(f"{repo} {n:,}" for repo, n in by_repo)
            + ".",
        ]
    return "\n".join(lines)


def replace_block(text: str, block: str) -> str:
    """``text`` with what lies between the markers replaced by ``block``."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise KnowledgeBaseError(f"the markers {START} and {END} are not both there, in that order")
    return f"{text[: start + len(START)]}\n{block}\n{text[end:]}"


def current_block(text: str) -> str:
    """What lies between the markers in ``text`` now (without the newlines next to them)."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise KnowledgeBaseError(f"the markers {START} and {END} are not both there, in that order")
    return text[start + len(START) : end].strip("\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m assistant.knowledge.coverage", description="List what the bundled knowledge base covers."
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", metavar="FILE", type=Path, help="replace the knowledge block in FILE")
    action.add_argument("--check", metavar="FILE", type=Path, help="exit 1 if FILE's knowledge block is out of date")
    parser.add_argument("--kb", type=Path, default=BUNDLED_KB_DIR, help="knowledge-base folder (default: bundled)")
    args = parser.parse_args(argv)
    try:
        block = knowledge_block(args.kb)
        target = args.write or args.check
        if target is None:
            print(block)
            return 0
        text = target.read_text(encoding="utf-8")
        if args.check:
            if current_block(text) == block:
                return 0
            print(f"{target}: the knowledge block is out of date; run with --write {target}", file=sys.stderr)
            return 1
        updated = replace_block(text, block)
        if updated != text:
            target.write_text(updated, encoding="utf-8")
        print(f"{target}: knowledge block {'updated' if updated != text else 'already up to date'}")
        return 0
    except (OSError, KnowledgeBaseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
