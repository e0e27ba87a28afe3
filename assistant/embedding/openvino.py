"""The embedding model run by OpenVINO with int8 weights and activations: the fastest on these CPUs.

Why: ONNX Runtime's dynamic int8 leaves attention in float and measures each batch's activation range
at run time; OpenVINO runs a statically calibrated int8 graph (NNCF post-training quantization, attention
included) with kernels for the CPU's int8 instructions, about 4x the float model's records per second
here with vectors ~0.997 cosine to the float ones (benchmarks/embed_speed.py). The int8 model is made on
first use from the float ONNX export, calibrated on the bundled knowledge base's texts (fixed, so every
machine makes the same model), and cached beside the ONNX files, keyed by the weights' hash.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .onnx import LocalEncoder, inputs, mean_pooled

CALIBRATION_FORMAT = 1  # bump when the calibration changes, so old cached models are not reused
CALIBRATION_EVERY = 5  # every 5th bundled record calibrates: its record text and its error line


class OpenVinoEncoder(LocalEncoder):
    runtime_name = "-openvino-int8"
    required_modules = ("openvino", "nncf")
    install_hint = "OpenVINO and NNCF (pip install 'errata[openvino]')"
    # OpenVINO compiles kernels per input shape: rounding lengths up to 16 reuses them (measured ~10% faster).
    pad_multiple = 16
    # The int8 matmuls run at the CPU's int8 peak; what a batch adds beyond ~1,500 tokens is activations
    # that spill out of the caches (records: batches of 7 measured ~15% faster than batches of 32).
    tokens_per_batch = 1536

    def __init__(self, model_dir: Path, *, cache_dir: Path | None = None):
        super().__init__(model_dir, cache_dir=cache_dir)
        self.path = self._ensure_quantized()

    def _ensure_quantized(self) -> Path:
        float_path = self.float_export()
        path = float_path.with_name(float_path.name.replace("-float.onnx", f"-ov-int8-c{CALIBRATION_FORMAT}.xml"))
        if not path.exists():
            self._making(lambda: self._quantize(float_path, path))
        return path

    def _quantize(self, float_path: Path, target: Path) -> None:
        """Static int8 by NNCF (transformer preset: attention and matmuls, with SmoothQuant), saved as the
        two OpenVINO files; the .xml is renamed into place last, so its presence means both are whole."""
        import logging

        import nncf
        import openvino

        texts = calibration_texts()
        logging.getLogger("nncf").setLevel(logging.ERROR)
        model = openvino.Core().read_model(str(float_path))
        dataset = nncf.Dataset(texts, self._calibration_item)
        quantized = nncf.quantize(
            model, dataset, model_type=nncf.ModelType.TRANSFORMER, subset_size=len(texts), fast_bias_correction=True
        )
        staging = target.with_name(f".{target.stem}.{os.getpid()}.xml")
        try:
            openvino.save_model(quantized, str(staging), compress_to_fp16=False)
            os.replace(staging.with_suffix(".bin"), target.with_suffix(".bin"))
            os.replace(staging, target)
        finally:
            for leftover in (staging, staging.with_suffix(".bin")):
                if leftover.exists():
                    leftover.unlink()

    def _calibration_item(self, text: str) -> dict[str, np.ndarray]:
        ids = np.array([self.tokenizer.encode(text).ids], dtype=np.int64)
        return inputs(ids, np.ones_like(ids))

    def _compile(self, threads: int):
        import openvino

        core = openvino.Core()
        # What is not int8 (softmax, layer norms, residual adds) runs in bfloat16 where the CPU has bf16
        # instructions, else float32: ~5% faster, and the bundled records' vectors stay at cosine >= 0.999
        # to float32's, so an index embedded either way is searched by the other.
        precision = "bf16" if "BF16" in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES") else "f32"
        streams = str(max(1, threads))  # one stream per core: batches run side by side, one thread each
        config = {
            "PERFORMANCE_HINT": "THROUGHPUT",
            "NUM_STREAMS": streams,
            "INFERENCE_NUM_THREADS": str(threads),
            "INFERENCE_PRECISION_HINT": precision,
        }
        compiled = core.compile_model(str(self.path), "CPU", config)
        return compiled, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))

    def _run(self, batches, out) -> None:
        import openvino

        compiled, requests = self.compiled()
        if len(batches) == 1:  # a single query: no queue to set up (a request per call: thread-safe)
            rows, ids, mask = batches[0]
            out[rows] = mean_pooled(compiled.create_infer_request().infer(inputs(ids, mask))[0], mask)
            return
        queue = openvino.AsyncInferQueue(compiled, requests)

        def done(request, job) -> None:
            rows, mask = job
            out[rows] = mean_pooled(request.get_output_tensor(0).data, mask)

        queue.set_callback(done)
        for rows, ids, mask in batches:
            queue.start_async(inputs(ids, mask), (rows, mask))
        queue.wait_all()


def calibration_texts() -> list[str]:
    """Texts like the ones embedded: every 5th bundled record's embedded text and its error line."""
    from ..knowledge.records import load_records
    from ..settings import BUNDLED_KB_DIR
    from .text import record_text

    records = load_records(BUNDLED_KB_DIR)[::CALIBRATION_EVERY]
    return [text for r in records for text in (record_text(r), f"{r.error_class}: {r.error_message}")]
