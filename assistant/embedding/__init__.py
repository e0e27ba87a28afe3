"""Turning text into vectors: the Embedder (sentence-transformers, the bundled MiniLM by default) and its
faster CPU runtimes (ONNX Runtime, OpenVINO). Must not know where vectors are stored or how hits rank."""

from .embedder import Embedder
from .text import record_text

__all__ = ["Embedder", "record_text"]
