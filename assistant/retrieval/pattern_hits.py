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
from .matching import PATTERN_TEXT_CHARS, PatternMatcher, without_added_quotes
from .partial_messages import own_length, pattern_messages
from .patterns import literal_pieces, required_words, text_words
from .signals import SignalIndex
from .sorted_sets import contains


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
    words_of_text = text_words([text])
    # Every text a pattern is run on (see PatternMatcher.match), apart: what a pattern's pieces are looked up in.
    unquoted = without_added_quotes(messages[0]) if messages else None
    searched = "\x00".join([text, *messages, *([unquoted] if unquoted else [])])
    filed = index.filed_under(words_of_text | message_words)
    # A pattern filed under a word no message holds cannot match a message: only the text is searched.
    in_messages = contains(index.filed_under(message_words), filed) if messages else np.zeros(len(filed), dtype=bool)
    # A pattern lacking a word it requires, or a piece of its literal text, cannot match: not compiled (a query
    # of common words may reach a thousand patterns in a large knowledge base, and ~700 are filed under none).
    # Ruled out here at once where surely lacking; checked exactly below.
    worth = index.may_hold(filed, words_of_text)
    if messages:
        worth |= in_messages & index.may_hold(filed, message_words)
    worth &= ~contains(index.always_lacking(searched, pattern_source), filed)
    tried_on_messages = set(filed[in_messages].tolist())
    matched: set[int] = set()  # on a message
    for p in filed[worth].tolist():
        source = pattern_source(p)
        required = required_words(source)
        tried = messages if p in tried_on_messages and required <= message_words else []
        if (tried or required <= words_of_text) and all(piece in searched for piece in literal_pieces(source)):
            matched_message, matched_text = matcher.match(source, tried, text)
        else:
            matched_message = matched_text = False
        if matched_message:
            on_message.append(p)
            matched.add(p)
        elif matched_text:
            on_text.append(p)
    # Tried on the messages, not matched: what the heads are tried with (see below).
    missed = [p for p in filed[in_messages].tolist() if p not in matched] if not on_message else []
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
