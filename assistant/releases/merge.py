"""One record per raise across releases: match each release's findings to the raises already seen,
then write one record with the newest line and link, the releases it exists in and every wording.

Matching survives moved lines (nothing here looks at line numbers), a function moved to another file
or renamed, and a reworded message within the same function. A record's id is a hash of its identity at the first
release it appears in, so the same SPEC gives the same ids on every run, and adding newer releases keeps
them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .identity import REWORDED, identity_id, message_template, module_path, similarity
from .patterns import REWORDED_TAG, combine_bounded
from .scan import Scan

RELEASE_FIRST = "release-first:"
RELEASE_LAST = "release-last:"
MARKER = "(Extracted from the source code; not reviewed.)"


def release_tags(first: str, last: str) -> list[str]:
    """Tags naming the first and last release read that raise it (records keep no other release field)."""
    return [f"{RELEASE_FIRST}{first}", f"{RELEASE_LAST}{last}"]


def releases_of(tags: Sequence[str]) -> tuple[str | None, str | None]:
    """(first, last) release from a record's tags, None where absent."""
    first = next((t[len(RELEASE_FIRST) :] for t in tags if t.startswith(RELEASE_FIRST)), None)
    last = next((t[len(RELEASE_LAST) :] for t in tags if t.startswith(RELEASE_LAST)), None)
    return first, last


@dataclass
class Track:
    """One raise followed through the releases: its entry in each release that has it."""

    identity: str
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_entry: dict[str, Any] = field(default_factory=dict)


def _keys(entry: dict[str, Any]) -> tuple[str, str, str, str, str]:
    record = entry["record"]
    return (
        module_path(record["filePath"]),
        entry["qualname"],
        record["errorClass"],
        record["errorType"],
        message_template(record["errorMessage"]),
    )


def match_release(tracks: list[Track], entries: list[dict[str, Any]], version: str, repo: str) -> None:
    """Add one release's entries to ``tracks``: same raise first, then moved to another file, then in a
    renamed function, then reworded in the same function; what is left starts a new track."""
    free = sorted(tracks, key=lambda t: -len(t.seen))  # raises seen longest first
    left = list(entries)
    passes = (
        lambda k: k,  # file, function, class, kind, message
        lambda k: (k[1], k[2], k[3], k[4]) if k[1] else None,  # moved to another file
        lambda k: (k[0], k[2], k[3], k[4]),  # its function renamed
    )
    for key_of in passes:
        waiting: dict[Any, list[Track]] = {}
        for track in free:
            key = key_of(_keys(track.last_entry))
            if key is not None:
                waiting.setdefault(key, []).append(track)
        still = []
        for entry in left:
            key = key_of(_keys(entry))
            candidates = waiting.get(key) if key is not None else None
            if candidates:
                track = candidates.pop(0)
                _see(track, version, entry)
                free.remove(track)
            else:
                still.append(entry)
        left = still
    pairs = []
    for entry in left:
        file, qualname, error_class, kind, template = _keys(entry)
        for track in free:
            t_file, t_qualname, t_class, t_kind, t_template = _keys(track.last_entry)
            if (file, qualname, error_class, kind) == (t_file, t_qualname, t_class, t_kind):
                score = similarity(template, t_template)
                if score >= REWORDED:
                    pairs.append((score, id(entry), entry, track))
    used: set[int] = set()
    for _score, entry_id, entry, track in sorted(pairs, key=lambda p: -p[0]):
        if entry_id in used or track not in free:
            continue
        used.add(entry_id)
        free.remove(track)
        _see(track, version, entry)
    known = {t.identity for t in tracks}
    for entry in left:
        if id(entry) in used:
            continue
        base = repo.lower() + "|" + "|".join(_keys(entry))
        identity, n = base, 1
        while identity in known:  # the same message twice in one function: #2, #3, ... (one id each)
            n += 1
            identity = f"{base}#{n}"
        known.add(identity)
        track = Track(identity)
        _see(track, version, entry)
        tracks.append(track)


def _see(track: Track, version: str, entry: dict[str, Any]) -> None:
    track.seen[version] = entry
    track.last_entry = entry


def merge_scans(scans: Sequence[Scan]) -> list[dict[str, Any]]:
    """One record dict per raise found in any of ``scans`` (given oldest release first)."""
    return [record for _track, record in merged_tracks(scans)]


def merged_tracks(scans: Sequence[Scan]) -> list[tuple[Track, dict[str, Any]]]:
    """Each raise followed through ``scans`` (oldest release first) with its record: what
    :func:`merge_scans` returns, and the entries each release had (for :mod:`.retired`)."""
    tracks: list[Track] = []
    versions = [scan["version"] for scan in scans]
    for scan in scans:
        match_release(tracks, scan["entries"], scan["version"], scan["repo"])
    records = [merged_record(track, versions, scans[-1]["name"]) for track in tracks]
    slugs: Counter[str] = Counter()
    for record in records:
        slugs[record["slug"]] += 1
        if slugs[record["slug"]] > 1:
            record["slug"] = f"{record['slug']}-{slugs[record['slug']]}"
    return list(zip(tracks, records, strict=True))


def merged_record(track: Track, versions: Sequence[str], package: str) -> dict[str, Any]:
    """The newest entry's record, with the track's id, every wording's pattern, and its releases."""
    seen = [v for v in versions if v in track.seen]
    newest = dict(track.seen[seen[-1]]["record"])
    wordings: dict[str, list[str]] = {}
    patterns: dict[str, None] = {}
    for version in reversed(seen):
        record = track.seen[version]["record"]
        wordings.setdefault(record["errorMessage"], []).append(version)
        patterns.setdefault(record["messagePattern"], None)
    text = f"Present in {package} {span(seen, versions)} ({len(seen)} of {len(versions)} releases read)."
    if seen[-1] != versions[-1]:
        after = versions[versions.index(seen[-1]) + 1]
        text += f" Not found in {after} or later: removed or reworded beyond recognition there."
    earlier = list(wordings.items())[1:]
    if earlier:
        text += " Earlier wording: " + "; ".join(
            f'"{w}" ({span(sorted_as(v, versions), versions)})' for w, v in earlier
        )
        text += "."
    if newest.get("githubUrl"):
        text += f" The link points at tag `{newest['analyzedSha']}` (a tag name guessed from the version)."
    newest.update(
        id=identity_id(track.identity),
        messagePattern=combine_bounded(list(patterns)),
        documentation=told_before_marker(newest["documentation"], text),
        tags=list(dict.fromkeys([*newest["tags"], *release_tags(seen[0], seen[-1]), *[REWORDED_TAG][: bool(earlier)]])),
    )
    return newest


def told_before_marker(documentation: str, text: str) -> str:
    """``documentation`` with ``text`` added, before the note that it was extracted, not reviewed."""
    if documentation.endswith(MARKER):
        return f"{documentation[: -len(MARKER)]}{text} {MARKER}"
    return f"{documentation} {text}"


def sorted_as(items: Sequence[str], order: Sequence[str]) -> list[str]:
    return sorted(items, key=order.index)


def span(seen: Sequence[str], versions: Sequence[str]) -> str:
    """``0.23.0–0.25.2, 0.28.0``: runs of consecutive releases (in the order read) that have it."""
    runs: list[list[str]] = []
    for version in seen:
        if runs and versions.index(version) == versions.index(runs[-1][-1]) + 1:
            runs[-1].append(version)
        else:
            runs.append([version])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs)
