"""Which records hold a pattern, named as ``file:line (id ...)``: what a warning about the pattern needs.

Why: a pattern that backtracks too long is dropped with a warning; the warning is of use only when it
says which record to fix. Looked up only then (a scan of the distinct patterns), so it costs nothing
on the path of a query.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..knowledge.records import Record
from .signals import SignalIndex

MAX_NAMED = 3


def pattern_owners(signals: SignalIndex, records: Sequence[Record], source: str) -> str:
    """The first few records whose ``messagePattern`` is ``source``, with the count when there are more."""
    for number in range(len(signals.patterns)):
        if signals.patterns[number] != source:
            continue
        positions = signals.pattern_records.numbered(number)
        named = []
        for position in positions[:MAX_NAMED].tolist():
            record = records[position]
            named.append(f"{record.source or record.repo} (id {record.id})")
        more = f" and {len(positions) - MAX_NAMED} more" if len(positions) > MAX_NAMED else ""
        return ", ".join(named) + more
    return "unknown"
