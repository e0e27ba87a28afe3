"""Pasted messages that are only part of the error's: cut off, its first line alone, its end worded otherwise.

A paste often stops where the message goes on (dspy's ``Adapter ChatAdapter failed to parse the LM
response.`` before its ``LM Response: ...`` block; ``schema for ...``), and a user on an older release than
those the knowledge base was built from sees a message whose last words differ (pytest 2's ``..., involved
factories`` where pytest 8 says ``. Requesting fixture stack:``). A pattern's full match is the stronger
evidence, so these are asked only where it has nothing to say.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Sequence

import numpy as np

from ..knowledge.records import Record
from ..parse.query import Query
from .candidates import among
from .features import FEATURES, Heads
from .matching import PATTERN_MESSAGE_CHARS, PatternMatcher
from .patterns import literal_chars
from .signals import SignalIndex, message_words

# An ingested record whose pattern's literal text is at least this share of the pasted message's length
# (a template, not a placeholder with a word or two around it) and the only kind of record whose pattern
# matches the message ranks without the ingested offset.
SPECIFIC_ALONE = 0.5
# Where no pattern matches a pasted message whole, the patterns of this many of the best-ranked records are
# tried as its head too (see PartialMessages.mark_heads).
HEAD_DEPTH = 20

_CUT_RE = re.compile(r"\s*(?:\.\.\.|\u2026)$")
_WINERROR_RE = re.compile(r"\[WinError (\d+)\]")
# Another error told inside a message (datasets' ``... on the Hugging Face Hub either: FileNotFoundError:
# Unable to resolve ...``, its ``{type(e1).__name__}: {e1}``): from there on the text is that error's.
_TOLD_ERROR_RE = re.compile(r"[\s:(](?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): ")
_TYPOGRAPHY = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00d7": "x", "\u2013": "-", "\u00a0": " "}
)
# A value a message quotes: a name, a path, a key (``'20130102'``); a placeholder's filling, not the template's text.
_QUOTED_VALUES_RE = re.compile(r"'[^'\s]{1,80}'|\"[^\"\s]{1,80}\"")
_WORD_RE = re.compile(r"\w+")
_WRAPPED_RE = re.compile(r"[ \t]*\n[ \t]*")
WORDED_MIN_WORDS = 4
_PATTERN_MESSAGE = FEATURES.index("pattern_message")
_PATTERN_SPECIFICITY = FEATURES.index("pattern_specificity")
_PATTERN_TEXT = FEATURES.index("pattern_text")
_CLASS_EQUAL = FEATURES.index("class_equal")
_LIBRARY_NAMED = FEATURES.index("library_named")
_LIBRARY_SEEN = FEATURES.index("library_seen")
# The cosine features, which an ingested record (shipped without a vector) holds at the floor.
_DENSE = [i for i, name in enumerate(FEATURES) if name == "dense" or name.startswith("dense_")]


@functools.lru_cache(maxsize=16)
def pattern_messages(query: Query) -> tuple[str, ...]:
    """What patterns are tried on as messages: the pasted message, its causes and its error line. Kept for the
    last few queries: the pattern hits, the share a template must pin and the near-tie rules all read them."""
    messages = [m for m in (query.message, *query.causes) if m]
    if query.exception_class and query.message:
        messages.append(query.error_line or "")
    # A message cut off with "..." is matched without the dots, which would fill a placeholder (``schema for
    # ...`` is not ``schema for {type!r}.``); what is left may begin a message (see mark_heads).
    messages = [_CUT_RE.sub("", m[:PATTERN_MESSAGE_CHARS]) for m in messages]
    # Windows prints an OSError's code as ``[WinError 10061]`` where patterns expect ``[Errno N]``.
    variants = [_WINERROR_RE.sub(r"[Errno \1]", m) for m in messages if "[WinError " in m]
    # A message copied from a web page comes with its typography: curly quotes, ``2×1568`` for ``2x1568``.
    variants += [t for t in (m.translate(_TYPOGRAPHY) for m in messages[:1]) if t != messages[0]]
    # A long message wrapped over lines by a terminal or a page: its line breaks were spaces.
    variants += [_WRAPPED_RE.sub(" ", m) for m in messages[:1] if "\n" in m]
    key = _printed_key(query)
    if key:
        variants.append(key)
    # People drop a message's last full stop when they quote it (``Input y contains NaN``, ``... of type
    # 'mytasks.add'``); the pattern of ``Input {name}contains {kind}.`` then misses it for one character.
    variants += [m + "." for m in messages[:1] if m and (m[-1].isalnum() or m[-1] in "'\")]")]
    return (*messages, *variants)


def _printed_key(query: Query) -> str | None:
    """A KeyError's message as raised: Python prints the repr of a KeyError's argument, so pandas'
    ``None of [...] are in the [index]`` reaches the paste in quotes that no pattern has."""
    message = (query.message or "").strip()
    if (query.exception_class or "") != "KeyError" or len(message) < 3 or message[0] not in "'\"":
        return None
    try:
        value = ast.literal_eval(message)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) and value and value != message else None


def own_length(message: str) -> int:
    """How long ``message`` is up to an error it tells of its own: the length a pattern's literal text is a
    share of (``pattern_specificity``). The inner error's text fills the template's last placeholder; counted
    in, it made a template that pins every word of its own look unspecific."""
    told = _TOLD_ERROR_RE.search(message, 1)
    return told.start() + 1 if told else len(message)


def head_share(query: Query) -> float:
    """How many times longer the pasted message is than what its template words: a message whose first line
    says what went wrong and whose other lines list data (pydantic's ``1 validation error for Crew`` and each
    field's error under it) is pinned by a template of its first line; the values it quotes (pandas' ``None of
    [['20130102', '20130103']] are in the [index]``) are what the template's placeholders hold."""
    messages = pattern_messages(query)
    if not messages:
        return 1.0
    first = messages[0].split("\n", 1)[0].strip()
    unquoted = _QUOTED_VALUES_RE.sub("", first)
    # Only a message that says something besides its values (``KeyError: 'amount'`` is a value alone).
    worded = len(unquoted) if len(_WORD_RE.findall(unquoted)) >= WORDED_MIN_WORDS else len(first)
    return max(1.0, own_length(messages[0]) / max(worded, 1))


