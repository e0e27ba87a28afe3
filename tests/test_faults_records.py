"""Hostile and damaged knowledge-base lines (issue 47): each is refused with its file and line, bounded in
time and memory, and the other records still load."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

from assistant import KnowledgeBaseError, load_records
from assistant.knowledge.records import LoadReport, parse_line, scan_records
from assistant.storage.shelf import RecordShelf

from .conftest import read_lines, write_lines

OLLAMA = "ollama__ollama-python.jsonl"


def _load_with_one_changed(small_kb, field: str, value: object, row: int = 0) -> tuple[list, LoadReport, str]:
    """Load ``small_kb`` with one field of one record of the Ollama file changed; (records, report, where)."""
    path = small_kb / OLLAMA
    rows = read_lines(path)
    rows[row]["record"][field] = value
    write_lines(path, rows)
    report = LoadReport()
    records = load_records(small_kb, report=report)
    return records, report, f"{path}:{row + 1}"


@pytest.mark.parametrize("pattern", ["(?:ab){4294967294}", "x{4000000}", "(?:(?:ab){900}){900}"])
def test_a_pattern_that_would_take_gigabytes_to_compile_is_refused_with_file_and_line(small_kb, pattern):
    """``(?:ab){4294967294}`` was accepted and the next query was killed for memory (12.7 GB); ``x{4000000}``
    cost 1 GB and 1.3 s."""
    started = time.perf_counter()
    records, report, where = _load_with_one_changed(small_kb, "messagePattern", pattern)
    assert time.perf_counter() - started < 10
    assert report.skipped == 1
    assert report.problems[0].startswith(f"{where}: messagePattern: ")
    assert "repeat" in report.problems[0] or "too large" in report.problems[0]
    assert pattern not in {r.message_pattern for r in records}
    with pytest.raises(KnowledgeBaseError, match=f"{where}: messagePattern"):
        load_records(small_kb, strict=True)


def test_a_pattern_with_modest_repeat_counts_is_still_accepted(small_kb):
    records, report, _where = _load_with_one_changed(small_kb, "messagePattern", r"token [0-9a-f]{32} expired \d{1,4}")
    assert report.skipped == 0
    assert r"token [0-9a-f]{32} expired \d{1,4}" in {r.message_pattern for r in records}


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("Agent interrupted (a|aa)+$", "repeats an alternation two of whose branches match 'aaa' two ways"),
        (r"Step \d+ of [^ ]+ interrupted: (a|aa)+$", "repeats an alternation"),
    ],
)
def test_a_catastrophic_pattern_behind_a_literal_prefix_is_refused_at_load(small_kb, pattern, reason):
    """It passed the load-time check (its trial texts never held the prefix) and cost the first query 0.75 s;
    an alternation of commuting literals (``a``, ``aa``) is refused by its shape, before any trial."""
    records, report, where = _load_with_one_changed(small_kb, "messagePattern", pattern)
    assert report.skipped == 1
    assert report.problems[0].startswith(f"{where}: messagePattern: {reason}")
    assert pattern not in {r.message_pattern for r in records}


def test_a_field_over_its_length_limit_is_refused_with_file_line_and_field(small_kb):
    records, report, where = _load_with_one_changed(small_kb, "sourceCode", "# comment\n" * 30_000, row=2)
    assert report.skipped == 1
    assert report.problems[0].startswith(f"{where}: sourceCode: 300000 characters, over the limit of ")
    assert all(len(r.source_code or "") < 300_000 for r in records)
    _records, report, where = _load_with_one_changed(small_kb, "tags", ["t"] * 5_000, row=3)
    assert report.problems[1].startswith(f"{where}: tags: 5000 items, over the limit of ")


def test_a_line_of_many_megabytes_is_refused_without_being_read_whole(small_kb):
    """An 800 MB comment line in a wheel became an 839 MB ``sourceCode``; loading it peaked at 3.7 GB."""
    path = small_kb / OLLAMA
    rows = read_lines(path)
    everything = len(load_records(small_kb))
    rows[1]["record"]["sourceCode"] = "#" * 24_000_000
    write_lines(path, rows)
    tracemalloc.start()
    try:
        report = LoadReport()
        records = load_records(small_kb, report=report)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000
    assert report.skipped == 1
    assert report.problems[0].startswith(f"{path}:2: the line is 24")
    assert "over the limit" in report.problems[0]
    assert len(records) == everything - 1
    # The lines after it keep their places: a shelf reads them back from their offsets.
    shelf = RecordShelf.load(small_kb)
    assert [r.id for r in shelf] == [r.id for r in records]


def test_a_lone_surrogate_escape_is_reported_with_file_and_line_and_skipped(small_kb):
    r"""``"\ud800"`` stopped ``errata build`` and ``errata ask`` at every start with a UnicodeEncodeError in
    ``content_hash`` and no file or line."""
    records, report, where = _load_with_one_changed(small_kb, "errorMessage", "Model not found \ud800", row=4)
    assert '\\ud800"' in (small_kb / OLLAMA).read_text()  # the JSON escape, as json.dumps writes it
    assert report.skipped == 1
    assert report.problems[0].startswith(f"{where}: errorMessage: ")
    assert "surrogate" in report.problems[0]
    assert all(len(r.content_hash) == 32 for r in records)  # what a build computes for every record
    with pytest.raises(KnowledgeBaseError, match=f"{where}: errorMessage: .*surrogate"):
        load_records(small_kb, strict=True)
    _records, report, where = _load_with_one_changed(small_kb, "tags", ["ok", "\udcff"], row=5)
    assert any(p.startswith(f"{where}: tags: ") for p in report.problems)


def test_a_byte_order_mark_does_not_cost_the_first_record(small_kb):
    path = small_kb / OLLAMA
    expected = [row["record"]["id"] for row in read_lines(path)]
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    report = LoadReport()
    found = [f for f in scan_records(small_kb, report=report) if f.path == path]
    assert report.skipped == 0
    assert [f.record.id for f in found] == expected
    shelf = RecordShelf.load(small_kb, strict=True)
    assert [r.id for r in shelf][-len(expected) :] == expected  # read back from the offsets past the mark


def test_a_json_error_reads_plainly(small_kb):
    path = small_kb / OLLAMA
    with path.open("a") as handle:
        handle.write('{"record": {"id": "0123456789abcdef", "errorMessage": "unterminated\n')
    report = LoadReport()
    load_records(small_kb, report=report)
    assert report.skipped == 1
    assert "not valid JSON (Invalid control character at column " in report.problems[0]
    assert "at at" not in report.problems[0]
    assert json.loads(json.dumps(report.problems))  # plain text a caller can show


def test_an_empty_pattern_is_refused_even_in_a_file_whose_patterns_are_trusted(small_kb):
    """A release-built litellm record had ``messagePattern: ""``, which matches every paste: it answered
    users' own bare ``AssertionError`` and ``StopIteration`` as litellm's ``BadRequestError``."""
    records, report, where = _load_with_one_changed(small_kb, "messagePattern", "")
    assert (
        report.skipped == 1
        and report.problems[0] == f"{where}: messagePattern: must not be empty (it would match every paste)"
    )
    assert "" not in {r.message_pattern for r in records}
    line = (small_kb / OLLAMA).read_text().splitlines()[0]
    with pytest.raises(ValueError, match="messagePattern: must not be empty"):
        parse_line(line, "x:1", check_pattern=False)
