"""A saved bm25s index read back, and text split into BM25 tokens as bm25s does, without importing bm25s.

Why: importing bm25s imports scipy (~0.3 s and ~25 MB of a cold ``errata ask``), yet serving needs only
what ``bm25s.BM25.save`` wrote (the score matrix, memory-mapped, and the vocabulary) and bm25s's
tokenizing rule. Building still uses bm25s itself; tests/test_fast_start.py checks both halves against
bm25s (tokens of every bundled record, and the loaded arrays).
"""

from __future__ import annotations

import json
import re
from array import array
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
    def load(cls, folder: Path, *, in_memory: bool = False) -> SavedBM25:
        """``in_memory``: the matrix read whole (its folder may go), not memory-mapped."""
        params = json.loads((folder / "params.index.json").read_text(encoding="utf-8"))
        vocab = json.loads((folder / "vocab.index.json").read_text(encoding="utf-8"))
        mode = None if in_memory else "r"
        scores = {
            name: np.load(folder / f"{name}.csc.index.npy", mmap_mode=mode, allow_pickle=False)
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


class TokenCorpus:
    """Texts tokenized for BM25 a chunk at a time into one flat array of token ids: what
    ``bm25s.BM25.index`` reads (``ids``, ``vocab``), without the Python list of ints per text that
    tokenizing everything at once keeps (at a million records, ~5 GB of the signal index build)."""

    CHUNK = 10_000  # texts tokenized together

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}  # token -> id, in first-seen order as bm25s.tokenize numbers them
        self._pending: list[str] = []
        self._parts: list[np.ndarray] = []
        self._lengths = array("q")

    def add(self, text: str) -> None:
        self._pending.append(text)
        if len(self._pending) >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        tokenized = tokenize(self._pending)
        self._pending = []
        to_global = np.empty(len(tokenized.vocab), dtype=np.int32)
        for token, local in tokenized.vocab.items():
            to_global[local] = self.vocab.setdefault(token, len(self.vocab))
        self._lengths.extend(len(doc) for doc in tokenized.ids)
        flat = np.fromiter((t for doc in tokenized.ids for t in doc), dtype=np.int32)
        self._parts.append(to_global[flat])

    @property
    def ids(self) -> TokenLists:
        """Every text's token ids (a text is a list when read), once all are added."""
        self._flush()
        flat = np.concatenate(self._parts) if self._parts else np.zeros(0, dtype=np.int32)
        self._parts = [flat]
        offsets = np.zeros(len(self._lengths) + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(self._lengths, dtype=np.int64), out=offsets[1:])
        return TokenLists(flat, offsets)


class TokenLists(Sequence[list[int]]):
    def __init__(self, flat: np.ndarray, offsets: np.ndarray):
        self._flat = flat
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._flat[self._offsets[i] : self._offsets[i + 1]].tolist()

    def __iter__(self):
        for start, stop in zip(self._offsets[:-1].tolist(), self._offsets[1:].tolist(), strict=True):
            yield self._flat[start:stop].tolist()
