"""One pattern for every wording a raise had: what a merge over releases writes, and what a curated record
inherits from it (:mod:`assistant.knowledge.wordings`)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ..knowledge.pattern_safety import unbounded_reason

REWORDED_TAG = "reworded"  # the raise's message had other wordings in earlier releases


def combine_bounded(patterns: Sequence[str]) -> str:
    """:func:`combine_patterns` of the first pattern and as many of the others, in order, as keep the result
    searchable in bounded time: a raise reworded across 100 releases once gave a pattern of many ``(.+?)``
    alternatives that backtracked for seconds (and the knowledge-base file, checked, failed to load)."""
    kept: list[str] = []
    for pattern in dict.fromkeys(p for p in patterns if p):
        if not kept or unbounded_reason(combine_patterns([*kept, pattern])) is None:
            kept.append(pattern)
    return combine_patterns(kept)


def combine_patterns(patterns: Sequence[str]) -> str:
    """One pattern matching what each of ``patterns`` matches: the shared start and end (cut at a literal
    space, so whole words stay outside) around an alternation of the differing middles."""
    unique = list(dict.fromkeys(p for p in patterns if p))
    if len(unique) <= 1:
        return unique[0] if unique else ""
    prefix = os.path.commonprefix(unique)
    cut = prefix.rfind(" ") + 1 if prefix.rfind(" ") > 0 and prefix[prefix.rfind(" ") - 1] != "\\" else 0
    rests = [p[cut:] for p in unique]
    suffix = os.path.commonprefix([r[::-1] for r in rests])[::-1]
    space = suffix.find(" ")
    end = len(suffix) - space if space >= 0 else 0
    middles = [r[: len(r) - end] if end else r for r in rests]
    combined = unique[0][:cut] + "(?:" + "|".join(middles) + ")" + (rests[0][len(rests[0]) - end :] if end else "")
    try:
        re.compile(combined)
    except re.error:
        return "|".join(f"(?:{p})" for p in unique)
    return combined
