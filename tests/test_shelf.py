"""The record shelf: the same records load_records gives, read from disk on access, never the wrong one."""

from __future__ import annotations

import json
import os
import threading

import pytest

from assistant.errors import KnowledgeBaseError
from assistant.knowledge.records import INGESTED_TAG, LoadReport, load_records
from assistant.settings import BUNDLED_KB_DIR
from assistant.storage.shelf import RecordShelf
from tests.conftest import read_lines, write_lines


def test_the_shelf_holds_the_records_load_records_gives():
    loaded = load_records(BUNDLED_KB_DIR)
    shelf = RecordShelf.load(BUNDLED_KB_DIR)
    lines = sum(1 for f in BUNDLED_KB_DIR.glob("*.jsonl") for line in f.read_text().splitlines() if line.strip())
    assert len(shelf) == len(loaded) == lines > 800
    assert list(shelf) == loaded  # every field, in order
    assert shelf.ids() == [r.id for r in loaded]
    assert shelf[-1] == loaded[-1] and shelf[10:13] == loaded[10:13]
    assert [r.source for r in shelf[:3]] == [r.source for r in loaded[:3]]  # file:line, for messages
    with pytest.raises(IndexError):
        shelf[len(loaded)]


def test_malformed_lines_and_ingested_duplicates_are_handled_as_load_records_does(small_kb):
    path = next(small_kb.glob("*.jsonl"))
    rows = read_lines(path)
    first = rows[0]["record"]
    ingested = dict(first, id="f" * 16, tags=[*first["tags"], INGESTED_TAG], documentation="ingested twin")
    write_lines(path, [*rows, {"record": ingested, "datasetVersion": "x"}])
    with path.open("a") as handle:
        handle.write("{not json\n")
    expected_report, report = LoadReport(), LoadReport()
    expected = load_records(small_kb, report=expected_report)
    shelf = RecordShelf.load(small_kb, report=report)
    assert list(shelf) == expected and "f" * 16 not in shelf.ids()  # the curated record wins
    assert report.problems == expected_report.problems and report.problems[0].startswith(f"{path}:{len(rows) + 2}:")
    assert report.superseded == expected_report.superseded == 1
    with pytest.raises(KnowledgeBaseError, match=f"{path}:{len(rows) + 2}"):
        RecordShelf.load(small_kb, strict=True)


def test_a_file_replaced_after_loading_is_read_as_it_was_loaded(small_kb):
    path = next(small_kb.glob("*.jsonl"))
    shelf = RecordShelf.load(small_kb)
    before = list(shelf)
    rows = read_lines(path)
    replacement = path.with_suffix(".new")
    write_lines(replacement, rows[::-1])
    os.replace(replacement, path)  # as errata refresh-kb does
    assert list(shelf) == before


def test_a_file_edited_in_place_is_reported_not_misread(small_kb):
    path = next(small_kb.glob("*.jsonl"))
    shelf = RecordShelf.load(small_kb)
    rows = read_lines(path)
    with path.open("r+") as handle:  # same file, other content at the same offsets
        handle.write("".join(json.dumps(r) + "\n" for r in rows[::-1]))
    with pytest.raises(KnowledgeBaseError, match=f"{path}:1 changed since the knowledge base was loaded"):
        shelf[0]


def test_records_read_last_are_kept_parsed_and_the_rest_read_again(small_kb, monkeypatch):
    from assistant.storage import shelf as shelf_module

    monkeypatch.setattr(shelf_module, "RECORDS_KEPT", 2)
    shelf = RecordShelf.load(small_kb)
    first, second, third = shelf[0], shelf[1], shelf[2]  # the first gave way to the third
    assert shelf[2] is third and shelf[1] is second
    assert shelf[0] == first and shelf[0] is not first
    path = next(small_kb.glob("*.jsonl"))
    with path.open("r+") as handle:  # edited underneath: what is kept is what was loaded; the rest reports it
        handle.write("".join(json.dumps(r) + "\n" for r in read_lines(path)[::-1]))
    assert shelf[0] == first
    with pytest.raises(KnowledgeBaseError, match="changed since the knowledge base was loaded"):
        shelf[2]


def test_threads_read_one_shelf_at_once():
    shelf = RecordShelf.load(BUNDLED_KB_DIR)
    expected = shelf.ids()
    seen: dict[int, list[str]] = {}

    def read(n: int) -> None:
        seen[n] = [shelf[i].id for i in range(n, len(shelf), 3)]

    threads = [threading.Thread(target=read, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(i for ids in seen.values() for i in ids) == sorted(expected)
