"""Running records' ``messagePattern`` regexes on a paste, each within a limit on its own CPU time.

Patterns come from the knowledge base, so one may backtrack for seconds on some texts. A pattern is
judged by what it costs itself: the CPU time of the thread that runs it (``time.thread_time``), not the
wall clock, which on a busy machine (50 requests on two cores) ran out for ordinary patterns that then
stayed disabled for the life of the process. A search whose wall-clock limit runs out while it has used
little CPU is tried again with a longer limit (up to ``PATTERN_WALL_LIMIT_S``); only a pattern that used
``PATTERN_TIMEOUT_S`` of CPU in one search is dropped, with a warning that names its records.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable, Sequence

import regex

from .patterns import literal_words

logger = logging.getLogger(__name__)

# A record's pattern gets this much CPU time to search one message; a pattern that uses it up is dropped.
PATTERN_TIMEOUT_S = 0.05
# However busy the machine, one search never waits longer than this (then it counts as no match).
PATTERN_WALL_LIMIT_S = 2.0
# Only this much of the message, and of the whole paste, is searched by patterns (bounds the worst case).
PATTERN_MESSAGE_CHARS = 2_000
PATTERN_TEXT_CHARS = 4_000
# Compiled messagePatterns kept in memory (the prefilter runs a few per query; see patterns.py).
COMPILED_PATTERNS = 20_000


# A pattern's quoted slot (``'[^'\n]+'``, ``'.+?'``...): what a message quotes, a name or a value; and a quoted
# slot of another shape, classes and punctuation with no literal letter (``\`[\w.]+:\w+\```).
_QUOTED_SLOT_RE = re.compile(r"(?P<q>['\"`])(?P<slot>\.[+*]\??|\[\^(?:'|\"|`)?(?:\\n)?\][+*]\??)(?P=q)")
_SLOT_ATOM = r"(?:\[[^\]'\"`]+\]|\\[wdS]|[:./-])(?:[+*]\??)?"
_SHAPED_SLOT_RE = re.compile(rf"(?P<q>['\"`])(?P<slot>{_SLOT_ATOM}(?:{_SLOT_ATOM})*)(?P=q)")
# A single word in quotes of its own: ``'type'``, ``"name"``, `` `x` ``.
_LONE_QUOTED_RE = re.compile(r"(?<!\w)(?P<q>['\"`])(?P<word>[^\s'\"`]+)(?P=q)(?!\w)")
# A literal colon before a space (not the ``(?:`` of a group).
_COLON_RE = re.compile(r"(?<!\(\?)(?<!\\):(?= )")
# A pasted message that stops where the error's message goes on (its first line, or cut with "...") is
# the head of what a pattern matches when it has this many words, nearly all of them the pattern's own
# literal words (not text a placeholder took in).
HEAD_MIN_WORDS = 4
HEAD_LITERAL_SHARE = 0.75
_HEAD_WORD_RE = re.compile(r"\w+")
# The quoted value a message cut after its first line ends on (``... of type 'mytasks.add'``) fills the
# template's slot: its words are no template's. (Quoted values inside the message keep counting: a message
# that goes on past them in other words is not the template's beginning.)
_QUOTED_VALUE_RE = re.compile(r"(?:'[^'\n]{1,80}'|\"[^\"\n]{1,80}\")\W*$")
# At most this share of a message's last words may be worded otherwise for it to be the same error.
TAIL_SHARE = 0.25


@functools.lru_cache(maxsize=COMPILED_PATTERNS)
def retyped_variant(pattern: str) -> str | None:
    """``pattern`` as people retype the message it matches, or None when that reads the same.

    People copy a message by hand and drop its quotes and colons: ``cannot import name validate_core_schema
    from pydantic_core`` is Python's ``cannot import name '[^']+' from '[^']+'``, ``Max retries exceeded
    with url getTaskStatus`` requests' ``Max retries exceeded with url: .+?``. In the variant a quoted slot's
    quotes are optional (a generic slot then holds one token) and so is a colon before a space."""

    def bare(m: re.Match) -> str:
        q, repeat = m["q"], "+" if "+" in m["slot"] else "*"
        return f"{q}?[^\\s{q}]{repeat}{q}?"

    variant = _QUOTED_SLOT_RE.sub(bare, pattern)
    variant = _SHAPED_SLOT_RE.sub(lambda m: f"{m['q']}?(?:{m['slot']}){m['q']}?", variant)
    variant = _COLON_RE.sub(":?", variant)
    return variant if variant != pattern else None


@functools.lru_cache(maxsize=64)
def without_added_quotes(message: str) -> str | None:
    """``message`` with the quotes around single words taken off, or None when it has none.

    The other way round from :func:`retyped_variant`: people quote a name the message prints bare (``Object
    of type 'type' is not JSON serializable`` is Python's ``Object of type type is not ...``)."""
    unquoted = _LONE_QUOTED_RE.sub(r"\g<word>", message)
    return unquoted if unquoted != message else None


@functools.lru_cache(maxsize=COMPILED_PATTERNS)
def compile_pattern(pattern: str):
    """Compiled on first use, kept for the most recent ones: a million compiled patterns would not fit."""
    try:
        return regex.compile(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError):
        logger.warning("skipping the invalid messagePattern %r", pattern[:200])
        return None


class PatternMatcher:
    """Searches messages and texts with patterns, remembering the ones that cost too much CPU.

    ``owners``: given a pattern, the records it belongs to (``file:line (id ...)``), for the warning.
    """

    def __init__(self, timeout_s: float = PATTERN_TIMEOUT_S, owners: Callable[[str], str] | None = None):
        self.timeout_s = timeout_s
        self.wall_limit_s = max(PATTERN_WALL_LIMIT_S, timeout_s)
        self.owners = owners
        self.slow_patterns: set[str] = set()

    def match(self, source: str, messages: Sequence[str], text: str) -> tuple[bool, bool]:
        """Whether the pattern ``source`` matches one of the messages (the first, the pasted message, also
        as retyped by hand: see :func:`retyped_variant`), else the whole text."""
        pattern = compile_pattern(source)
        if pattern is None or source in self.slow_patterns:
            return False, False
        if messages and any(self.search(pattern, m) for m in messages):
            return True, False
        variant = retyped_variant(source) if messages else None
        retyped = compile_pattern(variant) if variant else None
        if retyped is not None and self.search(retyped, messages[0]):
            return True, False
        unquoted = without_added_quotes(messages[0]) if messages else None
        if unquoted is not None and self.search(pattern, unquoted):
            return True, False
        return False, self.search(pattern, text)

    def begins(self, source: str, messages: Sequence[str]) -> bool:
        """Whether one of the messages is how an error the pattern ``source`` matches begins: the paste shows
        the first line of a message that goes on over several (dspy's ``Adapter ChatAdapter failed to parse
        the LM response.`` before its ``LM Response: ...`` block), or cuts it off. Weaker than a match (``No
        module named 'utils'`` begins ``No module named '{name}'; '{parent}' is not a package`` too): the
        Retriever asks only when no pattern matches a message."""
        if source in self.slow_patterns:
            return False
        # Most patterns tried spell out few of the message's words: a look at the pattern's text first, before
        # parsing it for its literal words and compiling it.
        text = source.lower()
        candidates = [m for m in messages if _spells_most(text, _head_words(m))]
        pattern = compile_pattern(source) if candidates else None
        return pattern is not None and any(self._is_head(pattern, source, m) for m in candidates)

    def reworded_tail(self, source: str, messages: Sequence[str]) -> bool:
        """Whether a message, its last few words left off (at most ``TAIL_SHARE`` of them), begins what the
        pattern ``source`` matches: the same error, its end worded as another release words it (pytest 2's
        ``..., involved factories`` where pytest 8 says ``. Requesting fixture stack:``)."""
        pattern = compile_pattern(source)
        if pattern is None or source in self.slow_patterns:
            return False
        lines = [m.split("\n", 1)[0] for m in messages if "\n" in m]  # a message told over lines: its first
        for message in [*messages, *lines]:
            spans = list(_HEAD_WORD_RE.finditer(message))
            for cut in range(1, int(TAIL_SHARE * len(spans)) + 1):
                if self._is_head(pattern, source, message[: spans[-cut].start()].rstrip(" ,;:")):
                    return True
        return False

    def _is_head(self, pattern, source: str, message: str) -> bool:
        words = _head_words(message)
        if not _spells_most(literal_words(source), words):
            return False
        return self._timed(lambda limit: _partial_head(pattern, message, limit), pattern.pattern)

    def span(self, source: str, message: str) -> tuple[int, int] | None:
        """Where the pattern ``source`` first matches in ``message``; None where it does not."""
        pattern = compile_pattern(source)
        if pattern is None or source in self.slow_patterns:
            return None
        found: list[tuple[int, int]] = []

        def attempt(limit: float) -> bool:
            match = pattern.search(message, timeout=limit)
            found[:] = [match.span()] if match else []
            return match is not None

        return found[0] if self._timed(attempt, source) else None

    def search(self, pattern, text: str) -> bool:
        """Whether the compiled ``pattern`` is found in ``text``, judged by its own CPU time."""
        return self._timed(lambda limit: pattern.search(text, timeout=limit) is not None, pattern.pattern)

    def _timed(self, attempt: Callable[[float], bool], source: str) -> bool:
        """``attempt(wall_limit)``, retried with a longer limit on a busy machine; a pattern that uses up its
        CPU time is dropped."""
        wall = self.timeout_s
        while True:
            started = time.thread_time()
            try:
                return attempt(wall)
            except TimeoutError:
                if time.thread_time() - started >= self.timeout_s:
                    self._drop(source)
                    return False
                if wall >= self.wall_limit_s:  # the machine is too busy to tell; this pattern stays in use
                    logger.info("messagePattern %r: no answer in %g s (busy machine)", source[:80], wall)
                    return False
                wall = min(wall * 4, self.wall_limit_s)

    def _drop(self, source: str) -> None:
        self.slow_patterns.add(source)
        owners = ""
        if self.owners is not None:
            try:
                owners = f" (record {self.owners(source)})"
            except Exception:  # noqa: BLE001 - naming the record must not fail the query
                logger.debug("cannot name the records of a slow pattern", exc_info=True)
        logger.warning(
            "the messagePattern %r%s backtracks for over %g s of CPU; it is no longer used (rewrite it without"
            " nested quantifiers)",
            source[:200],
            owners,
            self.timeout_s,
        )


@functools.lru_cache(maxsize=64)
def _head_words(message: str) -> list[str]:
    """The lower-cased words of a message, as :meth:`PatternMatcher.begins` compares them: read once per
    message, not once per pattern it is tried against (a thousand in a large knowledge base); the quoted
    value it ends on left out."""
    return _HEAD_WORD_RE.findall(_QUOTED_VALUE_RE.sub(" ", message).lower())


def _spells_most(spelled: frozenset[str] | str, words: list[str]) -> bool:
    """Whether ``spelled`` (a pattern's literal words, or its text: a quick look) holds nearly all ``words``,
    and they are enough to tell an error by."""
    return len(words) >= HEAD_MIN_WORDS and sum(w in spelled for w in words) >= HEAD_LITERAL_SHARE * len(words)


def _partial_head(pattern, message: str, limit: float) -> bool:
    """Whether the pattern, matched from the start of ``message``, is still going when the message ends."""
    found = pattern.match(message.rstrip(". \u2026"), partial=True, timeout=limit)
    return found is not None and found.partial
