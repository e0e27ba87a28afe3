"""The Retriever: finds the records that answer a Query and says how confident it is.

Five signals are computed for every record:

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
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import bm25s
import numpy as np
import regex
from bm25s.stopwords import STOPWORDS_EN

from .embed import Embedder
from .index import VectorIndex
from .pattern_index import PatternIndex
from .query import Query, normalize_library
from .records import Record

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

_PLACEHOLDER_RE = re.compile(r"\{[^{}]*\}")
_QUOTED_RE = re.compile(r"'[^'\n]{0,80}'|\"[^\"\n]{0,80}\"")
_VALUE_RE = re.compile(r"\S*[/\\=\d]\S*")  # paths, URLs, key=value pairs, numbers, versions, model names
_MESSAGE_WORD_RE = re.compile(r"[a-z_][a-z0-9_]+")
_STOPWORDS = frozenset(STOPWORDS_EN)

_STOP_DIRS = frozenset({"src", "lib", "libs", "python", "packages", "utils", "tests", "test", "internal"})


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
    """Every record's features and fused score for one query (what ``retrieve`` ranks by)."""

    features: np.ndarray  # (records, len(FEATURES))
    scores: np.ndarray  # (records,)
    model: str  # "error" or "prose"


def _tokenize(texts: Sequence[str]):
    return bm25s.tokenize(list(texts), stopwords="en", show_progress=False)


def literal_chars(pattern: str) -> int:
    """How many characters a regex pins down literally: a rough measure of how specific it is."""
    count = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        optional = pattern[i + 2 : i + 3] if c == "\\" else pattern[i + 1 : i + 2]
        if optional in ("?", "*") and c not in "()[]{}|*+?.^$":  # an optional character pins nothing
            i += 3 if c == "\\" else 2
        elif c == "\\" and i + 1 < len(pattern):
            count += 0 if pattern[i + 1].isalnum() else 1
            i += 2
        elif c == "[":
            close = pattern.find("]", i + 2)
            i = close + 1 if close > 0 else len(pattern)
        elif c == "{" and re.match(r"\{\d*,?\d*\}", pattern[i:]):
            i = pattern.find("}", i) + 1
        elif c == "(" and pattern.startswith("(?", i):
            m = re.match(r"\(\?(?:P<\w+>|[:=!]|<[=!]|[aiLmsux]+\)?)", pattern[i:])
            i += m.end() if m else 2
        elif c in "()|*+?.^$":
            i += 1
        else:
            count += 1
            i += 1
    return count


def message_words(message: str) -> frozenset[str]:
    """The literal words of an error message: what stays the same each time it is raised.

    Placeholders (``{name}``), quoted values, paths, ``key=value`` pairs, anything with a digit in it and
    stop words are left out, so a rendered message and the template it came from share their words.
    """
    text = _PLACEHOLDER_RE.sub(" ", message[:PATTERN_MESSAGE_CHARS])
    text = _VALUE_RE.sub(" ", _QUOTED_RE.sub(" ", text))
    return frozenset(w for w in _MESSAGE_WORD_RE.findall(text.lower()) if w not in _STOPWORDS)


@functools.lru_cache(maxsize=COMPILED_PATTERNS)
def _compile(pattern: str):
    """Compiled on first use, kept for the most recent ones: a million compiled patterns would not fit."""
    try:
        return regex.compile(pattern)
    except (regex.error, ValueError, OverflowError):
        logger.warning("skipping the invalid messagePattern %r", pattern)
        return None


def library_names(records: Iterable[Record]) -> dict[str, frozenset[str]]:
    """For each repo, the package names people see: its import name(s), its repo name, its first tag.

    A name counts when at least half of the repo's records sit under a folder of that name and no other
    repo uses it, so ``pydantic_ai`` and ``pydantic`` stay apart.
    """
    counts = LibraryCounts()
    for r in records:
        counts.add(r)
    return counts.names()


