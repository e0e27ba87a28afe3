"""The embedding cache: the previous build's vectors keyed by the hash of their text, and the vectors of a
build not yet finished, appended to disk batch by batch (so a rebuild embeds only new or changed records,
and an interrupted one resumes)."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..embedding.embedder import Embedder
from ..errors import IndexBuildError
from ..knowledge.records import Record
from ..storage.files import atomic_path, file_matches
from ..storage.space import preallocate
from .ann import ROWS_PER_STEP
from .store import embed_in_chunks

logger = logging.getLogger(__name__)

EMBEDDINGS_NAME = "embeddings.npy"
PARTIAL_DIR = ".partial"


def import_embeddings(index_dir: Path, embedder_id: str, keys: Sequence[str], vectors: np.ndarray) -> None:
    """Add vectors made elsewhere (another machine, a benchmark) to the build cache of ``index_dir``.

    ``keys`` are :func:`embedding_key` values; the next :func:`open_index` with that embedder uses
    these vectors instead of embedding those records. Call it repeatedly to add batches.
    """
    if len(keys) != len(vectors):
        raise IndexBuildError(f"{len(keys)} keys for {len(vectors)} vectors: give one key per vector")
    PartialEmbeddings(Path(index_dir) / PARTIAL_DIR, embedder_id).append(keys, vectors)


class EmbeddingCache:
    """The vectors of the previous build, memory-mapped and found by the hash of their text."""

    def __init__(self, matrix: np.ndarray | None, rows: dict[str, int]):
        self.matrix = matrix
        self.rows = rows

    @classmethod
    def open(cls, index_dir: Path, manifest: dict[str, Any] | None) -> EmbeddingCache:
        if manifest is None:
            return cls(None, {})
        path = index_dir / EMBEDDINGS_NAME
        if not file_matches(path, manifest.get("files", {}).get(EMBEDDINGS_NAME)):
            logger.warning("embedding cache %s is missing or damaged; re-embedding every record", path)
            return cls(None, {})
        try:
            matrix = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            logger.warning("cannot read embedding cache %s (%s); re-embedding every record", path, exc)
            return cls(None, {})
        if matrix.ndim != 2 or len(matrix) != len(manifest["text_hashes"]):
            return cls(None, {})
        return cls(matrix, {h: row for row, h in enumerate(manifest["text_hashes"])})

    @property
    def dimension(self) -> int | None:
        return None if self.matrix is None else int(self.matrix.shape[1])

    def __contains__(self, key: str) -> bool:
        return key in self.rows

    def __getitem__(self, key: str) -> np.ndarray:
        return self.matrix[self.rows[key]]

    def close(self) -> None:
        self.matrix = None


class PartialEmbeddings:
    """Vectors embedded by a build not yet finished, appended to disk batch by batch.

    ``vectors.f32`` holds raw rows and ``keys.txt`` one text hash a line, written after its rows, so
    after a crash the shorter of the two says how many rows are whole.
    """

    def __init__(self, folder: Path, embedder_id: str, *, fresh: bool = False):
        self.folder = folder
        self.embedder_id = embedder_id
        self.dimension: int | None = None
        self.rows: dict[str, int] = {}
        self.count = 0  # rows in the file; more than len(rows) when two records embed the same text
        self.matrix: np.ndarray | None = None
        if fresh:
            self.remove()
        else:
            self._load()

    def _load(self) -> None:
        try:
            meta = json.loads((self.folder / "meta.json").read_text(encoding="utf-8"))
            if meta.get("embedder") != self.embedder_id:
                self.remove()
                return
            dimension = int(meta["dimension"])
            keys = (self.folder / "keys.txt").read_text(encoding="utf-8").split("\n")[:-1]  # last: unfinished
            count = min(len(keys), (self.folder / "vectors.f32").stat().st_size // (4 * dimension))
        except (OSError, ValueError, KeyError, TypeError):
            self.remove()
            return
        self.dimension = dimension
        self._truncate(keys[:count])
        self.rows = {key: row for row, key in enumerate(keys[:count])}
        self.count = count
        self._map()

    def _truncate(self, keys: list[str]) -> None:
        """Drop a half-written last batch so appends line up."""
        with open(self.folder / "vectors.f32", "rb+") as handle:
            handle.truncate(len(keys) * 4 * (self.dimension or 0))
        (self.folder / "keys.txt").write_text("".join(k + "\n" for k in keys), encoding="utf-8")

    def _map(self) -> None:
        self.matrix = (
            np.memmap(self.folder / "vectors.f32", dtype=np.float32, mode="r", shape=(self.count, self.dimension))
            if self.count
            else None
        )

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, key: str) -> bool:
        return key in self.rows

    def __getitem__(self, key: str) -> np.ndarray:
        return self.matrix[self.rows[key]]

    def append(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if self.dimension is None:
                self.dimension = int(vectors.shape[1])
                (self.folder / "meta.json").write_text(
                    json.dumps({"embedder": self.embedder_id, "dimension": self.dimension}), encoding="utf-8"
                )
                for name in ("vectors.f32", "keys.txt"):
                    (self.folder / name).write_bytes(b"")
            for name, data in (
                ("vectors.f32", np.ascontiguousarray(vectors, dtype=np.float32).tobytes()),
                ("keys.txt", "".join(k + "\n" for k in keys).encode("utf-8")),
            ):
                with open(self.folder / name, "ab") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
        except OSError as exc:
            raise IndexBuildError(f"cannot save embeddings to {self.folder}: {exc}; free disk space and rerun") from exc
        for offset, key in enumerate(keys):
            self.rows.setdefault(key, self.count + offset)
        self.count += len(keys)
        self._map()

    def remove(self) -> None:
        self.matrix = None
        self.rows = {}
        self.count = 0
        shutil.rmtree(self.folder, ignore_errors=True)


def embed_into(
    partial: PartialEmbeddings,
    records: Sequence[Record],
    keys: Sequence[str],
    embedder: Embedder,
    chunk_records: int,
    show_progress: bool,
) -> None:
    for start, batch, vectors in embed_in_chunks(records, embedder.encode_records, chunk_records, show_progress):
        partial.append(keys[start : start + len(batch)], vectors)


def write_embeddings(
    index_dir: Path, text_hashes: Sequence[str], dimension: int, cache: EmbeddingCache, partial: PartialEmbeddings
) -> np.ndarray:
    """Write ``embeddings.npy`` row by row from the old cache and the new vectors; return it mapped."""
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(index_dir / EMBEDDINGS_NAME) as tmp:
            if not text_hashes:  # a zero-length file cannot be memory-mapped
                with open(tmp, "wb") as handle:
                    np.save(handle, np.zeros((0, dimension), dtype=np.float32), allow_pickle=False)
                return np.zeros((0, dimension), dtype=np.float32)
            out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(len(text_hashes), dimension))
            preallocate(tmp)  # a full disk raises ENOSPC here instead of SIGBUS on a mapped page
            for start in range(0, len(text_hashes), ROWS_PER_STEP):
                keys = text_hashes[start : start + ROWS_PER_STEP]
                out[start : start + len(keys)] = [partial[h] if h in partial else cache[h] for h in keys]
            out.flush()
            del out
    except OSError as exc:
        raise IndexBuildError(f"cannot write the index to {index_dir}: {exc}; free disk space and rerun") from exc
    return np.load(index_dir / EMBEDDINGS_NAME, mmap_mode="r", allow_pickle=False)
