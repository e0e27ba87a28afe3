"""Running records' ``messagePattern`` regexes on a paste, each within a time limit.

Patterns come from the knowledge base, so one may backtrack for seconds on some texts: each search gets
``PATTERN_TIMEOUT_S``, and a pattern that runs out is dropped with a warning.
"""

from __future__ import annotations

import functools
import logging

import regex

logger = logging.getLogger(__name__)

# A record's pattern gets this long to search one message; a pattern that runs out of time is dropped.
PATTERN_TIMEOUT_S = 0.05
# Only this much of the message, and of the whole paste, is searched by patterns (bounds the worst case).
PATTERN_MESSAGE_CHARS = 2_000
PATTERN_TEXT_CHARS = 4_000
# Compiled messagePatterns kept in memory (the prefilter runs a few per query; see patterns.py).
COMPILED_PATTERNS = 20_000


@functools.lru_cache(maxsize=COMPILED_PATTERNS)
def compile_pattern(pattern: str):
    """Compiled on first use, kept for the most recent ones: a million compiled patterns would not fit."""
    try:
        return regex.compile(pattern)
    except (regex.error, ValueError, OverflowError):
        logger.warning("skipping the invalid messagePattern %r", pattern)
        return None


class PatternMatcher:
    """Searches messages and texts with patterns, remembering the ones that ran out of time."""

    def __init__(self, timeout_s: float = PATTERN_TIMEOUT_S):
        self.timeout_s = timeout_s
        self.slow_patterns: set[str] = set()

    def match(self, source: str, messages: list[str], text: str) -> tuple[bool, bool]:
        """Whether the pattern ``source`` matches one of the messages, else the whole text."""
        pattern = compile_pattern(source)
        if pattern is None or source in self.slow_patterns:
            return False, False
        if messages and any(self.search(pattern, m) for m in messages):
            return True, False
        return False, self.search(pattern, text)

    def search(self, pattern, text: str) -> bool:
        """Whether the compiled ``pattern`` is found in ``text`` within the time limit."""
        try:
            return pattern.search(text, timeout=self.timeout_s) is not None
        except TimeoutError:
            self.slow_patterns.add(pattern.pattern)
            logger.warning("the messagePattern %r backtracks too long; it is no longer used", pattern.pattern[:200])
            return False
