"""The vector index on disk: FAISS vectors, an embedding cache and a manifest that says what they hold.

Files under the index folder:

- ``manifest.json``: format, embedder id, dimension, count, each record's id, content hash and hash of
  its embedded text (in row order), the index type and its parameters, creation time, library versions,
  and the size and checksum of the files below.
- ``embeddings.npy``: one normalized float32 row per record: the embedding cache, keyed by the hash of
  the embedded text through the manifest, so a rebuild embeds only new or changed records. An ANN
  index also reads it (memory-mapped) to re-score its candidates exactly.
- ``vectors.faiss``: the FAISS index over those rows: exact inner product (``flat-ip``) up to
  ``EXACT_LIMIT`` records, beyond that an inverted file of 8-bit scalar-quantized vectors (``ivf-sq8``)
  whose ``nprobe`` is calibrated at build time to reach ``TARGET_RECALL`` against exact search.
- ``.partial/``: only while a build embeds: the vectors embedded so far and their keys, appended batch
  by batch, so an interrupted build resumes without re-embedding them.

Every file is written to a temporary name and renamed into place, manifest last, so a crash leaves
either the old index or the new one. A manifest that does not describe the files beside it (a crash in
between, a truncated or foreign file) is treated as corrupt: the index is rebuilt with a warning.
Both FAISS files are memory-mapped when loaded, so replicas on one machine share their pages.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from .ann import (
    EXACT_LIMIT,
    ROWS_PER_STEP,
    TARGET_RECALL,
    build_faiss_index,
    exact_top_k,
    index_type_for,
    make_faiss_index,
    read_rows,
    recall_at_k,
    refined_search,
)
from .diskfiles import atomic_path, build_lock, describe_file, file_matches
from .embed import Embedder, record_text
from .errors import ConfigurationError, IndexBuildError
from .records import Record

__all__ = [
    "EMBEDDINGS_NAME",
    "EXACT_LIMIT",
    "MANIFEST_NAME",
    "PARTIAL_DIR",
    "TARGET_RECALL",
    "VECTORS_NAME",
    "BuildReport",
    "VectorIndex",
    "build_faiss_index",
    "embed_in_chunks",
    "embedding_key",
    "exact_top_k",
    "import_embeddings",
    "index_type_for",
    "load_index",
    "make_faiss_index",
    "open_index",
    "read_rows",
    "recall_at_k",
    "refined_search",
]

logger = logging.getLogger(__name__)

MANIFEST_NAME = "manifest.json"
VECTORS_NAME = "vectors.faiss"
EMBEDDINGS_NAME = "embeddings.npy"
PARTIAL_DIR = ".partial"
FORMAT_VERSION = 2
CHUNK_RECORDS = 2048  # records embedded (and saved to .partial) per step


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


class VectorIndex:
    """Nearest-record search over the FAISS index; row ``i`` is ``record_ids[i]``.

    For an ANN index, ``vectors`` (the memory-mapped embedding cache) re-scores ``refine`` times ``k``
    candidates exactly, so the scores are true cosine similarities whatever the index type.
    """

    def __init__(
        self,
        faiss_index: faiss.Index,
        record_ids: Sequence[str],
        manifest: dict[str, Any],
        vectors: np.ndarray | None = None,
    ):
        self.faiss_index = faiss_index
        self.record_ids = list(record_ids)
        self.manifest = manifest
        self.vectors = vectors
        params = manifest.get("index_params") or {}
        self.refine = int(params.get("refine", 0)) if vectors is not None else 0
        if "nprobe" in params:
            faiss.extract_index_ivf(faiss_index).nprobe = int(params["nprobe"])

    def __len__(self) -> int:
        return len(self.record_ids)

    @property
    def index_type(self) -> str:
        return str(self.manifest.get("index_type", "flat-ip"))

    def search(self, vectors: np.ndarray, k: int, exact: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Scores and row numbers of the ``k`` nearest rows for each query vector (row -1: none).

        An approximate index scores the nearest ``exact`` (default: all ``k``) exactly, the rest approximately.
        """
        k = max(1, min(k, len(self.record_ids)))
        queries = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        if self.refine and self.vectors is not None:
            return refined_search(self.faiss_index, self.vectors, queries, k, self.refine, exact)
        return self.faiss_index.search(queries, k)


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
) -> tuple[VectorIndex, BuildReport]:
    """The index for ``records``: loaded when up to date, else brought up to date and saved.

    Unchanged records are never re-embedded; ``force`` re-embeds everything. ``store`` is the
    ``store`` setting: ``None`` for FAISS files under ``index_dir``, ``"milvus:<uri>"`` for Milvus.
    """
    if store:
        return _open_store(store, records, embedder, show_progress=show_progress, force=force)
    started = time.perf_counter()
    index_dir = Path(index_dir)
    hashes, text_hashes, ids = [], [], []
    for r in records:  # one pass: records on a shelf are parsed once
        hashes.append(r.content_hash)
        text_hashes.append(embedding_key(r))
        ids.append(r.id)
    with build_lock(index_dir):
        manifest, reason = (None, "forced rebuild") if force else _read_manifest(index_dir, embedder)
        if manifest is not None and (manifest["ids"], manifest["hashes"], manifest["text_hashes"]) == (
            ids,
            hashes,
            text_hashes,
        ):
            wanted = index_type_for(len(ids), exact_limit)
            loaded = _load(index_dir, manifest) if manifest.get("index_type") == wanted else None
            if loaded is not None:
                report = BuildReport(len(ids), 0, len(ids), time.perf_counter() - started, False, "up to date")
                return loaded, report
            if manifest.get("index_type") != wanted:
                reason = f"index type changes from {manifest.get('index_type')} to {wanted}"
            else:
                reason = f"{VECTORS_NAME} is unreadable or does not match the manifest"
                logger.warning("index at %s is corrupt (%s); rebuilding", index_dir, reason)
        elif manifest is not None:
            reason = "records changed"

        cache = _EmbeddingCache.open(index_dir, None if force else manifest)
        partial = _PartialEmbeddings(index_dir / PARTIAL_DIR, embedder.model_id, fresh=force)
        if len(partial):
            logger.info("resuming an interrupted build: %d vectors already embedded", len(partial))
        missing = [i for i, h in enumerate(text_hashes) if h not in cache and h not in partial]
        _embed_into(
            partial,
            [records[i] for i in missing],
            [text_hashes[i] for i in missing],
            embedder,
            chunk_records,
            show_progress,
        )
        dimension = cache.dimension or partial.dimension or embedder.dimension
        vectors = _write_embeddings(index_dir, text_hashes, dimension, cache, partial)
        index, params = build_faiss_index(vectors, exact_limit=exact_limit)
        manifest = _save(index_dir, index, params, dimension, ids, hashes, text_hashes, embedder)
        partial.remove()
        cache.close()
        report = BuildReport(
            len(ids), len(missing), len(ids) - len(missing), time.perf_counter() - started, True, reason
        )
        logger.info("%s", report.summary())
        return _make_vector_index(index, ids, manifest, vectors), report


