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
- ``encoder/``: the float ONNX export of the embedder's weights, which serving processes encode queries
  with instead of loading torch (see ``query_encoder.py``); the manifest's ``query_encoder`` names it.
- ``.partial/``: only while a build embeds: the vectors embedded so far and their keys, appended batch
  by batch, so an interrupted build resumes without re-embedding them.

Every file is written to a temporary name and renamed into place, manifest last, so a crash leaves
either the old index or the new one. A manifest that does not describe the files beside it (a crash in
between, a truncated or foreign file) is treated as corrupt: the index is rebuilt with a warning. The
manifest carries the SHA-256 of its own text (``storage/checksums.sealed_json``): a record id flipped or
two ids swapped, the size and time kept, would otherwise be trusted by every start that does not parse
the records. A manifest of an older errata, with no seal, is trusted only where its lists are compared
with the records (a build), and is then written again with one.
Both FAISS files are memory-mapped when loaded, so replicas on one machine share their pages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from ..embedding.embedder import Embedder
from ..errors import IndexBuildError
from ..knowledge.records import Record
from ..storage.checksums import SEAL_KEY, read_sealed_json, seal_of, sealed_json
from ..storage.files import atomic_path, build_lock, describe_file, file_matches
from .ann import EXACT_LIMIT, build_faiss_index, index_type_for, refined_search
from .cache import EMBEDDINGS_NAME, PARTIAL_DIR, EmbeddingCache, PartialEmbeddings, embed_into, write_embeddings
from .query_encoder import MANIFEST_KEY, failed, needs_storing, store_query_encoder, stored
from .store import CHUNK_RECORDS, BuildReport, embedding_key

logger = logging.getLogger(__name__)

MANIFEST_NAME = "manifest.json"
VECTORS_NAME = "vectors.faiss"
FORMAT_VERSION = 2


class FaissIndex:
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


def open_faiss_index(
    records: Sequence[Record],
    embedder: Embedder,
    index_dir: Path,
    *,
    show_progress: bool = False,
    force: bool = False,
    exact_limit: int = EXACT_LIMIT,
    chunk_records: int = CHUNK_RECORDS,
) -> tuple[FaissIndex, BuildReport]:
    """The index for ``records``: loaded when up to date, else brought up to date and saved.

    Unchanged records are never re-embedded; ``force`` re-embeds everything.
    """
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
            # The manifest checked against the records: it may gain its seal, its export, without a rebuild.
            reason = (needs_storing(manifest) or _unsealed(manifest)) if loaded is not None else ""
            if loaded is not None:
                changed = bool(reason) and _complete(index_dir, manifest, embedder)
                seconds = time.perf_counter() - started
                return loaded, BuildReport(len(ids), 0, len(ids), seconds, changed, reason if changed else "up to date")
            if manifest.get("index_type") != wanted:
                reason = f"index type changes from {manifest.get('index_type')} to {wanted}"
            else:
                reason = f"{VECTORS_NAME} is unreadable or does not match the manifest"
                logger.warning("index at %s is corrupt (%s); rebuilding", index_dir, reason)
        elif manifest is not None:
            reason = "records changed"
            _warn_if_shrinking(index_dir, len(manifest["ids"]), ids)

        cache = EmbeddingCache.open(index_dir, None if force else manifest)
        partial = PartialEmbeddings(index_dir / PARTIAL_DIR, embedder.model_id, fresh=force)
        if len(partial):
            logger.info("resuming an interrupted build: %d vectors already embedded", len(partial))
        missing = [i for i, h in enumerate(text_hashes) if h not in cache and h not in partial]
        # The export queries will use; the records are embedded with it too (the same vectors, faster).
        query_encoder = store_query_encoder(embedder, index_dir)
        encoding = embedder.with_export(index_dir / query_encoder["file"]) if stored(query_encoder) else embedder
        embed_into(
            partial,
            [records[i] for i in missing],
            [text_hashes[i] for i in missing],
            encoding,
            chunk_records,
            show_progress,
        )
        dimension = cache.dimension or partial.dimension or embedder.dimension
        vectors = write_embeddings(index_dir, text_hashes, dimension, cache, partial)
        index, params = build_faiss_index(vectors, exact_limit=exact_limit)
        manifest = _save(index_dir, index, params, dimension, ids, hashes, text_hashes, embedder, query_encoder)
        partial.remove()
        cache.close()
        report = BuildReport(
            len(ids), len(missing), len(ids) - len(missing), time.perf_counter() - started, True, reason
        )
        logger.info("%s", report.summary())
        return _make_vector_index(index, ids, manifest, vectors), report


# A rebuild that drops more records than this, and most of the index, is probably another knowledge
# base pointed at the same index folder (``--index`` given without the ``--kb`` it was built from).
SHRINK_WARNING_RECORDS = 1000


def _warn_if_shrinking(index_dir: Path, held: int, ids: Sequence[str]) -> None:
    """Say so when a rebuild is about to replace a large index by a much smaller one: the vectors of the
    records it drops are not kept, and embedding them again takes minutes."""
    if held - len(ids) > SHRINK_WARNING_RECORDS and len(ids) < held / 2:
        logger.warning(
            "the index at %s held %d records; rebuilding it for the %d of this knowledge base drops the rest "
            "(to keep it, pass the --kb folders it was built from, or use another --index)",
            index_dir,
            held,
            len(ids),
        )


