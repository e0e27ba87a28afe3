"""The query encoder stored with a FAISS index: the ONNX file its records were embedded with.

Why: importing sentence-transformers (torch, transformers) takes seconds, longer than everything else a
cold ``errata ask`` does. The build exports the model to ONNX anyway (torch is loaded there), keeps the
file under ``encoder/`` beside the vectors, keyed by the weights' hash and named in the manifest, and
embeds the records with it; serving processes encode queries with the same file through ONNX Runtime and
never import torch. For the default ``-onnx-int8`` embedder it is the int8 file (records and queries are
encoded alike, so their vectors go together); for the float torch model its float export (cosine >= 0.9999
to torch's vectors). Missing or unusable, queries fall back to the runtime's own model with one log line.

The file is a copy, never a hard link to the cache's: writing into one index's file (a disk error, a
stray tool) must not change the cache every later index is made from. Its SHA-256 is in the manifest and
checked at every start (the int8 file, 23 MB: ~15 ms); the cache's own files are checked too (``onnx.py``).
A build that could not store it (a full disk) says so in the manifest, and the next start stores it.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from ..embedding.embedder import Embedder
from ..embedding.onnx import EXPORT_FORMAT, OnnxEncoder, export_digest, weights_hash, weights_stamp
from ..errors import EmbedderError
from ..storage.files import sha256_file

logger = logging.getLogger(__name__)

ENCODER_DIR = "encoder"
MANIFEST_KEY = "query_encoder"  # in the manifest: this entry, null when the model has no export, or why it failed
FAILED = "failed"  # the entry of a build that could not store one: {"failed": why}


def store_query_encoder(embedder: Embedder, index_dir: Path) -> dict[str, Any] | None:
    """Build time: the ONNX file of ``embedder`` (float, or int8 for ``-onnx-int8``) under
    ``index_dir/encoder/`` (made once per weights in the user's export cache and copied here) and its
    manifest entry; ``None`` when the model has none, ``{"failed": why}`` when it could not be stored."""
    # Only the Embedder itself: a stand-in (a test's counting wrapper) embeds through its own encode.
    model_dir = embedder.local_dir() if getattr(embedder, "stores_export", False) else None
    if model_dir is None:
        return None
    try:
        int8 = embedder.runtime == "onnx-int8"
        cached = OnnxEncoder(model_dir, int8=int8, cache_dir=embedder.cache_dir).path  # checked, or made again
        digest = export_digest(cached)
        folder = index_dir / ENCODER_DIR
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / cached.name  # <weights hash>-float.onnx or -int8.onnx
        if not _is_copy(target, cached, digest):
            _copy(cached, target, digest)
        for stale in folder.iterdir():  # exports of other weights; a process still running one keeps it open
            if stale != target:
                stale.unlink(missing_ok=True)
    except (EmbedderError, OSError) as exc:
        logger.warning(
            "cannot store an ONNX export with the index (%s); queries will load %s until a start can store it "
            "(the next one tries again: free disk space if it is full)",
            exc,
            embedder.fallback,
        )
        return {FAILED: str(exc)}
    return {
        "file": f"{ENCODER_DIR}/{target.name}",
        "size": target.stat().st_size,
        "sha256": digest,
        "weights": target.name.removesuffix("-int8.onnx" if int8 else "-float.onnx"),
        "model_files": weights_stamp(model_dir),
        "export_format": EXPORT_FORMAT,
    }


def stored(entry: dict[str, Any] | None) -> bool:
    """Whether a manifest entry names a stored file (not ``None``, not a failure)."""
    return bool(entry) and "file" in entry


def failed(entry: dict[str, Any] | None) -> bool:
    """Whether a manifest entry says its build could not store the file."""
    return bool(entry) and FAILED in entry


def needs_storing(manifest: dict[str, Any]) -> str:
    """Why a build must store the export again (``""``: it need not): none stored yet, a last build that
    could not, or a file of an older errata, a link to the cache with no checksum."""
    if MANIFEST_KEY not in manifest:
        return "the index has no query encoder stored with it yet"
    entry = manifest[MANIFEST_KEY]
    if failed(entry):
        return f"the last build could not store the query encoder ({entry[FAILED]})"
    if entry is not None and "sha256" not in entry:
        return "the query encoder stored with the index has no checksum"
    return ""


def stored_query_encoder(embedder: Embedder, index_dir: Path, manifest: dict[str, Any]) -> Path | None:
    """Serve time: the export the manifest names, when it is whole and of ``embedder``'s weights; else
    ``None``, with one log line saying why, and what encodes queries instead."""
    if not getattr(embedder, "stores_export", False):
        return None  # OpenVINO keeps its own compiled files; torch-int8 and other devices need torch
    entry = manifest.get(MANIFEST_KEY)
    if not stored(entry):  # where storing it failed, this start tried again and said why
        logger.log(
            logging.INFO if failed(entry) else logging.WARNING,
            "no ONNX export is stored with the index in %s; queries use %s",
            index_dir,
            embedder.fallback,
        )
        return None
    path = Path(index_dir) / entry["file"]
    problem, damaged = None, False
    model_dir = embedder.local_dir()
    if model_dir is None:
        problem = f"{embedder.model_name} is not a model folder on disk"
    elif weights_stamp(model_dir) != entry.get("model_files") and weights_hash(model_dir) != entry.get("weights"):
        problem = f"it was exported from other weights than {model_dir}'s"
    elif not path.is_file() or path.stat().st_size != entry.get("size"):
        problem, damaged = f"{path} is missing or not the size the manifest says", True
    elif sha256_file(path) != entry.get("sha256"):
        problem, damaged = f"{path} holds other bytes than when it was stored (its checksum differs)", True
    if problem:
        again = " (stored again from it for the next start)" if damaged and _store_again(embedder, path, entry) else ""
        logger.warning(
            "the ONNX export stored with the index is not used (%s); queries use %s%s",
            problem,
            embedder.fallback,
            again,
        )
        return None
    return path


def _store_again(embedder: Embedder, path: Path, entry: dict[str, Any]) -> bool:
    """A damaged or missing stored export copied again from the cache (itself checked, or made again) when
    the cache holds the very bytes the manifest names: the next start uses it instead of warning again."""
    try:
        cached = OnnxEncoder(embedder.local_dir(), int8=embedder.runtime == "onnx-int8", cache_dir=embedder.cache_dir)
        if export_digest(cached.path) != entry["sha256"]:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        _copy(cached.path, path, entry["sha256"])  # replaced, never written into
    except (EmbedderError, OSError) as exc:
        logger.debug("cannot store the ONNX export in %s again: %s", path.parent, exc)
        return False
    return True


def _is_copy(target: Path, cached: Path, digest: str) -> bool:
    """``target`` is a whole copy of the cached file, not a link to it (an older errata linked them)."""
    try:
        return not os.path.samefile(target, cached) and sha256_file(target) == digest
    except OSError:
        return False


def _copy(source: Path, target: Path, digest: str) -> None:
    """A copy checked against ``digest``, read-only, so a write into it fails loudly (for anyone but root)."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(source, temporary)
        if sha256_file(temporary) != digest:
            raise OSError(f"the copy of {source} in {target.parent} does not hold the bytes of the cached file")
        os.chmod(temporary, 0o444)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
