"""Records left on disk: a sequence that knows where each record's line is and reads it when asked.

Why: as Python objects, records take about three times their JSON size (9.5 KB each for the bundled
kind: 0.95 GB at 100k records, most of the serving process). A replica needs a record in full only when
it shows it (a hit, a source card); everything retrieval needs of every record is a few numbers and
strings the Retriever keeps in arrays. The shelf keeps each record's file, byte offset, length and id,
and parses the line again on access; a knowledge base file edited underneath is noticed (the id read
back differs) and reported instead of showing another record. The records read last are kept parsed
(``RECORDS_KEPT``): a query shows five, and parsing one (JSON, schema, pattern checks) cost ~0.3 ms,
a third of retrieval's own time besides the query encoding.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import overload

import numpy as np

from ..errors import KnowledgeBaseError
from ..knowledge.records import (
    INGESTED_TAG,
    LoadReport,
    RaiseKey,
    Record,
    choice_entry,
    choose_curated,
    parse_line,
    scan_records,
)
from ..knowledge.wordings import curated_samples, inherited_patterns

# Parsed records kept in memory, the most recently read (about 10 KB each: ~40 MB at most).
RECORDS_KEPT = 4096


class RecordShelf(Sequence[Record]):
    """The records of a knowledge base, read from their JSONL files on access (thread-safe)."""

    def __init__(self, files: list[Path], places: np.ndarray, ids: np.ndarray, patterns: dict[int, str] | None = None):
        """``places``: one row per record, (file number, byte offset, byte length, line number); ``patterns``:
        the pattern a record has instead of its line's, by position (the wordings it inherited)."""
        self.files = files
        self._places = places
        self._ids = ids  # bytes: record ids are 16 hex digits (checked when loaded)
        self.patterns = dict(patterns or {})
        self._handles: dict[int, int] = {}
        self._lock = threading.Lock()
        self._kept: OrderedDict[int, Record] = OrderedDict()  # the last RECORDS_KEPT read, oldest first
        # Opened now: a file replaced later (errata refresh-kb writes a new file and renames it) is read
        # as it was loaded. One that cannot be opened now is opened on first use.
        for number in range(len(files)):
            with contextlib.suppress(KnowledgeBaseError):
                self._handle(number)

    @classmethod
    def load(
        cls, paths: Sequence[Path | str] | Path | str, *, strict: bool = False, report: LoadReport | None = None
    ) -> RecordShelf:
        """Validate every record under ``paths`` as :func:`load_records` does, keeping only where each is."""
        report = report if report is not None else LoadReport()
        files: list[Path] = []
        numbers: dict[Path, int] = {}
        places: list[tuple[int, int, int, int]] = []
        ids: list[str] = []
        choice: list[tuple[RaiseKey, bool]] = []
        repos: dict[str, int] = {}
        repo_of: list[int] = []  # each record's repo by number: which curated records a wording is checked on
        for found in scan_records(paths, strict=strict, report=report):
            number = numbers.setdefault(found.path, len(files))
            if number == len(files):
                files.append(found.path)
            places.append((number, found.offset, found.length, found.lineno))
            ids.append(found.record.id)
            choice.append(choice_entry(found.record))
            repo_of.append(repos.setdefault(found.record.repo, len(repos)))
        chosen = choose_curated(choice, report)
        curated = [not ingested for _key, ingested in choice] if chosen is not None and chosen.heirs else []
        del choice
        rows = np.array(places, dtype=np.int64).reshape(-1, 4)
        id_bytes = np.array(ids, dtype="S16")
        if chosen is None:
            return cls(files, rows, id_bytes)
        every = cls(files, rows, id_bytes)  # reads the patterns of the records that gave way, before they go
        # Read again only the curated records of the repos a wording would go to (a few hundred at most).
        wanted = {repo_of[i] for i in chosen.heirs}
        read_again = (every._parse(i) for i, is_curated in enumerate(curated) if is_curated and repo_of[i] in wanted)
        inherited = inherited_patterns(every._parse, chosen.heirs, curated_samples(read_again, INGESTED_TAG))
        every.close()
        kept = np.array(chosen.keep)
        position = np.cumsum(kept) - 1  # a kept record's position among the kept ones
        patterns = {int(position[i]): pattern for i, pattern in inherited.items()}
        return cls(files, rows[kept], id_bytes[kept], patterns)

    def __len__(self) -> int:
        return len(self._places)

    @overload
    def __getitem__(self, i: int) -> Record: ...

    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = int(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"record {i} of {len(self)}")
        with self._lock:
            record = self._kept.get(i)
            if record is not None:
                self._kept.move_to_end(i)
                return record
        record = self._parse(i)
        with self._lock:
            self._kept[i] = record
            if len(self._kept) > RECORDS_KEPT:
                self._kept.popitem(last=False)
        return record

    def _parse(self, i: int) -> Record:
        number, offset, length, lineno = (int(v) for v in self._places[i])
        raw = os.pread(self._handle(number), length, offset)
        where = f"{self.files[number]}:{lineno}"
        try:
            # Its pattern was checked when loaded; retrieval runs the signal index's copy, not this one.
            record = parse_line(raw.decode("utf-8"), where, check_pattern=False)
        except (ValueError, UnicodeDecodeError) as exc:
            raise KnowledgeBaseError(f"{where} changed since the knowledge base was loaded ({exc}); restart") from exc
        if record.id.encode() != self._ids[i]:
            raise KnowledgeBaseError(f"{where} changed since the knowledge base was loaded (another record); restart")
        pattern = self.patterns.get(i)
        return record if pattern is None else replace(record, message_pattern=pattern)

    def __iter__(self) -> Iterator[Record]:
        for i in range(len(self)):  # a pass over every record (a build) is not kept
            yield self._parse(i)

    def layout(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each record is (file number, offset, length, line) and its id: what a snapshot saves."""
        return self._places, self._ids

    def ids(self) -> list[str]:
        return [i.decode() for i in self._ids]

    def count_from(self, files: Sequence[Path]) -> int:
        """How many records come from ``files`` (by path as loaded)."""
        wanted = {Path(f) for f in files}
        numbers = [n for n, path in enumerate(self.files) if path in wanted]
        return int(np.isin(self._places[:, 0], numbers).sum()) if numbers else 0

    def head(self, count: int) -> Sequence[Record]:
        """The first ``count`` records, as a sequence of their own (read from this shelf)."""
        return _Head(self, count)

    def _handle(self, number: int) -> int:
        with self._lock:
            if number not in self._handles:
                try:
                    self._handles[number] = os.open(self.files[number], os.O_RDONLY)
                except OSError as exc:
                    raise KnowledgeBaseError(f"cannot read {self.files[number]} again: {exc}") from exc
            return self._handles[number]

    def close(self) -> None:
        with self._lock:
            for handle in self._handles.values():
                os.close(handle)
            self._handles.clear()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown os may be gone
            self.close()


class _Head(Sequence[Record]):
    """The first records of a shelf: those the vector index holds, when the rest have no vectors."""

    def __init__(self, shelf: RecordShelf, count: int):
        if not 0 <= count <= len(shelf):
            raise ValueError(f"the first {count} of {len(shelf)} records")
        self._shelf = shelf
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._count))]
        i = int(i) + (self._count if int(i) < 0 else 0)
        if not 0 <= i < self._count:
            raise IndexError(f"record {i} of {self._count}")
        return self._shelf[i]

    def __iter__(self) -> Iterator[Record]:
        for i in range(self._count):
            yield self._shelf._parse(i)

    def ids(self) -> list[str]:
        return self._shelf.ids()[: self._count]
