"""A vector for each piece of a record a query may describe alone (``embedding.text.PIECES``: its error
line, its common situations, its trigger scenarios), beside the one vector of the whole record.

Why: a record is embedded as one text cut at 256 tokens, and a question that tells one situation the record
lists meets it diluted by the others. The query's cosine with each piece is a fusion feature of its own
(see ``retrieval/features.py``) of prose questions; measured with ``benchmarks/piece_vectors.py``,
cross-validated Hit@1 over dev and the real-world set rises from 0.927 to 0.932 with them, real-world
questions from 0.68 to 0.74, abstention from 0.883 to 0.898 (folds by library).

Files under the index folder, beside the FAISS ones:

- ``pieces.npy``: float32, (records, pieces, dimension), row ``i`` the record at position ``i`` of the
  knowledge base; zeros where a record has no such piece.
- ``pieces.json``: the embedder, the pieces' names, a digest of the record ids in row order, each record's
  hash of each piece's text (``""``: none) and the vector file's size and checksum.

Opening embeds only texts whose hash is new (the old rows are reused), a chunk at a time with a progress
bar; files are written to a temporary name and renamed, manifest last. The manifest carries the SHA-256 of
its own text (``storage/checksums.sealed_json``): two records' hashes swapped in it, size and time kept, gave
each record the other's vectors at the next build. A damaged manifest is never read (the pieces are taken
again from the shipped vectors and embedded); one of an older errata, with no seal, is used only where its
hashes are those of the records, and is then written again with one. They are float32, as the record
vectors are: converting float16 rows per query cost 2 ms of a 3 ms retrieval. Past ``PIECE_LIMIT`` records
none are kept (at a million records they would take gigabytes): the piece features then take the record's
whole cosine, as they do for a record without the piece.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..embedding.embedder import Embedder
from ..embedding.text import PIECE_NAMES, piece_texts
from ..errors import IndexBuildError
from ..knowledge.records import Record
from ..storage.checksums import read_sealed_json, seal_holds, sealed_json
from ..storage.files import atomic_path, build_lock, describe_file, file_matches
from .store import CHUNK_RECORDS, embed_in_chunks, text_key

logger = logging.getLogger(__name__)

PIECES_NAME = "pieces.npy"
PIECES_MANIFEST = "pieces.json"
FORMAT = 2  # 2: float32
PIECE_LIMIT = 50_000  # records; at the limit the vectors take 50k x 3 x 384 x 4 bytes = 230 MB


@dataclass(frozen=True)
class PieceVectors:
    """The pieces' unit vectors of every record, by record position, and which records hold which piece."""

    names: tuple[str, ...]
    vectors: np.ndarray  # (records, pieces, dimension), float32, memory-mapped
    held: np.ndarray  # (records, pieces), bool

    def __len__(self) -> int:
        return len(self.held)

    def cosines(self, query: np.ndarray, positions: np.ndarray | None = None) -> np.ndarray:
        """(records, pieces): the cosine of the unit vector ``query`` with each piece of the records at
        ``positions`` (ascending; ``None``: every record), NaN where a record has no such piece."""
        vectors = self.vectors if positions is None else self.vectors[positions]
        held = self.held if positions is None else self.held[positions]
        rows = np.asarray(vectors).reshape(-1, vectors.shape[-1])  # one matrix-vector product
        out = (rows @ np.asarray(query, dtype=np.float32).reshape(-1)).astype(np.float64).reshape(held.shape)
        out[~held] = np.nan
        return out


