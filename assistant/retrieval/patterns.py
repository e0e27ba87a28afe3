"""Which records' ``messagePattern`` could match a text, without running every pattern.

Why: running each record's regex on each query costs microseconds per record: nothing at 500 records,
seconds at a million. Most patterns pin down whole words (``^Agent interrupted\\.$`` cannot match a text
without the word ``interrupted``). Each pattern is filed under the rarest word every one of its matches
must contain; a query runs only the patterns filed under its words, plus the few that pin no word
(``.*``, alternations at the top). Exact: a pattern left out could not have matched.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..storage.postings import Postings
from .sorted_sets import contains, distinct, union

try:  # Python 3.11+
    from re import _constants as sre_constants
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

_WORD_CHAR = re.compile(r"\w")
_TEXT_WORD = re.compile(r"\w+")
_BOUNDARY = object()  # ^, $, \A, \Z or \b: no word character can sit on the other side
_UNKNOWN = object()  # anything else: a class, a repeat, an alternation, a group that may be skipped
_EDGES = {
    sre_constants.AT_BEGINNING,
    sre_constants.AT_BEGINNING_STRING,
    sre_constants.AT_END,
    sre_constants.AT_END_STRING,
    sre_constants.AT_BOUNDARY,
}


_GROUP_OPENING_RE = re.compile(r"\(\?(?:P<\w+>|[:=!]|<[=!]|[aiLmsux]+\)?)")
_METACHARACTERS = "()[]{}|*+?.^$"


def literal_chars(pattern: str) -> int:
    """How many characters a regex pins down literally: a rough measure of how specific it is. An
    alternation pins one of its alternatives, so it counts as its longest: a raise's wordings joined in one
    pattern (``(?:A|B|C)``) are not three times as specific as one."""
    text = _plain_text(pattern)
    if text is not None:  # escaped text, placeholders and anchors: its literal characters are the rest
        return len(text) - text.count(_UNKNOWN_CHAR) - text.count(_BOUNDARY_CHAR)
    return _literal_chars(pattern, 0)[0]


def _literal_chars(pattern: str, i: int) -> tuple[int, int]:
    """The literal characters of the alternatives from ``i`` to the group's end (the longest), and where
    the scan stopped: after the closing parenthesis, or at the pattern's end."""
    alternatives = [0]
    while i < len(pattern):
        c = pattern[i]
        optional = pattern[i + 2 : i + 3] if c == "\\" else pattern[i + 1 : i + 2]
        if c == ")":
            return max(alternatives), i + 1
        if c == "|":
            alternatives.append(0)
            i += 1
        elif optional in ("?", "*") and c not in _METACHARACTERS:  # an optional character pins nothing
            i += 3 if c == "\\" else 2
        elif c == "\\" and i + 1 < len(pattern):
            alternatives[-1] += 0 if pattern[i + 1].isalnum() else 1
            i += 2
        elif c == "[":
            close = pattern.find("]", i + 2)
            i = close + 1 if close > 0 else len(pattern)
        elif c == "{" and re.match(r"\{\d*,?\d*\}", pattern[i:]):
            i = pattern.find("}", i) + 1
        elif c == "(":
            opening = _GROUP_OPENING_RE.match(pattern, i)
            if opening and opening.group().endswith(")"):  # inline flags, (?i): no group
                i = opening.end()
                continue
            inside, i = _literal_chars(pattern, opening.end() if opening else i + 1)
            alternatives[-1] += inside
        elif c in _METACHARACTERS:
            i += 1
        else:
            alternatives[-1] += 1
            i += 1
    return max(alternatives), i


@functools.lru_cache(maxsize=20_000)
def required_words(pattern: str) -> frozenset[str]:
    """Lower-cased words that every match of ``pattern`` contains whole (bounded by non-word characters).

    Empty when none can be proven (the pattern then runs on every query). Conservative: a word is kept
    only where the pattern itself puts a literal non-word character or an anchor on both sides of it.
    """
    text = _plain_text(pattern)
    if text is not None:
        return frozenset(m.group().lower() for m in _BOUNDED_WORD_RE.finditer(text))
    sequence = _parsed(pattern)
    return frozenset() if sequence is None else frozenset(_words_of(sequence))


@functools.lru_cache(maxsize=20_000)
def literal_words(pattern: str) -> frozenset[str]:
    """Lower-cased words the pattern spells out in literal characters (bounded or not): what its message
    says apart from its placeholders."""
    text = _plain_text(pattern)
    if text is not None:
        return frozenset(_TEXT_WORD.findall(text.lower()))
    sequence = _parsed(pattern)
    return frozenset() if sequence is None else frozenset(_spelled_words(sequence))


