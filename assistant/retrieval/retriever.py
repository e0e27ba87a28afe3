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
import math
from collections.abc import Sequence

import numpy as np

from ..answering.answer import Hit, Retrieval
from ..embedding.embedder import Embedder
from ..index import VectorStore
from ..index.pieces import PieceVectors
from ..knowledge.records import Record
from ..parse.query import Query
from .candidates import (
    FULL_SCORING_LIMIT,
    NONE,
    among,
    best,
    files_named,
    positions_of,
    reciprocal_rank,
    restricted,
    select_candidates,
)
from .confidence import SHORT_QUERY_CONFIDENCE, confidence_features, sigmoid, too_short_to_tell
from .features import Found, Heads, Scored, bm25_sum, piece_cosines, why
from .http_status import with_status_phrases
from .matching import COMPILED_PATTERNS, PATTERN_TEXT_CHARS, PatternMatcher
from .mentions import ClassOwners, LibraryMentions, library_aliases, library_companions
from .near_ties import settle_near_ties
from .ownership import PYTHON_REPO, PythonOwnership, distinctive_templates, generic_elsewhere, unrecorded_owner
from .partial_messages import PartialMessages, head_share, lend_dense, matching_alone, outmatch_generic
from .pattern_hits import pattern_hits
from .pattern_owners import pattern_owners
from .query_words import query_words
from .signals import SignalIndex, message_words, path_tail
from .sorted_sets import contains, distinct_counted, intersection, union
from .weights import FittedWeights, load_weights

__all__ = ["Retriever"]

# Records beyond this many nearest by cosine get the lowest cosine seen (bounds the cost of large indexes).
DENSE_DEPTH = 1_000
# An approximate vector index scores this many nearest exactly, the rest of DENSE_DEPTH by its 8-bit codes.
EXACT_COSINES = 25
# Subtracted from the fused score of a library's record that cannot answer a Python error raised where that
# library is not in play (see ownership.py): it ranks below every record of Python's own.
NOT_IN_PLAY = 1_000.0


def _peak(values: np.ndarray, among: np.ndarray | None) -> float:
    """The largest of ``values`` (of those ``among`` masks, when any is), 0 for none."""
    chosen = values if among is None or not among.any() else values[among]
    return float(chosen.max()) if len(chosen) else 0.0


def _scaled(values: np.ndarray, among: np.ndarray | None) -> np.ndarray:
    peak = _peak(values, among)
    return values / peak if peak > 0 else values


def query_model(query: Query) -> str:
    """Which fusion weights score ``query``: "prose" for a question or a paste with no error line, else "error"."""
    return "prose" if query.kind == "question" or not query.error_line else "error"


def embedded_text(query: Query) -> str:
    """What is embedded of ``query``: a prose one whole, a pasted error its error line."""
    return query.text if query_model(query) == "prose" else (query.error_line or query.text)