def matching_alone(
    features: np.ndarray,
    curated: np.ndarray,
    generic: np.ndarray,
    generic_curated: Callable[[int], bool],
    share: float = 1.0,
) -> np.ndarray:
    """Ingested records whose pattern pins most of the pasted message where no curated record's pattern
    matches it: those are not a curated raise's twin, so the ingested offset does not hold them back. Not a
    generic template (``generic``: see signals.GENERIC_WORDS), which matches messages of any library; and a
    curated template of no literal word matching (Python's ``{key}`` KeyError, whose pattern matches every
    KeyError) is no twin either (``generic_curated``: whether the curated record of a row is one)."""
    matched = features[:, _PATTERN_MESSAGE] > 0
    if any(not generic_curated(row) for row in np.flatnonzero(matched & curated).tolist()):
        return np.zeros(len(matched), dtype=bool)
    # ``share``: see head_share; a template pinning most of the first line pins what the message says.
    return matched & ~generic & (np.minimum(1.0, features[:, _PATTERN_SPECIFICITY] * share) >= SPECIFIC_ALONE)


def outmatch_generic(
    features: np.ndarray,
    curated: np.ndarray,
    alone: np.ndarray,
    generic_curated: Callable[[int], bool],
    repo_of: Callable[[int], str],
) -> None:
    """Where a library's template pinning the pasted message matches alone (see matching_alone), the same
    library's curated record whose pattern holds no literal word no longer counts as matching the message
    (``features`` updated in place): pandas' ``KeyError: '{key}'`` matches every KeyError, its ``None of [...]
    are in the [index]`` only its own. Another library's (Python's own ``{key}``) keeps its match."""
    ingested = alone & ~curated
    if not ingested.any():
        return
    owners = {repo_of(row) for row in np.flatnonzero(ingested).tolist()}
    matched = np.flatnonzero((features[:, _PATTERN_MESSAGE] > 0) & curated).tolist()
    rows = [row for row in matched if repo_of(row) in owners and generic_curated(row)]
    features[rows, _PATTERN_MESSAGE] = 0.0
    features[rows, _PATTERN_SPECIFICITY] = 0.0


