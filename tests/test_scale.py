"""Index type by size, memory-mapped loading, and builds that resume after an interruption."""

import json
import shutil

import faiss
import numpy as np
import pytest

from assistant import load_records
from assistant.embedding.embedder import Embedder
from assistant.index import load_index, open_index
from assistant.index.ann import exact_top_k, recall_at_k
from assistant.index.cache import EMBEDDINGS_NAME, PARTIAL_DIR
from assistant.index.faiss_store import MANIFEST_NAME
from assistant.settings import BUNDLED_KB_DIR

from .conftest import DEV_SET, read_lines

pytestmark = pytest.mark.slow  # ONNX/OpenVINO exports, a browser, Milvus or whole-dev-set runs


class InterruptedEmbedder:
    """The real embedder, stopped by a Ctrl-C after ``batches`` calls, counting what it encoded."""

    def __init__(self, real, batches=None):
        self.real = real
        self.model_id = real.model_id
        self.batches = batches
        self.encoded = 0

    def encode_records(self, records, show_progress=False):
        if self.batches is not None and self.batches == 0:
            raise KeyboardInterrupt
        if self.batches is not None:
            self.batches -= 1
        self.encoded += len(records)
        return self.real.encode_records(records, show_progress=show_progress)


@pytest.fixture
def bundled_copy(assistant, bundled_index_dir, tmp_path):
    """A private copy of the bundled index (exact), so a test can rebuild it without re-embedding."""
    copy = tmp_path / "index"
    shutil.copytree(bundled_index_dir, copy)
    return copy


def test_past_the_exact_limit_an_ivf_index_keeps_recall_and_is_memory_mapped(assistant, embedder, bundled_copy):
    records = assistant.records
    counting = InterruptedEmbedder(embedder)
    index, report = open_index(records, counting, bundled_copy, exact_limit=100)
    assert report.rebuilt and "index type" in report.reason
    assert counting.encoded == 0  # every vector came from the embedding cache

    manifest = json.loads((bundled_copy / MANIFEST_NAME).read_text())
    assert manifest["index_type"] == "ivf-sq8"
    params = manifest["index_params"]
    assert params["nlist"] >= 8 and 1 <= params["nprobe"] <= params["nlist"] and params["refine"] >= 1
    assert params["calibrated_recall_at_10"] >= 0.98

    queries = embedder.encode([row["query"] for row in read_lines(DEV_SET)[:120]])
    vectors = np.load(bundled_copy / EMBEDDINGS_NAME)
    exact = exact_top_k(vectors, queries, 10)
    served = load_index(bundled_copy, embedder.model_id)  # what a replica loads: no records needed
    scores, rows = served.search(queries, 10)
    assert recall_at_k(rows, exact) >= 0.98
    assert np.allclose(scores[:, 0], np.sum(vectors[rows[:, 0]] * queries, axis=1), atol=1e-5)  # exact scores
    ivf = faiss.extract_index_ivf(served.faiss_index)
    assert isinstance(faiss.downcast_InvertedLists(ivf.invlists), faiss.OnDiskInvertedLists)  # mapped, not read
    assert ivf.nprobe == params["nprobe"]

    # A deep search scores only the nearest `exact` rows exactly, the rest by the 8-bit codes, in one list.
    deep_scores, deep_rows = served.search(queries[:5], 200, exact=20)
    for q in range(5):
        assert len(set(deep_rows[q].tolist())) == 200 and (deep_rows[q] >= 0).all()
        truth = vectors[deep_rows[q]] @ queries[q]
        assert np.allclose(deep_scores[q, :20], truth[:20], atol=1e-5)
        assert np.all(np.diff(deep_scores[q, :20]) <= 0)
        assert np.abs(deep_scores[q, 20:] - truth[20:]).max() < 0.05  # approximate, close
        assert recall_at_k(deep_rows[q : q + 1, :10], exact[q : q + 1]) >= 0.9

    again, report = open_index(records, counting, bundled_copy, exact_limit=100)
    assert not report.rebuilt and again.index_type == "ivf-sq8"
    assert assistant.search("Agent interrupted.")[0].record.id == "c6aeeba10bb30da8"


