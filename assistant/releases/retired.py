"""Raises that older releases had and the recent ones no longer have: what users of an old pin still hit.

A build over a library's whole history crowds the right record out with thousands of raises that are gone
(see README, "Older releases do not help"). Yet some errors people paste come only from such releases
(datasets 2's ``Couldn't find a dataset script at ...``, removed with dataset scripts). So the recent
releases (``last:3``) are read as before, and of the older ones only their *retired* raises are added:
raises that no recent release has, whose message is specific (more literal words than a generic template:
see ``retrieval.signals.GENERIC_WORDS``), and that are exceptions, not warnings or log lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from packaging.version import Version

from ..retrieval.signals import GENERIC_WORDS, message_words
from .merge import merge_scans, releases_of
from .scan import Scan

RETIRED_TAG = "retired"


def retired_records(older: Sequence[Scan], recent: Sequence[Scan]) -> list[dict[str, Any]]:
    """The records of raises found in ``older`` releases and in none of ``recent`` (both oldest first),
    specific exceptions only, each tagged ``retired``.

    They are merged over both, so a raise that moved or was reworded in a recent release is followed there
    and is not retired; its id is that of the merge over both (stable for the same releases read).
    """
    if not older or not recent:
        return []
    first_recent = Version(recent[0]["version"])
    kept = []
    for record in merge_scans([*older, *recent]):
        _first, last = releases_of(record["tags"])
        if last is None or Version(last) >= first_recent:
            continue
        if record["errorType"] != "exception" or len(message_words(record["errorMessage"])) <= GENERIC_WORDS:
            continue
        record["tags"] = [*record["tags"], RETIRED_TAG]
        kept.append(record)
    return kept
