"""The vector store: FAISS files under the index folder by default, Milvus for many replicas, one factory.

Owns embedding records into a store and searching it. Must not know how hits are ranked or shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..embedding.embedder import Embedder
from ..errors import ConfigurationError
from ..knowledge.records import Record
from .ann import EXACT_LIMIT
from .store import CHUNK_RECORDS, BuildReport, VectorStore, embedding_key

__all__ = ["BuildReport", "VectorStore", "embedding_key", "load_index", "open_index"]


def open_index(
    records: Sequence[Record],
    embedder: Embedder,
    index_dir: Path,
    *,
    show_progress: bool = False,
    force: bool = False,
    store: str | None = None,
    exact_limit: int = EXACT_LIMIT,
    chunk_records: int = CHUNK_RECORDS,
) -> tuple[VectorStore, BuildReport]:
    """The vector store for ``records``: loaded when up to date, else brought up to date and saved.

    ``store`` is the ``store`` setting: ``None`` for FAISS files under ``index_dir``, ``"milvus:<uri>"``
    for a Milvus collection. Unchanged records are never re-embedded; ``force`` re-embeds everything.
    """
    if not store:
        from .faiss_store import open_faiss_index

        return open_faiss_index(
            records,
            embedder,
            index_dir,
            show_progress=show_progress,
            force=force,
            exact_limit=exact_limit,
            chunk_records=chunk_records,
        )
    kind, _, uri = store.partition(":")
    if kind != "milvus" or not uri:
        raise ConfigurationError(
            f"store {store!r} is not one errata knows: leave ERRATA_STORE unset for FAISS files, or set "
            f"milvus:<uri> (a local .db file or http://host:19530)"
        )
    from .milvus import open_milvus_index

    return open_milvus_index(
        records, embedder, uri, show_progress=show_progress, force=force, chunk_records=chunk_records
    )


def load_index(index_dir: Path, embedder_id: str) -> VectorStore:
    """A built FAISS index as it is on disk, without the records (see ``faiss_store.load_index``)."""
    from .faiss_store import load_index as load_faiss_index

    return load_faiss_index(index_dir, embedder_id)
