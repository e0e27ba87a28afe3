"""The OpenVINO int8 embedder: calibrated here from the bundled weights, close to the float model, cached."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from assistant import load_records
from assistant.embedding.embedder import Embedder, record_text
from assistant.embedding.openvino import OpenVinoEncoder, calibration_texts
from assistant.errors import EmbedderError
from assistant.index import open_index
from assistant.settings import BUNDLED_KB_DIR, TORCH_EMBEDDER
from tests.vectors import assert_close_to_the_float_model, assert_index_agrees_with_the_float_model

pytestmark = pytest.mark.slow  # ONNX/OpenVINO exports, a browser, Milvus or whole-dev-set runs

FAST = TORCH_EMBEDDER + "-openvino-int8"


@pytest.fixture(scope="module")
def texts():
    records = load_records(BUNDLED_KB_DIR)
    return [record_text(r) for r in records[3::10]]  # 50 records from every library, not the calibration ones


@pytest.fixture(scope="module")
def fast(onnx_cache) -> Embedder:
    return Embedder(FAST, cache_dir=onnx_cache)


def test_the_openvino_embedder_stays_close_to_the_float_model(float_embedder, fast, onnx_cache, texts):
    assert (
        fast.runtime == "openvino-int8"
        and fast.quantized
        and fast.model_id not in {float_embedder.model_id, TORCH_EMBEDDER + "-onnx-int8"}
    )
    assert_close_to_the_float_model(float_embedder.encode(texts), fast.encode(texts))
    # Made once from the float export and kept: the two OpenVINO files beside it, no leftovers (each export
    # has its checksum beside it, embedding/onnx.py).
    names = sorted(p.name.split("-", 1)[1] for p in onnx_cache.iterdir() if "int8.onnx" not in p.name)
    assert names == ["float.onnx", "float.onnx.sha256", "ov-int8-c1.bin", "ov-int8-c1.xml"]


def test_a_text_alone_and_in_a_batch_gets_the_same_vector(fast, texts):
    """Batches are padded to multiples of 16 and run side by side; padding is masked out of the mean."""
    together = fast.encode(texts)
    assert np.allclose(fast.encode(texts[7:8])[0], together[7], atol=2e-3)
    assert np.allclose(fast.encode(texts[::-1])[::-1], together, atol=2e-3)


def test_batches_of_long_texts_stop_at_the_token_budget(fast, texts):
    """Record texts (~200 tokens) go in batches of ~7, not 32: the int8 matmuls' activations stay in cache."""
    model = fast.model
    budget = type(model).tokens_per_batch
    shapes: list[tuple[int, int, int]] = []
    run = model._run

    def spying(batches, out):
        shapes.extend((len(rows), int(mask.sum(axis=1).max()), mask.shape[1]) for rows, _, mask in batches)
        run(batches, out)

    model._run = spying
    try:
        vectors = fast.encode(texts)
    finally:
        del model._run
    assert fast.batch_size == 32 and sum(rows for rows, _, _ in shapes) == len(texts)
    assert all(rows == 1 or rows * longest <= budget for rows, longest, _ in shapes)
    assert max(rows for rows, _, _ in shapes) < fast.batch_size and all(width % 16 == 0 for *_, width in shapes)
    assert np.allclose(vectors[5], fast.encode(texts[5:6])[0], atol=2e-3)
    # A short text first does not let a batch of long ones through: the longest in a batch sets its size.
    shapes.clear()
    model._run = spying
    try:
        fast.encode(["ValueError: x", *texts[:20]])
    finally:
        del model._run
    assert all(rows == 1 or rows * longest <= budget for rows, longest, _ in shapes)


def test_threads_can_share_one_openvino_embedder(fast, texts):
    expected = fast.encode(texts[:4])
    results: dict[int, np.ndarray] = {}

    def work(n: int) -> None:
        results[n] = np.stack([fast.encode([t])[0] for t in texts[:4]])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(np.allclose(v, expected, atol=2e-3) for v in results.values())


def test_an_openvino_index_is_built_and_searched_and_the_model_reused(
    float_embedder, fast, small_kb, tmp_path, onnx_cache
):
    records = load_records(small_kb)
    made = {p: p.stat().st_mtime_ns for p in onnx_cache.iterdir()}
    index, report = open_index(records, fast, tmp_path / "index")
    assert report.rebuilt and report.embedded == len(records)
    assert_index_agrees_with_the_float_model(index, fast, float_embedder, records)
    # A second encoder (as in a new process) finds the calibrated model on disk and makes nothing.
    again = OpenVinoEncoder(fast.model.model_dir, cache_dir=onnx_cache)
    assert again.path == fast.model.path
    assert {p: p.stat().st_mtime_ns for p in onnx_cache.iterdir()} == made


def test_calibration_uses_fixed_texts_from_the_bundled_records():
    texts = calibration_texts()
    records = load_records(BUNDLED_KB_DIR)
    assert len(texts) == 2 * len(records[::5]) > 300 and texts == calibration_texts()


def test_openvino_needs_a_local_model_folder(tmp_path):
    with pytest.raises(EmbedderError, match="need a local model folder"):
        Embedder("no-such-model-anywhere-openvino-int8", cache_dir=tmp_path).encode(["x"])
    (tmp_path / "model").mkdir()
    with pytest.raises(EmbedderError, match="drop the -openvino-int8 suffix"):
        Embedder(str(tmp_path / "model") + "-openvino-int8", cache_dir=tmp_path).encode(["x"])
