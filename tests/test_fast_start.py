"""A cold ``errata ask`` without torch: the ONNX file stored with the index encodes the queries (the int8
file records were embedded with, by default; the float export for the torch model).

Real model, real export, real FAISS files; the import checks run the CLI in a fresh process.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, Settings, load_records
from assistant.embedding.embedder import Embedder
from assistant.embedding.onnx import LocalEncoder, weights_hash
from assistant.index import open_index
from assistant.index.faiss_store import MANIFEST_NAME
from assistant.index.query_encoder import MANIFEST_KEY
from assistant.retrieval.bm25_files import STOPWORDS_EN, SavedBM25, tokenize
from assistant.settings import BUNDLED_KB_DIR, TORCH_EMBEDDER

pytestmark = pytest.mark.slow  # ONNX exports and subprocesses

TORCH_LIBRARIES = ("torch", "transformers", "sentence_transformers")
PASTE = "smolagents.utils.AgentError: Agent interrupted."


def _manifest(index_dir: Path) -> dict:
    return json.loads((index_dir / MANIFEST_NAME).read_text())


@pytest.mark.slow
def test_the_stored_export_gives_the_torch_vectors_for_every_bundled_record(float_embedder, tmp_path):
    """With the torch model, the build embeds with the float export it stores: torch's vectors (cosine >= 0.9999)."""
    embedder = float_embedder
    records = load_records(BUNDLED_KB_DIR)
    index, report = open_index(records, embedder, tmp_path / "index")
    assert report.embedded == len(records)
    entry = _manifest(tmp_path / "index")[MANIFEST_KEY]
    model_dir = embedder.local_dir()
    assert entry["weights"] == weights_hash(model_dir) and entry["file"] == f"encoder/{entry['weights']}-float.onnx"
    assert (tmp_path / "index" / entry["file"]).stat().st_size == entry["size"]
    stored = np.load(tmp_path / "index" / "embeddings.npy")
    torch_vectors = embedder.encode_records(records)
    cosines = np.sum(stored * torch_vectors, axis=1)
    assert cosines.min() >= 0.9999, f"lowest cosine {cosines.min():.6f} (record {records[int(cosines.argmin())].id})"
    # Queries encoded through the export land on the same rows as the torch model's.
    queries = [f"{r.error_class}: {r.error_message}" for r in records[::25]]
    fast = embedder.with_export(tmp_path / "index" / entry["file"])
    assert isinstance(fast.model, LocalEncoder) and fast.model_id == embedder.model_id
    assert np.min(np.sum(fast.encode(queries) * embedder.encode(queries), axis=1)) >= 0.9999


def test_the_default_stores_the_int8_file_its_records_were_embedded_with(embedder, assistant, bundled_index_dir):
    """The default runtime is int8: queries must go through the very file the records went through."""
    assert embedder.runtime == "onnx-int8" and embedder.stores_export
    entry = _manifest(bundled_index_dir)[MANIFEST_KEY]
    assert entry["file"] == f"encoder/{weights_hash(embedder.local_dir())}-int8.onnx"
    stored = np.load(bundled_index_dir / "embeddings.npy")
    serving = assistant.embedder
    assert isinstance(serving.model, LocalEncoder) and serving.export == bundled_index_dir / entry["file"]
    records = assistant.records
    rows = list(range(0, len(records), 40))
    again = serving.encode_records([records[i] for i in rows])
    # int8 activations are scaled per batch, so a vector moves a little with its batch companions
    # (cosine >= 0.99), but each record's vector is still nearest its own stored row.
    assert np.min(np.sum(stored[rows] * again, axis=1)) >= 0.99
    assert list(np.argmax(again @ stored.T, axis=1)) == rows


