"""A saved 1-D array read a slice at a time with ``pread``: what queries read does not stay in the process.

Why: slices read through a memory map stay mapped, and resident, in the process; at a million records
every query's words touch other postings, and after a few hundred queries the serving process held most
of the BM25 matrices (0.5 GB) as its own resident memory. Read with ``pread``, the pages live only in the
kernel's page cache, shared by every replica on the machine and given back under memory pressure.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np


class DiskArray:
    """A 1-D ``.npy`` array on disk; ``a[i:j]`` reads those elements (a copy), ``np.asarray(a)`` all."""

    def __init__(self, path: Path | str, offset: int, dtype: np.dtype, length: int):
        self.path = Path(path)
        self.offset = offset
        self.dtype = np.dtype(dtype)
        self.length = length
        # Opened now: a file replaced later (a snapshot rewritten) is read as it was when loaded.
        self._fd = os.open(self.path, os.O_RDONLY)

    @classmethod
    def open(cls, path: Path | str) -> DiskArray:
        mapped = np.load(path, mmap_mode="r")  # reads the header only
        if mapped.ndim != 1:
            raise ValueError(f"{path} is not a 1-D array")
        return cls(path, mapped.offset, mapped.dtype, len(mapped))

    @classmethod
    def of(cls, array: np.ndarray) -> DiskArray | np.ndarray:
        """The same array read from its file when it is a memory map of a whole ``.npy`` file, else itself."""
        if isinstance(array, np.memmap) and array.filename and array.ndim == 1:
            return cls(array.filename, array.offset, array.dtype, len(array))
        return array

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, key: slice) -> np.ndarray:
        if not isinstance(key, slice):
            raise TypeError("a DiskArray is read by slices")
        start, stop, step = key.indices(self.length)
        if step != 1:
            raise ValueError("a DiskArray is read by contiguous slices")
        count = max(0, stop - start)
        size = self.dtype.itemsize
        raw = os.pread(self._fd, count * size, self.offset + start * size) if count else b""
        if len(raw) != count * size:
            raise OSError(f"{self.path} is shorter than its header says")
        return np.frombuffer(raw, dtype=self.dtype)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
