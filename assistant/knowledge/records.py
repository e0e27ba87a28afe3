"""The Record type (seed schema v2) and loading it from JSONL with file:line errors.

A knowledge base is one or more folders or files of ``*.jsonl``; each line is
``{"record": {...}, "datasetVersion": "..."}`` (a bare record object is accepted too).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import KnowledgeBaseError
from . import record_limits as limits
from .checked import checked_files
from .pattern_safety import pattern_problem
from .record_limits import kb_files

logger = logging.getLogger(__name__)

# (JSON name, attribute, accepted types, required). Optional fields may be null or missing.
_STR = (str,)
_INT = (int,)
_LIST = (list,)
SCHEMA: tuple[tuple[str, str, tuple[type, ...], bool], ...] = (
    ("id", "id", _STR, True),
    ("repo", "repo", _STR, True),
    ("slug", "slug", _STR, True),
    ("errorCode", "error_code", _STR, False),
    ("errorMessage", "error_message", _STR, True),
    ("messagePattern", "message_pattern", _STR, True),
    ("errorType", "error_type", _STR, True),
    ("errorClass", "error_class", _STR, True),
    ("httpStatus", "http_status", _INT, False),
    ("severity", "severity", _STR, False),
    ("filePath", "file_path", _STR, True),
    ("lineNumber", "line_number", _INT, True),
    ("sourceCode", "source_code", _STR, False),
    ("sourceCodeStart", "source_code_start", _INT, False),
    ("sourceCodeEnd", "source_code_end", _INT, False),
    ("githubUrl", "github_url", _STR, False),
    ("documentation", "documentation", _STR, True),
    ("triggerScenarios", "trigger_scenarios", _STR, False),
    ("commonSituations", "common_situations", _STR, False),
    ("solutions", "solutions", _LIST, True),
    ("exampleFix", "example_fix", _STR, False),
    ("handlingStrategy", "handling_strategy", _STR, False),
    ("validationCode", "validation_code", _STR, False),
    ("typeGuard", "type_guard", _STR, False),
    ("tryCatchPattern", "try_catch_pattern", _STR, False),
    ("preventionTips", "prevention_tips", _LIST, False),
    ("tags", "tags", _LIST, False),
    ("backgroundTag", "background_tag", _STR, False),
    ("analyzedSha", "analyzed_sha", _STR, False),
    ("analyzedAt", "analyzed_at", _STR, False),
    ("schemaVersion", "schema_version", _INT, False),
)
_LIST_FIELDS = {"solutions", "preventionTips", "tags"}
_NAMES = tuple(name for name, _attr, _types, _required in SCHEMA)
_ID_RE = re.compile(r"^[0-9a-f]{16}$")
# Tag that `errata ingest` puts on the records it writes: they give way to curated records.
INGESTED_TAG = "ingested"
API_CHANGE_TAG = "api-change"  # a record of a removed or renamed public API (releases/changes.py)


@dataclass(frozen=True)
class Record:
    """One error raised in a public library, with what it means and how to fix it."""

    id: str
    repo: str
    slug: str
    error_message: str
    message_pattern: str
    error_type: str
    error_class: str
    file_path: str
    line_number: int
    documentation: str
    solutions: tuple[str, ...]
    error_code: str | None = None
    http_status: int | None = None
    severity: str | None = None
    source_code: str | None = None
    source_code_start: int | None = None
    source_code_end: int | None = None
    github_url: str | None = None
    trigger_scenarios: str | None = None
    common_situations: str | None = None
    example_fix: str | None = None
    handling_strategy: str | None = None
    validation_code: str | None = None
    type_guard: str | None = None
    try_catch_pattern: str | None = None
    prevention_tips: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    background_tag: str | None = None
    analyzed_sha: str | None = None
    analyzed_at: str | None = None
    schema_version: int | None = None
    dataset_version: str | None = None
    # Where the record was read from, for error messages; not part of the content.
    source: str = field(default="", compare=False)

    @property
    def library(self) -> str:
        """The repository's name (``huggingface/smolagents`` -> ``smolagents``)."""
        return self.repo.rsplit("/", 1)[-1]

    def to_dict(self) -> dict[str, Any]:
        """The record in the seed schema's JSON names."""
        out: dict[str, Any] = {}
        for json_name, attr, _types, _required in SCHEMA:
            value = getattr(self, attr)
            out[json_name] = list(value) if json_name in _LIST_FIELDS else value
        return out

    def to_json_line(self) -> str:
        """The record as one knowledge-base line, ``{"record": ..., "datasetVersion": ...}``."""
        return json.dumps({"record": self.to_dict(), "datasetVersion": self.dataset_version}, ensure_ascii=False)

    @property
    def content_hash(self) -> str:
        """A hash of everything the record says: equal hashes mean nothing needs re-embedding."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def record_from_dict(
    data: dict[str, Any],
    *,
    source: str = "",
    dataset_version: str | None = None,
    check_pattern: bool = True,
    check_fields: bool = True,
) -> Record:
    """Validate one record object and build a :class:`Record`.

    Raises ``ValueError`` whose message starts with the offending field's name. ``check_pattern=False``
    skips compiling ``messagePattern`` and timing it on hostile texts (~0.3 ms): for a line read again
    that was checked when the knowledge base was loaded. ``check_fields=False`` skips the fields' sizes and
    text: for a line too short to hold a field over its limit, with no surrogate escape.
    """
    if not isinstance(data, dict):
        raise ValueError(f"record: expected an object, got {type(data).__name__}")
    values: dict[str, Any] = {}
    for json_name, attr, types, required in SCHEMA:
        value = data.get(json_name)
        if value is None:
            if required:
                raise ValueError(f"{json_name}: required field is missing or null")
            if json_name in _LIST_FIELDS:
                values[attr] = ()
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            raise ValueError(f"{json_name}: expected {'/'.join(t.__name__ for t in types)}, got {type(value).__name__}")
        if json_name in _LIST_FIELDS:
            if not all(isinstance(item, str) for item in value):
                raise ValueError(f"{json_name}: every item must be a string")
            if len(value) > limits.MAX_LIST_ITEMS:
                raise ValueError(f"{json_name}: {len(value)} items, over the limit of {limits.MAX_LIST_ITEMS}")
            value = tuple(value)
        values[attr] = value
    problem = limits.fields_problem(data, _NAMES) if check_fields else None  # sizes, lone surrogates
    if problem:
        raise ValueError(problem)
    if not _ID_RE.match(values["id"]):
        raise ValueError(f"id: expected 16 lowercase hex characters, got {values['id']!r}")
    if not values["error_message"].strip():
        raise ValueError("errorMessage: must not be empty")
    if not values["message_pattern"]:  # matches every paste: an ingest that found no literal text to pin
        raise ValueError("messagePattern: must not be empty (it would match every paste)")
    slow = pattern_problem(values["message_pattern"]) if check_pattern else None
    if slow:
        raise ValueError(f"messagePattern: {slow}")
    return Record(**values, dataset_version=dataset_version, source=source)


@dataclass
class LoadReport:
    """What loading found besides the records: problems that were skipped."""

    files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Ingested records dropped because a curated record (or an earlier one) describes the same raise.
    superseded: int = 0

    @property
    def skipped(self) -> int:
        return len(self.problems)


def load_records(
    paths: Sequence[Path | str] | Path | str, *, strict: bool = False, report: LoadReport | None = None
) -> list[Record]:
    """Load and validate every record under ``paths``.

    A malformed line is an error naming file, line and field. By default it is skipped with a warning
    that counts what was skipped; with ``strict=True`` the first one raises :class:`KnowledgeBaseError`.
    Later files override nothing: a duplicate id is a problem like any other, except an ingested record
    repeated by another ingest run (the same raise: the first is kept, the repeat counted as superseded).
    Ingested records that describe a raise a curated record also describes give way to it (see
    :func:`prefer_curated`).
    """
    records = [found.record for found in scan_records(paths, strict=strict, report=report)]
    return prefer_curated(records, report)


@dataclass(frozen=True)
class FoundRecord:
    """A valid record and where its line is: file, byte offset and length, line number."""

    record: Record
    path: Path
    offset: int
    length: int
    lineno: int


def scan_records(
    paths: Sequence[Path | str] | Path | str, *, strict: bool = False, report: LoadReport | None = None
) -> Iterator[FoundRecord]:
    """Every valid record under ``paths`` in order, one at a time (see :func:`load_records` for the rules;
    the ingested-versus-curated choice is the caller's)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    report = report if report is not None else LoadReport()
    seen: dict[str, tuple[str, bool]] = {}  # id -> where it was first, and whether it was ingested
    found = 0
    files = kb_files(paths)
    checked = checked_files(files)  # the package's own files, checked when written (checked.py)
    for path in files:
        report.files.append(path)
        try:
            handle = path.open("rb")
        except OSError as exc:
            _problem(report, strict, f"{path}: cannot read file: {exc}")
            continue
        with handle:
            for lineno, line_offset, raw in limits.numbered_lines(handle):
                where = f"{path}:{lineno}"
                if isinstance(raw, int):  # a line too long to read (record_limits.py)
                    _problem(report, strict, f"{where}: {limits.over_long_line(raw)}")
                    continue
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    _problem(report, strict, f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})")
                    continue
                if not line.strip():
                    continue
                try:
                    record = parse_line(line, where, check_pattern=path not in checked)
                except ValueError as exc:
                    _problem(report, strict, f"{where}: {exc}")
                    continue
                ingested = INGESTED_TAG in record.tags
                if record.id in seen:
                    first, first_ingested = seen[record.id]
                    if ingested and first_ingested:
                        # The same raise from two ingest runs (ids are its identity's hash): one is enough.
                        report.superseded += 1
                        continue
                    _problem(report, strict, f"{where}: id: duplicate id {record.id} (first at {first})")
                    continue
                seen[record.id] = (where, ingested)
                found += 1
                yield FoundRecord(record, path, line_offset, len(raw), lineno)
    if report.problems:
        logger.warning("skipped %d malformed record line(s); first: %s", report.skipped, report.problems[0])
    if not found:
        raise KnowledgeBaseError(
            "the knowledge base holds no valid records"
            + (f" ({report.skipped} malformed; first: {report.problems[0]})" if report.problems else "")
        )