def embedding_key(record: Record) -> str:
    """The embedding cache key: the hash of the text that is embedded, so a change to a field that is
    not embedded (solutions, say) reuses the vector, and a change to how records are turned into text
    re-embeds them."""
    return hashlib.sha256(record_text(record).encode("utf-8")).hexdigest()[:32]


def load_index(index_dir: Path, embedder_id: str) -> VectorIndex:
    """A built index as it is on disk, without the records: what a serving replica needs.

    Unlike :func:`open_index` it trusts the manifest's record list, so it never embeds or rebuilds;
    it fails when there is no usable index for ``embedder_id``.
    """
    index_dir = Path(index_dir)
    manifest, reason = _read_manifest(index_dir, embedder_id)
    loaded = _load(index_dir, manifest) if manifest is not None else None
    if loaded is None:
        raise IndexBuildError(
            f"no usable index in {index_dir} ({reason or 'files do not match the manifest'}); run `errata build`"
        )
    del manifest["hashes"], manifest["text_hashes"]  # only a build needs them
    return loaded


def import_embeddings(index_dir: Path, embedder_id: str, keys: Sequence[str], vectors: np.ndarray) -> None:
    """Add vectors made elsewhere (another machine, a benchmark) to the build cache of ``index_dir``.

    ``keys`` are :func:`embedding_key` values; the next :func:`open_index` with that embedder uses
    these vectors instead of embedding those records. Call it repeatedly to add batches.
    """
    if len(keys) != len(vectors):
        raise IndexBuildError(f"{len(keys)} keys for {len(vectors)} vectors: give one key per vector")
    _PartialEmbeddings(Path(index_dir) / PARTIAL_DIR, embedder_id).append(keys, vectors)


