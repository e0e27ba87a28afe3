"""Piece vectors: each record's error line, situations and triggers embedded apart, kept beside the index."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from assistant import Assistant, Settings, load_records
from assistant.embedding.text import PIECE_NAMES, piece_texts
from assistant.index.pieces import PIECES_MANIFEST, PIECES_NAME, load_piece_vectors, open_piece_vectors
from assistant.retrieval.features import FEATURES

from .conftest import read_lines, write_lines
from .test_index import CountingEmbedder

TOLERANCE = 1e-5


class CountingAssistantEmbedder(CountingEmbedder):
    """A counting embedder an Assistant can load (it asks for the model up front)."""

    @property
    def model(self):
        return self.real.model


def _distinct_texts(records) -> int:
    return len({t for r in records for t in piece_texts(r) if t})


def test_pieces_are_embedded_once_and_only_what_changed_again(small_kb, tmp_path, embedder):
    counting = CountingEmbedder(embedder)
    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    pieces = open_piece_vectors(records, counting, index_dir)
    assert counting.encoded == _distinct_texts(records) > len(records)
    assert pieces is not None and len(pieces) == len(records) and pieces.names == PIECE_NAMES
    assert (index_dir / PIECES_NAME).is_file() and (index_dir / PIECES_MANIFEST).is_file()
    # Row i is record i; a piece a record lacks is marked so, and its row is zeros.
    for i, record in enumerate(records):
        assert pieces.held[i].tolist() == [bool(t) for t in piece_texts(record)]
    lacking = np.argwhere(~pieces.held)
    assert all(not pieces.vectors[i, j].any() for i, j in lacking)

    counting.encoded = 0
    again = open_piece_vectors(records, counting, index_dir)
    assert counting.encoded == 0 and np.array_equal(np.asarray(again.vectors), np.asarray(pieces.vectors))

    path = next(small_kb.glob("*.jsonl"))
    rows = read_lines(path)
    rows[0]["record"]["commonSituations"] = "Calling the sprocket API on a wobbling gadget."
    write_lines(path, rows)
    edited = load_records(small_kb)
    changed = open_piece_vectors(edited, counting, index_dir)
    assert counting.encoded == 1  # the one new text; every other vector comes from the saved file
    position = [r.id for r in edited].index(rows[0]["record"]["id"])
    situations = PIECE_NAMES.index("situations")
    expected = embedder.encode(["Calling the sprocket API on a wobbling gadget."])[0]
    assert np.allclose(changed.vectors[position, situations], expected, atol=TOLERANCE)


def test_cosines_are_the_query_against_each_piece_and_nan_where_none(small_kb, tmp_path, embedder):
    records = load_records(small_kb)
    pieces = open_piece_vectors(records, embedder, tmp_path / "index")
    query = embedder.encode(["the agent stopped after too many steps"])[0]
    cosines = pieces.cosines(query)
    assert cosines.shape == (len(records), len(PIECE_NAMES))
    assert np.array_equal(np.isnan(cosines), ~pieces.held)
    for i in (0, 3, len(records) - 1):
        held = pieces.held[i]
        assert np.allclose(cosines[i][held], np.asarray(pieces.vectors[i][held]) @ query, atol=TOLERANCE)
    assert np.allclose(np.linalg.norm(np.asarray(pieces.vectors)[pieces.held], axis=1), 1.0, atol=1e-3)
    some = np.array([1, 4, 7])
    assert np.array_equal(pieces.cosines(query, some), cosines[some], equal_nan=True)


def test_a_damaged_piece_file_is_embedded_again_with_a_warning(small_kb, tmp_path, embedder, caplog):
    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    first = open_piece_vectors(records, embedder, index_dir)
    saved = np.asarray(first.vectors).copy()
    with open(index_dir / PIECES_NAME, "r+b") as handle:
        handle.truncate(1000)
    assert load_piece_vectors(index_dir, embedder.model_id, [r.id for r in records]) is None
    counting = CountingEmbedder(embedder)
    with caplog.at_level(logging.WARNING):
        again = open_piece_vectors(records, counting, index_dir)
    assert "does not match its manifest" in caplog.text
    assert counting.encoded == _distinct_texts(records)
    assert np.allclose(np.asarray(again.vectors, dtype=np.float32), saved.astype(np.float32), atol=TOLERANCE)


def test_past_the_limit_no_pieces_are_kept_and_stale_ones_are_removed(small_kb, tmp_path, embedder):
    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    open_piece_vectors(records, embedder, index_dir)
    assert open_piece_vectors(records, embedder, index_dir, limit=len(records) - 1) is None
    assert not (index_dir / PIECES_NAME).exists() and not (index_dir / PIECES_MANIFEST).exists()


def test_a_record_without_a_piece_takes_its_whole_cosine_as_that_feature(assistant):
    retriever = assistant.retriever
    assert retriever.pieces is not None and len(retriever.pieces) == len(assistant.records)
    scored = retriever.score(assistant.parse("how do I stop my agent after a fixed number of steps?"))
    dense = scored.features[:, FEATURES.index("dense")]
    held = retriever.pieces.held
    for j, name in enumerate(PIECE_NAMES):
        column = scored.features[:, FEATURES.index(f"dense_{name}")]
        assert np.array_equal(column[~held[:, j]], dense[~held[:, j]])
        assert not np.allclose(column[held[:, j]], dense[held[:, j]])  # a piece's cosine is its own


@pytest.mark.slow
def test_a_start_from_the_snapshot_maps_the_pieces_and_a_lost_manifest_is_rebuilt(small_kb, tmp_path, embedder):
    def start(counting):
        return Assistant(Settings.load(env={}), kb=small_kb, index_dir=tmp_path / "index", embedder=counting)

    first = start(embedder)
    counting = CountingAssistantEmbedder(embedder)
    second = start(counting)
    assert second.build_report.reason == "up to date (snapshot)" and counting.encoded == 0
    assert np.array_equal(np.asarray(second.retriever.pieces.vectors), np.asarray(first.retriever.pieces.vectors))
    (tmp_path / "index" / PIECES_MANIFEST).unlink()
    third = start(counting)
    assert third.build_report.reason != "up to date (snapshot)"
    # Rebuilt: these bundled records' pieces come with the package again (bundled_vectors.py), none embedded.
    assert counting.encoded == 0
    assert np.array_equal(np.asarray(third.retriever.pieces.vectors), np.asarray(first.retriever.pieces.vectors))
    manifest = json.loads((tmp_path / "index" / PIECES_MANIFEST).read_text())
    assert manifest["pieces"] == list(PIECE_NAMES) and len(manifest["keys"]) == len(third.records)