def prefer_curated(records: Sequence[Record], report: LoadReport | None = None) -> list[Record]:
    """Drop ingested records for a raise that a curated record already covers, and repeats of one id.

    A record is ingested when ``errata ingest`` tagged it so; every other record is curated and always kept,
    with the wordings of the ingested records that gave way to it (:mod:`assistant.knowledge.wordings`). Order is
    kept, so ranking ties stay stable.
    """
    choice = choose_curated([choice_entry(r) for r in records], report)
    if choice is None:
        return list(records)
    from .wordings import curated_samples, inherited_patterns

    inherited = inherited_patterns(records.__getitem__, choice.heirs, curated_samples(records, INGESTED_TAG))
    return [
        replace(r, message_pattern=inherited[i]) if i in inherited else r
        for i, (r, kept) in enumerate(zip(records, choice.keep, strict=True))
        if kept
    ]


# (repo, file, line), the raise's identity (repo, file, class, message template; see releases.identity),
# and the record id.
RaiseKey = tuple[tuple[str, str, int], str, str, str]


def choice_entry(record: Record) -> tuple[RaiseKey, bool]:
    """What the ingested-versus-curated choice needs of a record: the raise it describes, by line and by
    identity (which survives the line moving between releases), its id, its message identity (which
    survives the file differing), and whether it was ingested."""
    from ..releases.identity import message_identity, raise_identity

    line = (record.repo, record.file_path.removeprefix("src/"), record.line_number)
    return (line, raise_identity(record), record.id, message_identity(record)), INGESTED_TAG in record.tags


