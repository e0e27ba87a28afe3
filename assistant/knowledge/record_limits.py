"""How much one knowledge-base line and each of its fields may hold, and reading its files within that.

Why: a knowledge base is data from elsewhere (a release build, someone's ingest run). An 800 MB comment
line in a wheel's module became an 839 MB ``sourceCode``; loading that knowledge base peaked at 3.7 GB and
every answer carried it. A line over :data:`MAX_LINE_BYTES` is now skipped without being read whole, and a
field over its limit refuses the record, each a problem naming file and line like any malformed record.
The limits sit far above what real records hold: of 88,000 release-built records the longest line is 59 KB,
``sourceCode`` 57,000 characters, ``messagePattern`` 3,300, and no list has over 9 items.

A lone surrogate (the JSON escape ``"\\ud800"``) is refused here too: such text cannot be written as UTF-8,
and hashing the record for the index stopped every start with a ``UnicodeEncodeError``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from ..errors import KnowledgeBaseError

MAX_LINE_BYTES = 1 << 20  # one knowledge-base line, in bytes
MAX_FIELD_CHARS = 100_000  # a text field, unless named below
FIELD_CHARS = {"messagePattern": 20_000, "errorMessage": 20_000}
MAX_LIST_ITEMS = 200  # solutions, preventionTips, tags
# A line no longer than this cannot hold a field over its limit: a JSON string is no shorter than its text.
_FEWEST_CHARS = min(FIELD_CHARS.values())
_CHUNK = 1 << 16  # how much of an over-long line is read at a time while skipping it
_BOM = b"\xef\xbb\xbf"


def may_overflow(line: str) -> bool:
    """Whether a knowledge-base line may hold a field over its limit or a lone surrogate (``\\ud800``), so
    that its fields must be checked one by one; two scans of the line at C speed for the ~99.99% that do not."""
    return len(line) > _FEWEST_CHARS or "\\ud" in line or "\\uD" in line


def fields_problem(data: dict[str, object], names: Collection[str]) -> str | None:
    """The first problem (see :func:`field_problem`) of the fields of ``data`` named in ``names``, or None."""
    return next((found for name in names if (found := field_problem(name, data.get(name)))), None)


def field_problem(name: str, value: object) -> str | None:
    """What is wrong with a string or list-of-strings field's size or text, or None; names the field."""
    if type(value) is str:
        limit = FIELD_CHARS.get(name, MAX_FIELD_CHARS)
        if len(value) > limit:
            return f"{name}: {len(value)} characters, over the limit of {limit}"
        return None if value.isascii() else _surrogate_problem(name, value)
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_LIST_ITEMS:
            return f"{name}: {len(value)} items, over the limit of {MAX_LIST_ITEMS}"
        return next((problem for item in value if (problem := field_problem(name, item))), None)
    return None


def _surrogate_problem(name: str, value: str) -> str | None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"{name}: holds a lone surrogate ({value[exc.start]!r} at character {exc.start}), which is not text;"
            " write the character itself or drop it"
        )
    return None


def bounded_lines(handle: BinaryIO, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | int]:
    """Each line of ``handle`` as bytes, or for a line over ``limit`` bytes its length only: such a line is
    skipped a chunk at a time, never held whole."""
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit:
            yield raw
            continue
        length = len(raw)
        while not raw.endswith(b"\n"):
            raw = handle.readline(_CHUNK)
            if not raw:
                break
            length += len(raw)
        yield length


def numbered_lines(handle: BinaryIO, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, int, bytes | int]]:
    """(line number, byte offset, the line's bytes or, for one over ``limit``, its length) for each line of
    ``handle``. A byte-order mark before the first line is no part of it: it cost the first record."""
    offset = 0
    for lineno, raw in enumerate(bounded_lines(handle, limit), start=1):
        start = offset
        offset += raw if isinstance(raw, int) else len(raw)
        if lineno == 1 and isinstance(raw, bytes) and raw.startswith(_BOM):
            raw, start = raw[len(_BOM) :], start + len(_BOM)
        yield lineno, start, raw


def over_long_line(length: int, limit: int = MAX_LINE_BYTES) -> str:
    """The problem to report for a line of ``length`` bytes that was skipped."""
    return f"the line is {length} bytes, over the limit of {limit} for one record; it was not read"


def kb_files(paths: Iterable[Path | str]) -> list[Path]:
    """Every ``*.jsonl`` file named by ``paths`` (files, or folders searched recursively), sorted."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise KnowledgeBaseError(f"knowledge base {path} does not exist (give a folder of *.jsonl files)")
    if not files:
        names = ", ".join(str(p) for p in paths)
        raise KnowledgeBaseError(f"no *.jsonl record files found in {names}")
    return files