def lend_dense(
    features: np.ndarray, scores: np.ndarray, curated: np.ndarray, alone: np.ndarray, has_class: bool
) -> None:
    """Ingested records matching the pasted message alone (see matching_alone) take the cosine features of the
    best-scored curated record (``features`` updated in place). They are shipped without a vector, so their
    cosines read as the farthest record's: absence of evidence that outweighed a full match of their pattern
    (``base_url and azure_endpoint are mutually exclusive`` lost to a curated record of another message about
    the same arguments). Level on the cosines, the pattern decides. Only where the pasted class is theirs (a
    message alike from another class is another raise: torch's ``PicklingError: Can't pickle local object``
    for Python's ``AttributeError`` of those words) or, in a paste naming no class, their library is named or
    in the frames (anyio's ``All connection attempts failed`` is what httpx's ConnectError says)."""
    if has_class:
        owned = features[:, _CLASS_EQUAL] > 0
    else:
        owned = (features[:, _LIBRARY_NAMED] > 0) | (features[:, _LIBRARY_SEEN] > 0)
    rows = np.flatnonzero(alone & ~curated & owned)
    if not len(rows) or not curated.any():
        return
    best = int(np.flatnonzero(curated)[np.argmax(scores[curated])])
    # A record of a user's own knowledge base has a vector: its own cosines stand where they are nearer.
    features[np.ix_(rows, _DENSE)] = np.maximum(features[np.ix_(rows, _DENSE)], features[best, _DENSE])


class PartialMessages:
    """The Retriever's second look at the patterns, for a message no pattern matches whole."""

    def __init__(
        self,
        records: Sequence[Record],
        signals: SignalIndex,
        matcher: PatternMatcher,
        pattern_source: Callable[[int], str],
    ):
        self.records = records
        self.signals = signals
        self.matcher = matcher
        self.pattern_source = pattern_source

    def record_row(self, scored: np.ndarray | None) -> Callable[[int], Record]:
        """The record of a scored row."""
        return lambda row: self.records[row if scored is None else int(scored[row])]

    def generic_row(self, scored: np.ndarray | None) -> Callable[[int], bool]:
        """Whether the record of a scored row has no literal word in its message (``{key}``): it matches any."""
        record_of = self.record_row(scored)
        return lambda row: not message_words(record_of(row).error_message)

    def repo_row(self, scored: np.ndarray | None) -> Callable[[int], str]:
        """The repository of the record of a scored row."""
        record_of = self.record_row(scored)
        return lambda row: record_of(row).repo

    def mark_heads(self, heads: Heads, features: np.ndarray, scores: np.ndarray, scored: np.ndarray | None) -> bool:
        """The records whose pattern matches a pasted message as the beginning of theirs count as matching it
        (``features`` updated in place; True if any).

        Tried: the patterns filed under the messages' words, and those of the records already ranked near the
        top (a pattern filed under a word the paste cut off, ``Set the `OPENAI_API_KEY` environment variable``
        of ``... or pass it via `OpenAIProvider(api_key=...)```), so that records sharing a message's head
        are judged side by side."""
        messages = list(heads.messages)
        rows: dict[int, int] = {}  # scored row: literal characters of its pattern
        for p in heads.missed:
            if self.matcher.begins(self.pattern_source(p), messages):
                where, _picked = among(self.signals.pattern_records.numbered(p), scored)
                for row in where.tolist():
                    rows[row] = int(self.signals.literals[p])
        for row in np.argsort(-scores, kind="stable")[:HEAD_DEPTH].tolist():
            pattern = self.records[row if scored is None else int(scored[row])].message_pattern
            if row not in rows and pattern and self.matcher.begins(pattern, messages):
                rows[row] = literal_chars(pattern)
        if not rows:
            return False
        picked = np.fromiter(rows, dtype=np.int64)
        literals = np.fromiter(rows.values(), dtype=np.float64)
        features[picked, _PATTERN_MESSAGE] = 1.0
        features[picked, _PATTERN_SPECIFICITY] = np.minimum(1.0, literals / max(heads.length, 1))
        features[picked, _PATTERN_TEXT] = 0.0
        return True

    def reworded_row(
        self,
        query: Query,
        features: np.ndarray,
        scores: np.ndarray,
        offset: np.ndarray | None,
        scored: np.ndarray | None,
    ) -> int | None:
        """The first row, if it is an ingested record whose pattern misses the pasted message only in its last
        words (see Scored.reworded_row)."""
        if offset is None or not len(scores):
            return None
        top = int(np.argmax(scores))
        if not offset[top] or features[top, _PATTERN_MESSAGE] > 0:
            return None
        pattern = self.records[top if scored is None else int(scored[top])].message_pattern
        messages = pattern_messages(query)
        return top if pattern and messages and self.matcher.reworded_tail(pattern, messages) else None
