"""What a record is embedded as (shared by every runtime, so their vectors go with one another)."""

from __future__ import annotations

from collections.abc import Callable

from ..knowledge.records import Record


def record_text(record: Record) -> str:
    """What a record is embedded as: what people paste (class, message), then where they meet it, what
    triggers it, and what it means. Questions describe situations; with ``commonSituations`` second,
    question Hit@1 on the dev set rose from 0.907 to 0.919; with ``triggerScenarios`` before the long
    ``documentation`` (which the 256-token window cut off for a quarter of records) from 0.894 to 0.903
    on the 865-query set (cross-validated 0.891 to 0.899)."""
    parts = [
        f"{record.error_class}: {record.error_message}",
        record.common_situations or "",
        record.trigger_scenarios or "",
        record.documentation,
    ]
    return "\n".join(part.strip() for part in parts if part and part.strip())


# The pieces of a record a query may describe alone, each embedded apart (see index/pieces.py): a
# question often tells one situation a record lists, and its cosine with that piece says more than with
# the whole record, where the other pieces dilute it.
PIECES: tuple[tuple[str, Callable[[Record], str]], ...] = (
    ("message", lambda r: f"{r.error_class}: {r.error_message}"),
    ("situations", lambda r: r.common_situations or ""),
    ("triggers", lambda r: r.trigger_scenarios or ""),
)
PIECE_NAMES = tuple(name for name, _text in PIECES)


def piece_texts(record: Record) -> tuple[str, ...]:
    """The text of each of ``PIECES`` for ``record``, ``""`` where it has none."""
    return tuple(text(record).strip() for _name, text in PIECES)
