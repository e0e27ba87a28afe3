"""The ONNX Runtime embedders: exported here from the bundled weights, close to the float model, cached."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from assistant import load_records
from assistant.embedding.embedder import Embedder, record_text
from assistant.embedding.onnx import OnnxEncoder, weights_hash
from assistant.errors import EmbedderError
from assistant.index import open_index
from assistant.index.faiss_store import MANIFEST_NAME
from assistant.settings import BUNDLED_KB_DIR, TORCH_EMBEDDER
from tests.vectors import assert_close_to_the_float_model, assert_index_agrees_with_the_float_model


@pytest.fixture(scope="module")
def texts():
    records = load_records(BUNDLED_KB_DIR)
    return [record_text(r) for r in records[::10]]  # 50 real records from every library, short and long


@pytest.mark.slow
def test_the_onnx_int8_embedder_stays_close_to_the_float_model(float_embedder, onnx_cache, texts):
    fast = Embedder(TORCH_EMBEDDER + "-onnx-int8", cache_dir=onnx_cache)
    assert fast.model_id != float_embedder.model_id and fast.runtime == "onnx-int8" and fast.quantized
    assert_close_to_the_float_model(float_embedder.encode(texts), fast.encode(texts))
    assert sorted(p.name.split("-", 1)[1] for p in onnx_cache.glob("*.onnx")) == ["float.onnx", "int8.onnx"]


@pytest.mark.slow
def test_the_onnx_float_embedder_reproduces_the_float_model(float_embedder, onnx_cache, texts):
    """Same weights, same tokenizer, mean pooling in numpy: the vectors of sentence-transformers."""
    exported = Embedder(TORCH_EMBEDDER + "-onnx", cache_dir=onnx_cache)
    assert exported.model_id not in {float_embedder.model_id, TORCH_EMBEDDER + "-onnx-int8"}
    # Batched by length, padded differently: one text alone and within a batch give the same vector.
    together = exported.encode(texts)
    assert np.allclose(exported.encode(texts[3:4])[0], together[3], atol=1e-5)
    assert np.min(np.sum(float_embedder.encode(texts) * together, axis=1)) > 0.9999
    assert exported.dimension == float_embedder.dimension == 384


@pytest.mark.slow
def test_an_onnx_index_is_built_reused_and_searched_through_open_index(float_embedder, small_kb, tmp_path, onnx_cache):
    records = load_records(small_kb)
    fast = Embedder(TORCH_EMBEDDER + "-onnx-int8", cache_dir=onnx_cache)
    exports = {p: p.stat().st_mtime_ns for p in onnx_cache.glob("*.onnx")}
    index, report = open_index(records, fast, tmp_path / "index")
    assert report.rebuilt and report.embedded == len(records)
    assert json.loads((tmp_path / "index" / MANIFEST_NAME).read_text())["embedder"] == fast.model_id
    assert_index_agrees_with_the_float_model(index, fast, float_embedder, records)
    _, again = open_index(records, fast, tmp_path / "index")
    assert not again.rebuilt and again.embedded == 0
    # The float model does not read these vectors: a different id rebuilds the index.
    assert "embedder changed" in open_index(records, Embedder(TORCH_EMBEDDER), tmp_path / "index")[1].reason
    assert {p: p.stat().st_mtime_ns for p in onnx_cache.glob("*.onnx")} == exports  # the export was reused


@pytest.mark.slow
def test_the_export_is_keyed_by_the_weights(tmp_path, onnx_cache):
    bundled = Path(Embedder(TORCH_EMBEDDER)._resolve())
    copy = tmp_path / "model"
    shutil.copytree(bundled, copy)
    assert weights_hash(copy) == weights_hash(bundled)  # the same files wherever they lie
    config = json.loads((copy / "config.json").read_text())
    config["layer_norm_eps"] = 1e-6  # a different model: its export must not be reused
    (copy / "config.json").write_text(json.dumps(config))
    key = weights_hash(copy)
    assert not list(onnx_cache.glob(f"{key}-*"))
    encoder = OnnxEncoder(copy, int8=False, cache_dir=tmp_path / "cache")
    assert encoder.path.name == f"{key}-float.onnx" and not list((tmp_path / "cache").glob("*.tmp"))


def test_onnx_needs_a_local_model_folder(tmp_path):
    with pytest.raises(EmbedderError, match="local model folder"):
        Embedder("no-such-model-anywhere-onnx", cache_dir=tmp_path).encode(["x"])
    (tmp_path / "plain").mkdir()
    with pytest.raises(EmbedderError, match="drop the -onnx suffix"):
        Embedder(str(tmp_path / "plain") + "-onnx", cache_dir=tmp_path).encode(["x"])