@dataclass
class CuratedChoice:
    """Which records are kept, and for each curated record the ingested ones that gave way to it."""

    keep: list[bool]
    # Curated record's position -> positions of the ingested records of the same raise that gave way to it:
    # their patterns carry the wordings of releases the curated record was not written from.
    heirs: dict[int, list[int]] = field(default_factory=dict)


def choose_curated(entries: Sequence[tuple[RaiseKey, bool]], report: LoadReport | None = None) -> CuratedChoice | None:
    """An ingested record gives way to a curated one at the same line, of the same raise identity (a newer
    release moves lines) or of the same message identity (the same library, class and message template in
    whatever file); of ingested records only a repeated id is dropped (records of several releases share
    a file and line number by chance). None when every record is curated."""
    if not any(ingested for _key, ingested in entries):
        return None  # the common case, kept cheap for very large knowledge bases
    curated: dict[object, list[int]] = {}
    curated_templates: dict[str, list[tuple[str, int]]] = {}  # "repo|class" -> (message template, position)
    for position, ((line, identity, _record_id, message), ingested) in enumerate(entries):
        if not ingested:
            for key in (("line", line), ("raise", identity), ("message", message)):
                curated.setdefault(key, []).append(position)
            repo, error_class, template = message.split("|", 2)
            curated_templates.setdefault(f"{repo}|{error_class}", []).append((template, position))
    choice = CuratedChoice(keep=[])
    seen_ids: set[str] = set()
    for position, ((line, identity, record_id, message), ingested) in enumerate(entries):
        twins: set[int] = set()
        at_line: list[int] = []
        if ingested:
            at_line = curated.get(("line", line), [])
            twins.update(curated.get(("raise", identity), ()), curated.get(("message", message), ()))
            if not twins:
                twins.update(_grown_twins(message, curated_templates))
        dropped = ingested and (bool(twins or at_line) or record_id in seen_ids)
        choice.keep.append(not dropped)
        # The same line in another release is often another raise: it inherits only when reworded a little.
        twins.update(i for i in at_line if _reworded(entries[i][0][3], message))
        # Several curated records of one raise tell its texts apart (an Ollama server's "model not found"
        # and "does not support tools"): an ingested pattern matches them all, so none inherits it.
        if len(twins) == 1:
            choice.heirs.setdefault(twins.pop(), []).append(position)
        if dropped and report is not None:
            report.superseded += 1
        if ingested:
            seen_ids.add(record_id)
    if not all(choice.keep):
        logger.info("%d ingested record(s) gave way to curated records of the same raise", choice.keep.count(False))
    return choice