class _EmbeddingCache:
    """The vectors of the previous build, memory-mapped and found by the hash of their text."""

    def __init__(self, matrix: np.ndarray | None, rows: dict[str, int]):
        self.matrix = matrix
        self.rows = rows

    @classmethod
    def open(cls, index_dir: Path, manifest: dict[str, Any] | None) -> _EmbeddingCache:
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


class _PartialEmbeddings:
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


def embed_in_chunks(
    records: Sequence[Record], embedder: Embedder, chunk_records: int, show_progress: bool
) -> Iterator[tuple[int, Sequence[Record], np.ndarray]]:
    """``(start, batch, vectors)`` a chunk at a time, with a progress bar: the caller saves each chunk
    before the next is embedded, so an interrupted build loses at most one chunk."""
    progress = None
    if show_progress and records:
        from tqdm import tqdm

        progress = tqdm(total=len(records), desc="embedding records", unit="rec")
    try:
        for start in range(0, len(records), chunk_records):
            batch = records[start : start + chunk_records]
            yield start, batch, embedder.encode_records(batch)
            if progress is not None:
                progress.update(len(batch))
    finally:
        if progress is not None:
            progress.close()


def _embed_into(
    partial: _PartialEmbeddings,
    records: Sequence[Record],
    keys: Sequence[str],
    embedder: Embedder,
    chunk_records: int,
    show_progress: bool,
) -> None:
    for start, batch, vectors in embed_in_chunks(records, embedder, chunk_records, show_progress):
        partial.append(keys[start : start + len(batch)], vectors)