@pytest.mark.slow
def test_a_cold_ask_never_imports_torch_nor_the_front_ends(assistant, bundled_index_dir, tmp_path):
    # A private copy, its snapshot made here first: the shared test index may be rewritten at any time by a
    # test run of another checkout, and a cold ask that had to rebuild the snapshot would import bm25s.
    index_dir = tmp_path / "index"
    shutil.copytree(bundled_index_dir, index_dir, ignore=shutil.ignore_patterns(".lock"), copy_function=os.link)
    Assistant(assistant.settings, index_dir=index_dir, embedder=assistant.embedder)
    code = (
        "import contextlib, io, json, sys\n"
        "from assistant.frontends.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = main(['ask', '--json', '--index', {str(index_dir)!r}, {PASTE!r}])\n"
        "print(json.dumps({'code': code, 'answer': json.loads(out.getvalue()), 'modules': sorted(sys.modules)}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "export stored with the index" not in result.stderr  # no fallback line: the export was used
    report = json.loads(result.stdout)
    assert report["code"] == 0 and report["answer"]["hits"][0]["recordId"] == "c6aeeba10bb30da8"
    loaded = {name.split(".")[0] for name in report["modules"]}
    assert not loaded & {*TORCH_LIBRARIES, "gradio", "slack_bolt", "litellm", "bm25s", "scipy"}
    assert "onnxruntime" in loaded


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["missing", "garbage"])
def test_a_missing_or_broken_export_falls_back_to_the_cached_one_with_one_log_line(
    assistant, bundled_index_dir, tmp_path, caplog, damage
):
    index_dir = tmp_path / "index"
    shutil.copytree(bundled_index_dir, index_dir)
    export = index_dir / _manifest(index_dir)[MANIFEST_KEY]["file"]
    size = export.stat().st_size
    export.unlink()  # a copy of a hard link: unlink first, or the garbage would reach the shared cache
    if damage == "garbage":
        export.write_bytes(b"\0" * size)  # the size the manifest says, not an ONNX model
    settings = Settings.load(env={}, index_dir=index_dir, release_records=False)
    with caplog.at_level(logging.WARNING, logger="assistant"):
        fallback = Assistant(settings)
        assert fallback.search(PASTE, k=1)[0].record.id == "c6aeeba10bb30da8"
    lines = [r for r in caplog.records if "export" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]
    assert "user's cache" in lines[0].getMessage()
    assert isinstance(fallback.embedder.model, LocalEncoder) and fallback.embedder.model.path != export


def test_an_index_built_before_exports_gets_one_without_re_embedding(embedder, small_kb, tmp_path):
    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    open_index(records, embedder, index_dir)
    manifest = _manifest(index_dir)
    del manifest[MANIFEST_KEY]  # as an index built before this change
    (index_dir / MANIFEST_NAME).write_text(json.dumps(manifest))
    _, report = open_index(records, embedder, index_dir)
    assert report.rebuilt and report.embedded == 0 and "query encoder" in report.reason
    assert _manifest(index_dir)[MANIFEST_KEY]["weights"] == weights_hash(embedder.local_dir())
    assert not open_index(records, embedder, index_dir)[1].rebuilt


def test_runtimes_without_a_file_of_their_own_store_no_export(small_kb, tmp_path):
    """torch's int8 quantization happens at load, in torch: there is no ONNX file its queries could use."""
    quick = Embedder(TORCH_EMBEDDER + "-int8")
    open_index(load_records(small_kb), quick, tmp_path / "index")
    assert _manifest(tmp_path / "index")[MANIFEST_KEY] is None
    assert not (tmp_path / "index" / "encoder").exists()


def test_bm25_tokens_are_bm25s_own_on_every_bundled_record():
    """The query path tokenizes without bm25s: the same tokens, numbered alike, as bm25s.tokenize."""
    import bm25s

    records = load_records(BUNDLED_KB_DIR)
    texts = [t for r in records for t in (r.error_message, r.documentation, r.trigger_scenarios or "")]
    texts += ["", "a the", "Größe ÄÖÜ naïve 東京 x1 __init__ ValueError: It's NOT there"]
    ours = tokenize(texts)
    theirs = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    assert ours.vocab == theirs.vocab and ours.ids == theirs.ids
    assert STOPWORDS_EN == bm25s.stopwords.STOPWORDS_EN


def test_saved_bm25_reads_what_bm25s_saved(assistant, bundled_index_dir, tmp_path):
    import bm25s

    folder = bundled_index_dir / "signals" / "bm25_all"
    ours, theirs = SavedBM25.load(folder), bm25s.BM25.load(folder, mmap=True)
    assert ours.vocab_dict == theirs.vocab_dict and ours.scores["num_docs"] == theirs.scores["num_docs"]
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(ours.scores[name], theirs.scores[name])
    ours.save(tmp_path / "again")  # a snapshot saved from a loaded index reads back in bm25s too
    again = bm25s.BM25.load(tmp_path / "again")
    np.testing.assert_array_equal(again.get_scores_from_ids([1, 2]), theirs.get_scores_from_ids([1, 2]))
