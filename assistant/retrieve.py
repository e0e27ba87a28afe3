"""The Retriever: finds the records that answer a Query and says how confident it is.

Five signals are computed for every record (past ``FULL_SCORING_LIMIT`` records, for the candidates only:
the nearest by cosine, the best by BM25 over the query's less common words, and those a pattern, the raising
file or the quoted message's words single out; measured on the dev set, scoring candidates cut to 5% of the
records per source ranks as scoring every record):

- ``pattern``: the record's ``messagePattern`` matches the pasted error message (or, weaker, anywhere in
  the paste), scored by how many literal characters the pattern pins down (a specific pattern beats a
  generic one that also matches); only the patterns whose required words are in the paste run
  (``pattern_index``: exact, and a few patterns per query instead of every record's);
- ``class``: the exception class is the record's ``errorClass`` (rarer classes count more), and the file
  that raised it (a traceback frame) is the record's file;
- ``library``: the record's library appears in the traceback's site-packages frames, the exception's
  module path, or by name in the text;
- ``lexical``: BM25 over the record's class and message, and over all its prose fields;
- ``dense``: cosine similarity of the query to the record's vector in the index.

They are fused by a linear score whose weights were learned (a softmax over the records of each dev
query, one weight set for pasted errors and one for prose questions; ``benchmarks/fit_retrieval.py``
refits them and reports cross-validated figures). The confidence is a logistic model over the top hit's
score, its margin over the next one and which signals found it, and whether the query quotes an error
message that neither the top record's pattern nor its message's literal words account for (a near miss:
the same library and class, another error); below ``confidence_threshold`` errata abstains and shows the
nearest records as possibly related.

What the signals read of each record lives in a :class:`~assistant.signal_index.SignalIndex` (postings and
two BM25 matrices, read from disk a word at a time once saved), so per-query work follows the postings the
query touches, not the size of the knowledge base.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import regex

from .embed import Embedder
from .index import VectorIndex
from .query import Query
from .records import Record
from .signal_index import SignalIndex, message_words, path_tail, tokenize

__all__ = ["FEATURES", "CONFIDENCE_FEATURES", "Hit", "Retrieval", "Retriever", "Scored", "confidence_features"]

logger = logging.getLogger(__name__)

# A record's pattern gets this long to search one message; a pattern that runs out of time is dropped.
PATTERN_TIMEOUT_S = 0.05
# Only this much of the message, and of the whole paste, is searched by patterns (bounds the worst case).
PATTERN_MESSAGE_CHARS = 2_000
PATTERN_TEXT_CHARS = 4_000
# Records beyond this many nearest by cosine get the lowest cosine seen (bounds the cost of large indexes).
DENSE_DEPTH = 1_000
# Compiled messagePatterns kept in memory (the prefilter runs a few per query; see pattern_index).
COMPILED_PATTERNS = 20_000
# Rank signals are exact for this many records; the rest share the last rank (see _reciprocal_rank).
RANK_DEPTH = 1_000
# Up to this many records every record is scored; beyond, only candidates (see Retriever._candidates).
FULL_SCORING_LIMIT = 20_000
LEXICAL_CANDIDATES = 1_000  # the best records by BM25 over the query's rarest words
LEXICAL_POSTINGS = 100_000  # ... reading at most this many postings (the rarest word is always read)
CANDIDATE_CAP = 2_000  # at most this many candidates from each other source (pattern, file, message words)
# An approximate vector index scores this many nearest exactly, the rest of DENSE_DEPTH by its 8-bit codes.
EXACT_COSINES = 25

FEATURES = (
    "pattern_message",  # the pattern matches the extracted message
    "pattern_specificity",  # literal characters the pattern pins, over the message length
    "pattern_text",  # the pattern matches somewhere in the paste (but not the message)
    "class_equal",  # same exception class
    "class_rarity",  # same class, weighted by how rare the class is in the knowledge base
    "raising_file",  # a traceback frame is in the file the record raises from
    "library_seen",  # the record's library is in the frames or the exception's module path
    "library_named",  # the record's library is named in the text
    "library_other",  # the query names a library of the knowledge base, but not this record's
    "lexical_message",  # BM25 over class and message, divided by the best record's
    "lexical_all",  # BM25 over all text fields, divided by the best record's
    "lexical_rank",  # 1 / (1 + rank) by BM25 over all fields
    "lexical_strength",  # log(1 + BM25 over all fields): how much text the query shares at all
    "dense",  # cosine similarity
    "dense_gap",  # cosine minus the best record's cosine
    "dense_rank",  # 1 / (1 + rank) by cosine
    "coverage",  # share of the query's distinct words found in the record's text
    "unknown_words",  # share of the query's distinct words no record contains (the same for every record)
    "has_message",  # the query quotes an error message of two literal words or more (the same for every record)
    "message_covered",  # every literal word of that message is in the record's message (a pattern too strict)
    "weighted_coverage",  # like coverage, each word weighted by its rarity in the knowledge base (idf)
)

# Learned by benchmarks/fit_retrieval.py on the dev set (see its report for cross-validated figures).
WEIGHTS: dict[str, dict[str, float]] = {
    "error": {
        "pattern_message": 4.702,
        "pattern_specificity": -0.391,
        "pattern_text": 4.774,
        "class_equal": 1.766,
        "class_rarity": 1.184,
        "raising_file": 3.285,
        "library_seen": 1.379,
        "library_named": 1.408,
        "library_other": -1.408,
        "lexical_message": 1.159,
        "lexical_all": 0.850,
        "lexical_rank": -1.460,
        "lexical_strength": 1.994,
        "dense": 0.300,
        "dense_gap": 0.300,
        "dense_rank": 1.803,
        "coverage": 0.718,
        "unknown_words": 0.000,
        "has_message": 0.000,
        "message_covered": 1.246,
        "weighted_coverage": 1.463,
    },
    "prose": {
        "pattern_message": 1.590,
        "pattern_specificity": 0.710,
        "pattern_text": 2.299,
        "class_equal": 1.019,
        "class_rarity": -0.224,
        "raising_file": 0.000,
        "library_seen": 0.000,
        "library_named": 0.972,
        "library_other": -0.972,
        "lexical_message": 0.505,
        "lexical_all": 0.198,
        "lexical_rank": 1.301,
        "lexical_strength": 3.262,
        "dense": 6.519,
        "dense_gap": 6.519,
        "dense_rank": 1.217,
        "coverage": 2.122,
        "unknown_words": 0.000,
        "has_message": 0.000,
        "message_covered": 0.978,
        "weighted_coverage": 1.145,
    },
}
CONFIDENCE_FEATURES = (
    "bias",
    "top_score",
    "margin",
    "top_probability",
    "pattern",
    "dense",
    "lexical",
    "coverage",
    "unknown_words",
    "message_unmatched",  # the query quotes an error message; neither the top hit's pattern nor its words match it
    "weighted_coverage",  # the share of the query's words the top hit has, weighted by rarity
)
CONFIDENCE_WEIGHTS: dict[str, dict[str, float]] = {
    "error": {
        "bias": -0.306,
        "top_score": 0.041,
        "margin": 0.077,
        "top_probability": 0.990,
        "pattern": 1.409,
        "dense": 1.061,
        "lexical": 0.244,
        "coverage": 0.797,
        "unknown_words": 1.460,
        "message_unmatched": -7.990,
        "weighted_coverage": 0.790,
    },
    "prose": {
        "bias": -1.740,
        "top_score": 0.061,
        "margin": 0.163,
        "top_probability": 2.113,
        "pattern": 2.901,
        "dense": 2.807,
        "lexical": -0.101,
        "coverage": 2.830,
        "unknown_words": -11.166,
        "message_unmatched": -7.990,
        "weighted_coverage": 3.492,
    },
}

# The threshold the fit chose: at most 2% of the dev set's answerable queries fall below it.
CONFIDENCE_THRESHOLD = 0.87


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


@dataclass(frozen=True)
class Scored:
    """The scored records' features and fused scores for one query (what ``retrieve`` ranks by)."""

    features: np.ndarray  # (scored records, len(FEATURES))
    scores: np.ndarray  # (scored records,)
    model: str  # "error" or "prose"
    positions: np.ndarray | None = None  # which records were scored; None: every record, in order

    def position(self, j: int) -> int:
        """The record position of scored row ``j``."""
        return int(j) if self.positions is None else int(self.positions[j])


