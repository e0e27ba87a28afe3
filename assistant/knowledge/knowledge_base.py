"""Opening a knowledge base for serving: records, vector index and signal index, fast when nothing changed.

Why: a cold start parses every record (where each line is, the content hashes the vector index is checked
against, the Retriever's signals); at a million records that was six minutes and gigabytes of garbage.
After a start (or ``errata build``) the result is saved in ``<index_dir>/signals/``: where each record's
line is, the load report, the :class:`SignalIndex`, and which knowledge base files (path, size,
modification time) and which vector manifest it was made with. While those are unchanged, a start maps
the saved files and trusts the vector manifest instead of parsing again. A record shown later is still
checked against its id, so a file edited in place without changing size or time is reported, not misread.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..embedding.embedder import Embedder
from ..errors import IndexBuildError
from ..index import BuildReport, VectorStore, load_index, open_index
from ..index.bundled_vectors import seed_index
from ..index.faiss_store import MANIFEST_NAME
from ..index.pieces import PIECES_MANIFEST, PieceVectors, load_piece_vectors, open_piece_vectors
from ..index.query_encoder import needs_storing, stored_query_encoder
from ..retrieval.all_fields_bm25 import AllFieldsInBackground
from ..retrieval.ownership import wording_twins
from ..retrieval.signals import SignalIndex
from ..settings import BUNDLED_EVAL_DIR, BUNDLED_KB_DIR, PACKAGE_DIR, Settings
from ..storage.checksums import crc32_file, record_checksums, seal_of, verify_checksums
from ..storage.files import atomic_path, build_lock
from ..storage.shelf import RecordShelf
from .checked import CHECKED_NAME, write_checked
from .child_build import build_in_child as build_child
from .records import LoadReport, kb_files, load_records
from .release_records import UNPACKED_DIR, knowledge_paths

logger = logging.getLogger(__name__)

SNAPSHOT_DIR = "signals"
# 2: curated records win over ingested ones by message identity too (records.choose_curated); 3: the stamp
# covers the piece vectors' manifest too; 4: the patterns curated records inherit (wordings.py)
FORMAT = 4


@dataclass
class OpenedKnowledgeBase:
    """Everything a serving process holds of the knowledge base."""

    records: RecordShelf
    load_report: LoadReport
    vector_index: VectorStore
    build_report: BuildReport
    signals: SignalIndex
    from_snapshot: bool
    # What encodes queries (and embedded the pieces): the ONNX export stored with a FAISS index, which needs
    # no torch, else the embedder given.
    query_embedder: Embedder
    pieces: PieceVectors | None  # None past PIECE_LIMIT records


def open_knowledge_base(
    settings: Settings,
    embedder: Embedder,
    *,
    show_progress: bool = False,
    force: bool = False,
    build_in_child: bool = False,
) -> OpenedKnowledgeBase:
    """The knowledge base of ``settings``, its vector index brought up to date, and its signal index.

    ``build_in_child``: a build, if one is needed, runs in a child process (``child_build.py``) and this one
    reads what it saved, so a server never holds what building took."""
    started = time.perf_counter()
    index_dir = Path(settings.index_dir)
    paths = knowledge_paths(settings)
    files = kb_files(paths)
    saved = None if force else _read(index_dir, files, strict=settings.strict)
    if saved is not None:
        shelf, report, signals, saved_stamp = saved
        embedded = _embedded_count(shelf, files, paths)
        trusted = _trusted_vectors(index_dir, embedder, settings, saved_stamp, embedded)
        pieces = None if trusted is None else load_piece_vectors(index_dir, embedder.model_id, signals.ids[:embedded])
        if trusted is not None and (pieces is not None or saved_stamp.get("pieces") is None):
            seconds = time.perf_counter() - started
            build = BuildReport(len(shelf), 0, len(shelf), seconds, False, "up to date (snapshot)")
            query_embedder = _query_embedder(embedder, index_dir, trusted)
            return OpenedKnowledgeBase(shelf, report, trusted, build, signals, True, query_embedder, pieces)
    if build_in_child and not settings.store and build_child(settings, build_and_save, show_progress=show_progress):
        return open_knowledge_base(settings, embedder, show_progress=show_progress)  # what the child saved
    prepare = None if settings.store else getattr(embedder, "prepare_in_background", None)
    if prepare:  # a build: the export queries need is made (in a child process) while the records load
        prepare()
    if saved is None:
        report = LoadReport()
        shelf = RecordShelf.load(files, strict=settings.strict, report=report)
        signals, saved_stamp = None, None
    # A large knowledge base's BM25 over every field is built in a second process meanwhile (all_fields_bm25.py).
    background = AllFieldsInBackground.start(shelf, index_dir) if signals is None else None
    try:
        # Only records with vectors go to the vector store: the shipped release-built ones, loaded last, have none.
        embedded = shelf.head(_embedded_count(shelf, files, paths))
        if not settings.store and not force:
            seed_index(index_dir, embedder.model_id, embedded)  # the bundled records' shipped vectors, in a new folder
        vector_index, build = open_index(
            embedded, embedder, index_dir, show_progress=show_progress, force=force, store=settings.store
        )
        query_embedder = _query_embedder(embedder, index_dir, vector_index) if not settings.store else embedder
        pieces = open_piece_vectors(embedded, query_embedder, index_dir, show_progress=show_progress, force=force)
        from_snapshot = signals is not None
        if signals is None:
            signals = SignalIndex.build(
                shelf, show_progress=show_progress, all_fields=None if background is None else background.result
            )
            signals.wording_twins = wording_twins(shelf, signals)
    finally:
        if background is not None:
            background.close()  # the worker's folder goes, whether or not the build got to it
    stamp = None if settings.store else _manifest_stamp(index_dir)
    if not from_snapshot or stamp != saved_stamp:  # a Milvus store is checked at every start: nothing new
        try:
            _write(index_dir, files, shelf, report, signals, stamp)
        except OSError as exc:  # a read-only index folder still serves; the next start parses again
            logger.warning("cannot save the start-up snapshot in %s: %s", index_dir, exc)
    return OpenedKnowledgeBase(shelf, report, vector_index, build, signals, from_snapshot, query_embedder, pieces)


def build_and_save(settings: Settings, show_progress: bool) -> None:
    """A child process's build (``child_build.py``): the index of ``settings`` brought up to date and saved."""
    embedder = Embedder(settings.embedder, batch_size=settings.embed_batch_size)
    open_knowledge_base(settings, embedder, show_progress=show_progress)