def _grown_twins(message: str, curated_templates: dict[str, list[tuple[str, int]]]) -> list[int]:
    """Curated records of the same library and class whose message begins with this one's, or this one's
    with theirs: one raise whose message a release gave a tail or cut one (fastapi 0.83's ``Invalid args
    for response field! ... field type`` grew ``. If you are using a return type annotation ...``)."""
    from ..releases.identity import one_begins_the_other

    repo, error_class, template = message.split("|", 2)
    return [
        position
        for other, position in curated_templates.get(f"{repo}|{error_class}", ())
        if one_begins_the_other(template, other)
    ]


def _reworded(message_identity: str, other: str) -> bool:
    from ..releases.identity import REWORDED, similarity

    return similarity(message_identity, other) >= REWORDED


def parse_line(line: str, where: str, *, check_pattern: bool = True) -> Record:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        # Some of json's messages end in "at" ("Unterminated string starting at"): one "at" is enough.
        raise ValueError(f"not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    dataset_version = data.get("datasetVersion")
    inner = data.get("record", data) if "record" in data else data
    if not isinstance(dataset_version, (str, type(None))):
        raise ValueError("datasetVersion: expected str")
    check = limits.may_overflow(line)  # a short line with no surrogate escape is not walked field by field
    if check and (problem := limits.field_problem("datasetVersion", dataset_version)):
        raise ValueError(problem)
    return record_from_dict(
        inner, source=where, dataset_version=dataset_version, check_pattern=check_pattern, check_fields=check
    )


def _problem(report: LoadReport, strict: bool, message: str) -> None:
    if strict:
        raise KnowledgeBaseError(message)
    report.problems.append(message)
    logger.warning("%s", message)