def load_index(index_dir: Path, embedder_id: str) -> FaissIndex:
    """A built index as it is on disk, without the records: what a serving replica needs.

    Unlike :func:`open_index` it trusts the manifest's record list, so it never embeds or rebuilds;
    it fails when there is no usable index for ``embedder_id``.
    """
    index_dir = Path(index_dir)
    manifest, reason = _read_manifest(index_dir, embedder_id, warn=False)
    if manifest is not None and _unsealed(manifest):  # its record list cannot be checked here: never trusted
        manifest, reason = None, _unsealed(manifest)
    loaded = _load(index_dir, manifest) if manifest is not None else None
    if loaded is None:
        raise IndexBuildError(
            f"no usable index in {index_dir} ({reason or 'files do not match the manifest'}); run `errata build`"
        )
    del manifest["hashes"], manifest["text_hashes"]  # only a build needs them
    return loaded


def _make_vector_index(
    index: faiss.Index, ids: Sequence[str], manifest: dict[str, Any], vectors: np.ndarray
) -> FaissIndex:
    needs_vectors = bool((manifest.get("index_params") or {}).get("refine"))
    return FaissIndex(index, ids, manifest, vectors if needs_vectors else None)


def _read_manifest(
    index_dir: Path, embedder: Embedder | str, *, warn: bool = True
) -> tuple[dict[str, Any] | None, str]:
    """The manifest, its records as three lists, or ``None`` and why; ``warn``: say so when it is damaged
    (a serving start that falls back to a build leaves that to the build, which says it once)."""
    embedder_id = embedder if isinstance(embedder, str) else embedder.model_id
    path = index_dir / MANIFEST_NAME
    if not path.exists():
        return None, "no index yet"
    try:
        manifest, _ = read_sealed_json(path)  # a damaged seal raises; an older file has no SEAL_KEY
        if manifest.get("format") != FORMAT_VERSION:
            return None, f"index format {manifest.get('format')} is not {FORMAT_VERSION}"
        entries = manifest.pop("records")
        for name, key in (("ids", "id"), ("hashes", "hash"), ("text_hashes", "text_hash")):
            manifest[name] = _compact([entry[key] for entry in entries])
        del entries
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # AttributeError: not an object
        if warn:
            logger.warning("index manifest %s is unreadable (%s); rebuilding the index", path, exc)
        return None, f"manifest unreadable: {exc}"
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


def _load(index_dir: Path, manifest: dict[str, Any]) -> FaissIndex | None:
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
    return FaissIndex(loaded, manifest["ids"], manifest, vectors)


def _save(
    index_dir: Path,
    faiss_index: faiss.Index,
    index_params: dict[str, Any],
    dimension: int,
    ids: Sequence[str],
    hashes: Sequence[str],
    text_hashes: Sequence[str],
    embedder: Embedder,
    query_encoder: dict[str, Any] | None,
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
            MANIFEST_KEY: query_encoder,
            # Kept as three lists (written as one list of records): a million small dicts cost memory.
            "ids": list(ids),
            "hashes": list(hashes),
            "text_hashes": list(text_hashes),
        }
        _write_manifest(index_dir, manifest)
    except OSError as exc:
        raise IndexBuildError(f"cannot write the index to {index_dir}: {exc}") from exc
    return manifest


def _write_manifest(index_dir: Path, manifest: dict[str, Any]) -> None:
    """``manifest`` (its records as the three lists) written sealed; its ``sha256`` set to the seal's."""
    lists = ("ids", "hashes", "text_hashes")
    head = {k: v for k, v in manifest.items() if k not in lists and k != SEAL_KEY}
    head["records"] = [
        {"id": i, "hash": h, "text_hash": t} for i, h, t in zip(*(manifest[k] for k in lists), strict=True)
    ]
    text = sealed_json(head)
    del head
    with atomic_path(index_dir / MANIFEST_NAME) as tmp:
        tmp.write_text(text, encoding="utf-8")
    manifest[SEAL_KEY] = seal_of(index_dir / MANIFEST_NAME)


def _unsealed(manifest: dict[str, Any]) -> str:
    return "" if SEAL_KEY in manifest else "the manifest carries no checksum (written by an older errata)"


def _complete(index_dir: Path, manifest: dict[str, Any], embedder: Embedder) -> bool:
    """An index whose lists match the records, its vectors whole, given what its manifest lacks: the query
    encoder (never stored, or a last build could not: a full disk) and the seal. Nothing is embedded.
    Returns whether the manifest was written again (not when storing failed once more)."""
    before = manifest.get(MANIFEST_KEY)
    if needs_storing(manifest):
        manifest[MANIFEST_KEY] = store_query_encoder(embedder, index_dir)
    if SEAL_KEY in manifest and failed(before) and failed(manifest[MANIFEST_KEY]):
        manifest[MANIFEST_KEY] = before
        return False
    try:
        _write_manifest(index_dir, manifest)
    except OSError as exc:  # the index is whole as it is: it serves, and the next start tries again
        logger.warning("cannot update the index manifest in %s (%s); free disk space", index_dir, exc)
        return False
    return True


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"faiss": getattr(faiss, "__version__", "unknown")}
    for name in ("errata", "sentence-transformers"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    return out
