"""How sure errata is, in the words every front end shows beside "No confident match".

A bare "Confidence 0.83" says nothing to someone who does not know the bar; the threshold errata needs to
answer is said beside it, taken from the settings of the Assistant that answered (never a constant here).
"""

from __future__ import annotations


def confidence_words(confidence: float, threshold: float | None = None) -> str:
    """``confidence 0.83, below the 0.89 errata needs to answer`` (lower case: a front end capitalizes it).

    The two numbers are shown with as many decimals as it takes to tell them apart (0.885 is not shown as
    "0.89, below the 0.89"). Without a threshold, or at or above it (an LLM's reply that cites no record
    is no confident match either), the confidence alone.
    """
    if threshold is None or confidence >= threshold:
        return f"confidence {confidence:.2f}"
    digits = 2
    while digits < 4 and f"{confidence:.{digits}f}" == f"{threshold:.{digits}f}":
        digits += 1
    return f"confidence {confidence:.{digits}f}, below the {threshold:.{digits}f} errata needs to answer"


def capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]
