"""The confidence model's inputs: how sure errata is that the top hit answers the query.

A logistic model over these (weights in ``weights.json``) gives the probability; below the threshold errata
abstains and shows the nearest records as possibly related.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..parse.query import Query
from .features import FEATURES, Scored

# A query of fewer distinct words than this ("error", "Exception", "None", "KeyError") cannot single out
# an error; its confidence is capped here, below any threshold, so errata asks for more instead.
SHORT_QUERY_WORDS = 2
SHORT_QUERY_CONFIDENCE = 0.05
_WORD_RE = re.compile(r"[A-Za-z0-9_]{2,}")
_ASCII_NOCASE = re.ASCII | re.IGNORECASE  # ``str.lower`` of these words; no Kelvin sign matching a "k"


# A quoted message sharing at least this share of its literal words with the top record's message is the
# same error worded as another release words it; below, a near miss (same library and class, another error).
REWORDED_SHARE = 0.75


def _reworded(overlap: float) -> float:
    return overlap if overlap >= REWORDED_SHARE else 0.0


def too_short_to_tell(query: Query) -> bool:
    """Whether the paste holds too few words to tell one error from another.

    The whole text is read, not its start: a rule of dashes, a long line or a run of combining marks may
    fill the first thousands of characters above a real traceback. Two regex searches in C (a first word,
    then any other) keep a paste of megabytes of one repeated word fast.
    """
    return _second_word(query.text) is None


def _second_word(text: str) -> str | None:
    """A word of ``text`` other than its first (case aside), or None when it has fewer than two."""
    first = _WORD_RE.search(text)
    if first is None:
        return None
    other = re.compile(
        rf"(?<![A-Za-z0-9_])(?!{re.escape(first.group())}(?![A-Za-z0-9_])){_WORD_RE.pattern}", _ASCII_NOCASE
    )
    found = other.search(text, first.end())
    return found.group() if found else None


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
    "message_overlap",  # the share of the quoted message's literal words the top hit's message has
)


def confidence_features(scored: Scored, order: np.ndarray) -> np.ndarray:
    """What the confidence model reads: the top score, its margin, which signals found the top hit, and
    whether a quoted error message is left unmatched by the top hit's pattern (the one weight both
    models share: the strongest sign of a near miss, in a paste or a question)."""
    top = int(order[0])
    scores = scored.evidence(top)
    second = float(scores[order[1]]) if len(order) > 1 else float(scores[top]) - 10.0
    shifted = scores - scores[top]
    probability = 1.0 / float(np.exp(shifted).sum())
    f = scored.features[top]
    index = FEATURES.index
    # An ingested record merged across releases matches every wording it had in them: a message its pattern
    # misses is a near miss, not one more release's wording (a curated record is written from one release),
    # unless only the message's last words differ (a release older than those read).
    allowed = not scored.is_offset(top) or top == scored.reworded_row
    reworded = _reworded(f[index("message_overlap")]) if allowed else 0.0
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
            f[index("has_message")]
            * (1.0 - min(1.0, 2.0 * pattern))
            * (1.0 - max(f[index("message_covered")], reworded)),
            f[index("weighted_coverage")],
            f[index("message_overlap")],
        ]
    )


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))
