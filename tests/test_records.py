import json
import logging

import pytest

from assistant import KnowledgeBaseError, load_records
from assistant.knowledge.records import LoadReport
from assistant.settings import BUNDLED_KB_DIR

from .conftest import read_lines, write_lines


def test_bundled_knowledge_base_loads_every_record_with_every_field():
    records = load_records(BUNDLED_KB_DIR, strict=True)
    assert len(records) >= 500
    assert len({r.id for r in records}) == len(records)
    agent = next(r for r in records if r.id == "c6aeeba10bb30da8")
    assert agent.repo == "huggingface/smolagents"
    assert agent.error_class == "AgentError"
    assert agent.solutions and isinstance(agent.solutions, tuple)
    assert agent.github_url.startswith("https://github.com/huggingface/smolagents/")
    original = read_lines(BUNDLED_KB_DIR / "huggingface__smolagents.jsonl")
    first = next(row["record"] for row in original if row["record"]["id"] == agent.id)
    assert agent.to_dict() == first  # nothing dropped, nothing renamed


def test_malformed_line_names_file_line_and_field_and_the_rest_still_loads(small_kb, caplog):
    path = small_kb / "ollama__ollama-python.jsonl"
    rows = read_lines(path)
    rows[2]["record"]["lineNumber"] = "forty"
    write_lines(path, rows)
    with path.open("a") as handle:
        handle.write("{not json\n")
    report = LoadReport()
    with caplog.at_level(logging.WARNING):
        records = load_records(small_kb, report=report)
    assert report.skipped == 2
    assert f"{path}:3: lineNumber: expected int, got str" in report.problems[0]
    assert f"{path}:{len(rows) + 1}: not valid JSON" in report.problems[1]
    assert "skipped 2 malformed record line(s)" in caplog.text
    assert len(records) == len(rows) - 1 + len(read_lines(small_kb / "huggingface__smolagents.jsonl"))


def test_strict_mode_fails_on_the_first_problem(small_kb):
    path = small_kb / "ollama__ollama-python.jsonl"
    rows = read_lines(path)
    del rows[4]["record"]["errorMessage"]
    write_lines(path, rows)
    with pytest.raises(KnowledgeBaseError, match=rf"{path}:5: errorMessage: required field"):
        load_records(small_kb, strict=True)


def test_pattern_that_does_not_compile_and_duplicate_ids_are_reported(small_kb):
    path = small_kb / "ollama__ollama-python.jsonl"
    rows = read_lines(path)
    rows[0]["record"]["messagePattern"] = "unbalanced (group"
    rows.append(json.loads(json.dumps(rows[1])))
    write_lines(path, rows)
    report = LoadReport()
    load_records(small_kb, report=report)
    assert any(":1: messagePattern: does not compile" in p for p in report.problems)
    assert any(f":{len(rows)}: id: duplicate id {rows[1]['record']['id']}" in p for p in report.problems)


def test_an_ingested_record_repeated_by_another_ingest_run_is_kept_once_without_a_warning(small_kb, tmp_path, caplog):
    """Ids of ingested records are their raise's identity: two ecosystem builds that both read a release
    give the same record twice, which is one record, not a malformed line."""
    rows = read_lines(small_kb / "ollama__ollama-python.jsonl")
    ingested = json.loads(json.dumps(rows[0]))
    ingested["record"].update(
        id="0123456789abcdef",
        tags=["ollama", "ingested"],
        lineNumber=999,
        errorMessage="Only the ingested records know this one {name}",
        messagePattern="Only the ingested records know this one .+",
    )
    first, second = tmp_path / "build-a", tmp_path / "build-b"
    for folder in (first, second):
        folder.mkdir()
        write_lines(folder / "ollama__ollama-python.jsonl", [ingested])
    report = LoadReport()
    with caplog.at_level(logging.WARNING, logger="assistant"):
        records = load_records([small_kb, first, second], report=report)
    assert [r.id for r in records].count("0123456789abcdef") == 1
    assert report.problems == [] and report.superseded == 1 and "malformed" not in caplog.text


def test_missing_or_empty_knowledge_base_is_a_clear_error(tmp_path):
    with pytest.raises(KnowledgeBaseError, match="does not exist"):
        load_records(tmp_path / "nowhere")
    with pytest.raises(KnowledgeBaseError, match="no \\*.jsonl record files"):
        load_records(tmp_path)
