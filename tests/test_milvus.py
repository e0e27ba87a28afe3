"""The Milvus store (milvus-lite, the real engine in a local file) behind the same index interface."""

import json
import shutil

import numpy as np
import pytest

from assistant import Assistant, Settings, load_records
from assistant.errors import ConfigurationError
from assistant.index import open_index
from assistant.settings import BUNDLED_KB_DIR

from .conftest import DEV_SET, read_lines, write_lines

pytest.importorskip("milvus_lite", reason="the milvus extra is not installed: pip install -e .[milvus]")

from assistant.index.milvus import open_milvus_index  # noqa: E402

pytestmark = pytest.mark.slow  # ONNX/OpenVINO exports, a browser, Milvus or whole-dev-set runs

LIBRARIES = ("huggingface__smolagents", "ollama__ollama-python", "huggingface__peft")


class CountingEmbedder:
    """The real embedder (the float model: int8 vectors move a little with their batch, and these tests
    compare stores, not runtimes), counting how many records it was asked to encode."""

    def __init__(self, real):
        self.real = real
        self.model_id = real.model_id
        self.encoded = 0

    @property
    def dimension(self):
        return self.real.dimension

    def encode_records(self, records, show_progress=False):
        self.encoded += len(records)
        return self.real.encode_records(records, show_progress=show_progress)

    def encode(self, texts, show_progress=False):
        return self.real.encode(texts, show_progress=show_progress)


@pytest.fixture
def kb(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    for name in LIBRARIES:
        shutil.copy(BUNDLED_KB_DIR / f"{name}.jsonl", folder / f"{name}.jsonl")
    return folder


def test_milvus_gives_the_same_top_hits_as_faiss_and_updates_incrementally(kb, tmp_path, float_embedder):
    records = load_records(kb)
    counting = CountingEmbedder(float_embedder)
    uri = str(tmp_path / "store.db")
    milvus, report = open_milvus_index(records, counting, uri, chunk_records=16)
    assert report.rebuilt and report.embedded == len(records) == counting.encoded
    faiss_index, _ = open_index(records, float_embedder, tmp_path / "faiss")

    libraries = {name.split("__")[1] for name in LIBRARIES}
    queries = [row["query"] for row in read_lines(DEV_SET) if row["id"].rsplit("-q", 1)[0] in libraries]
    assert len(queries) >= 30
    vectors = float_embedder.encode(queries)
    m_scores, m_rows = milvus.search(vectors, 5)
    f_scores, f_rows = faiss_index.search(vectors, 5)
    assert (m_rows[:, 0] == f_rows[:, 0]).all()
    assert np.mean([set(m) == set(f) for m, f in zip(m_rows, f_rows, strict=True)]) >= 0.95
    assert np.allclose(m_scores[:, 0], f_scores[:, 0], atol=1e-4)

    # Reopening embeds nothing; a changed record is re-embedded, a removed one deleted, a new one added.
    counting.encoded = 0
    _, report = open_milvus_index(records, counting, uri)
    assert not report.rebuilt and counting.encoded == 0
    path = kb / "ollama__ollama-python.jsonl"
    rows = read_lines(path)
    rows[0]["record"]["errorMessage"] = "The llama wandered off the pasture while streaming tokens."
    removed = rows.pop(1)["record"]["id"]
    write_lines(path, rows)
    records = load_records(kb)
    milvus, report = open_milvus_index(records, counting, uri)
    assert report.rebuilt and counting.encoded == 1 == report.embedded
    assert removed not in milvus.record_ids and len(milvus) == len(records)
    changed = next(r for r in records if r.id == rows[0]["record"]["id"])
    stored = milvus.client.get(milvus.collection, ids=[changed.id], output_fields=["vector", "text_hash"])
    assert np.allclose(stored[0]["vector"], float_embedder.encode_records([changed])[0], atol=1e-5)
    _, found = milvus.search(float_embedder.encode_records([changed]), 1)
    assert milvus.record_ids[found[0, 0]] == changed.id
    stored = milvus.client.query(milvus.collection, filter=f'id == "{removed}"', output_fields=["id"])
    assert list(stored) == []


def test_the_store_setting_puts_the_assistant_on_milvus(kb, tmp_path, float_embedder):
    uri = str(tmp_path / "assistant.db")
    settings = Settings.load(env={"ERRATA_STORE": f"milvus:{uri}"}, kb=[kb], index_dir=tmp_path / "unused")
    first = Assistant(settings, embedder=float_embedder)
    assert first.vector_index.manifest["index_type"] == "milvus" and first.build_report.rebuilt
    assert not (tmp_path / "unused" / "manifest.json").exists()
    second = Assistant(settings, embedder=float_embedder)  # a second replica on the same store
    assert not second.build_report.rebuilt
    assert second.search("Agent interrupted.")[0].record.id == "c6aeeba10bb30da8"
    assert json.loads(json.dumps(second.vector_index.manifest))["uri"] == uri


def test_an_unknown_store_says_what_to_set(kb, tmp_path, float_embedder):
    settings = Settings.load(env={"ERRATA_STORE": "redis://localhost"}, kb=[kb], index_dir=tmp_path / "i")
    with pytest.raises(ConfigurationError, match="milvus:<uri>"):
        Assistant(settings, embedder=float_embedder)
