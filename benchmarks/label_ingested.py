"""Label a query set's no-answer queries with the ecosystem records that are their exact raise.

    python benchmarks/label_ingested.py ECOSYSTEM_KB [--set assistant/data/eval/dev.jsonl]
        [--out benchmarks/data/dev_ingested.jsonl]

Dev's no-answer queries are errors no curated record covers; many are a library's own raise, which the
ecosystem knowledge base (``errata kb build-ecosystem``) holds. Measured against dev alone, its right
answers to them count as wrong. This writes ``{id, ingested}`` lines for ``errata eval --labels``: for each
no-answer query, the ingested records of the query's exception class whose ``messagePattern`` matches its
message, kept to the library the paste names when it names one of theirs. Mechanical on purpose (no
judgement to tune): a raise matched by class and pattern is the raise. Ids are those of the build read
(a later ``last:3`` build starts some raises at another release, so relabel after rebuilding).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assistant.frontends.local_context import record_packages  # noqa: E402
from assistant.knowledge.records import INGESTED_TAG, Record, load_records  # noqa: E402
from assistant.parse.query import parse_query  # noqa: E402
from assistant.settings import BUNDLED_EVAL_DIR  # noqa: E402


def named_in(record: Record, text: str) -> bool:
    """Whether the paste names the record's library (``openai`` for openai/openai-python): any of the import
    names the answer's local context looks for, as written or with dashes."""
    text = text.lower()
    return any(name.lower() in text or name.lower().replace("_", "-") in text for name in record_packages(record))


_PLACEHOLDER_RE = re.compile(r"\{[^{}]*\}")
COVERED_LITERALS = 0.6  # a message cut short must still hold this share of the template's literal text


def template_regex(template: str) -> str:
    """The template as a regex: literal text escaped (any run of spaces as any), each placeholder any text.
    Like ingest's ``message_pattern``, but whole: its leading and trailing placeholders are kept, for a full
    match of a message cut short (``message_pattern`` drops them, for a search inside a paste)."""
    parts = _PLACEHOLDER_RE.split(template)
    return ".+?".join(r"\s+".join(map(re.escape, re.split(r"\s+", part))) for part in parts)


def literal_length(template: str) -> int:
    return len(_PLACEHOLDER_RE.sub("", template))


def cut_short(message: str, template: str) -> bool:
    """Whether ``message`` is the template rendered and cut at the end of one of its sentences (a paste
    that leaves out a trailing ``Response details: {response}``, say) and still holds most of its literal
    text: what a ``messagePattern`` written for the whole message misses."""
    message, whole = message.strip(), literal_length(template)
    for end in (m.end() for m in re.finditer(r"[.!?](?=\s)", template)):
        head = template[:end]
        if head.count("{") != head.count("}") or literal_length(head) < COVERED_LITERALS * whole:
            continue
        if re.fullmatch(template_regex(head), message):
            return True
    return False


def exact_raises(query_text: str, by_class: dict[str, list[Record]]) -> list[Record]:
    query = parse_query(query_text)
    if not query.message or not query.exception_class:
        return []
    hits = []
    for record in by_class.get(query.exception_class, []):
        try:
            if (record.message_pattern and re.search(record.message_pattern, query.message)) or cut_short(
                query.message, record.error_message
            ):
                hits.append(record)
        except re.error:
            continue
    if any(named_in(r, query_text) for r in hits):  # the paste says whose error it is
        hits = [r for r in hits if named_in(r, query_text)]
    return hits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("ecosystem", type=Path, help="the folder errata kb build-ecosystem wrote")
    parser.add_argument("--set", type=Path, default=BUNDLED_EVAL_DIR / "dev.jsonl")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/data/dev_ingested.jsonl"))
    args = parser.parse_args()
    by_class: dict[str, list[Record]] = {}
    for record in load_records(args.ecosystem):
        if INGESTED_TAG in record.tags:
            by_class.setdefault(record.error_class, []).append(record)
    lines = []
    for line in args.set.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else None
        if not row or row.get("relevant"):
            continue
        hits = exact_raises(row["query"], by_class)
        if hits:
            lines.append(json.dumps({"id": row["id"], "ingested": [r.id for r in hits]}))
            print(f"{row['id']}: {', '.join(f'{r.repo} {r.error_class} ({r.id})' for r in hits)}")
    args.out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(f"{len(lines)} of the set's no-answer queries labelled -> {args.out}")


if __name__ == "__main__":
    main()
