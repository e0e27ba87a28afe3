"""A saved bm25s index read back, and text split into BM25 tokens as bm25s does, without importing bm25s.

Why: importing bm25s imports scipy (~0.3 s and ~25 MB of a cold ``errata ask``), yet serving needs only
what ``bm25s.BM25.save`` wrote (the score matrix, memory-mapped, and the vocabulary) and bm25s's
tokenizing rule. Building still uses bm25s itself; tests/test_fast_start.py checks both halves against
bm25s (tokens of every bundled record, and the loaded arrays).
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from collections.abc import Sequence
from pathlib import Path

import numpy as np

# bm25s.stopwords.STOPWORDS_EN (its "en" list), kept here so the query path need not import bm25s.
STOPWORDS_EN = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
)  # fmt: skip
_STOP = frozenset(STOPWORDS_EN)
_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")  # bm25s.tokenize's default token_pattern

Tokenized = namedtuple("Tokenized", ["ids", "vocab"])  # the shape bm25s.tokenize returns


def tokenize(texts: Sequence[str]) -> Tokenized:
    """``bm25s.tokenize(texts, stopwords="en")``: lower case, words of two or more characters, English
    stopwords dropped, ids numbered in first-seen order."""
    vocab: dict[str, int] = {}
    ids = []
    for text in texts:
        ids.append(
            [vocab.setdefault(token, len(vocab)) for token in _TOKEN_RE.findall(text.lower()) if token not in _STOP]
        )
    return Tokenized(ids=ids, vocab=vocab)


class SavedBM25:
    """What the Retriever reads of a saved ``bm25s.BM25``: ``scores`` (the CSC matrix as ``data``,
    ``indices``, ``indptr``, memory-mapped, and ``num_docs``) and ``vocab_dict``, as ``BM25.load`` gives."""

    def __init__(self, scores: dict, vocab_dict: dict[str, int], params: dict):
        self.scores = scores
        self.vocab_dict = vocab_dict
        self.params = params

    @classmethod
    def load(cls, folder: Path) -> SavedBM25:
        params = json.loads((folder / "params.index.json").read_text(encoding="utf-8"))
        vocab = json.loads((folder / "vocab.index.json").read_text(encoding="utf-8"))
        scores = {
            name: np.load(folder / f"{name}.csc.index.npy", mmap_mode="r", allow_pickle=False)
            for name in ("data", "indices", "indptr")
        }
        scores["num_docs"] = params.get("num_docs")
        return cls(scores, vocab, params)

    def save(self, folder: Path, **_ignored) -> None:
        """Written again as bm25s writes it (a snapshot saved from a loaded index)."""
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("data", "indices", "indptr"):
            np.save(folder / f"{name}.csc.index.npy", np.asarray(self.scores[name]))
        (folder / "vocab.index.json").write_text(json.dumps(self.vocab_dict), encoding="utf-8")
        (folder / "params.index.json").write_text(json.dumps(self.params, indent=4), encoding="utf-8")
