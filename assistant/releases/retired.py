"""Raises that older releases had and the recent ones no longer have: what users of an old pin still hit.

A build over a library's whole history crowds the right record out with thousands of raises that are gone
(see README, "Older releases do not help"). Yet some errors people paste come only from such releases
(datasets 2's ``Couldn't find a dataset script at ...``, removed with dataset scripts). So the recent
releases (``last:3``) are read as before, and of the older ones only their *retired* raises are added:
raises that no recent release has, whose message is specific (not a generic template:
see ``retrieval.signals.is_generic_message``), and that are exceptions, not warnings or log lines.

A raise that the recent releases still have, reworded, keeps its older specific wordings too: httpx
0.24-0.26 raised ``URLs with no scheme component cannot have a path starting with ':'`` where the recent
releases say ``Relative URLs cannot ...``; a user of the old pin pastes the old text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from ..retrieval.signals import is_generic_message
from .identity import message_template
from .merge import merged_tracks, releases_of, sorted_as, span, told_before_marker
from .patterns import REWORDED_TAG, combine_bounded
from .scan import Scan

RETIRED_TAG = "retired"

# How a recent record and the merge over all releases name the same raise: its newest entry.
RaiseAt = tuple[str, str, str, str]


@dataclass
class OlderRaises:
    """What the older releases add to a build of the recent ones."""

    retired: list[dict[str, Any]] = field(default_factory=list)  # raises no recent release has
    # Per raise the recent releases still have: the older releases' wordings it lacks, as
    # (message, pattern, the releases that worded it so).
    wordings: dict[RaiseAt, list[tuple[str, str, str]]] = field(default_factory=dict)


def raise_at(record: dict[str, Any]) -> RaiseAt:
    fields = ("filePath", "lineNumber", "errorClass", "errorMessage")
    return tuple(str(record.get(name)) for name in fields)  # type: ignore[return-value]


def older_raises(older: Sequence[Scan], recent: Sequence[Scan]) -> OlderRaises:
    """The raises found in ``older`` releases and in none of ``recent`` (both oldest first), specific
    exceptions only, each tagged ``retired``; and the older specific wordings of those still raised.

    They are merged over both, so a raise that moved or was reworded in a recent release is followed there
    and is not retired; its id is that of the merge over both (stable for the same releases read). Nor is
    one whose class and message a recent release raises anywhere (langgraph 0.2's ``recursion_limit must
    be at least 1`` is 1.2's too, from code rewritten beyond following): the recent record answers it.
    """
    found = OlderRaises()
    if not older or not recent:
        return found
    first_recent = Version(recent[0]["version"])
    versions = [scan["version"] for scan in [*older, *recent]]
    still_raised = {_class_and_template(entry["record"]) for scan in recent for entry in scan["entries"]}
    for track, record in merged_tracks([*older, *recent]):
        if record["errorType"] != "exception":
            continue
        _first, last = releases_of(record["tags"])
        if last is None:
            continue
        if Version(last) >= first_recent:
            earlier = _older_wordings(track.seen, first_recent, versions)
            if earlier:
                found.wordings[raise_at(record)] = earlier
            continue
        if is_generic_message(record["errorMessage"]) or _class_and_template(record) in still_raised:
            continue
        record["tags"] = [*record["tags"], RETIRED_TAG]
        found.retired.append(record)
    return found


def _class_and_template(record: dict[str, Any]) -> tuple[str, str]:
    return record["errorClass"], message_template(record["errorMessage"])


def _older_wordings(
    seen: dict[str, dict[str, Any]], first_recent: Version, versions: Sequence[str]
) -> list[tuple[str, str, str]]:
    """The specific wordings only releases before ``first_recent`` gave a raise (``seen``: its entry per
    release), each with its pattern and the releases that had it."""
    recent_messages = {e["record"]["errorMessage"] for v, e in seen.items() if Version(v) >= first_recent}
    by_message: dict[str, tuple[str, list[str]]] = {}
    for version, entry in seen.items():
        record = entry["record"]
        message = record["errorMessage"]
        if Version(version) >= first_recent or message in recent_messages:
            continue
        if is_generic_message(message):
            continue
        by_message.setdefault(message, (record["messagePattern"], []))[1].append(version)
    return [
        (message, pattern, span(sorted_as(releases, versions), versions))
        for message, (pattern, releases) in by_message.items()
    ]


def with_older_wordings(records: Sequence[dict[str, Any]], found: OlderRaises) -> list[dict[str, Any]]:
    """``records`` (of the recent releases), each raise that older releases worded otherwise matching those
    wordings too, its documentation naming them, tagged ``reworded``; the rest unchanged."""
    out = []
    for record in records:
        earlier = found.wordings.get(raise_at(record))
        if not earlier:
            out.append(record)
            continue
        pattern = combine_bounded([record["messagePattern"], *(p for _m, p, _r in earlier)])
        told = "Older releases' wording: " + "; ".join(f'"{m}" ({r})' for m, _p, r in earlier) + "."
        documentation = told_before_marker(record["documentation"], told)
        tags = list(dict.fromkeys([*record["tags"], REWORDED_TAG]))
        out.append({**record, "messagePattern": pattern, "documentation": documentation, "tags": tags})
    return out