def ids_digest(ids: Sequence[str] | np.ndarray) -> str:
    """One hash of the record ids in row order: a manifest names its rows without a million strings."""
    digest = hashlib.sha256()
    for record_id in ids:
        digest.update(record_id if isinstance(record_id, bytes) else str(record_id).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def open_piece_vectors(
    records: Sequence[Record],
    embedder: Embedder,
    index_dir: Path,
    *,
    show_progress: bool = False,
    force: bool = False,
    limit: int = PIECE_LIMIT,
    chunk_texts: int = CHUNK_RECORDS,
) -> PieceVectors | None:
    """The piece vectors of ``records``, loaded when up to date, else brought up to date and saved (only
    new or changed texts embedded); ``None`` past ``limit`` records."""
    index_dir = Path(index_dir)
    if len(records) > limit:
        _remove(index_dir)  # stale rows would be read for other records
        return None
    texts, ids = [], []
    for record in records:  # one pass: records on a shelf are parsed once
        texts.append(piece_texts(record))
        ids.append(record.id)
    keys = [[text_key(t) if t else "" for t in pieces] for pieces in texts]
    with build_lock(index_dir):  # two servers starting at once embed them once
        return _up_to_date(texts, ids, keys, embedder, index_dir, force, chunk_texts, show_progress)


def _up_to_date(
    texts: list[tuple[str, ...]],
    ids: list[str],
    keys: list[list[str]],
    embedder: Embedder,
    index_dir: Path,
    force: bool,
    chunk_texts: int,
    show_progress: bool,
) -> PieceVectors:
    manifest, sealed = (None, False) if force else _read_manifest(index_dir, embedder.model_id)
    saved = None if manifest is None else _load(index_dir, manifest)
    if saved is not None and manifest["ids"] == ids_digest(ids) and manifest["keys"] == keys:
        if not sealed:  # an older manifest, found to name these records' texts: sealed now
            _write_manifest(index_dir, {k: v for k, v in manifest.items() if k != "sha256"})
        return saved
    # An unsealed manifest's hashes are not the records': which row holds which text cannot be checked.
    old = {} if saved is None or not sealed else _rows_by_key(saved, manifest["keys"])
    wanted = sorted({key for row in keys for key in row if key and key not in old})
    text_of = {
        key: text for row, row_texts in zip(keys, texts, strict=True) for key, text in zip(row, row_texts, strict=True)
    }
    new: dict[str, np.ndarray] = {}
    for _start, batch, vectors in embed_in_chunks(
        wanted, lambda batch: embedder.encode([text_of[k] for k in batch]), chunk_texts, show_progress, "pieces"
    ):
        new.update(zip(batch, vectors, strict=True))
    if saved is not None:
        dimension = saved.vectors.shape[-1]
    else:
        dimension = len(next(iter(new.values()))) if new else embedder.dimension
    matrix = np.zeros((len(keys), len(PIECE_NAMES), dimension), dtype=np.float32)
    for i, row in enumerate(keys):
        for j, key in enumerate(row):
            if key:
                matrix[i, j] = new[key] if key in new else old[key]
    _save(index_dir, matrix, ids, keys, embedder.model_id)
    return PieceVectors(PIECE_NAMES, matrix, _held(keys))


def load_piece_vectors(index_dir: Path, embedder_id: str, ids: Sequence[str] | np.ndarray) -> PieceVectors | None:
    """The saved piece vectors as they are, when their manifest names ``ids`` in this order and the file is
    whole (a start that trusts its snapshot does not parse the records again); else ``None``."""
    manifest, _sealed = _read_manifest(Path(index_dir), embedder_id)  # unsealed: the snapshot's CRC-32 checked it
    if manifest is None or manifest["ids"] != ids_digest(ids):
        return None
    return _load(Path(index_dir), manifest)


def _held(keys: list[list[str]]) -> np.ndarray:
    return np.array([[bool(k) for k in row] for row in keys], dtype=bool).reshape(len(keys), len(PIECE_NAMES))


def pieces_manifest_whole(index_dir: Path) -> bool:
    """Whether the piece manifest of ``index_dir`` is there, sealed and whole (its bytes hashed, not parsed)."""
    return bool(seal_holds(Path(index_dir) / PIECES_MANIFEST))


def _read_manifest(index_dir: Path, embedder_id: str) -> tuple[dict | None, bool]:
    """The manifest (``None``: none, damaged or another embedder's) and whether it is sealed."""
    try:
        manifest, sealed = read_sealed_json(index_dir / PIECES_MANIFEST)
    except FileNotFoundError:
        return None, False
    except (OSError, ValueError) as exc:  # DamagedFolderError too: never trusted
        logger.warning("%s is unreadable (%s); taking the pieces again", index_dir / PIECES_MANIFEST, exc)
        return None, False
    expected = {"format": FORMAT, "embedder": embedder_id, "pieces": list(PIECE_NAMES)}
    if any(manifest.get(k) != v for k, v in expected.items()):
        return None, False
    if not isinstance(manifest.get("keys"), list) or not isinstance(manifest.get("ids"), str):
        return None, False
    return manifest, sealed


def _load(index_dir: Path, manifest: dict) -> PieceVectors | None:
    path = index_dir / PIECES_NAME
    if not file_matches(path, manifest.get("file")):
        logger.warning("%s does not match its manifest; embedding the pieces again", path)
        return None
    try:
        vectors = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        logger.warning("cannot read %s (%s); embedding the pieces again", path, exc)
        return None
    keys = manifest["keys"]
    if vectors.ndim != 3 or vectors.shape[:2] != (len(keys), len(PIECE_NAMES)):
        return None
    return PieceVectors(PIECE_NAMES, vectors, _held(keys))


def seed_piece_vectors(
    index_dir: Path, matrix: np.ndarray, ids: list[str], keys: list[list[str]], embedder_id: str
) -> None:
    """Save piece vectors made elsewhere (the bundled ones, ``bundled_vectors.py``) as this folder's: the next
    :func:`open_piece_vectors` takes them as they are for the same records, and by text hash for others."""
    if len(matrix) != len(ids) or len(keys) != len(ids):
        raise IndexBuildError(f"{len(matrix)} rows of piece vectors for {len(ids)} records: give one per record")
    _save(Path(index_dir), np.ascontiguousarray(matrix, dtype=np.float32), list(ids), keys, embedder_id)


def _rows_by_key(saved: PieceVectors, keys: list[list[str]]) -> dict[str, np.ndarray]:
    """Each text hash of the saved file and its vector: what a rebuild need not embed again."""
    out = {}
    for i, row in enumerate(keys):
        for j, key in enumerate(row):
            if key:
                out.setdefault(key, np.array(saved.vectors[i, j]))
    return out


def _save(index_dir: Path, matrix: np.ndarray, ids: list[str], keys: list[list[str]], embedder_id: str) -> None:
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(index_dir / PIECES_NAME) as tmp:
            with open(tmp, "wb") as handle:
                np.save(handle, matrix, allow_pickle=False)
            described = describe_file(tmp)
        manifest = {
            "format": FORMAT,
            "embedder": embedder_id,
            "pieces": list(PIECE_NAMES),
            "ids": ids_digest(ids),
            "file": described,
            "keys": keys,
        }
    except OSError as exc:
        problem = f"cannot write the piece vectors to {index_dir}: {exc}; free disk space and rerun"
        raise IndexBuildError(problem) from exc
    _write_manifest(index_dir, manifest)


def _write_manifest(index_dir: Path, manifest: dict) -> None:
    try:
        with atomic_path(index_dir / PIECES_MANIFEST) as tmp:
            tmp.write_text(sealed_json(manifest), encoding="utf-8")
    except OSError as exc:
        problem = f"cannot write the piece vectors to {index_dir}: {exc}; free disk space and rerun"
        raise IndexBuildError(problem) from exc


def _remove(index_dir: Path) -> None:
    for name in (PIECES_MANIFEST, PIECES_NAME):
        (index_dir / name).unlink(missing_ok=True)