@functools.lru_cache(maxsize=COMPILED_PATTERNS)
def _compile(pattern: str):
    """Compiled on first use, kept for the most recent ones: a million compiled patterns would not fit."""
    try:
        return regex.compile(pattern)
    except (regex.error, ValueError, OverflowError):
        logger.warning("skipping the invalid messagePattern %r", pattern)
        return None


@dataclass(frozen=True)
class _Found:
    """What each signal found for one query, as ascending record positions (before scoring)."""

    on_message: np.ndarray
    specificity: np.ndarray  # for each of on_message
    on_text: np.ndarray
    same_class: np.ndarray
    raising_file: np.ndarray
    seen: np.ndarray
    named: np.ndarray
    known: np.ndarray | None  # records of the libraries the query names or shows; None: it names none
    covered: np.ndarray
    dense: np.ndarray
    cosines: np.ndarray  # for each of dense
    floor: float  # the cosine of every record beyond the nearest


class Retriever:
    """Exact, lexical and dense signals over the records, fused by learned weights, with a confidence."""

    def __init__(
        self,
        records: Sequence[Record],
        embedder: Embedder,
        vector_index: VectorIndex,
        *,
        signals: SignalIndex | None = None,
        confidence_threshold: float = CONFIDENCE_THRESHOLD,
        weights: dict[str, dict[str, float]] | None = None,
        confidence_weights: dict[str, dict[str, float]] | None = None,
        full_scoring_limit: int = FULL_SCORING_LIMIT,
    ):
        """``signals``: the records' :class:`SignalIndex` when it was saved (else built here, one pass).
        ``full_scoring_limit``: up to this many records every record is scored, beyond only candidates."""
        self.records = records if isinstance(records, Sequence) else list(records)
        self.embedder = embedder
        self.vector_index = vector_index
        self.confidence_threshold = confidence_threshold
        self.full_scoring_limit = full_scoring_limit
        self.weights = {model: np.array([w.get(f, 0.0) for f in FEATURES]) for model, w in (weights or WEIGHTS).items()}
        self.confidence_weights = {
            model: np.array([w.get(f, 0.0) for f in CONFIDENCE_FEATURES])
            for model, w in (confidence_weights or CONFIDENCE_WEIGHTS).items()
        }
        self.signals = signals if signals is not None else SignalIndex.build(self.records)
        if len(self.signals) != len(self.records):
            raise ValueError(f"a signal index of {len(self.signals)} records for {len(self.records)} records")
        n = len(self.signals)
        # FAISS row -> position in self.records (rows of records not loaded are ignored).
        self._row_to_pos = _positions_of(self.signals.ids, vector_index.record_ids)
        class_counts = self.signals.classes.counts()
        self._class_rarity = {c: math.log((n + 1) / k) / math.log(n + 1) for c, k in class_counts.items()}
        names = self.signals.library_names
        self._library_to_repo = {name: repo for repo, ns in names.items() for name in ns}
        mention_words = sorted(self._library_to_repo, key=len, reverse=True)
        variants = {v: w for w in mention_words for v in {w, w.replace("_", "-"), w.replace("_", " ")}}
        # No name is a library's own (every repo shares its names with another): nothing can be mentioned.
        alternatives = "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
        self._mention_re = (
            re.compile(r"(?<![\w.-])(" + alternatives + r")(?![\w-])", re.IGNORECASE) if variants else None
        )
        self._mention_variants = {v.lower(): w for v, w in variants.items()}
        self._slow_patterns: set[str] = set()

    # --- what each signal finds ----------------------------------------------------------------

    def _patterns(self, query: Query) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Records whose pattern matches a message (with its specificity), and those matching the text."""
        messages = [m for m in (query.message, *query.causes) if m]
        if query.exception_class and query.message:
            messages.append(query.error_line or "")
        messages = [m[:PATTERN_MESSAGE_CHARS] for m in messages]
        text = query.text[-PATTERN_TEXT_CHARS:]
        length = max((len(m) for m in messages[:1]), default=0)
        on_message: list[int] = []  # distinct patterns
        on_text: list[int] = []
        for p in self.signals.pattern_index.candidates([text, *messages]).tolist():
            matched_message, matched_text = self._match(self.signals.patterns[p], messages, text)
            if matched_message:
                on_message.append(p)
            elif matched_text:
                on_text.append(p)
        records = self.signals.pattern_records
        message_groups = [records.numbered(p) for p in on_message]
        literals = np.asarray(self.signals.literals[on_message], dtype=np.float64)
        specificity = np.repeat(np.minimum(1.0, literals / max(length, 1)), [len(g) for g in message_groups])
        message_positions = np.concatenate(message_groups) if message_groups else _NONE
        ascending = np.argsort(message_positions, kind="stable")
        text_groups = [records.numbered(p) for p in on_text]
        text_positions = np.sort(np.concatenate(text_groups)) if text_groups else _NONE
        return message_positions[ascending], specificity[ascending], text_positions

    def _match(self, source: str, messages: list[str], text: str) -> tuple[bool, bool]:
        """Whether the pattern ``source`` matches one of the messages, else the whole text."""
        pattern = _compile(source)
        if pattern is None or source in self._slow_patterns:
            return False, False
        if messages and any(self._search(pattern, m) for m in messages):
            return True, False
        return False, self._search(pattern, text)

    def _search(self, pattern, text: str) -> bool:
        try:
            return pattern.search(text, timeout=PATTERN_TIMEOUT_S) is not None
        except TimeoutError:
            self._slow_patterns.add(pattern.pattern)
            logger.warning("the messagePattern %r backtracks too long; it is no longer used", pattern.pattern[:200])
            return False

    def _libraries(self, query: Query) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Records of the libraries in the frames or module path, of those named, and of either."""
        seen_repos = {self._library_to_repo[lib] for lib in query.libraries if lib in self._library_to_repo}
        mentions = self._mention_re.finditer(query.text[:PATTERN_TEXT_CHARS]) if self._mention_re else ()
        named = {self._library_to_repo[self._mention_variants[m.group(1).lower()]] for m in mentions}
        repos = self.signals.repos
        known = repos.union(seen_repos | named) if seen_repos | named else None
        return repos.union(seen_repos), repos.union(named), known

    def _nearest(self, text: str) -> tuple[np.ndarray, np.ndarray, float]:
        """The nearest records by cosine (ascending positions, their cosines) and the lowest cosine seen."""
        depth = min(len(self.vector_index), DENSE_DEPTH)
        scores, rows = self.vector_index.search(self.embedder.encode([text]), depth, exact=EXACT_COSINES)
        scores, rows = scores[0].astype(np.float64), rows[0]
        found = rows >= 0
        floor = float(scores[found].min()) if found.any() else 0.0
        positions = self._row_to_pos[rows[found]]
        kept = positions >= 0
        order = np.argsort(positions[kept], kind="stable")
        return positions[kept][order], scores[found][kept][order], floor

    def _find(self, query: Query, dense_text: str, quoted: frozenset[str]) -> _Found:
        on_message, specificity, on_text = self._patterns(query)
        cls = query.exception_class
        frame_files = {path_tail(f.file) for f in query.frames}
        seen, named, known = self._libraries(query)
        # Records whose message holds every quoted word (when the query quotes a message of 2+ words).
        covered = self.signals.message_words.intersection(quoted) if len(quoted) >= 2 else _NONE
        dense, cosines, floor = self._nearest(dense_text)
        return _Found(
            on_message=on_message,
            specificity=specificity,
            on_text=on_text,
            same_class=self.signals.classes.get(cls) if cls else _NONE,
            raising_file=self.signals.files.union(frame_files),
            seen=seen,
            named=named,
            known=known,
            covered=covered,
            dense=dense,
            cosines=cosines,
            floor=floor,
        )

    def _query_words(self, text: str) -> tuple[list[int], list[int], list[int], float]:
        """The query's tokens as ids of each BM25 vocabulary (in order, repeats kept, as bm25s scores
        them), its distinct known words, and the share of its words no record has."""
        tokens = tokenize([text])
        if not tokens.ids or not tokens.ids[0]:
            return [], [], [], 0.0
        strings = {i: w for w, i in tokens.vocab.items()}
        in_order = [strings[t] for t in tokens.ids[0]]
        by_message = self.signals.bm25_message.vocab_dict
        by_all = self.signals.bm25_all.vocab_dict
        distinct = set(in_order)
        known = sorted({by_all[w] for w in distinct if w in by_all})
        return (
            [by_message[w] for w in in_order if w in by_message],
            [by_all[w] for w in in_order if w in by_all],
            known,
            1.0 - len(known) / max(len(distinct), 1),
        )

    # --- scoring ---------------------------------------------------------------------------------

    def _candidates(self, found: _Found, columns: dict[int, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """The records worth scoring in a large knowledge base: the nearest by cosine, the best by BM25 over
        the query's less common words (``columns``: each word's records and weights), and those a pattern,
        the raising file or the quoted message's words single out (each source at most ``CANDIDATE_CAP``)."""
        budget = LEXICAL_POSTINGS
        holders, weights = [], []
        for indices, data in sorted(columns.values(), key=lambda column: len(column[0])):  # rarest first
            if holders and len(indices) > budget:  # within a reading budget
                break
            holders.append(indices)
            weights.append(data)
            budget -= len(indices)
        lexical = _NONE
        if holders:
            records, at = np.unique(np.concatenate(holders), return_inverse=True)
            partial = np.bincount(at, weights=np.concatenate(weights))
            lexical = records[_best(partial, LEXICAL_CANDIDATES)]
        sources = [found.dense, lexical, found.on_message, found.on_text, found.raising_file, found.covered]
        return np.unique(np.concatenate([s[:CANDIDATE_CAP] for s in sources]))

    def score(self, query: Query) -> Scored:
        """The signal features and fused scores of every record (of the candidates, in a large one)."""
        n = len(self.records)
        model = "prose" if query.kind == "question" or not query.error_line else "error"
        error_text = " ".join(x for x in (query.error_line, *query.causes) if x)
        search_text = query.text if model == "prose" else error_text
        dense_text = query.text if model == "prose" else (query.error_line or query.text)
        quoted = message_words(query.message or "")
        found = self._find(query, dense_text, quoted)
        message_tokens, all_tokens, words, unknown = self._query_words(search_text)
        columns = {w: self.signals.all_columns(w) for w in words}  # each word's column read once per query
        scored = None if n <= self.full_scoring_limit else self._candidates(found, columns)
        m = n if scored is None else len(scored)
        in_all = {w: _restricted(column, scored) for w, column in columns.items()}
        in_message = {t: _restricted(self.signals.message_columns(t), scored) for t in set(message_tokens)}

        def spread(positions: np.ndarray, values: np.ndarray | float = 1.0, base: float = 0.0) -> np.ndarray:
            """Values at ``positions`` (ascending), ``base`` elsewhere, for the records scored."""
            out = np.full(m, base)
            where, picked = _among(positions, scored)
            out[where] = values if np.ndim(values) == 0 else np.asarray(values)[picked]
            return out

        class_equal = spread(found.same_class)
        rarity = self._class_rarity.get(query.exception_class or "", 0.0)
        lex_msg = _bm25(in_message, message_tokens, m)
        lex_all = _bm25(in_all, all_tokens, m)
        dense = spread(found.dense, found.cosines, base=found.floor)
        held, weighted = self._coverage(in_all, m)
        has_message = float(len(quoted) >= 2)
        features = np.column_stack(
            [
                spread(found.on_message),
                spread(found.on_message, found.specificity),
                spread(found.on_text),
                class_equal,
                class_equal * rarity,
                spread(found.raising_file),
                spread(found.seen),
                spread(found.named),
                np.zeros(m) if found.known is None else 1.0 - spread(found.known),
                lex_msg / lex_msg.max() if m and lex_msg.max() > 0 else lex_msg,
                lex_all / lex_all.max() if m and lex_all.max() > 0 else lex_all,
                _reciprocal_rank(lex_all),
                np.log1p(lex_all),
                dense,
                dense - dense.max() if m else dense,
                _reciprocal_rank(dense),
                held / max(len(words), 1),
                np.full(m, unknown),
                np.full(m, has_message),
                spread(found.covered),
                weighted,
            ]
        )
        return Scored(features, features @ self.weights[model], model, scored)

    def _coverage(self, in_all: dict[int, tuple[np.ndarray, np.ndarray]], m: int) -> tuple[np.ndarray, np.ndarray]:
        """How many of the query's words (``in_all``: where each is among the records scored) each record
        holds, and their share weighted by idf: a record with the query's rare words (a tool's name, an
        unusual term) covers more of what the query is about."""
        n = len(self.records)
        held = np.zeros(m)
        weighted = np.zeros(m)
        total = 0.0
        for w, (where, _values) in in_all.items():
            idf = math.log((n + 1) / (self.signals.all_columns.size(w) + 0.5))
            held[where] += 1.0
            weighted[where] += idf
            total += idf
        return held, weighted / total if total > 0 else weighted

    # --- ranking and confidence ------------------------------------------------------------------

    def retrieve(self, query: Query, k: int = 5) -> Retrieval:
        """The ``k`` best records for ``query``, best first, and how sure errata is of the first."""
        if query.kind == "empty" or not self.records:
            return Retrieval([], 0.0, False)
        scored = self.score(query)
        order = _best(scored.scores, max(k, 2))
        confidence = self.confidence(scored, order)
        hits = [
            Hit(self.records[scored.position(j)], float(scored.scores[j]), _why(scored.features[j])) for j in order[:k]
        ]
        return Retrieval(hits, confidence, confidence >= self.confidence_threshold)

    def confidence(self, scored: Scored, order: np.ndarray) -> float:
        """The probability that the first record answers the query (logistic over the top hit's signals)."""
        return float(_sigmoid(confidence_features(scored, order) @ self.confidence_weights[scored.model]))


_NONE = np.zeros(0, dtype=np.int64)


def _restricted(column: tuple[np.ndarray, np.ndarray], scored: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """A word's column (its records, its BM25 weights) as rows among the records scored, and weights there."""
    holders, values = column
    where, picked = _among(holders, scored)
    return where, values[picked]


def _bm25(in_columns: dict[int, tuple[np.ndarray, np.ndarray]], tokens: list[int], m: int) -> np.ndarray:
    """BM25 of the records scored, summed as ``bm25s`` sums it (token by token, repeats too, in float32),
    from its matrix: bm25s scores every record, which a million records make too slow per query."""
    out = np.zeros(m, dtype=np.float32)
    for token in tokens:
        where, values = in_columns[token]
        np.add.at(out, where, values)
    return out.astype(np.float64)


def _among(positions: np.ndarray, scored: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Which of the records scored are in ``positions`` (ascending): their rows among the scored, and
    their index in ``positions``. With every record scored, the rows are the positions themselves."""
    if scored is None:
        return positions, slice(None)
    if not len(positions) or not len(scored):
        return _NONE, _NONE
    index = np.minimum(np.searchsorted(positions, scored), len(positions) - 1)
    rows = np.flatnonzero(positions[index] == scored)
    return rows, index[rows]


def _positions_of(ids: np.ndarray, row_ids: Sequence[str]) -> np.ndarray:
    """For each of ``row_ids``, its position in ``ids`` (-1 where absent), by sorting: no dict of a
    million strings."""
    rows = np.array([r.encode("utf-8") for r in row_ids], dtype="S")
    out = np.full(len(rows), -1, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    present, where = _among(np.asarray(ids)[order], rows)
    out[present] = order[where]
    return out


def _reciprocal_rank(values: np.ndarray) -> np.ndarray:
    """1 / (1 + rank), ranks exact for the best ``RANK_DEPTH`` records; all others share rank RANK_DEPTH
    (a large knowledge base is not sorted whole for a signal below 0.001 there)."""
    ranks = np.full(len(values), float(RANK_DEPTH))
    top = _best(values, RANK_DEPTH)
    ranks[top] = np.arange(len(top))
    return 1.0 / (1.0 + ranks)


def confidence_features(scored: Scored, order: np.ndarray) -> np.ndarray:
    """What the confidence model reads: the top score, its margin, which signals found the top hit, and
    whether a quoted error message is left unmatched by the top hit's pattern (the one weight both
    models share: the strongest sign of a near miss, in a paste or a question)."""
    scores = scored.scores
    top = int(order[0])
    second = float(scores[order[1]]) if len(order) > 1 else float(scores[top]) - 10.0
    shifted = scores - scores[top]
    probability = 1.0 / float(np.exp(shifted).sum())
    f = scored.features[top]
    index = FEATURES.index
    pattern = max(f[index("pattern_message")], 0.5 * f[index("pattern_text")])
    return np.array(
        [
            1.0,
            float(scores[top]),
            float(scores[top]) - second,
            probability,
            pattern,
            f[index("dense")],
            f[index("lexical_strength")],
            f[index("coverage")],
            f[index("unknown_words")],
            f[index("has_message")] * (1.0 - min(1.0, 2.0 * pattern)) * (1.0 - f[index("message_covered")]),
            f[index("weighted_coverage")],
        ]
    )


def _why(f: np.ndarray) -> tuple[str, ...]:
    index = FEATURES.index
    why = []
    if f[index("pattern_message")] or f[index("pattern_text")]:
        why.append("pattern")
    if f[index("class_equal")] or f[index("raising_file")]:
        why.append("class")
    if f[index("library_seen")] or f[index("library_named")]:
        why.append("library")
    if f[index("lexical_rank")] >= 0.2:
        why.append("lexical")
    if f[index("dense_rank")] >= 0.2:
        why.append("dense")
    return tuple(why)


def _best(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest values, best first (ties: the lower position first)."""
    if len(values) <= k:
        return np.argsort(-values, kind="stable")
    # Most records of a large knowledge base may tie at the floor (no shared word, or beyond the nearest
    # vectors), which makes np.partition ten times slower: then partition only what is above it.
    floor = values.min()
    above_floor = values > floor
    count = int(above_floor.sum())
    if count < k:
        chosen = np.concatenate([np.flatnonzero(above_floor), np.flatnonzero(~above_floor)[: k - count]])
    else:
        pool = np.flatnonzero(above_floor) if count * 2 < len(values) else None
        candidates = values if pool is None else values[pool]
        kth = np.partition(candidates, len(candidates) - k)[len(candidates) - k]  # the k-th largest
        top, tied = np.flatnonzero(candidates > kth), np.flatnonzero(candidates == kth)
        chosen = np.concatenate([top, tied[: k - len(top)]])
        chosen = chosen if pool is None else pool[chosen]
    return chosen[np.lexsort((chosen, -values[chosen]))]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))