def _write_embeddings(
    index_dir: Path, text_hashes: Sequence[str], dimension: int, cache: _EmbeddingCache, partial: _PartialEmbeddings
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
            for start in range(0, len(text_hashes), ROWS_PER_STEP):
                keys = text_hashes[start : start + ROWS_PER_STEP]
                out[start : start + len(keys)] = [partial[h] if h in partial else cache[h] for h in keys]
            out.flush()
            del out
    except OSError as exc:
        raise IndexBuildError(f"cannot write the index to {index_dir}: {exc}") from exc
    return np.load(index_dir / EMBEDDINGS_NAME, mmap_mode="r", allow_pickle=False)


def _make_vector_index(
    index: faiss.Index, ids: Sequence[str], manifest: dict[str, Any], vectors: np.ndarray
) -> VectorIndex:
    needs_vectors = bool((manifest.get("index_params") or {}).get("refine"))
    return VectorIndex(index, ids, manifest, vectors if needs_vectors else None)


def _open_store(
    store: str, records: Sequence[Record], embedder: Embedder, *, show_progress: bool, force: bool
) -> tuple[VectorIndex, BuildReport]:
    kind, _, uri = store.partition(":")
    if kind != "milvus" or not uri:
        raise ConfigurationError(
            f"store {store!r} is not one errata knows: leave ERRATA_STORE unset for FAISS files, or set "
            f"milvus:<uri> (a local .db file or http://host:19530)"
        )
    from .milvus_store import open_milvus_index

    return open_milvus_index(records, embedder, uri, show_progress=show_progress, force=force)


def _read_manifest(index_dir: Path, embedder: Embedder | str) -> tuple[dict[str, Any] | None, str]:
    embedder_id = embedder if isinstance(embedder, str) else embedder.model_id
    path = index_dir / MANIFEST_NAME
    if not path.exists():
        return None, "no index yet"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if manifest.get("format") != FORMAT_VERSION:
            return None, f"index format {manifest.get('format')} is not {FORMAT_VERSION}"
        entries = manifest.pop("records")
        for name, key in (("ids", "id"), ("hashes", "hash"), ("text_hashes", "text_hash")):
            manifest[name] = _compact([entry[key] for entry in entries])
        del entries
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("index manifest %s is unreadable (%s); rebuilding the index", path, exc)
        return None, "manifest unreadable"
    if manifest.get("embedder") != embedder_id:
        return None, f"embedder changed from {manifest.get('embedder')!r} to {embedder_id!r}"
    return manifest, ""


def _compact(strings: list[str]) -> list[str]:
    """The same strings, copied together: once the parsed manifest is freed its memory goes back to
    the system (1M records: ~90 MB kept instead of ~450 MB)."""
    joined = "\n".join(strings)
    if not strings or joined.count("\n") != len(strings) - 1:
        return list(strings)
    return joined.split("\n")


def _load(index_dir: Path, manifest: dict[str, Any]) -> VectorIndex | None:
    """The saved index, memory-mapped, or ``None`` when its files do not match the manifest."""
    path = index_dir / VECTORS_NAME
    files = manifest.get("files", {})
    if not file_matches(path, files.get(VECTORS_NAME)):
        return None
    needs_vectors = bool((manifest.get("index_params") or {}).get("refine"))
    vectors = None
    if needs_vectors:
        if not file_matches(index_dir / EMBEDDINGS_NAME, files.get(EMBEDDINGS_NAME)):
            return None
        vectors = np.load(index_dir / EMBEDDINGS_NAME, mmap_mode="r", allow_pickle=False)
    mmap = faiss.IO_FLAG_MMAP if needs_vectors else faiss.IO_FLAG_MMAP_IFC
    try:
        try:
            loaded = faiss.read_index(str(path), mmap | faiss.IO_FLAG_READ_ONLY)
        except RuntimeError:  # an index type this FAISS cannot map: read it into memory
            loaded = faiss.read_index(str(path))
    except RuntimeError as exc:
        logger.warning("cannot read %s: %s", path, exc)
        return None
    if loaded.ntotal != len(manifest["ids"]) or (vectors is not None and len(vectors) != loaded.ntotal):
        return None
    return VectorIndex(loaded, manifest["ids"], manifest, vectors)


def _save(
    index_dir: Path,
    faiss_index: faiss.Index,
    index_params: dict[str, Any],
    dimension: int,
    ids: Sequence[str],
    hashes: Sequence[str],
    text_hashes: Sequence[str],
    embedder: Embedder,
) -> dict[str, Any]:
    try:
        files = {EMBEDDINGS_NAME: describe_file(index_dir / EMBEDDINGS_NAME)}
        with atomic_path(index_dir / VECTORS_NAME) as tmp:
            faiss.write_index(faiss_index, str(tmp))
            files[VECTORS_NAME] = describe_file(tmp)
        manifest = {
            "format": FORMAT_VERSION,
            "embedder": embedder.model_id,
            "dimension": int(dimension),
            "count": len(ids),
            "index_type": index_params["type"],
            "index_params": {k: v for k, v in index_params.items() if k != "type"},
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "versions": _versions(),
            "files": files,
            "records": [{"id": i, "hash": h, "text_hash": t} for i, h, t in zip(ids, hashes, text_hashes, strict=True)],
        }
        with atomic_path(index_dir / MANIFEST_NAME) as tmp:
            tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    except OSError as exc:
        raise IndexBuildError(f"cannot write the index to {index_dir}: {exc}") from exc
    del manifest["records"]  # kept as the three lists below: a million small dicts cost memory
    manifest["ids"] = list(ids)
    manifest["hashes"] = list(hashes)
    manifest["text_hashes"] = list(text_hashes)
    return manifest


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"faiss": getattr(faiss, "__version__", "unknown")}
    for name in ("errata", "sentence-transformers"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    return out
