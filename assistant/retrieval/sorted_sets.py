"""Sets of record positions as ascending arrays: union, difference, distinct values, by sorting.

Why not numpy's own: since numpy 2.3, ``np.unique`` (and ``union1d``, ``setdiff1d`` and ``intersect1d``,
which call it) finds distinct integers with a hash table, which on the arrays a query meets in a knowledge
base of 90,000 records (the 20,000 generic ingested templates, a library's records) took ten times as long
as sorting them: 7 ms for one union of 21,000 positions, against 0.5 ms. The results are numpy's, value for
value and dtype for dtype.
"""

from __future__ import annotations

import numpy as np


def _firsts(ordered: np.ndarray) -> np.ndarray:
    """Where each run of equal values of the sorted ``ordered`` starts (a mask)."""
    flags = np.empty(len(ordered), dtype=bool)
    if len(ordered):
        flags[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=flags[1:])
    return flags


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``: the distinct values, ascending."""
    ordered = np.sort(np.asarray(values).ravel())
    return ordered[_firsts(ordered)]


def distinct_counted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_counts=True)``: the distinct values, ascending, and how often each occurs."""
    ordered = np.sort(np.asarray(values).ravel())
    starts = np.flatnonzero(_firsts(ordered))
    return ordered[starts], np.diff(np.append(starts, len(ordered)))


def distinct_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``: the distinct values, ascending, and for each of ``values``
    its index among them."""
    values = np.asarray(values).ravel()
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    flags = _firsts(ordered)
    inverse = np.empty(len(values), dtype=np.intp)
    inverse[order] = np.cumsum(flags) - 1
    return ordered[flags], inverse


def union(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``np.union1d(first, second)``."""
    return distinct(np.concatenate((np.ravel(first), np.ravel(second))))


def difference(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``np.setdiff1d(first, second)``: the distinct values of ``first`` not in ``second``, ascending."""
    kept = distinct(first)
    return kept[np.isin(kept, second, invert=True)]


def intersection(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``np.intersect1d(first, second)``: the distinct values in both, ascending."""
    kept = distinct(first).astype(np.result_type(np.asarray(first), np.asarray(second)), copy=False)
    return kept[np.isin(kept, second)]


def contains(ascending: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.isin(values, ascending)`` for ``ascending`` distinct and sorted: a binary search each, where
    ``np.isin`` sorts both (and, for the distinct values, hashes them) per call."""
    values = np.asarray(values)
    if not len(ascending):
        return np.zeros(values.shape, dtype=bool)
    at = np.minimum(np.searchsorted(ascending, values), len(ascending) - 1)
    return np.asarray(ascending)[at] == values
