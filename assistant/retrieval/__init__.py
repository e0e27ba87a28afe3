"""Finding the records that answer a Query: signals (patterns, classes, library, BM25, cosine), learned
fusion and a calibrated confidence (weights in ``weights.json``). Must not format text or call an LLM."""

from .retriever import Retriever

__all__ = ["Retriever"]