# Where a plain pattern's literal text is cut into pieces every match holds: at its placeholders and anchors,
# and at the quotes and colons a message retyped by hand may leave out (``matching.retyped_variant``).
_PIECE_BREAK_RE = re.compile("[\ue000\ue001'\"`:]+")


@functools.lru_cache(maxsize=20_000)
def literal_pieces(pattern: str) -> tuple[str, ...]:
    """Strings every match of ``pattern`` holds as they are (case and all), also of the pattern as retyped by
    hand, longest first: a text lacking one cannot match, so the pattern need not be compiled nor run (a
    knowledge base of 90,000 records files ~700 patterns under no word, ``Invalid URL``, which every query
    reached). Empty where none is known: only plain patterns (escaped text, placeholders, anchors) are read."""
    text = _plain_text(pattern)
    if text is None:
        return ()
    return tuple(sorted((piece for piece in _PIECE_BREAK_RE.split(text) if piece), key=len, reverse=True))


def _parsed(pattern: str) -> list | None:
    """The pattern as a flat sequence (see :func:`_sequence`), ``None`` when it does not parse."""
    try:
        return _sequence(sre_parse.parse(pattern))
    except (re.error, ValueError, OverflowError, RecursionError, TypeError):
        return None  # a syntax only the regex module knows: run it every time


# What a message's pattern from ingest is made of (97% of release-built ones): escaped literal text, (.+?)
# placeholders, anchors. Such a pattern is read as one string, its literal text with a boundary and each
# placeholder as two private-use characters (see _words_of): what sre_parse's sequence gives, three times
# faster (the parse was 40% of building the signals of 90,000 records).
_PLAIN_PATTERN_RE = re.compile(r"\^?(?:[^\\()\[\]{}|*+?.^$\ue000\ue001]|\\[^A-Za-z0-9]|\(\.[+*]\??\))*\$?")
_PLAIN_SPECIAL_RE = re.compile(r"\\(.)|(\()\.[+*]\??\)|[\^$]", re.DOTALL)


def _plain_text(pattern: str) -> str | None:
    if not _PLAIN_PATTERN_RE.fullmatch(pattern):
        return None
    return _PLAIN_SPECIAL_RE.sub(_plain_special, pattern)


def _plain_special(match: re.Match[str]) -> str:
    escaped, group = match.group(1), match.group(2)
    if escaped is not None:
        return _UNKNOWN_CHAR if escaped in _MARKS else escaped
    return _UNKNOWN_CHAR if group else _BOUNDARY_CHAR


def _spelled_words(sequence: list) -> set[str]:
    """The lower-cased words of a flat sequence's literal text, and of any alternative of its alternations (a
    pattern joining a raise's wordings spells each of them)."""
    spelled = "".join(token if isinstance(token, str) else " " for token in sequence)
    words = set(_TEXT_WORD.findall(spelled.lower()))
    for token in sequence:
        if isinstance(token, _Alternation):
            words |= token.spelled
    return words


def _words_of(sequence: list) -> set[str]:
    """The bounded words of a flat sequence, and those every alternative of its alternations holds."""
    words: set[str] = set()
    chars = []
    for token in sequence:
        if isinstance(token, str):
            chars.append(_UNKNOWN_CHAR if token in _MARKS else token)  # a mark written literally: unknown
        elif token is _BOUNDARY:
            chars.append(_BOUNDARY_CHAR)
        else:
            chars.append(_UNKNOWN_CHAR)
            if isinstance(token, _Alternation):
                words |= token.words
    words.update(m.group().lower() for m in _BOUNDED_WORD_RE.finditer("".join(chars)))
    return words


# A flat sequence as one string: literal characters as themselves, a boundary and anything unknown as two
# private-use characters; a bounded word is a run of word characters with a non-word character that is not
# unknown on both sides (the start and end of the sequence are unknown).
_BOUNDARY_CHAR, _UNKNOWN_CHAR = "\ue000", "\ue001"
_MARKS = frozenset((_BOUNDARY_CHAR, _UNKNOWN_CHAR))
_BOUNDED_WORD_RE = re.compile(r"(?<=[^\w\ue001])\w+(?=[^\w\ue001])")


class _Alternation:
    """``A|B`` in a flat sequence: unknown to its neighbours, holding the words every alternative has (a
    pattern joining a raise's wordings, ``(?:Couldn't start the app ...|Couldn’t start the app ...)``)."""

    def __init__(self, alternatives) -> None:
        sequences = [_sequence(alternative) for alternative in alternatives]
        each = [_words_of(sequence) for sequence in sequences]
        self.words = set.intersection(*each) if each else set()
        self.spelled = set().union(*map(_spelled_words, sequences))


