"""The features the Retriever computes for each scored record, and what a scored query carries.

The names are the keys of ``weights.json``; their order is the columns of ``Scored.features``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..embedding.text import PIECE_NAMES
from ..index.pieces import PieceVectors

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
    "message_overlap",  # share of the quoted message's literal words in the record's message (a rewording)
    # cosine with each piece embedded apart (see index/pieces.py); the whole record's where it has none
    *(f"dense_{name}" for name in PIECE_NAMES),
    "raising_frame",  # the traceback's innermost frame, where the exception was raised, is the record's file
)


@dataclass(frozen=True)
class Scored:
    """The scored records' features and fused scores for one query (what ``retrieve`` ranks by)."""

    features: np.ndarray  # (scored records, len(FEATURES))
    scores: np.ndarray  # (scored records,)
    model: str  # "error" or "prose"
    positions: np.ndarray | None = None  # which records were scored; None: every record, in order
    # Subtracted from the fused score (records that cannot answer: see ownership.py), kept apart from the
    # features so a refit sees the same rule.
    penalty: np.ndarray | None = None
    # Subtracted from ingested records' scores (weights.ingested_offset); the confidence model adds it back
    # to the first record's, so an ingested record that ranks first is judged on its own evidence.
    offset: np.ndarray | None = None
    # The first row, when it is an ingested record whose pattern matches the pasted message but for its last
    # words (see PatternMatcher.reworded_tail): the confidence gives it the rewording allowance.
    reworded_row: int | None = None

    def is_offset(self, j: int) -> bool:
        """Whether scored row ``j`` is an ingested record, its score lowered by the offset."""
        return self.offset is not None and bool(self.offset[j])

    def evidence(self, top: int) -> np.ndarray:
        """The scores the confidence model reads: the ranking scores, the first record's without the offset."""
        if not self.is_offset(top):
            return self.scores
        scores = self.scores.copy()
        scores[top] += self.offset[top]
        return scores

    def position(self, j: int) -> int:
        """The record position of scored row ``j``."""
        return int(j) if self.positions is None else int(self.positions[j])


@dataclass(frozen=True)
class Heads:
    """What to try as the beginning of a pasted message no pattern matches whole: the messages, the patterns
    tried on them, and the first message's length (for the specificity of a pattern that begins it)."""

    messages: tuple[str, ...]
    missed: tuple[int, ...]  # pattern numbers
    length: int


@dataclass(frozen=True)
class Found:
    """What each signal found for one query, as ascending record positions (before scoring)."""

    on_message: np.ndarray
    specificity: np.ndarray  # for each of on_message
    on_text: np.ndarray
    same_class: np.ndarray
    raising_file: np.ndarray
    raising_frame: np.ndarray  # of those, the records raised in the innermost frame's file
    seen: np.ndarray
    named: np.ndarray
    known: np.ndarray | None  # records of the libraries the query names or shows; None: it names none
    covered: np.ndarray
    overlap: np.ndarray  # records holding any quoted message word
    overlap_share: np.ndarray  # for each of overlap: the share of the quoted words it holds
    dense: np.ndarray
    cosines: np.ndarray  # for each of dense
    floor: float  # the cosine of every record beyond the nearest
    heads: Heads | None = None  # set when no pattern matches a message whole
    # Generic templates of libraries not in play whose pattern matched the message with a rare word of their own
    # (see ownership.distinctive_templates): neither penalized nor offset as generic.
    distinctive: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def bm25_sum(in_columns: dict[int, tuple[np.ndarray, np.ndarray]], tokens: list[int], m: int) -> np.ndarray:
    """BM25 of the records scored, summed as ``bm25s`` sums it (token by token, repeats too), from its
    matrix: bm25s scores every record, which a million records make too slow per query. One bincount over
    every token's records (float64; bm25s adds in float32, within a few units of its last digit)."""
    if not tokens:
        return np.zeros(m)
    columns = [in_columns[token] for token in tokens]
    rows = np.concatenate([where for where, _values in columns]).astype(np.int64, copy=False)
    values = np.concatenate([np.asarray(values, dtype=np.float64) for _where, values in columns])
    return np.bincount(rows, weights=values, minlength=m)


def piece_cosines(
    pieces: PieceVectors | None, query: np.ndarray, scored: np.ndarray | None, dense: np.ndarray
) -> list[np.ndarray]:
    """The ``dense_<piece>`` features of the records ``scored`` (``None``: all): the unit vector ``query``'s
    cosine with each piece, and ``dense`` (the whole record's) where a record has no such piece or no piece
    vectors are kept."""
    if pieces is None:
        return [dense] * len(PIECE_NAMES)
    if scored is None and len(pieces) == len(dense):
        cosines = pieces.cosines(query)
    else:  # records past the piece vectors' (the release-built ones) have no pieces: NaN, the whole cosine
        positions = np.arange(len(dense)) if scored is None else scored
        inside = positions < len(pieces)
        cosines = np.full((len(positions), len(PIECE_NAMES)), np.nan)
        if inside.any():
            cosines[inside] = pieces.cosines(query, positions[inside])
    return [np.where(np.isnan(cosines[:, j]), dense, cosines[:, j]) for j in range(len(PIECE_NAMES))]


def why(f: np.ndarray) -> tuple[str, ...]:
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
