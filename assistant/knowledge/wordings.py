"""A curated record keeps every wording of its raise: the patterns of the ingested records that gave way to it.

Why: a curated record is written from one release, and users paste the message as the release they run
worded it. pydantic-ai's ``Exceeded maximum retries (1) for result validation`` is its curated record's
``Exceeded maximum output retries (1)`` a few releases earlier; the record's pattern fails on it, and a
near miss counts against the record. An ingested record of the same raise, merged across releases
(:mod:`assistant.releases.merge`), matches every wording it had. When it gives way to the curated record
(:func:`assistant.knowledge.records.choose_curated`), its pattern joins the curated one instead of being lost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

# A records.Record: records.py imports this module, so it names no type of records.py.
Record = Any

# Texts that no real wording is: a pattern matching one of them is a placeholder alone (``(.+?)``),
# which would make the curated record match any message.
_TOO_GENERIC = ("", "x", "0")


def message_sample(record: Record) -> str:
    """The record's message with each ``{placeholder}`` filled in: text another record's pattern must not
    take for its own."""
    from ..releases.identity import PLACEHOLDER_RE

    return PLACEHOLDER_RE.sub("x", record.error_message)


def inherited_patterns(
    record_of: Callable[[int], Record], heirs: Mapping[int, Sequence[int]], samples: Mapping[str, Sequence[str]]
) -> dict[int, str]:
    """Curated record's position -> its pattern joined with those of the ingested records that gave way to
    it and had other wordings in earlier releases (tagged ``reworded``); ``record_of`` reads a record by
    position. An ingested record of one wording adds none: its pattern is the curated one's, written looser.

    ``samples``: repo -> :func:`message_sample` of each curated record. A joined pattern that takes another
    curated record's message is not used: an earlier wording of one raise can be another raise's today
    (huggingface_hub's ``Got: ... An error happened while trying to locate the files``)."""
    from ..releases.patterns import REWORDED_TAG, combine_bounded

    inherited: dict[int, str] = {}
    for curated, ingested in heirs.items():
        record = record_of(curated)
        own = record.message_pattern
        reworded = (record_of(i) for i in ingested)
        patterns = (r.message_pattern for r in reworded if REWORDED_TAG in r.tags)
        others = [p for p in dict.fromkeys(patterns) if p != own and _specific(p)]
        if not others:
            continue
        combined = combine_bounded([own, *others])
        if combined != own and _specific(combined) and not _takes_another(combined, record, samples):
            inherited[curated] = combined
    return inherited


def _takes_another(pattern: str, record: Record, samples: Mapping[str, Sequence[str]]) -> bool:
    own = message_sample(record)
    compiled = re.compile(pattern)
    return any(text != own and compiled.search(text) for text in samples.get(record.repo, ()))


def _specific(pattern: str) -> bool:
    try:
        compiled = re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError):
        return False
    return not any(compiled.fullmatch(text) for text in _TOO_GENERIC)


def curated_samples(records: Iterable[Record], ingested_tag: str) -> dict[str, list[str]]:
    """repo -> :func:`message_sample` of each record not tagged ``ingested_tag``: what
    :func:`inherited_patterns` checks a joined pattern against."""
    samples: dict[str, list[str]] = {}
    for record in records:
        if ingested_tag not in record.tags:
            samples.setdefault(record.repo, []).append(message_sample(record))
    return samples