class LibraryCounts:
    """What :func:`library_names` needs of each record, gathered one record at a time."""

    def __init__(self) -> None:
        self.records: Counter = Counter()
        self.folders: dict[str, Counter] = defaultdict(Counter)
        self.tags: dict[str, set[str]] = defaultdict(set)

    def add(self, r: Record) -> None:
        self.records[r.repo] += 1
        self.folders[r.repo].update({normalize_library(p) for p in r.file_path.split("/")[:-1][:4]})
        if r.tags:
            self.tags[r.repo].add(normalize_library(r.tags[0]))

    def names(self) -> dict[str, frozenset[str]]:
        owners: Counter = Counter()
        names: dict[str, set[str]] = {}
        for repo, count in self.records.items():
            repo_name = normalize_library(repo.split("/")[-1])
            found = {repo_name, re.sub(r"(_sdk)?_python$", "", repo_name)}
            found |= {n for n, c in self.folders[repo].items() if c * 2 >= count and n not in _STOP_DIRS}
            found |= self.tags[repo]
            names[repo] = {n for n in found if n.isidentifier() and len(n) > 2}
            owners.update(names[repo])
        return {repo: frozenset(n for n in ns if owners[n] == 1) for repo, ns in names.items()}


@dataclass
class _Columns:
    """Everything the Retriever keeps or indexes of every record, read in one pass over the records
    (records on a shelf are parsed once here, not once per signal)."""

    ids: list[str]
    patterns: list[str]
    classes: list[str]
    file_tails: list[str]
    repos: list[str]
    message_texts: list[str]
    all_texts: list[str]
    message_words: list[frozenset[str]]
    libraries: LibraryCounts

    @classmethod
    def read(cls, records: Iterable[Record]) -> _Columns:
        columns = cls([], [], [], [], [], [], [], [], LibraryCounts())
        for r in records:
            columns.ids.append(r.id)
            columns.patterns.append(r.message_pattern)
            columns.classes.append(r.error_class)
            columns.file_tails.append(_path_tail(r.file_path))
            columns.repos.append(r.repo)
            columns.message_texts.append(_message_text(r))
            columns.all_texts.append(_all_text(r))
            columns.message_words.append(message_words(r.error_message))
            columns.libraries.add(r)
        return columns