class Retriever:
    """Exact, lexical and dense signals over the records, fused by learned weights, with a confidence."""

    def __init__(
        self,
        records: Sequence[Record],
        embedder: Embedder,
        vector_index: VectorStore,
        *,
        signals: SignalIndex | None = None,
        pieces: PieceVectors | None = None,
        confidence_threshold: float | None = None,
        weights: FittedWeights | None = None,
        full_scoring_limit: int = FULL_SCORING_LIMIT,
    ):
        """``signals``: the records' :class:`SignalIndex` when it was saved (else built here, one pass).
        ``pieces``: the records' piece vectors (by position; ``None``: the piece features take the whole
        record's cosine). ``full_scoring_limit``: up to this many records every record is scored, beyond
        only candidates."""
        self.records = records if isinstance(records, Sequence) else list(records)
        self.embedder = embedder
        self.vector_index = vector_index
        fitted = weights or load_weights()
        threshold = fitted.confidence_threshold if confidence_threshold is None else confidence_threshold
        self.confidence_threshold = threshold
        self.full_scoring_limit = full_scoring_limit
        self.weights = fitted.fusion
        self.confidence_weights = fitted.confidence
        self.ingested_offset = fitted.ingested_offset
        self.general_confidence = fitted.general_confidence
        self.signals = signals if signals is not None else SignalIndex.build(self.records)
        if len(self.signals) != len(self.records):
            raise ValueError(f"a signal index of {len(self.signals)} records for {len(self.records)} records")
        if pieces is not None and len(pieces) > len(self.records):  # fewer: the first records' (see features.py)
            raise ValueError(f"piece vectors of {len(pieces)} records for {len(self.records)} records")
        self.pieces = pieces
        n = len(self.signals)
        # FAISS row -> position in self.records (rows of records not loaded are ignored).
        self._row_to_pos = positions_of(self.signals.ids, vector_index.record_ids)
        class_counts = self.signals.classes.counts()
        self._class_rarity = {c: math.log((n + 1) / k) / math.log(n + 1) for c, k in class_counts.items()}
        self.mentions = LibraryMentions(self.signals.library_names, library_aliases(), library_companions())
        self.class_owners = ClassOwners(self.signals.classes, self.signals.repos, PYTHON_REPO)
        self.matcher = PatternMatcher(owners=lambda source: pattern_owners(self.signals, self.records, source))
        # A pattern's text decoded once (each query tries a few dozen; a million would not fit).
        self._pattern_source = functools.lru_cache(maxsize=COMPILED_PATTERNS)(self.signals.patterns.__getitem__)
        self.ownership = PythonOwnership(self.records, self.signals, self.matcher)
        self.partial = PartialMessages(self.records, self.signals, self.matcher, self._pattern_source)
        self._is_ingested: np.ndarray | None = None  # per record, made on first use (see _unknown_share)

    # --- what each signal finds ----------------------------------------------------------------

    def _patterns(self, query: Query) -> tuple[np.ndarray, np.ndarray, np.ndarray, Heads | None]:
        """Records whose pattern matches a message, with their specificity, those matching the text, and the
        heads to try when no pattern matches a message (``pattern_hits.py``)."""
        return pattern_hits(query, self.signals, self.matcher, self._pattern_source)

    def _libraries(self, query: Query) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Records of the libraries in the frames or module path, of those named, and of either."""
        seen_repos = {self.mentions.repo_of[lib] for lib in query.libraries if lib in self.mentions.repo_of}
        owner = self.class_owners.owner(query.exception_class, query.exception_qualname)
        seen_repos |= {owner} if owner else set()
        named = self.mentions.named(query.text[:PATTERN_TEXT_CHARS])
        repos = self.signals.repos
        known = repos.union(seen_repos | named) if seen_repos | named else None
        return repos.union(seen_repos), repos.union(named), known

    def _nearest(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """The nearest records by cosine (ascending positions, their cosines) and the lowest cosine seen."""
        depth = min(len(self.vector_index), DENSE_DEPTH)
        scores, rows = self.vector_index.search(vector, depth, exact=EXACT_COSINES)
        scores, rows = scores[0].astype(np.float64), rows[0]
        found = rows >= 0
        floor = float(scores[found].min()) if found.any() else 0.0
        positions = self._row_to_pos[rows[found]]
        kept = positions >= 0
        order = np.argsort(positions[kept], kind="stable")
        return positions[kept][order], scores[found][kept][order], floor

    def _api_changes(self, positions: np.ndarray) -> np.ndarray:
        """Of ``positions`` (ascending), the API-change records (``errata kb build-ecosystem``'s)."""
        if not len(positions):
            return NONE
        return positions[contains(self.signals.api_changes, positions)]  # saved with the signals: no record read

    def _find(self, query: Query, vector: np.ndarray, quoted: frozenset[str]) -> Found:
        on_message, specificity, on_text, heads = self._patterns(query)
        cls = query.exception_class
        frame_files = {path_tail(f.file) for f in query.frames}
        raising = {path_tail(query.frames[-1].file)} if query.frames else set()
        raising |= files_named(self.signals.files, query.raised_in)
        seen, named, known = self._libraries(query)
        # Records whose message holds every quoted word (when the query quotes a message of 2+ words).
        overlap, overlap_share = self._overlap(quoted)
        covered = overlap[overlap_share == 1.0]  # every quoted word (the postings are read once, for both)
        dense, cosines, floor = self._nearest(vector)
        return Found(
            on_message=on_message,
            specificity=specificity,
            on_text=on_text,
            same_class=self.signals.classes.get(cls) if cls else NONE,
            raising_file=self.signals.files.union(frame_files),
            raising_frame=self.signals.files.union(raising) if raising else NONE,
            seen=seen,
            named=named,
            known=known,
            covered=covered,
            overlap=overlap,
            overlap_share=overlap_share,
            dense=dense,
            cosines=cosines,
            floor=floor,
            heads=heads,
            distinctive=distinctive_templates(
                self.records, self.signals, intersection(on_message, self.signals.generic_ingested)
            ),
        )

    # --- scoring ---------------------------------------------------------------------------------

    def score(self, query: Query) -> Scored:
        """The signal features and fused scores of every record (of the candidates, in a large one)."""
        n = len(self.records)
        model = query_model(query)
        error_text = " ".join(x for x in (query.error_line, *query.causes) if x)
        # A question tells a status by number ("a 403 error"); a pasted error prints the library's own text.
        search_text = with_status_phrases(query.text) if model == "prose" else error_text
        vector = self.embedder.encode([embedded_text(query)])
        quoted = message_words(query.message or "")
        found = self._find(query, vector, quoted)
        message_tokens, all_tokens, words, distinct = query_words(search_text, self.signals)
        columns = {w: self.signals.all_columns(w) for w in words}  # each word's column read once per query
        unknown = self._unknown_share(columns, distinct)
        scored = None if n <= self.full_scoring_limit else select_candidates(found, columns)
        m = n if scored is None else len(scored)
        in_all = {w: restricted(column, scored) for w, column in columns.items()}
        in_message = {t: restricted(self.signals.message_columns(t), scored) for t in set(message_tokens)}

        def spread(positions: np.ndarray, values: np.ndarray | float = 1.0, base: float = 0.0) -> np.ndarray:
            """Values at ``positions`` (ascending), ``base`` elsewhere, for the records scored."""
            out = np.full(m, base)
            where, picked = among(positions, scored)
            out[where] = values if np.ndim(values) == 0 else np.asarray(values)[picked]
            return out

        # Ranks and maxima are read among curated records (see reciprocal_rank).
        curated = spread(self.signals.ingested, 0.0, base=1.0) > 0 if len(self.signals.ingested) else None
        class_equal = spread(found.same_class)
        rarity = self._class_rarity.get(query.exception_class or "", 0.0)
        lex_msg = bm25_sum(in_message, message_tokens, m)
        lex_all = bm25_sum(in_all, all_tokens, m)
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
                _scaled(lex_msg, curated),
                _scaled(lex_all, curated),
                reciprocal_rank(lex_all, curated),
                np.log1p(lex_all),
                dense,
                dense - _peak(dense, curated),
                reciprocal_rank(dense, curated),
                held / max(len(words), 1),
                np.full(m, unknown),
                np.full(m, has_message),
                spread(found.covered),
                weighted,
                spread(found.overlap, found.overlap_share),
                *piece_cosines(self.pieces, vector[0], scored, dense),
                spread(found.raising_frame),
            ]
        )
        penalized, all_but = self._not_in_play(query, found)
        penalty = np.full(m, NOT_IN_PLAY if all_but else 0.0)
        if len(penalized):
            where, _picked = among(penalized, scored)
            penalty[where] = 0.0 if all_but else NOT_IN_PLAY
        offset = None
        if self.ingested_offset and len(self.signals.ingested):
            offset = np.zeros(m)
            where, _picked = among(self.signals.ingested, scored)
            offset[where] = self.ingested_offset
            # A removed or renamed API whose record matches the pasted message is the cause, whatever curated
            # record reads alike (Python's own unexpected-keyword TypeError for httpx 0.28's `proxies`).
            where, _picked = among(self._api_changes(found.on_message), scored)
            offset[where] = 0.0
        weights = self.weights[model]
        scores = features @ weights - penalty - (0.0 if offset is None else offset)
        if found.heads is not None and self.partial.mark_heads(found.heads, features, scores, scored):
            scores = features @ weights - penalty - (0.0 if offset is None else offset)
        if offset is not None and curated is not None:
            generic = spread(generic_elsewhere(self.signals.generic_ingested, found)) > 0
            generic_row = self.partial.generic_row(scored)
            alone = matching_alone(features, curated, generic, generic_row, head_share(query))
            offset[alone] = 0.0
            outmatch_generic(features, curated, alone, generic_row, self.partial.repo_row(scored))
            lend_dense(features, scores, curated, alone, bool(query.exception_class))
            scores = features @ weights - penalty - offset
        record_of = self.partial.record_row(scored)
        is_curated = np.ones(m, dtype=bool) if curated is None else curated
        scores = settle_near_ties(query, features, penalty, offset, weights, record_of, is_curated, self.matcher)
        reworded = self.partial.reworded_row(query, features, scores, offset, scored)
        return Scored(features, scores, model, scored, penalty, offset, reworded)

    def _unknown_share(self, columns: dict[int, tuple[np.ndarray, np.ndarray]], distinct: int) -> float:
        """The share of the query's ``distinct`` words no curated record holds (``columns``: the known
        ones'). Thousands of ingested records know most words of any paste, which made a question about
        something undocumented look familiar (its confidence rose over the threshold); the curated
        records' vocabulary keeps the meaning the confidence was fitted with."""
        if not distinct:
            return 0.0
        known = len(columns)
        if len(self.signals.ingested) and known:
            if self._is_ingested is None:
                self._is_ingested = np.zeros(len(self.records), dtype=bool)
                self._is_ingested[self.signals.ingested] = True
            known = sum(1 for where, _values in columns.values() if not self._is_ingested[where].all())
        return 1.0 - known / distinct

    def _overlap(self, quoted: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
        """Records holding the quoted message's literal words, and the share of them each holds: a message
        worded as another release words it shares most of its words with the record (a near miss, few)."""
        if len(quoted) < 2:
            return NONE, np.zeros(0)
        columns = [self.signals.message_words.get(w) for w in quoted]
        columns = [c for c in columns if len(c)]
        if not columns:
            return NONE, np.zeros(0)
        records, counts = distinct_counted(np.concatenate(columns))
        return records, counts / len(quoted)

    def _not_in_play(self, query: Query, found: Found) -> tuple[np.ndarray, bool]:
        """Records that cannot answer this error (see ``PythonOwnership.not_in_play``), and ingested generic
        templates of libraries not in play: as ascending positions, and whether given as all *but* those."""
        penalized, all_but = self.ownership.not_in_play(query, found)
        generic = generic_elsewhere(self.signals.generic_ingested, found)
        if not len(generic):
            return penalized, all_but
        if all_but:
            return np.setdiff1d(penalized, generic, assume_unique=True), True
        return union(penalized, generic), False

    def _coverage(self, in_all: dict[int, tuple[np.ndarray, np.ndarray]], m: int) -> tuple[np.ndarray, np.ndarray]:
        """How many of the query's words (``in_all``: where each is among the records scored) each record
        holds, and their share weighted by idf: a record with the query's rare words (a tool's name, an
        unusual term) covers more of what the query is about."""
        n = len(self.records)
        if not in_all:
            return np.zeros(m), np.zeros(m)
        idf = np.array([math.log((n + 1) / (self.signals.all_columns.size(w) + 0.5)) for w in in_all])
        wheres = [where for where, _values in in_all.values()]
        rows = np.concatenate(wheres).astype(np.int64, copy=False)
        held = np.bincount(rows, minlength=m).astype(np.float64)  # one pass for every word (a word holds a row once)
        weighted = np.bincount(rows, weights=np.repeat(idf, [len(w) for w in wheres]), minlength=m)
        total = float(idf.sum())
        return held, weighted / total if total > 0 else weighted

    # --- ranking and confidence ------------------------------------------------------------------

    def retrieve(self, query: Query, k: int = 5) -> Retrieval:
        """The ``k`` best records for ``query``, best first, and how sure errata is of the first."""
        if query.kind == "empty" or not self.records:
            return Retrieval([], 0.0, False)
        scored = self.score(query)
        order = best(scored.scores, max(k, 2))
        confidence = self.confidence(scored, order)
        if self.cannot_tell(query):
            confidence = min(confidence, SHORT_QUERY_CONFIDENCE)
        hits = [
            Hit(self.records[scored.position(j)], float(scored.scores[j]), why(scored.features[j])) for j in order[:k]
        ]
        general_for = unrecorded_owner(query, hits[0].record) if hits else None
        if general_for:  # a general explanation is as sure as such answers are right, never as the cause's own
            confidence = min(confidence, self.general_confidence)
        return Retrieval(hits, confidence, confidence >= self.confidence_threshold, general_for)

    def cannot_tell(self, query: Query) -> bool:
        """Whether the query holds too little to tell one error from another, whatever ranks first: its
        confidence is capped below any threshold (``retrieve``; the confidence fit reads the same rule)."""
        return too_short_to_tell(query) or self._bare_unknown_class(query)

    def _bare_unknown_class(self, query: Query) -> bool:
        """An error line that is only a class no record has (``PanicException`` closing a cut traceback):
        nothing in it to match, whatever the frames above it; errata asks for the message instead."""
        cls = query.exception_class
        return bool(query.kind != "question" and cls and not query.message and cls not in self.signals.classes)

    def confidence(self, scored: Scored, order: np.ndarray) -> float:
        """The probability that the first record answers the query (logistic over the top hit's signals)."""
        return float(sigmoid(confidence_features(scored, order) @ self.confidence_weights[scored.model]))
