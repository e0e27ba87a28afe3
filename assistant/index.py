"""The vector index on disk: FAISS vectors, an embedding cache and a manifest that says what they hold.

Files under the index folder:

- ``manifest.json``: format, embedder id, dimension, count, each record's id, content hash and hash of
  its embedded text (in row order), index type, creation time, library versions, and the size and
  checksum of the files below.
- ``embeddings.npy``: one normalized float32 row per record: the embedding cache, keyed by the hash of
  the embedded text through the manifest, so a rebuild embeds only new or changed records.
- ``vectors.faiss``: the FAISS index over those rows.

Every file is written to a temporary name and renamed into place, manifest last, so a crash leaves
either the old index or the new one. A manifest that does not describe the files beside it (a crash in
between, a truncated or foreign file) is treated as corrupt: the index is rebuilt with a warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from .embed import Embedder, record_text
from .errors import IndexBuildError
from .records import Record

logger = logging.getLogger(__name__)

MANIFEST_NAME = "manifest.json"
VECTORS_NAME = "vectors.faiss"
EMBEDDINGS_NAME = "embeddings.npy"
FORMAT_VERSION = 2
_CHECKSUM_LIMIT = 256 * 1024 * 1024  # larger files are checked by size only


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
    """Nearest-record search over the FAISS index; row ``i`` is ``record_ids[i]``."""

    def __init__(self, faiss_index: faiss.Index, record_ids: Sequence[str], manifest: dict[str, Any]):
        self.faiss_index = faiss_index
        self.record_ids = list(record_ids)
        self.manifest = manifest

    def __len__(self) -> int:
        return len(self.record_ids)

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Scores and row numbers of the ``k`` nearest rows for each query vector (row -1: none)."""
        k = max(1, min(k, len(self.record_ids)))
        queries = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        return self.faiss_index.search(queries, k)


def open_index(
    records: Sequence[Record],
    embedder: Embedder,
    index_dir: Path,
    *,
    show_progress: bool = False,
    force: bool = False,
) -> tuple[VectorIndex, BuildReport]:
    """The index for ``records``: loaded when up to date, else brought up to date and saved.

    Unchanged records are never re-embedded; ``force`` re-embeds everything.
    """
    started = time.perf_counter()
    index_dir = Path(index_dir)
    hashes = [r.content_hash for r in records]
    text_hashes = [embedding_key(r) for r in records]
    ids = [r.id for r in records]
    with _build_lock(index_dir):
        manifest, reason = (None, "forced rebuild") if force else _read_manifest(index_dir, embedder)
        if manifest is not None and (manifest["ids"], manifest["hashes"], manifest["text_hashes"]) == (
            ids,
            hashes,
            text_hashes,
        ):
            loaded = _load_faiss(index_dir, manifest)
            if loaded is not None:
                report = BuildReport(len(ids), 0, len(ids), time.perf_counter() - started, False, "up to date")
                return VectorIndex(loaded, ids, manifest), report
            reason = f"{VECTORS_NAME} is unreadable or does not match the manifest"
            logger.warning("index at %s is corrupt (%s); rebuilding", index_dir, reason)
        elif manifest is not None:
            reason = "records changed"

        cache = {} if force or manifest is None else _load_embedding_cache(index_dir, manifest)
        missing = [i for i, h in enumerate(text_hashes) if h not in cache]
        new_vectors = (
            embedder.encode_records([records[i] for i in missing], show_progress=show_progress) if missing else None
        )
        dimension = new_vectors.shape[1] if new_vectors is not None else len(next(iter(cache.values())))
        vectors = np.zeros((len(records), dimension), dtype=np.float32)
        fresh = dict(zip(missing, new_vectors if new_vectors is not None else [], strict=True))
        for row, text_hash in enumerate(text_hashes):
            vectors[row] = fresh[row] if row in fresh else cache[text_hash]
        faiss_index = make_faiss_index(vectors)
        manifest = _save(index_dir, faiss_index, vectors, ids, hashes, text_hashes, embedder)
        report = BuildReport(
            len(ids), len(missing), len(ids) - len(missing), time.perf_counter() - started, True, reason
        )
        logger.info("%s", report.summary())
        return VectorIndex(faiss_index, ids, manifest), report


def embedding_key(record: Record) -> str:
    """The embedding cache key: the hash of the text that is embedded, so a change to a field that is
    not embedded (solutions, say) reuses the vector, and a change to how records are turned into text
    re-embeds them."""
    return hashlib.sha256(record_text(record).encode("utf-8")).hexdigest()[:32]