class Retriever:
    """Exact, lexical and dense signals over the records, fused by learned weights, with a confidence."""

    def __init__(
        self,
        records: Sequence[Record],
        embedder: Embedder,
        vector_index: VectorIndex,
        *,
        confidence_threshold: float = CONFIDENCE_THRESHOLD,
        weights: dict[str, dict[str, float]] | None = None,
        confidence_weights: dict[str, dict[str, float]] | None = None,
    ):
        self.records = records if isinstance(records, Sequence) else list(records)
        self.embedder = embedder
        self.vector_index = vector_index
        self.confidence_threshold = confidence_threshold
        self.weights = {model: np.array([w.get(f, 0.0) for f in FEATURES]) for model, w in (weights or WEIGHTS).items()}
        self.confidence_weights = {
            model: np.array([w.get(f, 0.0) for f in CONFIDENCE_FEATURES])
            for model, w in (confidence_weights or CONFIDENCE_WEIGHTS).items()
        }
        columns = _Columns.read(self.records)
        n = len(columns.ids)
        position = {rid: i for i, rid in enumerate(columns.ids)}
        # FAISS row -> position in self.records (rows of records not loaded are ignored).
        self._row_to_pos = np.array([position.get(rid, -1) for rid in vector_index.record_ids], dtype=np.int64)
        del position
        self._pattern_index = PatternIndex(columns.patterns)
        self._pattern_texts = columns.patterns  # read per query for the candidates: kept, not re-read from disk
        self._literals = np.array([literal_chars(p) for p in columns.patterns], dtype=np.float64)
        self._class_index, self._class_codes = _codes(columns.classes)
        class_counts = Counter(columns.classes)
        self._class_rarity = {c: math.log((n + 1) / k) / math.log(n + 1) for c, k in class_counts.items()}
        self._file_index, self._file_codes = _codes(columns.file_tails)
        names = columns.libraries.names()
        self._repo_names = names
        self._repo_index, self._repo_codes = _codes(columns.repos)
        self._library_to_repo = {name: repo for repo, ns in names.items() for name in ns}
        mention_words = sorted(self._library_to_repo, key=len, reverse=True)
        variants = {v: w for w in mention_words for v in {w, w.replace("_", "-"), w.replace("_", " ")}}
        # No name is a library's own (every repo shares its names with another): nothing can be mentioned.
        alternatives = "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
        self._mention_re = (
            re.compile(r"(?<![\w.-])(" + alternatives + r")(?![\w-])", re.IGNORECASE) if variants else None
        )
        self._mention_variants = {v.lower(): w for v, w in variants.items()}
        self._bm25_message = bm25s.BM25()
        self._bm25_message.index(_tokenize(columns.message_texts), show_progress=False)
        corpus = _tokenize(columns.all_texts)
        self._bm25_all = bm25s.BM25()
        self._bm25_all.index(corpus, show_progress=False)
        # Each record's words, as ids of the BM25 vocabulary, for the coverage signal.
        known = self._bm25_all.vocab_dict
        names = {i: w for w, i in corpus.vocab.items()}
        record_words = (frozenset(known[names[i]] for i in ids if names[i] in known) for ids in corpus.ids)
        # Which records hold each word (the coverage signals), and how rare the word is.
        self._postings = _postings(record_words)
        self._idf = {w: math.log((n + 1) / (len(rs) + 0.5)) for w, rs in self._postings.items()}
        # Which records' messages hold each literal message word (the message_covered signal).
        self._message_postings = _postings(columns.message_words)
        self._slow_patterns: set[str] = set()

    # --- signals -------------------------------------------------------------------------------

    def _pattern_signals(self, query: Query) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(self.records)
        on_message = np.zeros(n)
        specificity = np.zeros(n)
        on_text = np.zeros(n)
        messages = [m for m in (query.message, *query.causes) if m]
        if query.exception_class and query.message:
            messages.append(query.error_line or "")
        messages = [m[:PATTERN_MESSAGE_CHARS] for m in messages]
        text = query.text[-PATTERN_TEXT_CHARS:]
        length = max((len(m) for m in messages[:1]), default=0)
        found: dict[str, tuple[bool, bool]] = {}  # records sharing a pattern share its result
        for i in self._pattern_index.candidates([text, *messages]):
            source = self._pattern_texts[i]
            if source not in found:
                found[source] = self._match(i, source, messages, text)
            matched_message, matched_text = found[source]
            if matched_message:
                on_message[i] = 1.0
                specificity[i] = min(1.0, self._literals[i] / max(length, 1))
            elif matched_text:
                on_text[i] = 1.0
        return on_message, specificity, on_text

    def _match(self, i: int, source: str, messages: list[str], text: str) -> tuple[bool, bool]:
        """Whether record ``i``'s pattern matches one of the messages, else the whole text."""
        pattern = _compile(source)
        if pattern is None or source in self._slow_patterns:
            return False, False
        if messages and any(self._search(i, pattern, m) for m in messages):
            return True, False
        return False, self._search(i, pattern, text)

    def _search(self, i: int, pattern, text: str) -> bool:
        try:
            return pattern.search(text, timeout=PATTERN_TIMEOUT_S) is not None
        except TimeoutError:
            self._slow_patterns.add(pattern.pattern)
            logger.warning("messagePattern of record %s backtracks too long; it is no longer used", self.records[i].id)
            return False

    def _library_signals(self, query: Query) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        seen_repos = {self._library_to_repo[lib] for lib in query.libraries if lib in self._library_to_repo}
        mentions = self._mention_re.finditer(query.text[:PATTERN_TEXT_CHARS]) if self._mention_re else ()
        named = {self._library_to_repo[self._mention_variants[m.group(1).lower()]] for m in mentions}
        seen = self._among(self._repo_codes, self._repo_index, seen_repos)
        named_arr = self._among(self._repo_codes, self._repo_index, named)
        known = seen_repos | named
        other = 1.0 - self._among(self._repo_codes, self._repo_index, known) if known else np.zeros(len(self.records))
        return seen, named_arr, other

    @staticmethod
    def _among(codes: np.ndarray, index: dict[str, int], values) -> np.ndarray:
        """1.0 where a record's value (a repo, a class, a file) is one of ``values``."""
        wanted = [index[v] for v in values if v in index]
        return np.isin(codes, wanted).astype(np.float64) if wanted else np.zeros(len(codes))

    @staticmethod
    def _holding(postings: dict, words, n: int) -> np.ndarray:
        """How many of ``words`` each record holds, counted from the words' postings."""
        found = [postings[w] for w in words if w in postings]
        return np.bincount(np.concatenate(found), minlength=n).astype(np.float64) if found else np.zeros(n)

    def _words(self, text: str) -> tuple[set[int], float]:
        """The query's distinct known words (vocabulary ids) and the share of its words no record has."""
        tokens = _tokenize([text])
        if not tokens.ids or not tokens.ids[0]:
            return set(), 0.0
        strings = {w for w, i in tokens.vocab.items() if i in set(tokens.ids[0])}
        known = self._bm25_all.vocab_dict
        ids = {known[w] for w in strings if w in known}
        return ids, 1.0 - len(ids) / max(len(strings), 1)

    def _weighted_coverage(self, words: set[int]) -> np.ndarray:
        """Each record's share of the query's words, weighted by idf: a record that has the query's rare
        words (a tool's name, an unusual term) covers more of what the query is about than common ones."""
        out = np.zeros(len(self.records))
        total = sum(self._idf.get(w, 0.0) for w in words)
        for w in words:
            if w in self._postings:
                out[self._postings[w]] += self._idf[w]
        return out / total if total > 0 else out

    def _lexical(self, bm25: bm25s.BM25, text: str) -> np.ndarray:
        tokens = _tokenize([text])
        if not tokens.ids or not tokens.ids[0]:
            return np.zeros(len(self.records))
        # bm25s.get_scores takes token strings known to the index.
        vocab = {v: k for k, v in tokens.vocab.items()}
        words = [vocab[t] for t in tokens.ids[0]]
        return np.asarray(bm25.get_scores(words), dtype=np.float64)

    def _dense(self, text: str) -> np.ndarray:
        n = len(self.records)
        vector = self.embedder.encode([text])
        depth = min(len(self.vector_index), DENSE_DEPTH)
        scores, rows = self.vector_index.search(vector, depth)
        out = np.full(n, float(scores[0][rows[0] >= 0].min()) if (rows[0] >= 0).any() else 0.0)
        for score, row in zip(scores[0], rows[0], strict=False):
            if row >= 0 and self._row_to_pos[row] >= 0:
                out[self._row_to_pos[row]] = float(score)
        return out

    def score(self, query: Query) -> Scored:
        """Every record's signal features and fused score for ``query``."""
        n = len(self.records)
        model = "prose" if query.kind == "question" or not query.error_line else "error"
        error_text = " ".join(x for x in (query.error_line, *query.causes) if x)
        search_text = query.text if model == "prose" else error_text
        dense_text = query.text if model == "prose" else (query.error_line or query.text)

        on_message, specificity, on_text = self._pattern_signals(query)
        cls = query.exception_class
        class_equal = self._among(self._class_codes, self._class_index, {cls}) if cls else np.zeros(n)
        class_rarity = class_equal * self._class_rarity.get(cls, 0.0) if cls else np.zeros(n)
        frame_tails = {_path_tail(f.file) for f in query.frames}
        raising_file = self._among(self._file_codes, self._file_index, frame_tails)
        seen, named, other = self._library_signals(query)
        lex_msg = self._lexical(self._bm25_message, search_text)
        lex_all = self._lexical(self._bm25_all, search_text)
        dense = self._dense(dense_text)
        words, unknown = self._words(search_text)
        coverage = self._holding(self._postings, words, n) / max(len(words), 1)
        weighted_coverage = self._weighted_coverage(words)
        quoted = message_words(query.message or "")
        has_message = float(len(quoted) >= 2)
        # Records whose message holds every quoted word: those in all the words' postings.
        covered = (self._holding(self._message_postings, quoted, n) == len(quoted)).astype(np.float64)
        covered *= has_message > 0

        features = np.column_stack(
            [
                on_message,
                specificity,
                on_text,
                class_equal,
                class_rarity,
                raising_file,
                seen,
                named,
                other,
                lex_msg / lex_msg.max() if lex_msg.max() > 0 else lex_msg,
                lex_all / lex_all.max() if lex_all.max() > 0 else lex_all,
                _reciprocal_rank(lex_all),
                np.log1p(lex_all),
                dense,
                dense - dense.max(),
                _reciprocal_rank(dense),
                coverage,
                np.full(n, unknown),
                np.full(n, has_message),
                covered,
                weighted_coverage,
            ]
        )
        return Scored(features, features @ self.weights[model], model)

    # --- ranking and confidence ------------------------------------------------------------------

    def retrieve(self, query: Query, k: int = 5) -> Retrieval:
        """The ``k`` best records for ``query``, best first, and how sure errata is of the first."""
        if query.kind == "empty" or not self.records:
            return Retrieval([], 0.0, False)
        scored = self.score(query)
        order = _best(scored.scores, max(k, 2))
        confidence = self.confidence(scored, order)
        hits = [Hit(self.records[i], float(scored.scores[i]), _why(scored.features[i], i, order)) for i in order[:k]]
        return Retrieval(hits, confidence, confidence >= self.confidence_threshold)

    def confidence(self, scored: Scored, order: np.ndarray) -> float:
        """The probability that the first record answers the query (logistic over the top hit's signals)."""
        return float(_sigmoid(confidence_features(scored, order) @ self.confidence_weights[scored.model]))


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


