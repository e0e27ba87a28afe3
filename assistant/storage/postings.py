"""Which records hold a key (a word, an exception class, a file): two flat arrays instead of a dict of lists.

Why: at a million records, a dict of Python lists (or of small arrays) costs hundreds of megabytes and
minutes to build at every start. Here every key's records are one slice of a single ``positions`` array
(ascending), found through ``starts``; both are saved as ``.npy`` files, and a serving process reads
only the slices its queries ask for.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .diskarray import DiskArray

_EMPTY = np.zeros(0, dtype=np.int32)


class Postings:
    """Keys mapped to the ascending positions of the records that hold them.

    ``keys`` is ``None`` for groups numbered by the caller (:meth:`grouping`), read with :meth:`numbered`.
    """

    def __init__(self, keys: list[str] | None, starts: np.ndarray, positions: np.ndarray):
        self.keys = keys
        self._number = {key: i for i, key in enumerate(keys or ())}
        self._starts = starts
        self._positions = positions
        self._group_of: np.ndarray | None = None

    @classmethod
    def build(cls, key_sets: Iterable[Iterable[str]]) -> Postings:
        """From each record's keys, in record order (a record's keys must be distinct)."""
        builder = PostingsBuilder()
        for keys in key_sets:
            builder.add(keys)
        return builder.build()

    @classmethod
    def grouping(cls, numbers: np.ndarray, count: int) -> Postings:
        """Positions grouped by the number each one has (``0 <= number < count``)."""
        starts, order = _grouped(numbers, count)
        return cls(None, starts, order.astype(np.int32))

    def __contains__(self, key: str) -> bool:
        return key in self._number

    def __len__(self) -> int:
        return len(self._starts) - 1

    def get(self, key: str) -> np.ndarray:
        """The positions holding ``key`` (empty when none does)."""
        number = self._number.get(key)
        return _EMPTY if number is None else self.numbered(number)

    def numbered(self, number: int) -> np.ndarray:
        """The positions holding the key ``keys[number]``."""
        return self._positions[self._starts[number] : self._starts[number + 1]]

    def groups_of(self, positions: np.ndarray) -> np.ndarray:
        """The distinct numbers of the groups holding ``positions``, for a :meth:`grouping` (each position in
        one group): made once, 4 bytes a position."""
        if self._group_of is None:
            group_of = np.full(int(self._positions.max()) + 1 if len(self._positions) else 0, -1, dtype=np.int32)
            group_of[np.asarray(self._positions)] = np.repeat(
                np.arange(len(self), dtype=np.int32), np.diff(self._starts)
            )
            self._group_of = group_of
        found = self._group_of[positions[positions < len(self._group_of)]]
        return np.unique(found[found >= 0])

    def count(self, key: str) -> int:
        number = self._number.get(key)
        return 0 if number is None else int(self._starts[number + 1] - self._starts[number])

    def counts(self) -> dict[str, int]:
        sizes = np.diff(self._starts)
        return {key: int(size) for key, size in zip(self.keys or (), sizes, strict=True)}

    def union(self, keys: Iterable[str]) -> np.ndarray:
        """The ascending positions holding any of ``keys``."""
        found = [self.get(k) for k in keys if k in self._number]
        if not found:
            return _EMPTY
        return np.unique(np.concatenate(found)) if len(found) > 1 else found[0]

    def intersection(self, keys: Iterable[str]) -> np.ndarray:
        """The ascending positions holding every one of ``keys`` (empty for no keys)."""
        keys = list(keys)
        if not keys or any(k not in self._number for k in keys):
            return _EMPTY
        slices = sorted((self.get(k) for k in keys), key=len)
        out = slices[0]
        for other in slices[1:]:
            out = np.intersect1d(out, other, assume_unique=True)
        return out

    def save(self, folder: Path, name: str) -> None:
        np.save(folder / f"{name}.starts.npy", self._starts)
        np.save(folder / f"{name}.positions.npy", self._positions)
        (folder / f"{name}.keys.json").write_text(json.dumps(self.keys), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path, name: str) -> Postings:
        """The starts in memory, the positions read from disk a key at a time (see ``diskarray``)."""
        keys = json.loads((folder / f"{name}.keys.json").read_text(encoding="utf-8"))
        starts = np.load(folder / f"{name}.starts.npy")  # one number per key: kept in memory
        positions = DiskArray.open(folder / f"{name}.positions.npy")  # read by the slices queries ask for
        if (keys is not None and len(starts) != len(keys) + 1) or int(starts[-1]) != len(positions):
            raise ValueError(f"{name} postings in {folder} do not match their keys")
        return cls(keys, starts, positions)


class PostingsBuilder:
    """Postings fed one record at a time: several are built in one pass over the records, and no record's
    keys are kept as Python objects (at a million records, sets of message words took ~1 GB)."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._key_column = array("i")
        self._position_column = array("i")
        self._records = 0

    def add(self, keys: Iterable[str]) -> None:
        """The next record's keys (distinct)."""
        for key in keys:
            self._key_column.append(self._numbers.setdefault(key, len(self._numbers)))
            self._position_column.append(self._records)
        self._records += 1

    def build(self) -> Postings:
        key_numbers = np.frombuffer(self._key_column, dtype=np.int32) if self._key_column else _EMPTY
        positions = np.frombuffer(self._position_column, dtype=np.int32) if self._position_column else _EMPTY
        starts, order = _grouped(key_numbers, len(self._numbers))
        return Postings(list(self._numbers), starts, positions[order].copy())


def _grouped(numbers: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each group starts, and the order that lists positions group by group (ascending within)."""
    order = np.argsort(numbers, kind="stable")
    starts = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(numbers, minlength=count), out=starts[1:])
    return starts, order
