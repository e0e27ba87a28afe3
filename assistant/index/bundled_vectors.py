"""The vectors of the bundled knowledge base, shipped in the package, so a first start embeds none of them.

Why: embedding the bundled records and their pieces is most of a first start on two cores (40-80 s of it).
``errata build --bundle-vectors`` (a maintainer's step after ``errata refresh-kb``) writes them from an
index of the bundled records; a new index folder's build takes a record's or a piece's vector from here
when its text is the one shipped (the same text hashes the build cache uses), and embeds the rest as
usual. They are the default embedder's (the int8 ONNX export of the bundled MiniLM: its file is the same
byte for byte wherever torch, onnx and onnxruntime trace and quantize it alike), stored as float16: the
rounding (cosine > 0.99999) is far below the int8 model's own (0.994 to the float model).

Files, under ``assistant/data/vectors/``: ``records.npy`` (records, dimension) and ``pieces.npy``
(records, pieces, dimension), float16; ``vectors.json``: the embedder, the record ids in row order, each
record's text hash and each piece's (``""``: the record has no such piece), the files' sizes and checksums.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..embedding.text import PIECE_NAMES, piece_texts
from ..errors import IndexBuildError
from ..knowledge.records import Record
from ..settings import PACKAGE_DIR
from ..storage.checksums import read_sealed_json, seal_holds
from ..storage.files import atomic_path, build_lock, describe_file, file_matches
from .cache import EMBEDDINGS_NAME, PARTIAL_DIR, PartialEmbeddings
from .faiss_store import MANIFEST_NAME, _read_manifest
from .pieces import PIECES_MANIFEST, PIECES_NAME, pieces_manifest_whole, seed_piece_vectors
from .store import embedding_key, text_key

logger = logging.getLogger(__name__)

BUNDLED_VECTORS_DIR = PACKAGE_DIR / "data" / "vectors"
MANIFEST = "vectors.json"
RECORDS = "records.npy"
PIECES = "pieces.npy"
FORMAT = 1


@dataclass(frozen=True)
class BundledVectors:
    embedder: str
    ids: list[str]
    record_keys: list[str]
    piece_keys: list[list[str]]
    records: np.ndarray  # float16 (records, dimension)
    pieces: np.ndarray  # float16 (records, pieces, dimension)


def read_bundled_vectors(folder: Path = BUNDLED_VECTORS_DIR) -> BundledVectors | None:
    """The shipped vectors, or ``None`` when there are none or a file is not the one the manifest names."""
    try:
        meta = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.warning("the bundled vectors' manifest %s is unreadable (%s); embedding every record", folder, exc)
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("pieces") != list(PIECE_NAMES):
        return None
    try:
        for name in (RECORDS, PIECES):
            if not file_matches(folder / name, meta["files"][name]):
                raise ValueError(f"{name} is not the file its manifest names")
        records = np.load(folder / RECORDS, allow_pickle=False)
        pieces = np.load(folder / PIECES, allow_pickle=False)
        count = len(meta["ids"])
        if records.shape[0] != count or pieces.shape[:2] != (count, len(PIECE_NAMES)):
            raise ValueError("the vectors do not have a row per record")
        if len(meta["record_keys"]) != count or len(meta["piece_keys"]) != count:
            raise ValueError("the manifest does not name a text hash per record")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("the bundled vectors in %s are unusable (%s); embedding every record", folder, exc)
        return None
    return BundledVectors(meta["embedder"], meta["ids"], meta["record_keys"], meta["piece_keys"], records, pieces)


def seed_index(index_dir: Path, embedder_id: str, records: Sequence[Record], folder: Path = BUNDLED_VECTORS_DIR) -> int:
    """Put the shipped vectors of ``records`` (those bundled, with the text they were shipped with) in the
    build cache of an index folder with no usable manifest (new, or damaged: nothing of its own can then be
    trusted, and a rebuild embedded every record again, 40-80 s) and in its piece file when that is missing,
    damaged or unsealed, when they are ``embedder_id``'s; returns how many records' vectors were given. A
    folder whose files are whole keeps its own (its cache makes a rebuild incremental)."""
    index_dir = Path(index_dir)
    seed_records = not _manifest_usable(index_dir, embedder_id)
    seed_pieces = not pieces_manifest_whole(index_dir)
    if not (seed_records or seed_pieces):
        return 0
    shipped = read_bundled_vectors(folder)
    if shipped is None or shipped.embedder != embedder_id:
        return 0
    row_of = {record_id: row for row, record_id in enumerate(shipped.ids)}
    ids = records.ids() if hasattr(records, "ids") else [r.id for r in records]
    rows, keys, pieces = [], [], []  # the shipped rows whose record is here with the text it was shipped with
    for position, record_id in enumerate(ids):
        row = row_of.get(record_id)
        if row is None or embedding_key(records[position]) != shipped.record_keys[row]:
            continue
        piece_keys = [text_key(t) if t else "" for t in piece_texts(records[position])]
        rows.append(row)
        keys.append(shipped.record_keys[row])
        pieces.append(piece_keys if piece_keys == shipped.piece_keys[row] else [""] * len(piece_keys))
    if not rows:
        return 0
    with build_lock(index_dir):  # a build of another process appends to the same cache
        if seed_records:  # beside what an interrupted build embedded, not again
            partial = PartialEmbeddings(index_dir / PARTIAL_DIR, embedder_id)
            new = [i for i, key in enumerate(keys) if key not in partial]
            if new:
                partial.append([keys[i] for i in new], shipped.records[[rows[i] for i in new]].astype(np.float32))
        if seed_pieces:
            matrix = shipped.pieces[rows].astype(np.float32)
            seed_piece_vectors(index_dir, matrix, [shipped.ids[row] for row in rows], pieces, embedder_id)
    logger.info("took the vectors of %d bundled records from %s", len(rows), folder)
    return len(rows)


def _manifest_usable(index_dir: Path, embedder_id: str) -> bool:
    """Whether the vector manifest can give a rebuild its vectors: sealed and whole (its bytes hashed, not
    parsed), or an older one without a seal that reads as a manifest of ``embedder_id``."""
    whole = seal_holds(index_dir / MANIFEST_NAME)
    if whole is None and (index_dir / MANIFEST_NAME).exists():
        return _read_manifest(index_dir, embedder_id, warn=False)[0] is not None
    return bool(whole)


def write_bundled_vectors(index_dir: Path, embedder_id: str, folder: Path = BUNDLED_VECTORS_DIR) -> int:
    """Write the vectors of the index built in ``index_dir`` (of the bundled records, by ``embedder_id``)
    as the shipped ones; returns the number of records."""
    index_dir = Path(index_dir)
    manifest, reason = _read_manifest(index_dir, embedder_id)
    try:
        pieces_meta, _sealed = read_sealed_json(index_dir / PIECES_MANIFEST)
        if manifest is None:
            raise ValueError(reason)
        records = np.load(index_dir / EMBEDDINGS_NAME, allow_pickle=False)
        pieces = np.load(index_dir / PIECES_NAME, allow_pickle=False)
    except (OSError, ValueError) as exc:
        problem = f"no index of {embedder_id} with piece vectors in {index_dir} ({exc}); build it first"
        raise IndexBuildError(problem) from exc
    ids, keys = list(manifest["ids"]), list(manifest["text_hashes"])
    if pieces_meta.get("embedder") != embedder_id or len(pieces_meta["keys"]) != len(ids) or len(records) != len(ids):
        raise IndexBuildError(f"the vectors in {index_dir} are not one per record of one build; build it again")
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, matrix in ((RECORDS, records), (PIECES, pieces)):
        with atomic_path(folder / name) as tmp:
            with open(tmp, "wb") as handle:
                np.save(handle, np.asarray(matrix, dtype=np.float16), allow_pickle=False)
            files[name] = describe_file(tmp)
    meta = {
        "format": FORMAT,
        "embedder": embedder_id,
        "pieces": list(PIECE_NAMES),
        "ids": ids,
        "record_keys": keys,
        "piece_keys": pieces_meta["keys"],
        "files": files,
    }
    with atomic_path(folder / MANIFEST) as tmp:
        tmp.write_text(json.dumps(meta, separators=(",", ":")), encoding="utf-8")
    return len(ids)
