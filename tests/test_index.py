import json
import logging

import numpy as np
import pytest

from assistant import Assistant, Settings, load_records
from assistant.index import open_index
from assistant.index.cache import EMBEDDINGS_NAME
from assistant.index.faiss_store import MANIFEST_NAME, VECTORS_NAME

from .conftest import read_lines, write_lines


class CountingEmbedder:
    """The real embedder, counting how many texts it was asked to encode."""

    def __init__(self, real):
        self.real = real
        self.model_id = real.model_id
        self.encoded = 0

    def encode_records(self, records, show_progress=False):
        self.encoded += len(records)
        return self.real.encode_records(records, show_progress=show_progress)

    def encode(self, texts, show_progress=False):
        self.encoded += len(texts)
        return self.real.encode(texts, show_progress=show_progress)


@pytest.fixture
def counting(embedder):
    return CountingEmbedder(embedder)


@pytest.mark.slow
def test_build_writes_files_and_reload_embeds_nothing(small_kb, tmp_path, counting):
    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    index, report = open_index(records, counting, index_dir)
    assert report.rebuilt and report.embedded == len(records) == counting.encoded
    for name in (MANIFEST_NAME, VECTORS_NAME, EMBEDDINGS_NAME):
        assert (index_dir / name).is_file()
    manifest = json.loads((index_dir / MANIFEST_NAME).read_text())
    assert manifest["count"] == len(records) and manifest["dimension"] == 384
    assert manifest["embedder"] == counting.model_id
    assert [e["id"] for e in manifest["records"]] == [r.id for r in records]
    assert {e["hash"] for e in manifest["records"]} == {r.content_hash for r in records}
    assert not list(index_dir.glob("*.tmp"))

    counting.encoded = 0
    reloaded, report = open_index(records, counting, index_dir)
    assert not report.rebuilt
    assert counting.encoded == 0
    query = counting.real.encode(["Agent interrupted."])
    assert reloaded.search(query, 3)[1][0].tolist() == index.search(query, 3)[1][0].tolist()


@pytest.mark.slow
def test_changing_one_record_re_embeds_exactly_that_record(small_kb, tmp_path, counting):
    index_dir = tmp_path / "index"
    open_index(load_records(small_kb), counting, index_dir)
    path = small_kb / "ollama__ollama-python.jsonl"
    rows = read_lines(path)
    rows[3]["record"]["documentation"] += " Also raised when the server restarts mid-stream."
    write_lines(path, rows)

    counting.encoded = 0
    records = load_records(small_kb)
    index, report = open_index(records, counting, index_dir)
    assert report.rebuilt and report.embedded == 1 and report.reused == len(records) - 1
    assert counting.encoded == 1
    changed_row = [r.id for r in records].index(rows[3]["record"]["id"])
    stored = np.load(index_dir / EMBEDDINGS_NAME)
    expected = counting.real.encode_records([records[changed_row]])[0]
    assert np.allclose(stored[changed_row], expected, atol=1e-5)


@pytest.mark.slow
def test_a_rebuild_that_drops_most_of_an_index_says_so(small_kb, tmp_path, counting, caplog, monkeypatch):
    """``--index`` pointed at another knowledge base's index rebuilds it; the vectors it drops are lost."""
    from assistant.index import faiss_store

    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    open_index(records, counting, index_dir)
    monkeypatch.setattr(faiss_store, "SHRINK_WARNING_RECORDS", 10)
    with caplog.at_level(logging.WARNING):
        open_index(records[: len(records) // 2 + 1], counting, index_dir)  # half of it kept: no warning
        assert "drops the rest" not in caplog.text
        index, report = open_index(records[:5], counting, index_dir)
    assert report.rebuilt and len(index) == 5
    assert f"held {len(records) // 2 + 1} records" in caplog.text and "--kb" in caplog.text


@pytest.mark.slow
def test_truncated_faiss_file_is_rebuilt_with_a_warning(small_kb, tmp_path, counting, caplog):
    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    open_index(records, counting, index_dir)
    vectors = index_dir / VECTORS_NAME
    vectors.write_bytes(vectors.read_bytes()[:100])

    counting.encoded = 0
    with caplog.at_level(logging.WARNING):
        index, report = open_index(records, counting, index_dir)
    assert "corrupt" in caplog.text
    assert report.rebuilt and counting.encoded == 0  # vectors came back from the embedding cache
    assert len(index) == len(records)
    assert not open_index(records, counting, index_dir)[1].rebuilt


@pytest.mark.slow
def test_garbage_manifest_and_cache_rebuild_from_scratch(small_kb, tmp_path, counting, caplog):
    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    open_index(records, counting, index_dir)
    (index_dir / MANIFEST_NAME).write_text("{ this is not json")
    (index_dir / EMBEDDINGS_NAME).write_bytes(b"\x00" * 10)
    counting.encoded = 0
    with caplog.at_level(logging.WARNING):
        _, report = open_index(records, counting, index_dir)
    assert "unreadable" in caplog.text
    assert report.rebuilt and counting.encoded == len(records)


@pytest.mark.slow
def test_assistant_uses_settings_and_reuses_an_index(small_kb, tmp_path, embedder):
    settings = Settings.load(env={}, kb=[small_kb], index_dir=tmp_path / "idx")
    first = Assistant(settings, embedder=embedder)
    assert first.build_report.rebuilt
    second = Assistant(settings, embedder=embedder)
    assert not second.build_report.rebuilt
    assert second.ask("Agent interrupted.").hits[0].record.id == "c6aeeba10bb30da8"
