"""A sentence-transformers model run by ONNX Runtime: exported here from the local weights, cached on disk.

Why: on a 2-core CPU, ONNX Runtime with int8 weights (and int8 activations quantized per batch) encodes
records several times faster than torch, with vectors ~0.994 cosine to the float model's (see
benchmarks/embed_speed.py). Nothing is downloaded: the export is traced from the weights on disk once,
keyed by their hash, and reused by every later process. Each cached file has its SHA-256 beside it
(``<name>.sha256``), written when it was made and checked before it is used or copied to an index: a
file damaged in place (size kept) is made again, never handed on.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np

from ..errors import EmbedderError
from ..storage.files import atomic_path, sha256_file
from .threads import thread_count

logger = logging.getLogger(__name__)

EXPORT_FORMAT = 1  # bump when the exported graph changes, so old cached files are not reused
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_MAKING = threading.Lock()  # one export made at a time in a process: a second caller waits, then finds it


def default_cache_dir() -> Path:
    """Where exports are kept between processes (``$XDG_CACHE_HOME/errata/onnx``, else ``~/.cache``)."""
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache_home / "errata" / "onnx"


_HASHED = ("model.safetensors", "pytorch_model.bin", "config.json", "tokenizer.json")


def weights_hash(model_dir: Path) -> str:
    """A digest of the weight and config files: a changed model never reuses another's export."""
    digest = hashlib.sha256(f"format {EXPORT_FORMAT}".encode())
    for name in _HASHED:
        path = model_dir / name
        if path.exists():
            digest.update(name.encode())
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:20]


def weights_stamp(model_dir: Path) -> list[list]:
    """Name, size and modification time of the files :func:`weights_hash` reads: while they are the
    same, a serving process trusts a recorded hash instead of reading ~90 MB of weights again."""
    stamp = []
    for name in _HASHED:
        path = model_dir / name
        if path.exists():
            stat = path.stat()
            stamp.append([name, stat.st_size, stat.st_mtime_ns])
    return stamp


class LocalEncoder:
    """Tokenizer + a transformer run outside torch + mean pooling + normalization, for a mean-pooled
    sentence-transformers model directory (the bundled MiniLM is one). Subclasses run the transformer."""

    runtime_name = ""
    required_modules: tuple[str, ...] = ()  # imported first: a missing runtime is named before any work
    install_hint = ""
    pad_multiple = 1  # pad each batch's length up to a multiple of this (runtimes that compile per shape)
    tokens_per_batch = 0  # when set, a batch holds at most this many tokens (rows x longest) or one text

    def __init__(self, model_dir: Path, *, cache_dir: Path | None = None):
        try:
            for module in self.required_modules:
                importlib.import_module(module)
        except ImportError as exc:
            raise EmbedderError(
                f"the {self.runtime_name} embedders need {self.install_hint}, "
                f"or drop the {self.runtime_name} suffix from the embedder name"
            ) from exc
        self.model_dir = Path(model_dir)
        self._check_pooling()
        self.max_length = self._max_length()
        self.dimension = int(json.loads((self.model_dir / "config.json").read_text())["hidden_size"])
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.tokenizer = self._tokenizer()
        self._compiled: dict[int, object] = {}
        self._lock = threading.Lock()

    def _check_pooling(self) -> None:
        pooling = self.model_dir / "1_Pooling" / "config.json"
        config = json.loads(pooling.read_text()) if pooling.exists() else {}
        if not config.get("pooling_mode_mean_tokens") or not (self.model_dir / "tokenizer.json").exists():
            raise EmbedderError(
                f"{self.model_dir} is not a mean-pooled sentence-transformers model with a tokenizer.json; "
                f"drop the {self.runtime_name} suffix to run it with sentence-transformers"
            )

    def _max_length(self) -> int:
        config = self.model_dir / "sentence_bert_config.json"
        length = json.loads(config.read_text()).get("max_seq_length") if config.exists() else None
        return int(length or 512)

    def _tokenizer(self):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(self.max_length)
        tokenizer.no_padding()  # batches are padded here, to the longest in each length bucket
        return tokenizer

    def float_export(self) -> Path:
        """The float ONNX export of the transformer, made once per weights and kept in the cache."""
        path = self.cache_dir / f"{weights_hash(self.model_dir)}-float.onnx"
        with _MAKING:
            if not _whole(path):
                self.cache_dir.mkdir(parents=True, exist_ok=True)
                self._making(lambda: _atomic(path, lambda target: run_step("export", self.model_dir, target)))
        return path

    def _making(self, make) -> None:
        """Runs ``make``, turning the many exception types of exporters and quantizers into one clear error."""
        try:
            make()
        except EmbedderError:
            raise
        except Exception as exc:  # torch.onnx, onnxruntime, openvino and nncf raise many types
            raise EmbedderError(
                f"cannot prepare {self.model_dir} for {self.runtime_name} in {self.cache_dir} ({exc}); "
                f"check that {self.install_hint} is installed, or drop the {self.runtime_name} suffix"
            ) from exc

    def compiled(self):
        """One runnable model per thread count (``serve_threads`` sets it; see threads.py)."""
        threads = thread_count()
        with self._lock:
            if threads not in self._compiled:
                self._compiled[threads] = self._compile(threads)
            return self._compiled[threads]

    def _compile(self, threads: int):
        raise NotImplementedError

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Normalized mean-pooled vectors, batching texts of similar token length (less padding)."""
        encodings = self.tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        sorted_lengths = lengths[order]
        batches = []
        start = 0
        while start < len(texts):
            rows = order[start : start + self._rows_per_batch(sorted_lengths[start : start + batch_size])]
            start += len(rows)
            width = -(-int(lengths[rows].max()) // self.pad_multiple) * self.pad_multiple
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for j, i in enumerate(rows):
                ids[j, : lengths[i]] = encodings[i].ids
                mask[j, : lengths[i]] = 1
            batches.append((rows, ids, mask))
        self._run(batches, out)
        return out

    def _rows_per_batch(self, next_lengths: np.ndarray) -> int:
        """How many of the next texts (ascending lengths, at most a batch) form a batch: all, or as many
        as fit in ``tokens_per_batch`` when padded to the longest of them."""
        if not self.tokens_per_batch:
            return len(next_lengths)
        padded = np.arange(1, len(next_lengths) + 1) * next_lengths  # a batch of n is n x its n-th length
        return max(1, int(np.count_nonzero(padded <= self.tokens_per_batch)))

    def _run(self, batches: list[tuple[np.ndarray, np.ndarray, np.ndarray]], out: np.ndarray) -> None:
        """Fills ``out[rows]`` with the pooled vectors of each ``(rows, ids, mask)`` batch."""
        raise NotImplementedError


def inputs(ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The sentence vector: the mean of the token states the mask keeps, normalized to length 1."""
    summed = np.einsum("bsd,bs->bd", hidden, mask.astype(np.float32))
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


