"""The Retriever: finds the records nearest to a Query and says how confident it is."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s
import numpy as np

from .embed import Embedder, record_text
from .index import VectorIndex
from .query import Query
from .records import Record

RRF_K = 60


@dataclass(frozen=True)
class Hit:
    """A record that may answer the query, its score, and which signals found it."""

    record: Record
    score: float
    why: tuple[str, ...] = ()


@dataclass(frozen=True)
class Retrieval:
    """The ranked hits and how confident errata is that the first one answers the query."""

    hits: list[Hit]
    confidence: float
    confident: bool


def _tokenize(texts: Sequence[str]):
    return bm25s.tokenize(list(texts), stopwords="en", show_progress=False)


class Retriever:
    """Dense (FAISS) and lexical (BM25) search, fused by reciprocal rank."""

    def __init__(
        self,
        records: Sequence[Record],
        embedder: Embedder,
        vector_index: VectorIndex,
        *,
        confidence_threshold: float = 0.5,
    ):
        self.records = list(records)
        self.embedder = embedder
        self.vector_index = vector_index
        self.confidence_threshold = confidence_threshold
        self._by_id = {r.id: r for r in self.records}
        self._rows = [self._by_id[i] for i in vector_index.record_ids]
        self._bm25 = bm25s.BM25()
        self._bm25.index(_tokenize([record_text(r) for r in self.records]), show_progress=False)
        self._patterns = [_compile(r.message_pattern) for r in self.records]

    def retrieve(self, query: Query, k: int = 5) -> Retrieval:
        if query.kind == "empty":
            return Retrieval([], 0.0, False)
        depth = min(len(self.records), max(50, k))
        search_text = query.error_line if query.kind != "question" and query.error_line else query.text
        rankings: dict[str, list[int]] = {}
        vector = self.embedder.encode([search_text])
        _scores, rows = self.vector_index.search(vector, depth)
        by_row = {id(r): i for i, r in enumerate(self.records)}
        rankings["dense"] = [by_row[id(self._rows[row])] for row in rows[0] if row >= 0]
        docs, _ = self._bm25.retrieve(_tokenize([search_text]), k=depth, show_progress=False)
        rankings["lexical"] = [int(d) for d in docs[0]]
        if query.message:
            rankings["pattern"] = [i for i, p in enumerate(self._patterns) if p is not None and p.search(query.message)]
        fused: dict[int, float] = {}
        why: dict[int, list[str]] = {}
        for signal, ranked in rankings.items():
            for rank, i in enumerate(ranked):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + rank + 1)
                if rank < 10:
                    why.setdefault(i, []).append(signal)
        order = sorted(fused, key=fused.__getitem__, reverse=True)[:k]
        best = fused[order[0]] if order else 0.0
        confidence = float(np.clip(best * (RRF_K + 1) / len(rankings), 0.0, 1.0))
        hits = [Hit(self.records[i], fused[i], tuple(why.get(i, ()))) for i in order]
        return Retrieval(hits, confidence, confidence >= self.confidence_threshold)


def _compile(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None
