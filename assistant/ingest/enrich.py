"""LLM enrichment of ingested records: documentation, triggers, fixes, in batches, resumable.

The model sees only what the extractor found (message, class, source lines, guards) and answers one
JSON object per batch. Each reply is validated against the seed schema; records with an invalid or
missing answer are asked for once more, then left as extracted. The output file is rewritten after
every batch, so a run that stops (Ctrl-C, network gone) continues where it left off.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..answering.llm import ChatModel, complete_text
from ..errors import ConfigurationError, LLMError
from ..knowledge.records import Record, record_from_dict
from ..settings import Settings
from .output import ENRICHED_TAG, EXTRACTED_TAG, IngestReport, write_records

HANDLING_STRATEGIES = ("try-catch", "validation", "configuration", "retry", "fallback", "upgrade", "type-guard")
# Fields the model writes: JSON name -> "str" or "list".
ENRICHED_FIELDS = {
    "documentation": "str",
    "triggerScenarios": "str",
    "commonSituations": "str",
    "solutions": "list",
    "exampleFix": "str",
    "preventionTips": "list",
    "handlingStrategy": "str",
    "backgroundTag": "str",
}
_KEBAB_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")
# Tokens the model may spend per record of a batch.
TOKENS_PER_RECORD = 700

SYSTEM_PROMPT = f"""You document errors raised by a Python library, for a knowledge base that developers search \
when they meet the error. For each record you get the error's class, message (placeholders as {{expr}}), file, \
the source code around the raise and what a static reading found. Describe only what that code supports; do not \
invent options or versions.

Reply with one JSON object {{"records": [...]}} holding one object per record, with exactly these keys:
- "id": the record's id, unchanged
- "documentation": what the error means and what in the code raises it (2-4 sentences)
- "triggerScenarios": the calls, arguments or configuration that make the library raise it
- "commonSituations": where developers typically meet it
- "solutions": concrete steps that fix it, best first (a list of strings, at least one)
- "exampleFix": a short before/after code example
- "preventionTips": a list of short tips
- "handlingStrategy": one of {", ".join(HANDLING_STRATEGIES)}
- "backgroundTag": a kebab-case category shared across libraries, e.g. auth-missing-api-key, invalid-argument, \
missing-optional-dependency"""


def enrich_records(
    records: list[Record],
    settings: Settings,
    *,
    output: str | Path,
    batch_size: int = 5,
    show_progress: bool = False,
    report: IngestReport | None = None,
) -> list[Record]:
    """Enrich every record not yet enriched, writing ``output`` (all records) after each batch.

    Returns the records in their original order; ``records`` itself is updated in place as batches finish.
    An unreachable model raises :class:`~assistant.errors.LLMError` after the batches already written.
    """
    client = ChatModel.from_settings(settings)
    if client is None:
        raise ConfigurationError("enrichment needs an LLM: pass --model NAME (litellm name) or set ERRATA_MODEL")
    report = report if report is not None else IngestReport()
    position = {r.id: i for i, r in enumerate(records)}
    pending = [r for r in records if ENRICHED_TAG not in r.tags]
    batch_size = max(1, batch_size)
    with tqdm(total=len(pending), unit="record", desc="enriching", disable=not show_progress) as bar:
        for start in range(0, len(pending), batch_size):
            batch = pending[start : start + batch_size]
            try:
                done, failed = enrich_batch(client, batch)
            except LLMError as exc:
                raise LLMError(
                    f"{exc}; {report.enriched} record(s) enriched in this run are saved in {output}: "
                    "run the same command again to continue from there"
                ) from None
            for record in done:
                records[position[record.id]] = record
            report.enriched += len(done)
            report.enrich_failed += len(failed)
            write_records(output, records)
            bar.update(len(batch))
    return records


def enrich_batch(client: ChatModel, batch: Sequence[Record]) -> tuple[list[Record], list[str]]:
    """Ask once for the batch, once more for records whose answer was invalid; return (enriched, failed ids)."""
    done: dict[str, Record] = {}
    todo = list(batch)
    problems: list[str] = []
    for _attempt in range(2):
        reply = complete_text(
            client, _messages(todo, problems), json_mode=True, max_tokens=TOKENS_PER_RECORD * len(todo) + 200
        )
        enriched, problems = parse_reply(reply, todo)
        done.update((r.id, r) for r in enriched)
        todo = [r for r in todo if r.id not in done]
        if not todo:
            break
    return [done[r.id] for r in batch if r.id in done], [r.id for r in todo]


def parse_reply(reply: str, batch: Sequence[Record]) -> tuple[list[Record], list[str]]:
    """The records a reply validly enriches, and what was wrong with the rest (for the retry prompt)."""
    try:
        data = json.loads(_FENCE_RE.sub("", reply))
    except json.JSONDecodeError as exc:
        return [], [f"the reply was not valid JSON ({exc.msg}); reply with one JSON object only"]
    items = data.get("records") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return [], ['the reply must be an object {"records": [...]}']
    answers = {item.get("id"): item for item in items if isinstance(item, dict)}
    enriched: list[Record] = []
    problems: list[str] = []
    for record in batch:
        item = answers.get(record.id)
        if item is None:
            problems.append(f"record {record.id}: missing from the reply")
            continue
        try:
            enriched.append(apply_enrichment(record, item))
        except ValueError as exc:
            problems.append(f"record {record.id}: {exc}")
    return enriched, problems


def apply_enrichment(record: Record, item: dict[str, Any]) -> Record:
    """The record with the model's fields, validated against the schema; ``ValueError`` names what is wrong."""
    values: dict[str, Any] = {}
    for name, kind in ENRICHED_FIELDS.items():
        value = item.get(name)
        if kind == "str":
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name}: expected a non-empty string")
            values[name] = value.strip()
        else:
            if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
                raise ValueError(f"{name}: expected a non-empty list of strings")
            values[name] = [v.strip() for v in value]
    if values["handlingStrategy"] not in HANDLING_STRATEGIES:
        raise ValueError(f"handlingStrategy: expected one of {', '.join(HANDLING_STRATEGIES)}")
    if not _KEBAB_RE.match(values["backgroundTag"]):
        raise ValueError("backgroundTag: expected kebab-case, e.g. invalid-argument")
    data = {**record.to_dict(), **values}
    data["tags"] = [ENRICHED_TAG if t == EXTRACTED_TAG else t for t in record.tags]
    if ENRICHED_TAG not in data["tags"]:
        data["tags"].append(ENRICHED_TAG)
    return record_from_dict(data, source=record.source, dataset_version=record.dataset_version)


def _messages(batch: Sequence[Record], problems: Sequence[str]) -> list[dict[str, str]]:
    facts = [
        {
            "id": r.id,
            "errorClass": r.error_class,
            "errorType": r.error_type,
            "errorMessage": r.error_message,
            "filePath": r.file_path,
            "lineNumber": r.line_number,
            "sourceCode": r.source_code,
            "staticReading": r.documentation,
            "triggers": r.trigger_scenarios,
        }
        for r in batch
    ]
    text = "Records:\n" + json.dumps(facts, indent=1, ensure_ascii=False)
    if problems:
        text += "\n\nYour previous reply could not be used:\n- " + "\n- ".join(problems)
        text += "\nAnswer again for these records, following the format exactly."
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text}]