def make_faiss_index(vectors: np.ndarray) -> faiss.Index:
    """Exact inner-product search: with normalized vectors, the score is the cosine similarity."""
    index = faiss.IndexFlatIP(vectors.shape[1])
    if len(vectors):
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def _read_manifest(index_dir: Path, embedder: Embedder) -> tuple[dict[str, Any] | None, str]:
    path = index_dir / MANIFEST_NAME
    if not path.exists():
        return None, "no index yet"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if manifest.get("format") != FORMAT_VERSION:
            return None, f"index format {manifest.get('format')} is not {FORMAT_VERSION}"
        manifest["ids"] = [entry["id"] for entry in manifest["records"]]
        manifest["hashes"] = [entry["hash"] for entry in manifest["records"]]
        manifest["text_hashes"] = [entry["text_hash"] for entry in manifest["records"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("index manifest %s is unreadable (%s); rebuilding the index", path, exc)
        return None, "manifest unreadable"
    if manifest.get("embedder") != embedder.model_id:
        return None, f"embedder changed from {manifest.get('embedder')!r} to {embedder.model_id!r}"
    return manifest, ""


def _file_ok(path: Path, expected: dict[str, Any] | None) -> bool:
    if not expected or not path.exists() or path.stat().st_size != expected.get("size"):
        return False
    return expected.get("sha256") is None or _sha256(path) == expected["sha256"]


def _load_faiss(index_dir: Path, manifest: dict[str, Any]) -> faiss.Index | None:
    path = index_dir / VECTORS_NAME
    if not _file_ok(path, manifest.get("files", {}).get(VECTORS_NAME)):
        return None
    try:
        loaded = faiss.read_index(str(path))
    except RuntimeError as exc:
        logger.warning("cannot read %s: %s", path, exc)
        return None
    if loaded.ntotal != len(manifest["ids"]):
        return None
    return loaded


def _load_embedding_cache(index_dir: Path, manifest: dict[str, Any]) -> dict[str, np.ndarray]:
    path = index_dir / EMBEDDINGS_NAME
    if not _file_ok(path, manifest.get("files", {}).get(EMBEDDINGS_NAME)):
        logger.warning("embedding cache %s is missing or damaged; re-embedding every record", path)
        return {}
    try:
        matrix = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        logger.warning("cannot read embedding cache %s (%s); re-embedding every record", path, exc)
        return {}
    if matrix.ndim != 2 or len(matrix) != len(manifest["text_hashes"]):
        return {}
    return dict(zip(manifest["text_hashes"], matrix, strict=True))


def _save(
    index_dir: Path,
    faiss_index: faiss.Index,
    vectors: np.ndarray,
    ids: Sequence[str],
    hashes: Sequence[str],
    text_hashes: Sequence[str],
    embedder: Embedder,
) -> dict[str, Any]:
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        files: dict[str, Any] = {}
        with _atomic_path(index_dir / EMBEDDINGS_NAME) as tmp:
            with open(tmp, "wb") as handle:
                np.save(handle, vectors, allow_pickle=False)
            files[EMBEDDINGS_NAME] = _describe(tmp)
        with _atomic_path(index_dir / VECTORS_NAME) as tmp:
            faiss.write_index(faiss_index, str(tmp))
            files[VECTORS_NAME] = _describe(tmp)
        manifest = {
            "format": FORMAT_VERSION,
            "embedder": embedder.model_id,
            "dimension": int(vectors.shape[1]),
            "count": len(ids),
            "index_type": "flat-ip",
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "versions": _versions(),
            "files": files,
            "records": [{"id": i, "hash": h, "text_hash": t} for i, h, t in zip(ids, hashes, text_hashes, strict=True)],
        }
        with _atomic_path(index_dir / MANIFEST_NAME) as tmp:
            tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    except OSError as exc:
        raise IndexBuildError(f"cannot write the index to {index_dir}: {exc}") from exc
    manifest["ids"] = list(ids)
    manifest["hashes"] = list(hashes)
    manifest["text_hashes"] = list(text_hashes)
    return manifest


@contextlib.contextmanager
def _atomic_path(final: Path) -> Iterator[Path]:
    """A temporary path beside ``final``, renamed onto it when the block succeeds."""
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def _build_lock(index_dir: Path) -> Iterator[None]:
    """Serialize builds of one folder across processes (two servers starting at once)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        handle = open(index_dir / ".lock", "a+")  # noqa: SIM115 - held for the block
    except OSError as exc:
        raise IndexBuildError(f"cannot use index folder {index_dir}: {exc}") from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _describe(path: Path) -> dict[str, Any]:
    size = path.stat().st_size
    return {"size": size, "sha256": _sha256(path) if size <= _CHECKSUM_LIMIT else None}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"faiss": getattr(faiss, "__version__", "unknown")}
    for name in ("errata", "sentence-transformers"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    return out
