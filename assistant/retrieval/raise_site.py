"""The raise a traceback's innermost frame shows, told apart from the other raises of the same message.

A library often raises one message from several places (pydantic's ``cannot specify both default and
default_factory`` from ``Field()`` and from ``PrivateAttr()``, peft's ``Can't find 'adapter_config.json'``
from two class methods), and their records read alike to every signal: same class, same message, same file.
The pasted traceback says which: its innermost frame's line number falls in one record's source excerpt, and
the ``raise`` line it shows is written, placeholders and all, in that record's source. Near ties only: the
bonus is small beside what the other signals weigh.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..knowledge.records import Record
from ..parse.query import Query
from .features import FEATURES
from .signals import path_tail

# Added to the fused score of a record whose source holds the innermost frame's raise (a near tie's margin).
RAISE_SITE_BONUS = 1.0
# The best-ranked records this many deep are looked at; a record further down is not a near tie.
SITE_DEPTH = 10
_RAISING_FRAME = FEATURES.index("raising_frame")


def _evidence(record: Record, line: int, code: str) -> int:
    """How much of the innermost frame ``record``'s source shows: its excerpt covers ``line`` (one), and
    holds the ``raise`` line ``code`` (one)."""
    start, end = record.source_code_start, record.source_code_end
    covers = start is not None and end is not None and start <= line <= end
    holds = code.startswith("raise ") and any(s.strip() == code for s in (record.source_code or "").splitlines())
    return int(covers) + int(holds)


def raise_site_rows(
    query: Query, features: np.ndarray, scores: np.ndarray, record_of: Callable[[int], Record]
) -> list[int]:
    """The best-ranked rows raised from the innermost frame's file whose source shows most of that frame,
    where another of those rows shows less (where all show as much there is nothing to tell apart)."""
    if not query.frames:
        return []
    last = query.frames[-1]
    tail = path_tail(last.file)
    code = (last.code or "").strip()
    top = np.argsort(-scores, kind="stable")[:SITE_DEPTH]
    records = {int(row): record_of(int(row)) for row in top if features[row, _RAISING_FRAME] > 0}
    evidence = {
        row: _evidence(record, last.line, code)
        for row, record in records.items()
        if path_tail(record.file_path) == tail
    }
    most = max(evidence.values(), default=0)
    held = [row for row, shown in evidence.items() if shown == most]
    return held if most and len(held) < len(evidence) else []
