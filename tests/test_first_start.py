"""A first start: the bundled records' vectors come with the package, the ONNX export is made in a process of
its own, and a server builds in a child process and keeps only what it serves from."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys

import numpy as np
import pytest

from assistant import Assistant, Settings, load_records
from assistant.embedding.onnx import run_step
from assistant.embedding.text import piece_texts
from assistant.errors import KnowledgeBaseError
from assistant.index.bundled_vectors import BUNDLED_VECTORS_DIR, RECORDS, read_bundled_vectors, seed_index
from assistant.index.cache import EMBEDDINGS_NAME
from assistant.index.faiss_store import MANIFEST_NAME
from assistant.index.store import embedding_key, text_key
from assistant.knowledge.records import kb_files
from assistant.settings import BUNDLED_KB_DIR, DEFAULT_EMBEDDER
from assistant.storage.checksums import sealed_json
from assistant.storage.shelf import RecordShelf

from .conftest import read_lines, write_lines


def test_the_shipped_vectors_are_those_of_the_bundled_records():
    """After `errata refresh-kb`, `errata kb bundle-vectors` must ship the new records' vectors: this fails
    until it has (a record whose text changed would be embedded at every first start)."""
    shipped = read_bundled_vectors()
    assert shipped is not None, f"no vectors in {BUNDLED_VECTORS_DIR}: run `errata kb bundle-vectors`"
    assert shipped.embedder == DEFAULT_EMBEDDER
    shelf = RecordShelf.load(kb_files([BUNDLED_KB_DIR]))
    records = list(shelf)
    stale = "the bundled records changed since their vectors were shipped: run `errata kb bundle-vectors`"
    assert shipped.ids == [r.id for r in records], stale
    assert shipped.record_keys == [embedding_key(r) for r in records], stale
    assert shipped.piece_keys == [[text_key(t) if t else "" for t in piece_texts(r)] for r in records], stale
    norms = np.linalg.norm(shipped.records.astype(np.float32), axis=1)
    assert np.allclose(norms, 1.0, atol=2e-3)  # unit vectors, as the index stores them


def test_a_new_index_takes_the_shipped_vectors_and_embeds_only_a_changed_record(small_kb, tmp_path, embedder):
    path = small_kb / "ollama__ollama-python.jsonl"
    rows = read_lines(path)
    rows[0]["record"]["documentation"] = "Raised when the sprocket wobbles past its limit."  # its text changes
    write_lines(path, rows)
    assistant = Assistant(Settings.load(env={}), kb=small_kb, index_dir=tmp_path / "index", embedder=embedder)
    records = list(assistant.records)
    assert assistant.build_report.embedded == 1 and assistant.build_report.reused == len(records) - 1
    shipped = read_bundled_vectors()
    row_of = {key: i for i, key in enumerate(shipped.record_keys)}
    built = np.load(tmp_path / "index" / EMBEDDINGS_NAME)
    unchanged = [i for i, r in enumerate(records) if embedding_key(r) in row_of]
    assert len(unchanged) == len(records) - 1
    for i in unchanged:
        assert np.array_equal(built[i], shipped.records[row_of[embedding_key(records[i])]].astype(np.float32))
    assert assistant.search("ollama._types.ResponseError: model 'llama9' not found")[0].record.repo.startswith("ollama")


def test_shipped_vectors_that_are_damaged_or_of_another_model_are_not_used(tmp_path, caplog):
    folder = tmp_path / "vectors"
    shutil.copytree(BUNDLED_VECTORS_DIR, folder)
    records = RecordShelf.load(kb_files([BUNDLED_KB_DIR]))
    assert seed_index(tmp_path / "other-model", "bundled:all-MiniLM-L6-v2", records, folder) == 0
    assert not (tmp_path / "other-model").exists()
    data = (folder / RECORDS).read_bytes()
    (folder / RECORDS).write_bytes(data[: len(data) // 2])
    with caplog.at_level(logging.WARNING):
        assert read_bundled_vectors(folder) is None
        assert seed_index(tmp_path / "index", DEFAULT_EMBEDDER, records, folder) == 0
    assert "unusable" in caplog.text and "records.npy" in caplog.text
    # An index folder already built keeps its own vectors (a damaged one takes them: test_faults_leftovers.py).
    built = tmp_path / "built"
    built.mkdir()
    (built / MANIFEST_NAME).write_text(sealed_json({}))
    (built / "pieces.json").write_text(sealed_json({}))
    assert seed_index(built, DEFAULT_EMBEDDER, records) == 0


def test_a_failed_export_step_says_why(tmp_path):
    with pytest.raises(RuntimeError, match=r"quantize step ended with status [1-9].*missing\.onnx"):
        run_step("quantize", tmp_path / "missing.onnx", tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()


@pytest.mark.slow
def test_the_onnx_export_is_made_without_torch_in_the_process(tmp_path):
    """Tracing imports torch (~800 MB); it runs in a child process, so the one that asked never holds it."""
    script = (
        "import sys; from pathlib import Path; from assistant.embedding.embedder import Embedder;"
        "from assistant.embedding.onnx import OnnxEncoder;"
        f"e = OnnxEncoder(Embedder().local_dir(), int8=True, cache_dir=Path({str(tmp_path)!r}));"
        "print(e.path.name, 'torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    name, torch_loaded = result.stdout.split()
    assert name.endswith("-int8.onnx") and (tmp_path / name).stat().st_size > 1_000_000
    assert torch_loaded == "False"


@pytest.mark.slow
def test_a_server_builds_in_a_child_process_and_reads_what_it_saved(small_kb, tmp_path, embedder):
    settings = Settings.load(env={})
    served = Assistant(settings, kb=small_kb, index_dir=tmp_path / "index", embedder=embedder, build_in_child=True)
    assert served.build_report.reason == "up to date (snapshot)"  # built by the child, read from its files
    here = Assistant(settings, kb=small_kb, index_dir=tmp_path / "here", embedder=embedder)
    assert here.build_report.rebuilt
    for text in ("my agent stops with Agent interrupted", "ollama._types.ResponseError: model 'x' not found"):
        assert [h.record.id for h in served.search(text)] == [h.record.id for h in here.search(text)]
    # A child that fails (a malformed line, strict) leaves the build to this process, which says what is wrong.
    path = small_kb / "ollama__ollama-python.jsonl"
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(KnowledgeBaseError, match=r"ollama__ollama-python\.jsonl:\d+"):
        Assistant(
            settings, kb=small_kb, index_dir=tmp_path / "strict", embedder=embedder, strict=True, build_in_child=True
        )
    assert json.loads((tmp_path / "index" / MANIFEST_NAME).read_text())["count"] == len(load_records(small_kb))
