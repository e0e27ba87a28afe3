"""What every vector store shares: the ``VectorStore`` protocol the Retriever searches, the build report,
and how records are embedded a chunk at a time (so an interrupted build loses at most one chunk)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from ..embedding.text import record_text
from ..embedding.threads import all_cores
from ..knowledge.records import Record

CHUNK_RECORDS = 2048  # records embedded (and saved) per step

T = TypeVar("T")


@runtime_checkable
class VectorStore(Protocol):
    """Nearest-record search; row ``i`` is ``record_ids[i]``. FAISS files and Milvus both implement it."""

    record_ids: list[str]
    manifest: dict[str, Any]

    def __len__(self) -> int: ...

    @property
    def index_type(self) -> str: ...

    def search(self, vectors: np.ndarray, k: int, exact: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Scores and row numbers of the ``k`` nearest rows for each query vector (row -1: none); the
        nearest ``exact`` are scored exactly by an approximate store."""
        ...


@dataclass
class BuildReport:
    """What opening the index did: reused it as is, or rebuilt it (and how much was embedded)."""

    total: int
    embedded: int
    reused: int
    seconds: float
    rebuilt: bool
    reason: str

    def summary(self) -> str:
        if not self.rebuilt:
            return f"index up to date ({self.total} records, {self.seconds:.2f}s)"
        return (
            f"index built: {self.total} records, {self.embedded} embedded, {self.reused} reused "
            f"from cache, {self.seconds:.1f}s ({self.reason})"
        )


def embedding_key(record: Record) -> str:
    """The embedding cache key: the hash of the text that is embedded, so a change to a field that is
    not embedded (solutions, say) reuses the vector, and a change to how records are turned into text
    re-embeds them."""
    return text_key(record_text(record))


def text_key(text: str) -> str:
    """The cache key of one embedded text (a record's, or a piece's: see pieces.py)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def embed_in_chunks(
    items: Sequence[T],
    encode: Callable[[Sequence[T]], np.ndarray],
    chunk_records: int,
    show_progress: bool,
    what: str = "records",
) -> Iterator[tuple[int, Sequence[T], np.ndarray]]:
    """``(start, batch, vectors)`` a chunk at a time, ``encode`` turning a chunk of ``items`` (records, say,
    with ``Embedder.encode_records``) into vectors, with a progress bar: the caller saves each chunk before
    the next is embedded, so an interrupted build loses at most one chunk."""
    progress = None
    if show_progress and items:
        from tqdm import tqdm

        progress = tqdm(total=len(items), desc=f"embedding {what}", unit="text")
    with all_cores():  # a serving process set one thread for queries
        try:
            for start in range(0, len(items), chunk_records):
                batch = items[start : start + chunk_records]
                yield start, batch, encode(batch)
                if progress is not None:
                    progress.update(len(batch))
        finally:
            if progress is not None:
                progress.close()
