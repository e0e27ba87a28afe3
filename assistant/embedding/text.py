"""What a record is embedded as (shared by every runtime, so their vectors go with one another)."""

from __future__ import annotations

from ..records import Record


def record_text(record: Record) -> str:
    """What a record is embedded as: what people paste (class, message), then where they meet it and what
    it means (questions describe situations; with ``commonSituations`` second, question Hit@1 on the dev
    set rose from 0.907 to 0.919, cross-validated 0.898 to 0.915)."""
    parts = [
        f"{record.error_class}: {record.error_message}",
        record.common_situations or "",
        record.documentation,
        record.trigger_scenarios or "",
    ]
    return "\n".join(part.strip() for part in parts if part and part.strip())
