"""An error a library raises around another of its own, told by the message it prints.

mcp's ``ToolError: Error executing tool import_csv: Context is not available outside of a request`` and
urllib3's ``MaxRetryError: ... (Caused by NewConnectionError(... Failed to establish a new connection ...))``
print the error that caused them where their template has a placeholder. Both records' patterns match the
paste, and the wrapper's, being the printed class, ranked first; but what went wrong, and what to do, is the
inner raise's. Where the same library's record matches the text the wrapper's placeholder holds, the wrapper's
match counts no longer. Another library's error inside a wrapper (Python's ``could not convert string to
float`` inside smolagents' ``Check ... failed with error: {e}``) is left to the other signals: the wrapper is
then the library's own account of a general error.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from ..knowledge.records import Record
from ..parse.query import Query
from .features import FEATURES
from .matching import PatternMatcher
from .partial_messages import pattern_messages
from .patterns import literal_chars
from .signals import message_words

# The best-ranked records this many deep are looked at, wrappers and causes alike.
WRAPPER_DEPTH = 5
# A cause's pattern pins at least this many literal characters (``{e}`` or ``[Errno {errno}] {strerror}``
# would fit in any wrapper's placeholder).
CAUSE_MIN_LITERALS = 12
# Python's own wrappers (urllib's ``<urlopen error [Errno 111] Connection refused>``) are what users look up:
# the error inside is a general one.
GENERAL_REPOS = frozenset({"python/cpython"})
_PLACEHOLDER_RE = re.compile(r"\{[^{}]*\}")
_CLOSING = ")]}>\"'. "
_ENDS_IN_PLACEHOLDER_RE = re.compile(r"\{[^{}]*\}[)\]}>\"'.]{0,3}$")
_PATTERN_MESSAGE = FEATURES.index("pattern_message")
_PATTERN_SPECIFICITY = FEATURES.index("pattern_specificity")


def told_error_span(template: str, message: str, start: int) -> tuple[int, int] | None:
    """Where in ``message`` the last placeholder of ``template`` (a record's message) is filled, when that
    placeholder ends the template (but for closing brackets or quotes): the place a wrapper prints the error
    it wraps (``Error executing tool {self.name}: {e}``, ``... (Caused by {reason!r})``). ``start``: where
    the template's pattern matches."""
    if not _ENDS_IN_PLACEHOLDER_RE.search(template):
        return None
    pieces = _PLACEHOLDER_RE.split(template)
    cursor = start
    for piece in pieces[:-1]:
        at = message.find(piece, cursor)
        if at < 0:
            return None
        cursor = at + len(piece)
    closing = pieces[-1]
    end = message.rfind(closing, cursor) if closing else len(message)
    return (cursor, end) if end > cursor else None


def _says_something(record: Record) -> bool:
    """Whether ``record``'s own words, not its pattern's alone, tell an error: instructor's retry error is
    ``{e.last_attempt._exception}`` (another wrapper) however its pattern matches pydantic's text."""
    return literal_chars(record.message_pattern) >= CAUSE_MIN_LITERALS and len(message_words(record.error_message)) >= 2


def wrapper_rows(
    query: Query,
    features: np.ndarray,
    scores: np.ndarray,
    record_of: Callable[[int], Record],
    matcher: PatternMatcher,
) -> list[int]:
    """The best-ranked rows whose pattern matches the pasted message around the match of another best-ranked
    row of the same library: the other's whole match is the error their last placeholder prints."""
    messages = pattern_messages(query)
    if not messages:
        return []
    message = messages[0]
    top = [int(row) for row in np.argsort(-scores, kind="stable")[:WRAPPER_DEPTH]]
    matched = [
        row
        for row in top
        if features[row, _PATTERN_MESSAGE] > 0
        and record_of(row).message_pattern
        and record_of(row).repo not in GENERAL_REPOS
    ]
    spans = {row: matcher.span(record_of(row).message_pattern, message) for row in matched}
    found = [row for row in matched if spans[row] is not None]
    wrappers = []
    for outer in found:
        told = told_error_span(record_of(outer).error_message, message, spans[outer][0])
        if told is None:
            continue
        for inner in found:
            if inner == outer or record_of(inner).repo != record_of(outer).repo:
                continue
            if not _says_something(record_of(inner)):
                continue
            begins, ends = spans[inner]
            if told[0] <= begins and not message[max(ends, told[1]) :].strip(_CLOSING):
                wrappers.append(outer)
                break
    return wrappers


def unmatch_wrappers(features: np.ndarray, rows: list[int]) -> None:
    """The wrappers' patterns no longer count as matching the message (``features`` updated in place)."""
    features[rows, _PATTERN_MESSAGE] = 0.0
    features[rows, _PATTERN_SPECIFICITY] = 0.0