def test_an_interrupted_build_resumes_without_re_embedding(tmp_path, float_embedder):
    kb = tmp_path / "kb"
    kb.mkdir()
    shutil.copy(BUNDLED_KB_DIR / "huggingface__peft.jsonl", kb)
    records = load_records(kb)
    index_dir = tmp_path / "index"

    stopping = InterruptedEmbedder(float_embedder, batches=2)
    with pytest.raises(KeyboardInterrupt):
        open_index(records, stopping, index_dir, chunk_records=8)
    assert stopping.encoded == 16
    assert not (index_dir / MANIFEST_NAME).exists()
    assert len((index_dir / PARTIAL_DIR / "keys.txt").read_text().splitlines()) == 16

    resuming = InterruptedEmbedder(float_embedder)
    index, report = open_index(records, resuming, index_dir, chunk_records=8)
    assert report.rebuilt and resuming.encoded == len(records) - 16 == report.embedded
    assert not (index_dir / PARTIAL_DIR).exists()
    stored = np.load(index_dir / EMBEDDINGS_NAME)
    assert np.allclose(stored, float_embedder.encode_records(records), atol=1e-5)
    assert index.search(stored[5], 1)[1][0, 0] == 5


def test_a_half_written_batch_is_dropped_on_resume(tmp_path, float_embedder):
    kb = tmp_path / "kb"
    kb.mkdir()
    shutil.copy(BUNDLED_KB_DIR / "huggingface__peft.jsonl", kb)
    records = load_records(kb)[:20]
    index_dir = tmp_path / "index"
    with pytest.raises(KeyboardInterrupt):
        open_index(records, InterruptedEmbedder(float_embedder, batches=1), index_dir, chunk_records=8)
    partial = index_dir / PARTIAL_DIR
    with open(partial / "vectors.f32", "ab") as handle:  # a crash after writing rows, before their keys
        handle.write(np.ones((3, 384), dtype=np.float32).tobytes())
    with open(partial / "keys.txt", "a") as handle:  # and a key cut off mid-line
        handle.write("abc")

    resuming = InterruptedEmbedder(float_embedder)
    open_index(records, resuming, index_dir, chunk_records=8)
    assert resuming.encoded == 12
    assert np.allclose(np.load(index_dir / EMBEDDINGS_NAME), float_embedder.encode_records(records), atol=1e-5)


def test_the_int8_embedder_stays_close_to_the_float_model_and_has_its_own_index_id(float_embedder, small_kb):
    records = load_records(small_kb)
    fast = Embedder("bundled:all-MiniLM-L6-v2-int8")
    assert fast.model_id != float_embedder.model_id  # an index built with one is never served with the other
    exact = float_embedder.encode_records(records[:12])
    quick = fast.encode_records(records[:12])
    assert quick.dtype == np.float32 and np.allclose(np.linalg.norm(quick, axis=1), 1, atol=1e-4)
    assert np.mean(np.sum(exact * quick, axis=1)) > 0.95
    quantized = [m for m in fast.model.modules() if "quantized" in type(m).__module__]
    assert len(quantized) >= 4 * 6  # query, key, value, attention output and more in each of 6 layers
    query = fast.encode(["Agent interrupted."])
    assert records[int(np.argmax(fast.encode_records(records) @ query[0]))].id == "c6aeeba10bb30da8"


def test_records_that_embed_the_same_text_each_get_the_right_vector(tmp_path, float_embedder):
    kb = tmp_path / "kb"
    kb.mkdir()
    rows = read_lines(BUNDLED_KB_DIR / "huggingface__peft.jsonl")[:10]
    twin = json.loads(json.dumps(rows[2]))
    twin["record"]["id"], twin["record"]["slug"] = "0123456789abcdef", twin["record"]["slug"] + "-twin"
    rows.insert(5, twin)  # same embedded text as rows[2], a batch apart
    (kb / "peft.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    records = load_records(kb)
    open_index(records, InterruptedEmbedder(float_embedder), tmp_path / "index", chunk_records=4)
    stored = np.load(tmp_path / "index" / EMBEDDINGS_NAME)
    assert np.allclose(stored, float_embedder.encode_records(records), atol=1e-5)
