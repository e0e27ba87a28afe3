"""A query's words as the two BM25 indexes number them.

Apart from the Retriever because of what it decides: which words a paste says, and how often each counts.
"""

from __future__ import annotations

from collections import Counter

from .bm25_files import tokenize
from .signals import SignalIndex

# A word said more often than this in a paste counts this often in its BM25 scores: a paste that hides an
# address as ``XXX.XXX.XXX.XXX`` (twice) found the records that say ``xxx`` before its error's.
QUERY_WORD_REPEATS = 3


def query_words(text: str, signals: SignalIndex) -> tuple[list[int], list[int], list[int], int]:
    """The query's tokens as ids of each BM25 vocabulary (in order, repeats kept up to QUERY_WORD_REPEATS, as
    bm25s scores them), its distinct known words, and how many distinct words it has."""
    tokens = tokenize([text])
    if not tokens.ids or not tokens.ids[0]:
        return [], [], [], 0
    strings = {i: w for w, i in tokens.vocab.items()}
    in_order = repeats_capped([strings[t] for t in tokens.ids[0]])
    by_message = signals.bm25_message.vocab_dict
    by_all = signals.bm25_all.vocab_dict
    distinct = set(in_order)
    known = sorted({by_all[w] for w in distinct if w in by_all})
    return (
        [by_message[w] for w in in_order if w in by_message],
        [by_all[w] for w in in_order if w in by_all],
        known,
        len(distinct),
    )


def repeats_capped(words: list[str]) -> list[str]:
    """``words``, each kept at most ``QUERY_WORD_REPEATS`` times, in order."""
    seen: Counter[str] = Counter()
    kept = []
    for word in words:
        seen[word] += 1
        if seen[word] <= QUERY_WORD_REPEATS:
            kept.append(word)
    return kept
