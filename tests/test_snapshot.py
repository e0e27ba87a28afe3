"""The start-up snapshot: a second start maps what the first one saved, and never serves stale records."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from assistant import Assistant, Settings
from assistant.errors import KnowledgeBaseError
from assistant.knowledge.knowledge_base import SNAPSHOT_DIR
from assistant.storage.checksums import read_sealed_json, sealed_json
from tests.conftest import read_lines, write_lines

QUERIES = [
    "my agent stops with Agent interrupted",
    "ollama._types.ResponseError: model 'llama9' not found",
    "how do I give a tool to a CodeAgent?",
]


def _start(kb, index_dir, embedder, **overrides) -> Assistant:
    return Assistant(Settings.load(env={}), kb=kb, index_dir=index_dir, embedder=embedder, **overrides)


def _answers(assistant: Assistant) -> list[tuple[list[str], float]]:
    out = []
    for text in QUERIES:
        _query, retrieval = assistant.retrieve(text)
        out.append(([h.record.id for h in retrieval.hits], round(retrieval.confidence, 9)))
    return out


def test_a_second_start_uses_the_snapshot_and_answers_the_same(small_kb, tmp_path, embedder):
    first = _start(small_kb, tmp_path / "index", embedder)
    assert first.build_report.rebuilt and (tmp_path / "index" / SNAPSHOT_DIR / "snapshot.json").exists()
    second = _start(small_kb, tmp_path / "index", embedder)
    assert second.build_report.reason == "up to date (snapshot)"
    assert _answers(second) == _answers(first)
    assert list(second.records) == list(first.records)
    query = second.parse(QUERIES[1])
    assert np.array_equal(second.retriever.score(query).features, first.retriever.score(query).features)


@pytest.mark.slow
def test_an_edited_knowledge_base_file_is_loaded_again(small_kb, tmp_path, embedder):
    _start(small_kb, tmp_path / "index", embedder)
    path = next(small_kb.glob("*.jsonl"))
    rows = read_lines(path)
    new = dict(rows[0]["record"], id="e" * 16, errorMessage="Sprocket wobble exceeded the limit")
    new["messagePattern"] = r"Sprocket wobble exceeded the limit"
    write_lines(path, [*rows, {**rows[0], "record": new}])
    again = _start(small_kb, tmp_path / "index", embedder)
    assert again.build_report.reason != "up to date (snapshot)" and again.build_report.embedded == 1
    assert again.search("ValueError: Sprocket wobble exceeded the limit")[0].record.id == "e" * 16
    assert _start(small_kb, tmp_path / "index", embedder).build_report.reason == "up to date (snapshot)"


@pytest.mark.slow
def test_a_damaged_snapshot_is_rebuilt_with_a_warning(small_kb, tmp_path, embedder, caplog):
    expected = _answers(_start(small_kb, tmp_path / "index", embedder))
    (tmp_path / "index" / SNAPSHOT_DIR / "places.npy").write_bytes(b"\x93NUMPY garbage")
    with caplog.at_level(logging.WARNING):
        again = _start(small_kb, tmp_path / "index", embedder)
    assert any("snapshot" in r.getMessage() and "unusable" in r.getMessage() for r in caplog.records)
    assert _answers(again) == expected
    assert _start(small_kb, tmp_path / "index", embedder).build_report.reason == "up to date (snapshot)"


@pytest.mark.slow
def test_a_vector_index_rebuilt_since_the_snapshot_is_checked_again(small_kb, tmp_path, embedder):
    _start(small_kb, tmp_path / "index", embedder)
    manifest = tmp_path / "index" / "manifest.json"
    value, _sealed = read_sealed_json(manifest)
    manifest.write_text(sealed_json({**value, "rebuilt": "by another start"}))  # another manifest, sealed
    again = _start(small_kb, tmp_path / "index", embedder)
    assert again.build_report.reason != "up to date (snapshot)" and again.build_report.embedded == 0
    assert again.build_report.reason == "up to date"


@pytest.mark.slow
def test_strict_mode_still_stops_on_a_malformed_line(small_kb, tmp_path, embedder):
    path = next(small_kb.glob("*.jsonl"))
    with path.open("a") as handle:
        handle.write("{not json\n")
    lenient = _start(small_kb, tmp_path / "index", embedder)
    assert lenient.load_report.skipped == 1
    assert _start(small_kb, tmp_path / "index", embedder).load_report.skipped == 1  # from the snapshot
    with pytest.raises(KnowledgeBaseError, match=path.name):
        _start(small_kb, tmp_path / "index", embedder, strict=True)


@pytest.mark.slow
def test_a_snapshot_made_from_a_relative_path_serves_from_another_folder(small_kb, tmp_path, embedder, monkeypatch):
    monkeypatch.chdir(small_kb.parent)
    first = _start(small_kb.name, tmp_path / "index", embedder)
    monkeypatch.chdir(tmp_path / "index")
    second = _start(small_kb, tmp_path / "index", embedder)
    assert second.build_report.reason == "up to date (snapshot)"
    assert _answers(second) == _answers(first)
