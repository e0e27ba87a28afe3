"""An error a library raises around another of its own, told by the message it prints.

mcp's ``ToolError: Error executing tool import_csv: Context is not available outside of a request`` and
urllib3's ``MaxRetryError: ... (Caused by NewConnectionError(... Failed to establish a new connection ...))``
print the error that caused them where their template has a placeholder. Both records' patterns match the
paste, and the wrapper's, being the printed class, ranked first; but what went wrong, and what to do, is the
inner raise's. Where the same library's record matches the text the wrapper's placeholder holds, the wrapper's
match counts no longer. The other way round, a library reporting one of Python's own errors in its words
(smolagents' ``Check is_number failed with error: could not convert string to float``, pytest's ``ImportError
while loading conftest`` above a ``ModuleNotFoundError``): Python's record explains the error in general, the
library's what happened where it was reported, and ranks first where it was close behind.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from ..knowledge.records import Record
from ..parse.query import Query
from .features import FEATURES
from .matching import PatternMatcher
from .ownership import PYTHON_REPO
from .partial_messages import pattern_messages
from .patterns import literal_chars
from .signals import PLACEHOLDER_RE, message_words

# The best-ranked records this many deep are looked at, wrappers and causes alike.
WRAPPER_DEPTH = 5
# A cause's pattern pins at least this many literal characters (``{e}`` or ``[Errno {errno}] {strerror}``
# would fit in any wrapper's placeholder).
CAUSE_MIN_LITERALS = 12
_CLOSING = ")]}>\"'. "
_ENDS_IN_PLACEHOLDER_RE = re.compile(r"\{[^{}]*\}[)\]}>\"'.]{0,3}$")
# A status error's message names its status within this many characters of its beginning.
STATUS_HEAD_CHARS = 20
# How far behind Python's record a library's report of it may rank and still go first (a fused-score margin).
REPORTED_MARGIN = 3.0
_PATTERN_MESSAGE = FEATURES.index("pattern_message")
_PATTERN_TEXT = FEATURES.index("pattern_text")
_LIBRARY = [FEATURES.index("library_seen"), FEATURES.index("library_named")]
_LIBRARY_OTHER = FEATURES.index("library_other")
_PATTERN_SPECIFICITY = FEATURES.index("pattern_specificity")


def told_error_span(template: str, message: str, start: int) -> tuple[int, int] | None:
    """Where in ``message`` the last placeholder of ``template`` (a record's message) is filled, when that
    placeholder ends the template (but for closing brackets or quotes): the place a wrapper prints the error
    it wraps (``Error executing tool {self.name}: {e}``, ``... (Caused by {reason!r})``). ``start``: where
    the template's pattern matches."""
    if not _ENDS_IN_PLACEHOLDER_RE.search(template):
        return None
    pieces = PLACEHOLDER_RE.split(template)
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


def _may_wrap(outer: Record, inner: Record, inner_curated: bool) -> bool:
    """Whether ``outer`` may print ``inner``'s error as its cause: the same library's, or a server's reply
    (a curated record) inside a client's HTTP status error (openai's ``Error code: 404 - {body}`` holding
    vLLM's ``The model `llama3` does not exist``). Another library's error inside a library's own wrapper is
    that library's account of it (crewAI's ``Model {model} not found: {error}``, a 404 too)."""
    return inner.repo == outer.repo or (inner_curated and _prints_status_first(outer))


def _prints_status_first(record: Record) -> bool:
    """A client's HTTP status error: its message begins with the status and goes on with the server's reply
    (``Error code: 404 - {body}``), not a library's message that names a status among its words."""
    status = record.http_status
    head = PLACEHOLDER_RE.split(record.error_message, maxsplit=1)[0]
    return status is not None and str(status) in head[:STATUS_HEAD_CHARS]


def wrapper_rows(
    query: Query,
    features: np.ndarray,
    scores: np.ndarray,
    record_of: Callable[[int], Record],
    matcher: PatternMatcher,
    curated: np.ndarray,
) -> list[tuple[int, int]]:
    """The best-ranked rows whose pattern matches the pasted message around the match of another best-ranked
    row (see _may_wrap), each with that row: the other's whole match is the error their last placeholder
    prints."""
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
        and record_of(row).repo != PYTHON_REPO  # Python's own wrappers (urllib's URLError) are what users look up
    ]
    spans = {row: matcher.span(record_of(row).message_pattern, message) for row in matched}
    found = [row for row in matched if spans[row] is not None]
    wrappers = []
    for outer in found:
        told = told_error_span(record_of(outer).error_message, message, spans[outer][0])
        if told is None:
            continue
        for inner in found:
            if inner == outer or not _may_wrap(record_of(outer), record_of(inner), bool(curated[inner])):
                continue
            if not _says_something(record_of(inner)):
                continue
            begins, ends = spans[inner]
            if told[0] <= begins and not message[max(ends, told[1]) :].strip(_CLOSING):
                wrappers.append((outer, inner))
                break
    return wrappers


def reporting_rows(
    features: np.ndarray, scores: np.ndarray, record_of: Callable[[int], Record], curated: np.ndarray
) -> list[int]:
    """The curated record of a library whose template is in the paste around the error (its pattern matches
    the text, not the error's message) when Python's own record ranks first by less than ``REPORTED_MARGIN``:
    the library reported Python's error, and says where and why."""
    order = np.argsort(-scores, kind="stable")[:WRAPPER_DEPTH]
    if not len(order) or record_of(int(order[0])).repo != PYTHON_REPO:
        return []
    for row in (int(j) for j in order[1:]):
        record = record_of(row)
        if scores[order[0]] - scores[row] >= REPORTED_MARGIN:
            break
        if (
            curated[row]
            and record.repo != PYTHON_REPO
            and features[row, _PATTERN_TEXT] > 0
            and features[row, _PATTERN_MESSAGE] == 0
            and literal_chars(record.message_pattern or "") >= CAUSE_MIN_LITERALS
        ):
            return [row]
    return []


def unmatch_wrappers(features: np.ndarray, pairs: list[tuple[int, int]], record_of: Callable[[int], Record]) -> None:
    """The wrappers' patterns no longer count as matching the message (``features`` updated in place); a
    server whose reply a client's status error prints is in play as the client is (its library's features
    are the wrapper's: the paste names the client, the reply is the server's)."""
    outers = [outer for outer, _inner in pairs]
    features[outers, _PATTERN_MESSAGE] = 0.0
    features[outers, _PATTERN_SPECIFICITY] = 0.0
    for outer, inner in pairs:
        if record_of(outer).repo != record_of(inner).repo:
            features[inner, _LIBRARY] = np.maximum(features[inner, _LIBRARY], features[outer, _LIBRARY])
            features[inner, _LIBRARY_OTHER] = min(features[inner, _LIBRARY_OTHER], features[outer, _LIBRARY_OTHER])
