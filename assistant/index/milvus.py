"""The vector index in Milvus, for many app replicas sharing one store (``ERRATA_STORE=milvus:<uri>``).

``<uri>`` is what ``pymilvus.MilvusClient`` takes: a local ``.db`` path runs milvus-lite (the engine in
a local file, one process), ``http://host:19530`` a Milvus server or cluster that every replica reaches.

One collection per embedder (its name derives from the embedder id, so vectors of different models never
mix) holds, per record: ``id`` (primary key), ``text_hash`` (the hash of its embedded text, as in the
FAISS manifest) and ``vector``. Opening compares those with the records: only new or changed records are
embedded and upserted, a chunk at a time, and records no longer in the knowledge base are deleted. As
every chunk is stored when it is embedded, an interrupted build resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..embedding.embedder import Embedder
from ..errors import ConfigurationError, IndexBuildError
from ..knowledge.records import Record
from .store import CHUNK_RECORDS, BuildReport, embed_in_chunks, embedding_key

logger = logging.getLogger(__name__)

_ID_LENGTH = 128
_PAGE = 1000  # rows per query page when reading what the collection holds


class MilvusIndex:
    """Nearest-record search in a Milvus collection; row ``i`` is ``record_ids[i]``, as for FAISS."""

    def __init__(self, client: Any, collection: str, record_ids: Sequence[str], manifest: dict[str, Any]):
        self.client = client
        self.collection = collection
        self.record_ids = list(record_ids)
        self.manifest = manifest
        self._rows = {record_id: row for row, record_id in enumerate(self.record_ids)}

    def __len__(self) -> int:
        return len(self.record_ids)

    @property
    def index_type(self) -> str:
        return "milvus"

    def search(self, vectors: np.ndarray, k: int, exact: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Scores and row numbers of the ``k`` nearest rows for each query vector (row -1: none)."""
        k = max(1, min(k, len(self.record_ids)))
        queries = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        try:
            results = self.client.search(
                self.collection,
                data=queries.tolist(),
                limit=k,
                anns_field="vector",
                search_params={"metric_type": "IP"},
                output_fields=["id"],
            )
        except Exception as exc:  # pymilvus raises its own types for every transport failure
            raise IndexBuildError(
                f"Milvus search in {self.collection!r} failed: {exc}; is the store reachable?"
            ) from exc
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        rows = np.full((len(queries), k), -1, dtype=np.int64)
        for q, hits in enumerate(results):
            found = [(self._rows[h["id"]], h["distance"]) for h in hits if h["id"] in self._rows]
            for col, (row, score) in enumerate(found[:k]):
                rows[q, col], scores[q, col] = row, score
        return scores, rows


def collection_name(embedder_id: str) -> str:
    """A valid collection name (letters, digits, ``_``) that differs for every embedder id."""
    readable = re.sub(r"[^0-9A-Za-z]+", "_", embedder_id).strip("_")[:40]
    return f"errata_{readable}_{hashlib.sha256(embedder_id.encode('utf-8')).hexdigest()[:8]}"


def connect(uri: str) -> Any:
    """A ``MilvusClient`` for ``uri``, with errors that say what to install or check."""
    try:
        from pymilvus import MilvusClient
    except ImportError as exc:
        raise ConfigurationError(
            "ERRATA_STORE=milvus:... needs pymilvus (and milvus-lite for a local .db file): "
            "pip install 'errata[milvus]', or unset ERRATA_STORE to use FAISS files"
        ) from exc
    try:
        return MilvusClient(uri)
    except Exception as exc:  # pymilvus raises its own types for a missing milvus-lite or a dead server
        raise ConfigurationError(
            f"cannot open the Milvus store {uri!r}: {exc}; check the address (a local .db path needs "
            f"milvus-lite: pip install 'errata[milvus]')"
        ) from exc


def open_milvus_index(
    records: Sequence[Record],
    embedder: Embedder,
    uri: str,
    *,
    show_progress: bool = False,
    force: bool = False,
    chunk_records: int = CHUNK_RECORDS,
) -> tuple[MilvusIndex, BuildReport]:
    """The Milvus collection for ``records``, brought up to date: only new or changed records are embedded.

    ``force`` drops the collection and embeds everything again.
    """
    started = time.perf_counter()
    client = connect(uri)
    name = collection_name(embedder.model_id)
    keys = {r.id: embedding_key(r) for r in records}
    try:
        if force and client.has_collection(name):
            client.drop_collection(name)
        stored = _stored_keys(client, name) if client.has_collection(name) else None
        reason = "no collection yet" if stored is None else ("forced rebuild" if force else "records changed")
        stored = stored or {}
        stale = [record_id for record_id in stored if record_id not in keys]
        todo = [r for r in records if stored.get(r.id) != keys[r.id]]
        _upsert(client, name, todo, keys, embedder, chunk_records, show_progress)
        if stale:
            client.delete(name, ids=stale)
        if not client.has_collection(name):  # no records at all: an empty collection still answers
            _create(client, name, embedder.dimension)
        client.load_collection(name)
    except (ConfigurationError, IndexBuildError):
        raise
    except Exception as exc:  # pymilvus raises its own types for every server-side failure
        raise IndexBuildError(f"cannot update the Milvus collection {name!r} at {uri!r}: {exc}") from exc
    changed = bool(todo or stale)
    manifest = {"index_type": "milvus", "uri": uri, "collection": name, "embedder": embedder.model_id}
    report = BuildReport(
        total=len(records),
        embedded=len(todo),
        reused=len(records) - len(todo),
        seconds=time.perf_counter() - started,
        rebuilt=changed,
        reason=(f"{reason}: {len(todo)} upserted, {len(stale)} deleted" if changed else "up to date"),
    )
    if changed:
        logger.info("%s", report.summary())
    return MilvusIndex(client, name, [r.id for r in records], manifest), report


def _create(client: Any, name: str, dimension: int) -> None:
    from pymilvus import DataType, MilvusClient

    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=_ID_LENGTH)
    schema.add_field("text_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
    index_params = client.prepare_index_params()
    index_params.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="IP")
    client.create_collection(name, schema=schema, index_params=index_params, consistency_level="Strong")


def _stored_keys(client: Any, name: str) -> dict[str, str]:
    """Every record id in the collection and the hash of the text its vector was made from."""
    out: dict[str, str] = {}
    iterator = client.query_iterator(name, batch_size=_PAGE, filter="", output_fields=["id", "text_hash"])
    try:
        while page := iterator.next():
            out.update((row["id"], row["text_hash"]) for row in page)
    finally:
        iterator.close()
    return out


def _upsert(
    client: Any,
    name: str,
    records: Sequence[Record],
    keys: dict[str, str],
    embedder: Embedder,
    chunk_records: int,
    show_progress: bool,
) -> None:
    """Embed and store ``records`` a chunk at a time, so an interruption loses at most one chunk."""
    for _, batch, vectors in embed_in_chunks(records, embedder.encode_records, chunk_records, show_progress):
        if not client.has_collection(name):
            _create(client, name, int(vectors.shape[1]))
        rows = [
            {"id": r.id, "text_hash": keys[r.id], "vector": v.tolist()} for r, v in zip(batch, vectors, strict=True)
        ]
        client.upsert(name, data=rows)