def _why(f: np.ndarray, i: int, order: np.ndarray) -> tuple[str, ...]:
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


def _codes(values) -> tuple[dict[str, int], np.ndarray]:
    """Each distinct value numbered, and every record's number: compared as integers, not strings."""
    index: dict[str, int] = {}
    codes = [index.setdefault(v, len(index)) for v in values]
    return index, np.array(codes, dtype=np.int32)


def _postings(word_sets) -> dict:
    """Word -> the ascending positions of the records whose set holds it."""
    holders: dict = defaultdict(list)
    for i, words in enumerate(word_sets):
        for w in words:
            holders[w].append(i)
    return {w: np.array(rs, dtype=np.int32) for w, rs in holders.items()}


def _reciprocal_rank(values: np.ndarray) -> np.ndarray:
    """1 / (1 + rank), ranks exact for the best ``RANK_DEPTH`` records; all others share rank RANK_DEPTH
    (a large knowledge base is not sorted whole for a signal below 0.001 there)."""
    ranks = np.full(len(values), float(RANK_DEPTH))
    top = _best(values, RANK_DEPTH)
    ranks[top] = np.arange(len(top))
    return 1.0 / (1.0 + ranks)


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


def _path_tail(path: str) -> str:
    """The last two parts of a path: ``faiss/class_wrappers.py`` whether installed or in the repo."""
    parts = [p for p in re.split(r"[/\\]", path) if p]
    return "/".join(parts[-2:])


def _message_text(record: Record) -> str:
    return f"{record.error_class} {record.error_message} {record.slug.replace('-', ' ')}"


def _all_text(record: Record) -> str:
    parts = [
        _message_text(record),
        record.documentation,
        record.trigger_scenarios or "",
        record.common_situations or "",
        " ".join(record.tags),
    ]
    return "\n".join(parts)
