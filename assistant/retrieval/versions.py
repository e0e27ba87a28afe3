"""Preferring the record valid for the installed version of its library.

Versioned records (``errata ingest --releases``) carry the releases they exist in as tags
(``release-first:0.27.2``, ``release-last:0.28.1``). When a front end knows what is installed (``errata run``
and the hooks read it from the live frames), a record whose releases exclude that version cannot be what
raised the error (its code is not in the installed release): it gives way to the best retrieved record of
the same library whose releases include it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from packaging.version import InvalidVersion, Version

from ..answering.answer import Hit, Retrieval
from ..knowledge.records import Record


def release_range(record: Record) -> tuple[Version | None, Version | None] | None:
    """The first and last release a versioned record exists in, or None for an unversioned record."""
    first = last = None
    for tag in record.tags:
        kind, _, value = tag.partition(":")
        try:
            if kind == "release-first":
                first = Version(value)
            elif kind == "release-last":
                last = Version(value)
        except InvalidVersion:
            continue
    return None if first is None and last is None else (first, last)


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-")


def installed_for(record: Record, installed: Mapping[str, str]) -> Version | None:
    """The installed version of the record's library: its repository's name or first tag, as a distribution."""
    by_name = {_normalized(k): v for k, v in installed.items()}
    for name in (record.repo.split("/")[-1], *(record.tags[:1])):
        version = by_name.get(_normalized(name))
        if version:
            try:
                return Version(version)
            except InvalidVersion:
                return None
    return None


def fits(record: Record, installed: Mapping[str, str]) -> bool | None:
    """Whether the record exists in the installed release (None when either is unknown)."""
    span, version = release_range(record), installed_for(record, installed)
    if span is None or version is None:
        return None
    first, last = span
    return (first is None or first <= version) and (last is None or version <= last)


def prefer_installed(retrieval: Retrieval, installed: Mapping[str, str] | None) -> Retrieval:
    """The same hits, with the best one of the top hit's library that fits the installed version moved to the
    top when the top one does not fit it."""
    hits = retrieval.hits
    if not installed or len(hits) < 2 or fits(hits[0].record, installed) is not False:
        return retrieval
    for i, hit in enumerate(hits[1:], start=1):
        if hit.record.repo == hits[0].record.repo and fits(hit.record, installed):
            moved: list[Hit] = [hit, *hits[:i], *hits[i + 1 :]]
            general_for = retrieval.general_for if moved[0].record.repo == retrieval.hits[0].record.repo else None
            return replace(retrieval, hits=moved, general_for=general_for)
    return retrieval
