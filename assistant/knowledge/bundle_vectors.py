"""``errata kb bundle-vectors``: the maintainers' step after ``errata refresh-kb`` that writes the vectors of
the bundled records into the package (``assistant/data/vectors/``, read by ``index/bundled_vectors.py``).

Why a step of its own: the shipped vectors must be those of the records as bundled, made by the default
embedder from nothing (none taken from an older shipment), so this builds a fresh index of the bundled
knowledge base in a temporary folder and ships its vectors.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from ..embedding.embedder import Embedder
from ..index.bundled_vectors import BUNDLED_VECTORS_DIR, write_bundled_vectors
from ..settings import BUNDLED_KB_DIR, DEFAULT_EMBEDDER, Settings
from .knowledge_base import open_knowledge_base


def bundle_vectors(settings: Settings, folder: Path = BUNDLED_VECTORS_DIR) -> str:
    """Embed the bundled records with the default embedder and write their vectors to ``folder``."""
    with tempfile.TemporaryDirectory(prefix="errata-bundle-") as index_dir:
        bundled = settings.replace(kb=[BUNDLED_KB_DIR], index_dir=index_dir, embedder=DEFAULT_EMBEDDER)
        bundled = dataclasses.replace(bundled, store=None)  # FAISS files: the vectors are read from them
        embedder = Embedder(DEFAULT_EMBEDDER, batch_size=settings.embed_batch_size)
        open_knowledge_base(bundled, embedder, show_progress=True, force=True)
        count = write_bundled_vectors(Path(index_dir), DEFAULT_EMBEDDER, folder)
    return f"the vectors of {count} bundled records -> {folder}"
