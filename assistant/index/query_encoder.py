"""The query encoder stored with a FAISS index: the float ONNX export of the embedder's weights.

Why: importing sentence-transformers (torch, transformers) takes seconds, longer than everything else a
cold ``errata ask`` does. The index is built with torch anyway, so the build also exports the model to
ONNX (float: its vectors equal the torch model's, cosine >= 0.9999), keeps it under ``encoder/`` beside
the vectors, keyed by the weights' hash and named in the manifest; serving processes encode queries with
it through ONNX Runtime and never import torch. Missing or unusable, queries fall back to the torch
model with one log line.
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
    """Build time: the float ONNX export of ``embedder`` under ``index_dir/encoder/`` (made once per weights
    in the user's export cache and linked here) and its manifest entry; ``None`` when the model has none."""
    # Only the Embedder itself: a stand-in (a test's counting wrapper) embeds through its own encode.
    model_dir = embedder.local_dir() if getattr(embedder, "exports_to_onnx", False) else None
    if model_dir is None:
        return None
    try:
        cached = OnnxEncoder(model_dir, int8=False, cache_dir=embedder.cache_dir).path
        folder = index_dir / ENCODER_DIR
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / cached.name  # <weights hash>-float.onnx
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
        "weights": target.name.removesuffix("-float.onnx"),
        "model_files": weights_stamp(model_dir),
        "export_format": EXPORT_FORMAT,
    }


def stored_query_encoder(embedder: Embedder, index_dir: Path, manifest: dict[str, Any]) -> Path | None:
    """Serve time: the export the manifest names, when it is whole and of ``embedder``'s weights; else
    ``None``, with one log line saying why the torch model will encode queries."""
    if not getattr(embedder, "exports_to_onnx", False):
        return None  # the ONNX and OpenVINO runtimes run outside torch already; other devices need torch
    entry = manifest.get(MANIFEST_KEY)
    if not entry:
        logger.warning("no ONNX export is stored with the index in %s; queries load the torch model", index_dir)
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
        logger.warning("the ONNX export stored with the index is not used (%s); queries load the torch model", problem)
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
