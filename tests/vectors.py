"""Checks shared by the tests of the faster embedders."""

from __future__ import annotations

import numpy as np


def assert_close_to_the_float_model(exact: np.ndarray, quick: np.ndarray) -> None:
    """Unit vectors of the same shape, each near its float twin, each still nearest its own record."""
    assert quick.shape == exact.shape and quick.dtype == np.float32
    assert np.allclose(np.linalg.norm(quick, axis=1), 1, atol=1e-4)
    cosines = np.sum(exact * quick, axis=1)
    assert cosines.mean() > 0.99 and cosines.min() > 0.98
    # Quantization moves vectors less than the distance between records.
    assert (np.argmax(quick @ exact.T, axis=1) == np.arange(len(exact))).all()


def assert_index_agrees_with_the_float_model(index, fast, embedder, records) -> None:
    """A fast embedder's index finds a known record, and gives the float model's top hit when searched
    by each record's error line (measured: all 40 of the small knowledge base)."""
    scores, rows = index.search(fast.encode(["Agent interrupted."]), 3)
    assert index.record_ids[rows[0][0]] == "c6aeeba10bb30da8" and scores[0][0] > 0.5
    lines = [f"{r.error_class}: {r.error_message}" for r in records]
    float_top = np.argmax(embedder.encode(lines) @ embedder.encode_records(records).T, axis=1)
    _, rows = index.search(fast.encode(lines), 1)
    agree = np.mean([index.record_ids[row[0]] == records[top].id for row, top in zip(rows, float_top, strict=True)])
    assert agree >= 0.95
