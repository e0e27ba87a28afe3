"""Which records a query scores in a large knowledge base, and the ranking primitives over numpy arrays.

Past ``FULL_SCORING_LIMIT`` records only candidates are scored: the nearest by cosine, the best by BM25 over
the query's less common words (within a postings budget), and those a pattern, the raising file or the quoted
message's words single out. Measured on the dev set, candidates cut to 5% of the records per source rank as
scoring every record does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..storage.postings import Postings
from .features import Found
from .sorted_sets import distinct, distinct_inverse

# Up to this many records every record is scored; beyond, only candidates (see select_candidates).
FULL_SCORING_LIMIT = 20_000
LEXICAL_CANDIDATES = 1_000  # the best records by BM25 over the query's rarest words
LEXICAL_POSTINGS = 100_000  # ... reading at most this many postings (the rarest word is always read)
CANDIDATE_CAP = 2_000  # at most this many candidates from each other source (pattern, file, message words)
# Rank signals are exact for this many records; the rest share the last rank (see reciprocal_rank).
RANK_DEPTH = 1_000

NONE = np.zeros(0, dtype=np.int64)


def select_candidates(found: Found, columns: dict[int, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The records worth scoring in a large knowledge base: the nearest by cosine, the best by BM25 over
    the query's less common words (``columns``: each word's records and weights), and those a pattern,
    the raising file or the quoted message's words single out (each source at most ``CANDIDATE_CAP``)."""
    budget = LEXICAL_POSTINGS
    holders, weights = [], []
    for indices, data in sorted(columns.values(), key=lambda column: len(column[0])):  # rarest first
        if holders and len(indices) > budget:  # within a reading budget
            break
        holders.append(indices)
        weights.append(data)
        budget -= len(indices)
    lexical = NONE
    if holders:
        records, at = distinct_inverse(np.concatenate(holders))
        partial = np.bincount(at, weights=np.concatenate(weights))
        lexical = records[best(partial, LEXICAL_CANDIDATES)]
    sources = [found.dense, lexical, found.on_message, found.on_text, found.raising_file, found.covered]
    return distinct(np.concatenate([s[:CANDIDATE_CAP] for s in sources]))


def restricted(column: tuple[np.ndarray, np.ndarray], scored: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """A word's column (its records, its BM25 weights) as rows among the records scored, and weights there."""
    holders, values = column
    where, picked = among(holders, scored)
    return where, values[picked]


def among(positions: np.ndarray, scored: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Which of the records scored (ascending) are in ``positions`` (ascending): their rows among the scored,
    and their index in ``positions``. With every record scored, the rows are the positions themselves."""
    if scored is None:
        return positions, slice(None)
    if not len(positions) or not len(scored):
        return NONE, NONE
    if len(positions) < len(scored):  # the shorter one searched for in the longer (most words are rare)
        rows = np.minimum(np.searchsorted(scored, positions), len(scored) - 1)
        picked = np.flatnonzero(scored[rows] == positions)
        return rows[picked], picked
    index = np.minimum(np.searchsorted(positions, scored), len(positions) - 1)
    rows = np.flatnonzero(positions[index] == scored)
    return rows, index[rows]


def positions_of(ids: np.ndarray, row_ids: Sequence[str]) -> np.ndarray:
    """For each of ``row_ids``, its position in ``ids`` (-1 where absent), by sorting: no dict of a
    million strings."""
    rows = np.array([r.encode("utf-8") for r in row_ids], dtype="S")
    out = np.full(len(rows), -1, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    ordered = np.asarray(ids)[order]
    if not len(rows) or not len(ordered):
        return out
    index = np.minimum(np.searchsorted(ordered, rows), len(ordered) - 1)
    present = np.flatnonzero(ordered[index] == rows)  # rows in their own order: not among's ascending ones
    out[present] = order[index[present]]
    return out


def reciprocal_rank(values: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
    """1 / (1 + rank), ranks exact for the best ``RANK_DEPTH`` records; all others share rank RANK_DEPTH
    (a large knowledge base is not sorted whole for a signal below 0.001 there).

    With ``among`` (a mask), a record's rank counts only the masked records above it: ingested records
    join a curated knowledge base without pushing curated ones down the ranks the weights were fitted on.
    A mask of all or none (a curated or an ingested knowledge base alone) ranks among every record."""
    if among is not None and among.any() and not among.all():
        reference = np.sort(values[among])
        above = len(reference) - np.searchsorted(reference, values, side="right")
        return 1.0 / (1.0 + np.minimum(above, RANK_DEPTH).astype(np.float64))
    ranks = np.full(len(values), float(RANK_DEPTH))
    top = best(values, RANK_DEPTH)
    ranks[top] = np.arange(len(top))
    return 1.0 / (1.0 + ranks)


def best(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest values, best first (ties: the lower position first)."""
    if len(values) <= k:
        return np.argsort(-values, kind="stable")
    # Most records of a large knowledge base may tie at the floor (no shared word, or beyond the nearest
    # vectors), which makes np.partition ten times slower: then partition only what is above it.
    floor = values.min()
    above_floor = values > floor
    count = int(above_floor.sum())
    if count < k:
        chosen = np.concatenate([np.flatnonzero(above_floor), np.flatnonzero(~above_floor)[: k - count]])
    else:
        pool = np.flatnonzero(above_floor) if count * 2 < len(values) else None
        candidates = values if pool is None else values[pool]
        kth = np.partition(candidates, len(candidates) - k)[len(candidates) - k]  # the k-th largest
        top, tied = np.flatnonzero(candidates > kth), np.flatnonzero(candidates == kth)
        chosen = np.concatenate([top, tied[: k - len(top)]])
        chosen = chosen if pool is None else pool[chosen]
    return chosen[np.lexsort((chosen, -values[chosen]))]


def files_named(files: Postings, name: str | None) -> set[str]:
    """The files (keys of ``files``: path tails) whose name is ``name``'s: a native check's line gives a bare
    ``IndexPQ.cpp`` where the records have ``faiss/IndexPQ.cpp``."""
    if not name:
        return set()
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return {key for key in files.keys or () if key == base or key.endswith("/" + base)}
