"""A saved array read a few rows at a time with ``pread``: what queries read does not stay in the process.

Why: slices read through a memory map stay mapped, and resident, in the process; at a million records
every query's words touch other postings, and after a few hundred queries the serving process held most
of the BM25 matrices (0.5 GB) as its own resident memory. Read with ``pread``, the pages live only in the
kernel's page cache, shared by every replica on the machine and given back under memory pressure.
A small array is read whole into memory instead (``IN_MEMORY_BYTES``): a query reads ~130 rows of the
signal index, and at the bundled knowledge base's size (1 MB of arrays in all) reading them one call at
a time cost a third of retrieval's own time besides the query encoding.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np

# Arrays of at most this many bytes are held in memory when loaded (read-only); larger ones are read by rows.
IN_MEMORY_BYTES = 1 << 20


class DiskArray:
    """A ``.npy`` array on disk, read by rows: ``a[i:j]`` reads those rows (a copy), ``a.take(rows)`` any
    rows, ``np.asarray(a)`` all. A row is one element of a 1-D array, one vector of a matrix."""

    def __init__(self, path: Path | str, offset: int, dtype: np.dtype, shape: tuple[int, ...]):
        self.path = Path(path)
        self.offset = offset
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(n) for n in shape)
        self.length = self.shape[0]
        self.row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        # Opened now: a file replaced later (a snapshot rewritten) is read as it was when loaded.
        self._fd = os.open(self.path, os.O_RDONLY)

    @classmethod
    def open(cls, path: Path | str, in_memory_bytes: int = IN_MEMORY_BYTES) -> DiskArray | np.ndarray:
        """The ``.npy`` file's rows, read from disk on access; or in memory when it is that small."""
        mapped = np.load(path, mmap_mode="r")  # reads the header only
        if mapped.ndim == 0 or not mapped.flags.c_contiguous:
            raise ValueError(f"{path} is not an array of rows in C order")
        if mapped.nbytes <= in_memory_bytes:
            return _held(mapped)
        return cls(path, mapped.offset, mapped.dtype, mapped.shape)

    @classmethod
    def of(cls, array: np.ndarray, in_memory_bytes: int = 0) -> DiskArray | np.ndarray:
        """The same array read from its file when it is a memory map of a whole ``.npy`` file, else itself
        (a slice of a map keeps the map's offset, so only a map that ends where its file ends qualifies).
        A map of at most ``in_memory_bytes`` is read into memory instead."""
        if not (isinstance(array, np.memmap) and array.filename and array.ndim and array.flags.c_contiguous):
            return array
        if os.path.getsize(array.filename) != array.offset + array.nbytes:
            return array
        if array.nbytes <= in_memory_bytes:
            return _held(array)
        return cls(array.filename, array.offset, array.dtype, array.shape)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, key: slice) -> np.ndarray:
        if not isinstance(key, slice):
            raise TypeError("a DiskArray is read by slices, or by take()")
        start, stop, step = key.indices(self.length)
        if step != 1:
            raise ValueError("a DiskArray is read by contiguous slices, or by take()")
        count = max(0, stop - start)
        return self._rows(self._read(start, count), count)

    def take(self, rows: np.ndarray) -> np.ndarray:
        """Rows in the order given, each read on its own (a sorted ``rows`` reads the file in order)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= self.length):
            raise IndexError(f"rows outside 0..{self.length - 1} of {self.path}")
        return self._rows(b"".join(self._read(int(row), 1) for row in rows), len(rows))

    def _read(self, start: int, count: int) -> bytes:
        size = count * self.row_bytes
        raw = os.pread(self._fd, size, self.offset + start * self.row_bytes) if size else b""
        if len(raw) != size:
            raise OSError(f"{self.path} is shorter than its header says")
        return raw

    def _rows(self, raw: bytes, count: int) -> np.ndarray:
        return np.frombuffer(raw, dtype=self.dtype).reshape((count, *self.shape[1:]))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _held(mapped: np.ndarray) -> np.ndarray:
    """A read-only copy in memory of a (small) mapped array; the map itself is let go."""
    held = np.array(mapped)
    held.flags.writeable = False
    return held
