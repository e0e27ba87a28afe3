"""The release-built records shipped in the package: compressed there, unpacked once beside the index.

Why: records built from many releases of many packages (``errata kb build-ecosystem``) answer pastes the
curated records do not, but building them takes most of an hour of downloads. So the package ships them,
gzipped (``assistant/data/releases/``, one file per repository and a ``manifest.json`` naming each with the
SHA-256 and size of its uncompressed text), and they go with the bundled knowledge base wherever it is used.
The record shelf reads records by byte offset, which a gzip stream cannot give, so the first start unpacks
them into the index folder (``release-records/``); later starts find them there. An unpacked file whose
bytes are those the manifest names is the file the maintainers checked, so its patterns are not timed
again at load (``checked.py``). They get no dense vectors: they are found by their patterns, classes,
files and words (``docs/knowledge-base.md`` has the measure), so a first start embeds none of them.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import KnowledgeBaseError
from ..settings import BUNDLED_KB_DIR, PACKAGE_DIR, Settings
from ..storage.files import atomic_path

logger = logging.getLogger(__name__)

SHIPPED_DIR = PACKAGE_DIR / "data" / "releases"
MANIFEST_NAME = "manifest.json"
UNPACKED_DIR = "release-records"  # under the index folder
STAMPS_NAME = "unpacked.json"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ShippedFile:
    """One gzipped record file of the package, as its manifest names it."""

    name: str  # ``<owner>__<repo>.jsonl``, the unpacked name (the package holds ``name + ".gz"``)
    sha256: str  # of the unpacked bytes
    size: int  # unpacked bytes
    records: int


def shipped_files(folder: Path | None = None) -> list[ShippedFile]:
    """The files the package ships (``folder``: another packed folder), from its manifest; none when the package
    holds none."""
    manifest = _read_manifest(SHIPPED_DIR if folder is None else folder)
    if manifest is None:
        return []
    return [
        ShippedFile(name, str(entry["sha256"]), int(entry["size"]), int(entry["records"]))
        for name, entry in sorted(manifest["files"].items())
    ]


def knowledge_paths(settings: Settings, *, unpack: bool = True) -> tuple[Path, ...]:
    """The folders and files the knowledge base of ``settings`` is read from: its ``kb``, and the shipped
    release-built records (unpacked into the index folder) when ``kb`` holds the bundled records and
    ``release_records`` is on. A folder that cannot be written to gives the bundled records alone, with a
    warning saying why."""
    paths = tuple(Path(p) for p in settings.kb)
    if not settings.release_records or not _holds_bundled(paths) or not shipped_files():
        return paths
    folder = Path(settings.index_dir) / UNPACKED_DIR
    if not unpack:
        return (*paths, folder)
    try:
        return (*paths, unpack_release_records(folder))
    except OSError as exc:
        logger.warning(
            "the release-built records cannot be unpacked into %s (%s); answering from the curated records "
            "alone. Free some space or set ERRATA_INDEX_DIR to a writable folder.",
            folder,
            exc,
        )
        return paths


def unpack_release_records(folder: Path, source: Path | None = None) -> Path:
    """``folder`` holding exactly the shipped files unpacked. A file is written anew unless the stamp written
    when it was unpacked (``unpacked.json``: size, modification time and the shipped file's SHA-256) still
    names it; its bytes are checked against the manifest when the records load (:func:`trusted_digests`)."""
    folder, source = Path(folder), SHIPPED_DIR if source is None else Path(source)
    files = shipped_files(source)
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {f.name for f in files}
    for stale in folder.glob("*.jsonl"):
        if stale.name not in wanted:
            stale.unlink()
    stamps = _read_stamps(folder)
    written = False
    for shipped in files:
        target = folder / shipped.name
        stat = _stat(target)
        # The stamp names the file's size and time once unpacked, and which shipped bytes it holds: a newer
        # errata's records are unpacked again.
        if stat is None or stamps.get(shipped.name) != [*stat, shipped.sha256]:
            stamps.pop(shipped.name, None)
            _unpack(source / (shipped.name + ".gz"), target, shipped)
            stamps[shipped.name] = [*(_stat(target) or []), shipped.sha256]
            written = True
    if written or set(stamps) != wanted:
        with atomic_path(folder / STAMPS_NAME) as tmp:
            kept = {name: stamp for name, stamp in stamps.items() if name in wanted}
            tmp.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return folder


def trusted_digests(folder: Path | None = None) -> dict[str, tuple[int, str]]:
    """Unpacked name -> (size, SHA-256) of the files the maintainers checked when they packed them."""
    return {f.name: (f.size, f.sha256) for f in shipped_files(folder)}


def pack_release_records(source: Path, dest: Path | None = None) -> list[ShippedFile]:
    """Gzip every ``*.jsonl`` of ``source`` (each validated strictly by the caller) into ``dest`` and name them
    in its manifest; files ``dest`` held that ``source`` lacks are removed."""
    source, dest = Path(source), SHIPPED_DIR if dest is None else Path(dest)
    files = sorted(p for p in source.glob("*.jsonl") if p.is_file())
    if not files:
        raise KnowledgeBaseError(f"no *.jsonl record files in {source}")
    dest.mkdir(parents=True, exist_ok=True)
    entries: dict[str, dict[str, object]] = {}
    for path in files:
        digest, size, lines = hashlib.sha256(), 0, 0
        # mtime 0: the same records give the same bytes, so an unchanged file is no change in git
        with (
            path.open("rb") as raw,
            atomic_path(dest / (path.name + ".gz")) as tmp,
            tmp.open("wb") as out,
            gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as packed,
        ):
            for chunk in iter(lambda: raw.read(_CHUNK), b""):
                digest.update(chunk)
                size += len(chunk)
                lines += chunk.count(b"\n")
                packed.write(chunk)
        entries[path.name] = {"sha256": digest.hexdigest(), "size": size, "records": lines}
    for old in dest.glob("*.jsonl.gz"):
        if old.name.removesuffix(".gz") not in entries:
            old.unlink()
    with atomic_path(dest / MANIFEST_NAME) as tmp:
        tmp.write_text(json.dumps({"files": entries}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return shipped_files(dest)


def _unpack(packed: Path, target: Path, shipped: ShippedFile) -> None:
    digest, size = hashlib.sha256(), 0
    with atomic_path(target) as tmp:
        try:
            with gzip.open(packed, "rb") as raw, tmp.open("wb") as out:
                for chunk in iter(lambda: raw.read(_CHUNK), b""):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
        except (EOFError, gzip.BadGzipFile, FileNotFoundError) as exc:
            raise KnowledgeBaseError(f"{packed} is damaged ({exc}); reinstall errata") from exc
        if size != shipped.size or digest.hexdigest() != shipped.sha256:
            raise KnowledgeBaseError(f"{packed} does not hold the records its manifest names; reinstall errata")


def _stat(path: Path) -> list[int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


def _read_stamps(folder: Path) -> dict[str, list]:
    try:
        data = json.loads((folder / STAMPS_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _holds_bundled(paths: tuple[Path, ...]) -> bool:
    bundled = BUNDLED_KB_DIR.resolve()
    return any(p.expanduser().resolve() == bundled for p in paths)


def _read_manifest(folder: Path) -> dict | None:
    try:
        data = json.loads((Path(folder) / MANIFEST_NAME).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise KnowledgeBaseError(f"{folder / MANIFEST_NAME} is unreadable ({exc}); reinstall errata") from exc
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise KnowledgeBaseError(f"{folder / MANIFEST_NAME} is not a release-records manifest; reinstall errata")
    return data


def remove_unpacked(index_dir: Path) -> None:
    """Forget the unpacked copy (``errata build --force`` unpacks again)."""
    shutil.rmtree(Path(index_dir) / UNPACKED_DIR, ignore_errors=True)