class OnnxEncoder(LocalEncoder):
    """The transformer exported to ONNX and run by ONNX Runtime, with int8 weights when ``int8``."""

    runtime_name = "-onnx"
    required_modules = ("onnxruntime",)
    install_hint = "ONNX Runtime (pip install 'errata[onnx]': onnx, onnxruntime)"

    def __init__(self, model_dir: Path, *, int8: bool, cache_dir: Path | None = None, path: Path | None = None):
        """``path``: an export made before (the one stored with an index) instead of the cached one."""
        super().__init__(model_dir, cache_dir=cache_dir)
        self.int8 = int8
        self.path = Path(path) if path else self._ensure_exported()
        if path:
            self.compiled()  # a broken file fails here, where the caller can fall back, not at the first query

    def _ensure_exported(self) -> Path:
        if self.int8:
            path = self.cache_dir / f"{weights_hash(self.model_dir)}-int8.onnx"
            with _MAKING:
                if _whole(path):
                    return path
        float_path = self.float_export()
        if not self.int8:
            return float_path
        with _MAKING:
            if not _whole(path):
                self._making(lambda: _atomic(path, lambda target: run_step("quantize", float_path, target)))
        return path

    def _compile(self, threads: int):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle workers sleep instead of spinning: these CPUs are shared (measured no slower here).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])

    def _run(self, batches, out) -> None:
        session = self.compiled()
        for rows, ids, mask in batches:
            out[rows] = mean_pooled(session.run(None, inputs(ids, mask))[0], mask)


def run_step(step: str, source: Path, target: Path) -> None:
    """Runs ``export_onnx`` or ``quantize_onnx`` in a child process (``export_step.py``), so the memory torch
    and the quantizer take is given back when the step ends; its last error line is raised here."""
    package_root = str(Path(__file__).resolve().parents[2])  # this checkout, installed or not
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    command = [sys.executable, "-m", "assistant.embedding.export_step", step, str(source), str(target)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout or "").splitlines() if line.strip()]
        raise RuntimeError(f"the ONNX {step} step ended with status {result.returncode}: {lines[-1] if lines else ''}")


def export_onnx(model_dir: Path, target: Path) -> None:
    """Traces the transformer (eager attention: a graph with no shape-specialized branches) to ONNX."""
    import torch
    from transformers import AutoModel

    base = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager", local_files_only=True).eval()

    class Hidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = torch.ones((2, 16), dtype=torch.int64)
    sample[1, 10:] = 0
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes about Python booleans in the mask code
        torch.onnx.export(
            Hidden(base),
            (sample, (sample > 0).long(), torch.zeros_like(sample)),
            str(target),
            input_names=list(_INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def quantize_onnx(source: Path, target: Path) -> None:
    """Dynamic int8: weights per output channel, activations quantized per batch at run time."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))  # quantize_dynamic logs a pre-processing hint on the root logger
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.setLevel(level)


def _atomic(path: Path, write) -> None:
    """Writes through a temporary file in the same folder, so a crash never leaves half a model; its digest
    is written first, so a crash in between leaves a file that does not match it (made again)."""
    with atomic_path(path, mode=0o644) as temporary:  # a cache others may read, like any model file
        write(temporary)
        with atomic_path(_digest_path(path), mode=0o644) as digest:
            digest.write_text(sha256_file(temporary) + "\n", encoding="ascii")


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def export_digest(path: Path) -> str:
    """The SHA-256 recorded when the cached file ``path`` was made (``OSError`` when there is none)."""
    return _digest_path(path).read_text(encoding="ascii").strip()


def _whole(path: Path) -> bool:
    """The cached file is there and holds the bytes it was made with; else it is made again (a file of an
    older errata, with no digest beside it, once), with one log line when it was there."""
    if not path.exists():
        return False
    try:
        if sha256_file(path) == export_digest(path):
            return True
        problem = "holds other bytes than when it was made"
    except OSError:
        problem = "has no checksum beside it"
    logger.warning("the cached ONNX export %s %s; making it again", path, problem)
    return False
