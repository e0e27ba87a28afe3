"""The last look at the fused scores: records the learned weights cannot tell apart, settled by rules.

Each rule is in its own module (wrapped_causes.py, raise_site.py); here they run in order on one query's
scored records. What they add to a score is kept in the penalty (negated), so a refit sees the same rules.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..knowledge.records import Record
from ..parse.query import Query
from .matching import PatternMatcher
from .raise_site import RAISE_SITE_BONUS, raise_site_rows
from .wrapped_causes import REPORTED_MARGIN, reporting_rows, unmatch_wrappers, wrapper_rows


def settle_near_ties(
    query: Query,
    features: np.ndarray,
    penalty: np.ndarray,
    offset: np.ndarray | None,
    weights: np.ndarray,
    record_of: Callable[[int], Record],
    curated: np.ndarray,
    matcher: PatternMatcher,
) -> np.ndarray:
    """The fused scores after the rules (``features`` and ``penalty`` updated in place)."""

    def fused() -> np.ndarray:
        return features @ weights - penalty - (0.0 if offset is None else offset)

    scores = fused()
    wrappers = wrapper_rows(query, features, scores, record_of, matcher, curated)
    if wrappers:  # a library's wrapper around its own error: the error inside answers
        unmatch_wrappers(features, wrappers, record_of)
        scores = fused()
    for rows, bonus in (
        (reporting_rows(features, scores, record_of, curated), REPORTED_MARGIN),  # a library reporting Python's
        (raise_site_rows(query, features, scores, record_of), RAISE_SITE_BONUS),  # the frame's own raise
    ):
        if rows:
            penalty[rows] -= bonus
            scores = fused()
    return scores
