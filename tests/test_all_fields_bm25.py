"""The BM25 index over every field, built in a second process while the rest of the signal index is built:
the same index as one process builds, and the build's own where the worker fails."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from assistant.retrieval import all_fields_bm25
from assistant.retrieval.all_fields_bm25 import AllFieldsInBackground
from assistant.retrieval.signals import SignalIndex
from assistant.settings import BUNDLED_KB_DIR
from assistant.storage.shelf import RecordShelf


@pytest.fixture
def shelf():
    loaded = RecordShelf.load(BUNDLED_KB_DIR)
    yield loaded
    loaded.close()


def _matrix(index: SignalIndex) -> tuple:
    scores = index.bm25_all.scores
    return tuple(np.asarray(scores[name]).tolist() for name in ("data", "indices", "indptr"))


@pytest.mark.slow
def test_the_worker_builds_the_index_one_process_builds(shelf, tmp_path, monkeypatch):
    monkeypatch.setattr(all_fields_bm25, "PARALLEL_MIN_RECORDS", 1)
    background = AllFieldsInBackground.start(shelf, tmp_path / "work")
    assert background is not None
    both = SignalIndex.build(shelf, all_fields=background.result)
    alone = SignalIndex.build(shelf)
    assert _matrix(both) == _matrix(alone)
    assert both.bm25_all.vocab_dict == alone.bm25_all.vocab_dict
    assert both.bm25_all.scores["num_docs"] == len(shelf)
    assert list((tmp_path / "work").iterdir()) == []  # its folder is gone


@pytest.mark.slow
def test_a_worker_that_dies_leaves_the_build_to_make_the_index_itself(shelf, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(all_fields_bm25, "PARALLEL_MIN_RECORDS", 1)
    background = AllFieldsInBackground.start(shelf, tmp_path / "work")
    background._worker.kill()  # killed (out of memory, a user's kill) before it finished
    with caplog.at_level(logging.WARNING, logger="assistant"):
        built = SignalIndex.build(shelf, all_fields=background.result)
    assert "building it here" in caplog.text
    assert _matrix(built) == _matrix(SignalIndex.build(shelf))
    assert list((tmp_path / "work").iterdir()) == []


def test_a_small_knowledge_base_is_built_in_one_process(shelf, tmp_path):
    assert AllFieldsInBackground.start(shelf, tmp_path) is None  # 952 records: a second or two
