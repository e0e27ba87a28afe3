"""The query encoder stored with a FAISS index: the ONNX file its records were embedded with.

Why: importing sentence-transformers (torch, transformers) takes seconds, longer than everything else a
cold ``errata ask`` does. The build exports the model to ONNX anyway (torch is loaded there), keeps the
file under ``encoder/`` beside the vectors, keyed by the weights' hash and named in the manifest, and
embeds the records with it; serving processes encode queries with the same file through ONNX Runtime and
never import torch. For the default ``-onnx-int8`` embedder it is the int8 file (records and queries are
encoded alike, so their vectors go together); for the float torch model its float export (cosine >= 0.9999
to torch's vectors). Missing or unusable, queries fall back to the runtime's own model with one log line.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from ..embedding.embedder import Embedder
from ..embedding.onnx import EXPORT_FORMAT, OnnxEncoder, weights_hash, weights_stamp
from ..errors import EmbedderError

logger = logging.getLogger(__name__)

ENCODER_DIR = "encoder"
MANIFEST_KEY = "query_encoder"  # in the manifest: this entry, or null when the model has no export


def store_query_encoder(embedder: Embedder, index_dir: Path) -> dict[str, Any] | None:
    """Build time: the ONNX file of ``embedder`` (float, or int8 for ``-onnx-int8``) under
    ``index_dir/encoder/`` (made once per weights in the user's export cache and linked here) and its
    manifest entry; ``None`` when the model has none."""
    # Only the Embedder itself: a stand-in (a test's counting wrapper) embeds through its own encode.
    model_dir = embedder.local_dir() if getattr(embedder, "stores_export", False) else None
    if model_dir is None:
        return None
    try:
        int8 = embedder.runtime == "onnx-int8"
        cached = OnnxEncoder(model_dir, int8=int8, cache_dir=embedder.cache_dir).path
        folder = index_dir / ENCODER_DIR
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / cached.name  # <weights hash>-float.onnx or -int8.onnx
        if not target.exists() or target.stat().st_size != cached.stat().st_size:
            _link_or_copy(cached, target)
        for stale in folder.iterdir():  # exports of other weights; a process still running one keeps it open
            if stale != target:
                stale.unlink(missing_ok=True)
    except (EmbedderError, OSError) as exc:
        logger.warning("cannot store an ONNX export with the index (%s); queries will load the torch model", exc)
        return None
    return {
        "file": f"{ENCODER_DIR}/{target.name}",
        "size": target.stat().st_size,
        "weights": target.name.removesuffix("-int8.onnx" if int8 else "-float.onnx"),
        "model_files": weights_stamp(model_dir),
        "export_format": EXPORT_FORMAT,
    }


def stored_query_encoder(embedder: Embedder, index_dir: Path, manifest: dict[str, Any]) -> Path | None:
    """Serve time: the export the manifest names, when it is whole and of ``embedder``'s weights; else
    ``None``, with one log line saying why, and what encodes queries instead."""
    if not getattr(embedder, "stores_export", False):
        return None  # OpenVINO keeps its own compiled files; torch-int8 and other devices need torch
    entry = manifest.get(MANIFEST_KEY)
    if not entry:
        logger.warning("no ONNX export is stored with the index in %s; queries use %s", index_dir, embedder.fallback)
        return None
    path = Path(index_dir) / entry["file"]
    problem = None
    model_dir = embedder.local_dir()
    if not path.is_file() or path.stat().st_size != entry.get("size"):
        problem = f"{path} is missing or not the size the manifest says"
    elif model_dir is None:
        problem = f"{embedder.model_name} is not a model folder on disk"
    elif weights_stamp(model_dir) != entry.get("model_files") and weights_hash(model_dir) != entry.get("weights"):
        problem = f"it was exported from other weights than {model_dir}'s"
    if problem:
        logger.warning(
            "the ONNX export stored with the index is not used (%s); queries use %s", problem, embedder.fallback
        )
        return None
    return path


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link (no second 90 MB copy) where the two folders share a file system, else a copy."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        try:
            os.link(source, temporary)
        except OSError:
            shutil.copyfile(source, temporary)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
