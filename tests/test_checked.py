"""Record files of the package checked when written load without timing their patterns again; any other
file, or one whose bytes changed, is checked as before."""

from __future__ import annotations

import json

import pytest

import assistant.knowledge.records as records_module
from assistant.errors import KnowledgeBaseError
from assistant.knowledge.checked import CHECKED_NAME, checked_files, write_checked
from assistant.knowledge.records import kb_files, load_records
from assistant.settings import BUNDLED_KB_DIR

from .conftest import read_lines, write_lines


def test_the_bundled_records_are_named_checked_with_their_bytes():
    files = kb_files([BUNDLED_KB_DIR])
    stale = "the bundled records changed since they were checked: run `errata refresh-kb` (it checks and names them)"
    assert checked_files(files) == frozenset(files), stale


def test_a_checked_file_skips_the_pattern_trials_and_a_changed_one_is_checked(small_kb, tmp_path, monkeypatch):
    path = small_kb / "ollama__ollama-python.jsonl"
    rows = read_lines(path)
    rows[0]["record"]["messagePattern"] = "(a+)+$"  # backtracks for hours on 'aaaa...!'
    write_lines(path, rows)
    files = kb_files([small_kb])
    write_checked(small_kb, files)
    assert json.loads((small_kb / CHECKED_NAME).read_text())["files"].keys() == {f.name for f in files}
    assert checked_files(files, root=small_kb) == frozenset(files)
    assert checked_files(files) == frozenset()  # outside the package: never trusted
    monkeypatch.setattr(records_module, "checked_files", lambda found: checked_files(found, root=small_kb))
    assert len(load_records(small_kb, strict=True)) == sum(len(read_lines(f)) for f in files)
    rows[1]["record"]["documentation"] += " Edited."  # its bytes are no longer those checked
    write_lines(path, rows)
    assert checked_files(files, root=small_kb) == frozenset(files) - {path}
    with pytest.raises(KnowledgeBaseError, match=r"ollama__ollama-python\.jsonl:1: messagePattern: backtracks"):
        load_records(small_kb, strict=True)
