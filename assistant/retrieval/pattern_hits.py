"""Which records' patterns match a paste: its error messages, else anywhere in its text.

Why apart from the Retriever: the one place a query meets the patterns, tried only where the pattern index
(``patterns.py``) files them under the paste's words and where every word a pattern requires is there.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..parse.query import Query
from .candidates import NONE
from .features import Heads
from .matching import PATTERN_TEXT_CHARS, PatternMatcher
from .partial_messages import own_length, pattern_messages
from .patterns import required_words, text_words
from .signals import SignalIndex


def pattern_hits(
    query: Query, signals: SignalIndex, matcher: PatternMatcher, pattern_source: Callable[[int], str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Heads | None]:
    """Records whose pattern matches a message (with its specificity), those matching the text, and,
    when no pattern matches a message, what to try as the messages' heads (see PartialMessages.mark_heads)."""
    messages = pattern_messages(query)
    text = query.text[-PATTERN_TEXT_CHARS:]
    length = max((own_length(m) for m in messages[:1]), default=0)
    on_message: list[int] = []  # distinct patterns
    on_text: list[int] = []
    index = signals.pattern_index
    message_words = text_words(messages)
    # A pattern filed under a word no message holds cannot match a message: only the text is searched.
    in_messages = set(index.filed_under(message_words).tolist()) if messages else set()
    missed: list[int] = []  # tried on the messages, not matched
    words_of_text = text_words([text])
    for p in index.filed_under(words_of_text | message_words).tolist():
        source = pattern_source(p)
        # A pattern lacking a word it requires cannot match: not compiled (a query of common words may
        # reach a thousand patterns in a large knowledge base).
        required = required_words(source)
        tried = messages if p in in_messages and required <= message_words else []
        if tried or required <= words_of_text:
            matched_message, matched_text = matcher.match(source, tried, text)
        else:
            matched_message = matched_text = False
        if p in in_messages and not matched_message:
            missed.append(p)
        if matched_message:
            on_message.append(p)
        elif matched_text:
            on_text.append(p)
    records = signals.pattern_records
    message_groups = [records.numbered(p) for p in on_message]
    literals = np.asarray(signals.literals[on_message], dtype=np.float64)
    specificity = np.repeat(np.minimum(1.0, literals / max(length, 1)), [len(g) for g in message_groups])
    message_positions = np.concatenate(message_groups) if message_groups else NONE
    ascending = np.argsort(message_positions, kind="stable")
    text_groups = [records.numbered(p) for p in on_text]
    text_positions = np.sort(np.concatenate(text_groups)) if text_groups else NONE
    heads = Heads(tuple(messages), tuple(missed), length) if messages and not on_message else None
    return message_positions[ascending], specificity[ascending], text_positions, heads