def _embedded_count(shelf: RecordShelf, files: list[Path], paths: tuple[Path, ...]) -> int:
    """How many records get dense vectors: all but the shipped release-built ones, which come last (those of
    ``files``, as ``kb_files`` listed ``paths``, under the unpacked folder: not listed again)."""
    unpacked = {Path(p).expanduser() for p in paths if Path(p).name == UNPACKED_DIR}
    released = [f for f in files if not unpacked.isdisjoint(f.parents)] if unpacked else []
    return len(shelf) - (shelf.count_from(released) if released else 0)


def _fingerprint(files: list[Path]) -> list[dict[str, Any]]:
    out = []
    for path in files:
        stat = path.stat()
        out.append({"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    return out


def _manifest_stamp(index_dir: Path) -> dict[str, Any] | None:
    """Size, time and checksum of the vector manifest (the seal it carries: ``load_index`` checks it against
    its bytes), and of the piece vectors' (its CRC-32: it is small; its own seal is checked when it is read),
    ``None`` where none."""
    vectors = _stamp(index_dir / MANIFEST_NAME)
    if vectors is None:
        return None
    pieces = _stamp(index_dir / PIECES_MANIFEST)
    if pieces is not None:
        try:
            pieces["crc32"] = crc32_file(index_dir / PIECES_MANIFEST)
        except OSError:
            pieces = None
    return {**vectors, "seal": seal_of(index_dir / MANIFEST_NAME), "pieces": pieces}


def _stamp(path: Path) -> dict[str, Any] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _query_embedder(embedder: Embedder, index_dir: Path, vector_index: VectorStore) -> Embedder:
    """``embedder`` encoding through the ONNX export stored with the FAISS index, where it can (no torch)."""
    export = stored_query_encoder(embedder, index_dir, vector_index.manifest)
    return embedder.with_export(export) if export else embedder


def _trusted_vectors(
    index_dir: Path, embedder: Embedder, settings: Settings, stamp: dict | None, count: int
) -> VectorStore | None:
    """The FAISS index as saved, when its manifest is the one the snapshot was made with."""
    if settings.store or stamp is None or stamp != _manifest_stamp(index_dir):
        return None
    try:
        loaded = load_index(index_dir, embedder.model_id)
    except IndexBuildError as exc:
        logger.info("the saved vector index cannot be used as is (%s); checking every record", exc)
        return None
    if needs_storing(loaded.manifest):  # none yet, or a full disk kept the last build from it: open_index adds one
        return None
    return loaded if len(loaded) == count else None


def _read(index_dir: Path, files: list[Path], *, strict: bool):
    """The saved shelf, load report, signal index and manifest stamp, or ``None`` when stale or damaged."""
    folder = index_dir / SNAPSHOT_DIR
    try:
        meta = json.loads((folder / "snapshot.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("kb") != _fingerprint(files):
        return None
    if strict and meta.get("problems"):
        return None  # loading again raises the error strict mode asks for
    try:
        verify_checksums(folder)  # a file cut short or overwritten is rebuilt, never read (see checksums.py)
        shelf_files = [Path(p) for p in meta["shelf_files"]]
        places = np.load(folder / "places.npy", mmap_mode="r")
        signals = SignalIndex.load(folder)  # built from the shelf: its ids are the shelf's, in its order
        if len(places) != len(signals):
            raise ValueError("record counts differ")
        report = LoadReport(files=list(files), problems=list(meta["problems"]), superseded=int(meta["superseded"]))
        patterns = {int(i): str(p) for i, p in meta["patterns"].items()}
        return RecordShelf(shelf_files, places, signals.ids, patterns), report, signals, meta.get("manifest")
    except Exception as exc:  # noqa: BLE001 - damaged files fail in numpy/bm25s in many ways; all mean rebuild
        logger.warning("the start-up snapshot in %s is unusable (%s); loading the records again", folder, exc)
        return None


def _write(
    index_dir: Path,
    files: list[Path],
    shelf: RecordShelf,
    report: LoadReport,
    signals: SignalIndex,
    stamp: dict | None,
) -> None:
    """Written beside, then swapped in: a process reading the old snapshot keeps its mapped files."""
    with build_lock(index_dir):
        fresh = Path(tempfile.mkdtemp(prefix=f".{SNAPSHOT_DIR}.", dir=index_dir))
        old = index_dir / f".{SNAPSHOT_DIR}.old.{os.getpid()}"
        try:
            places, ids = shelf.layout()
            if not np.array_equal(ids, signals.ids):
                raise ValueError("the signal index was not built from this shelf")
            np.save(fresh / "places.npy", places)
            signals.save(fresh)  # its ids.npy serves the shelf too
            meta = {
                "format": FORMAT,
                "kb": _fingerprint(files),
                "shelf_files": [str(p.resolve()) for p in shelf.files],  # valid from any working folder
                "problems": report.problems,
                "superseded": report.superseded,
                "patterns": {str(i): p for i, p in shelf.patterns.items()},
                "manifest": stamp,
            }
            (fresh / "snapshot.json").write_text(json.dumps(meta), encoding="utf-8")
            record_checksums(fresh)
            target = index_dir / SNAPSHOT_DIR
            if target.exists():
                os.replace(target, old)
            os.replace(fresh, target)
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)


# --- keeping the bundled knowledge base in step with the curated one in ../shared/kb ---------------

DEFAULT_SOURCE = PACKAGE_DIR.parent.parent / "shared" / "kb" / "records"


@dataclass
class RefreshReport:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    records: int = 0

    def summary(self) -> str:
        if not (self.added or self.changed or self.removed):
            return f"bundled knowledge base already up to date ({self.records} records)"
        parts = [f"{len(self.added)} file(s) added", f"{len(self.changed)} changed", f"{len(self.removed)} removed"]
        return f"bundled knowledge base refreshed: {', '.join(parts)}; {self.records} records"


def refresh_bundled_kb(
    source: Path, target: Path = BUNDLED_KB_DIR, eval_target: Path = BUNDLED_EVAL_DIR
) -> RefreshReport:
    """Copy ``source``'s ``*.jsonl`` over the bundled copy, only after every record validates; the eval sets
    beside it (``source/../eval/*.jsonl``) go to ``eval_target``, so tests run in a clone on its own.

    Validation is strict, so a bad upstream line never replaces a good bundled file.
    """
    records = load_records([source], strict=True)
    report = RefreshReport(records=len(records))
    _mirror(kb_files([source]), target, report)
    mark_checked(target)
    eval_dir = Path(source).parent / "eval"
    if eval_dir.is_dir():
        _mirror(sorted(eval_dir.glob("*.jsonl")), eval_target, report)
    return report


def mark_checked(folder: Path = BUNDLED_KB_DIR) -> None:
    """Validate every record file under ``folder`` strictly (patterns timed on hostile texts) and name them in
    its ``checked.json``, so a start loads them without checking again (checked.py)."""
    (Path(folder) / CHECKED_NAME).unlink(missing_ok=True)  # nothing trusted while it is checked
    files = kb_files([folder])
    load_records(files, strict=True)
    write_checked(folder, files)


def _mirror(files: list[Path], target: Path, report: RefreshReport) -> None:
    """Make ``target``'s ``*.jsonl`` the same as ``files`` (added, changed and stale ones noted)."""
    target.mkdir(parents=True, exist_ok=True)
    wanted = {p.name: p for p in files}
    for name, path in sorted(wanted.items()):
        destination = target / name
        if not destination.exists():
            report.added.append(name)
        elif destination.read_bytes() != path.read_bytes():
            report.changed.append(name)
        else:
            continue
        with atomic_path(destination) as tmp:
            shutil.copyfile(path, tmp)
    for stale in sorted(target.glob("*.jsonl")):
        if stale.name not in wanted:
            stale.unlink()
            report.removed.append(stale.name)