def _sequence(items) -> list:
    """The pattern as a flat list: literal characters, boundaries, alternations and unknowns, groups inlined."""
    out: list = []
    for op, arg in items:
        if op is sre_constants.LITERAL:
            out.append(chr(arg))
        elif op is sre_constants.AT and arg in _EDGES:
            out.append(_BOUNDARY)
        elif op is sre_constants.SUBPATTERN:
            out.extend(_sequence(arg[-1]))  # a group without a quantifier matches exactly once
        elif op is sre_constants.BRANCH:
            out.append(_Alternation(arg[1]))
        else:
            out.append(_UNKNOWN)
    return out


def _bounds(token) -> bool:
    return token is _BOUNDARY or (isinstance(token, str) and _WORD_CHAR.match(token) is None)


def text_words(texts: Iterable[str]) -> set[str]:
    """The lower-cased words of ``texts``, as ``required_words`` spells them."""
    return {w for text in texts for w in _TEXT_WORD.findall(text.lower())}


def word_hashes(words: Iterable[str]) -> np.ndarray:
    """CRC-32s of lower-cased words, as :class:`PatternIndex` keeps the words each pattern requires."""
    return np.array([zlib.crc32(w.encode("utf-8")) for w in words], dtype=np.uint32)


class PatternIndex:
    """Records' patterns filed under one required word each: the rarest among the patterns; and every word
    each pattern requires, as CRC-32s (``required``, ``required_starts``), so a query rules out at once the
    patterns filed under its words that lack another (a word's hash in common only lets a pattern through)."""

    def __init__(self, filed: Postings, always: np.ndarray, required: np.ndarray, required_starts: np.ndarray):
        self._filed = filed
        self.always = always
        self._required = required
        self._required_starts = required_starts
        self._always_pieces: list[str] | None = None  # each always pattern's longest literal piece, on first use

    @classmethod
    def build(cls, patterns: Iterable[str]) -> PatternIndex:
        required = [required_words(p) for p in patterns]
        frequency = Counter(w for words in required for w in words)
        chosen = [[min(words, key=lambda w: (frequency[w], -len(w), w))] if words else [] for words in required]
        always = np.array([i for i, words in enumerate(required) if not words], dtype=np.int32)
        starts = np.zeros(len(required) + 1, dtype=np.int64)
        np.cumsum([len(words) for words in required], out=starts[1:])
        hashes = word_hashes(w for words in required for w in sorted(words))
        return cls(Postings.build(chosen), always, hashes, starts)

    def filed_under(self, words: set[str]) -> np.ndarray:
        """Positions of the patterns filed under one of ``words`` (see :func:`text_words`), and those
        filed under none, in ascending order."""
        found = self._filed.union(words)
        return union(self.always, found) if len(found) else self.always

    def may_hold(self, patterns: np.ndarray, words: set[str]) -> np.ndarray:
        """For each of ``patterns``, whether ``words`` (see :func:`text_words`) may hold every word it requires:
        False only where one is surely missing (two words may share a hash)."""
        first = self._required_starts[patterns]
        lengths = self._required_starts[patterns + 1] - first
        total = int(lengths.sum())
        if not total:
            return np.ones(len(patterns), dtype=bool)
        ends = np.cumsum(lengths)
        entries = np.arange(total) + np.repeat(first - (ends - lengths), lengths)
        lacking = ~contains(distinct(word_hashes(words)), self._required[entries])
        owners = np.repeat(np.arange(len(patterns)), lengths)
        return np.bincount(owners, weights=lacking, minlength=len(patterns)) == 0

    def always_lacking(self, searched: str, source_of) -> np.ndarray:
        """The patterns filed under no word whose longest literal piece (:func:`literal_pieces`) ``searched``
        lacks, in ascending order: ~700 of a knowledge base of 90,000 records, each checked in a pass."""
        if self._always_pieces is None:
            self._always_pieces = [next(iter(literal_pieces(source_of(p))), "") for p in self.always.tolist()]
        held = np.fromiter((piece in searched for piece in self._always_pieces), dtype=bool, count=len(self.always))
        return self.always[~held]

    def save(self, folder: Path) -> None:
        self._filed.save(folder, "pattern_words")
        np.save(folder / "pattern_always.npy", self.always)
        np.save(folder / "pattern_required.npy", self._required)
        np.save(folder / "pattern_required_starts.npy", self._required_starts)

    @classmethod
    def load(cls, folder: Path) -> PatternIndex:
        return cls(
            Postings.load(folder, "pattern_words"),
            np.load(folder / "pattern_always.npy"),
            np.load(folder / "pattern_required.npy", mmap_mode="r"),  # read by the rows a query asks for
            np.load(folder / "pattern_required_starts.npy", mmap_mode="r"),
        )
