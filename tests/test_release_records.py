"""The release-built records shipped in the package: packed, unpacked once beside the index, trusted by their
bytes, joined to the bundled knowledge base without dense vectors."""

from __future__ import annotations

import gzip
import json
import logging
import os
import time

import pytest

from assistant import Assistant, KnowledgeBaseError, Settings
from assistant.knowledge import release_records
from assistant.knowledge.checked import checked_files
from assistant.knowledge.release_records import (
    MANIFEST_NAME,
    knowledge_paths,
    pack_release_records,
    shipped_files,
    unpack_release_records,
)
from assistant.settings import BUNDLED_KB_DIR
from tests.conftest import read_lines, write_lines


def _record(i: int, repo: str = "acme/widgets") -> dict:
    return {
        "record": {
            "id": f"{i:016x}",
            "repo": repo,
            "errorMessage": f"Widget {{name}} cannot be folded in mode number{i}",
            "messagePattern": f"Widget (.+?) cannot be folded in mode number{i}",
            "slug": f"widget-fold-{i}",
            "errorClass": "WidgetError",
            "errorType": "exception",
            "filePath": "widgets/fold.py",
            "lineNumber": 10 + i,
            "documentation": "Raised when a widget is folded in a mode it does not support.",
            "solutions": [],
            "tags": ["ingested", "extracted"],
        }
    }


@pytest.fixture
def packed(tmp_path):
    """Two record files built from releases, packed as the package ships them."""
    source = tmp_path / "built"
    source.mkdir()
    write_lines(source / "acme__widgets.jsonl", [_record(i) for i in range(3)])
    write_lines(source / "acme__gadgets.jsonl", [_record(i, "acme/gadgets") for i in range(3, 5)])
    dest = tmp_path / "package"
    pack_release_records(source, dest)
    return source, dest


def test_packing_names_each_file_by_the_bytes_it_unpacks_to_and_gives_the_same_bytes_each_time(packed, tmp_path):
    source, dest = packed
    files = {f.name: f for f in shipped_files(dest)}
    assert sorted(files) == ["acme__gadgets.jsonl", "acme__widgets.jsonl"]
    assert files["acme__widgets.jsonl"].records == 3 and files["acme__gadgets.jsonl"].records == 2
    assert files["acme__widgets.jsonl"].size == (source / "acme__widgets.jsonl").stat().st_size
    first = (dest / "acme__widgets.jsonl.gz").read_bytes()
    time.sleep(0.01)
    pack_release_records(source, dest)  # unchanged records: unchanged bytes (no churn in git)
    assert (dest / "acme__widgets.jsonl.gz").read_bytes() == first
    (source / "acme__gadgets.jsonl").unlink()
    pack_release_records(source, dest)  # a package no longer built is no longer shipped
    assert not (dest / "acme__gadgets.jsonl.gz").exists() and [f.name for f in shipped_files(dest)] == [
        "acme__widgets.jsonl"
    ]


def test_unpacking_writes_once_and_mends_what_changed(packed, tmp_path):
    source, dest = packed
    folder = unpack_release_records(tmp_path / "index" / "release-records", dest)
    for name in ("acme__widgets.jsonl", "acme__gadgets.jsonl"):
        assert (folder / name).read_bytes() == (source / name).read_bytes()
    stamp = (folder / "acme__widgets.jsonl").stat().st_mtime_ns
    unpack_release_records(folder, dest)
    assert (folder / "acme__widgets.jsonl").stat().st_mtime_ns == stamp  # the second start writes nothing
    (folder / "acme__widgets.jsonl").write_text("{}\n")  # cut short, or edited
    (folder / "stale__old.jsonl").write_text("{}\n")  # a file of an earlier errata
    unpack_release_records(folder, dest)
    assert (folder / "acme__widgets.jsonl").read_bytes() == (source / "acme__widgets.jsonl").read_bytes()
    assert not (folder / "stale__old.jsonl").exists()
    # A newer errata ships other records under the same name: unpacked again
    rows = [_record(i) for i in range(7, 9)]
    write_lines(source / "acme__widgets.jsonl", rows)
    pack_release_records(source, dest)
    unpack_release_records(folder, dest)
    assert [json.loads(line)["record"]["id"] for line in (folder / "acme__widgets.jsonl").open()] == [
        r["record"]["id"] for r in rows
    ]


def test_a_damaged_archive_is_an_error_that_says_to_reinstall_and_leaves_no_half_file(packed, tmp_path):
    _source, dest = packed
    data = (dest / "acme__widgets.jsonl.gz").read_bytes()
    (dest / "acme__widgets.jsonl.gz").write_bytes(data[: len(data) // 2])
    folder = tmp_path / "unpacked"
    with pytest.raises(KnowledgeBaseError, match="acme__widgets.jsonl.gz is damaged.*reinstall"):
        unpack_release_records(folder, dest)
    assert not (folder / "acme__widgets.jsonl").exists()
    # Another file's records, intact gzip but not the bytes the manifest names
    manifest = json.loads((dest / MANIFEST_NAME).read_text())
    with gzip.open(dest / "acme__gadgets.jsonl.gz", "wb") as out:
        out.write(b'{"record": {}}\n')
    (dest / "acme__widgets.jsonl.gz").write_bytes(data)
    with pytest.raises(KnowledgeBaseError, match="acme__gadgets.jsonl.gz does not hold the records"):
        unpack_release_records(folder, dest)
    assert manifest["files"]["acme__gadgets.jsonl"]["records"] == 2


def test_an_unpacked_file_is_trusted_only_while_it_holds_the_bytes_that_were_packed(packed, tmp_path, monkeypatch):
    _source, dest = packed
    monkeypatch.setattr(release_records, "SHIPPED_DIR", dest)
    folder = unpack_release_records(tmp_path / "unpacked")
    path = folder / "acme__widgets.jsonl"
    assert checked_files([path]) == {path}
    text = path.read_bytes()
    path.write_bytes(text.replace(b"Widget", b"Wodget", 1))  # same size, other bytes
    assert checked_files([path]) == frozenset()


def test_the_release_built_records_go_with_the_bundled_records_only(packed, tmp_path, monkeypatch, caplog):
    _source, dest = packed
    monkeypatch.setattr(release_records, "SHIPPED_DIR", dest)
    index_dir = tmp_path / "index"
    default = Settings.load(env={}, index_dir=index_dir)
    assert knowledge_paths(default) == (BUNDLED_KB_DIR, index_dir / "release-records")
    assert sorted(p.name for p in (index_dir / "release-records").glob("*.jsonl")) == [
        "acme__gadgets.jsonl",
        "acme__widgets.jsonl",
    ]
    assert knowledge_paths(default.replace(release_records=False)) == (BUNDLED_KB_DIR,)
    own = default.replace(kb=(tmp_path / "mine",))
    assert knowledge_paths(own) == (tmp_path / "mine",)  # a user's own knowledge base, as before
    both = default.replace(kb=(BUNDLED_KB_DIR, tmp_path / "mine"))
    assert knowledge_paths(both)[-1] == index_dir / "release-records"
    # An index folder that cannot be written: the curated records alone, and a warning that says why
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the index folder should be")
    with caplog.at_level(logging.WARNING, logger="assistant"):
        assert knowledge_paths(default.replace(index_dir=blocked)) == (BUNDLED_KB_DIR,)
    assert "cannot be unpacked" in caplog.text and "ERRATA_INDEX_DIR" in caplog.text


def test_settings_read_release_records_from_the_environment():
    assert Settings.load(env={}).release_records is True
    assert Settings.load(env={"ERRATA_RELEASE_RECORDS": "false"}).release_records is False


def test_the_package_ships_release_built_records_named_in_its_manifest():
    files = shipped_files()
    assert len(files) >= 100 and sum(f.records for f in files) > 50_000
    names = {f.name for f in files}
    for repo in ("django__django.jsonl", "pandas-dev__pandas.jsonl", "encode__httpx.jsonl", "pytorch__pytorch.jsonl"):
        assert repo in names
    for f in files:
        assert (release_records.SHIPPED_DIR / (f.name + ".gz")).is_file()


@pytest.mark.slow
def test_the_default_knowledge_base_answers_from_release_built_records_without_vectors_for_them(tmp_path, embedder):
    settings = Settings.load(env={}, index_dir=tmp_path / "index", release_records=True)
    started = time.perf_counter()
    first = Assistant(settings, embedder=embedder)
    built_in = time.perf_counter() - started
    curated = len(read_lines_of_bundled())
    assert len(first.records) > 80_000
    assert len(first.vector_index) < curated + 200  # the release-built records have no dense vectors
    assert not list((tmp_path / "index").glob(".bm25-all-*"))  # the second process's folder is gone
    answer = first.ask(
        "django.urls.exceptions.NoReverseMatch: Reverse for 'home' not found. 'home' is not a valid view "
        "function or pattern name."
    )
    assert (
        answer.hits[0].record.repo == "django/django"
        and answer.grounded
        and answer.confidence >= settings.confidence_threshold
    )
    # A removed API (httpx 0.28 dropped `proxies`) is answered by its API-change record, not Python's own
    # unexpected-keyword TypeError, on a fresh start with no extra step (issue 45)
    proxies = first.ask("TypeError: Client.__init__() got an unexpected keyword argument 'proxies'")
    top = proxies.hits[0].record
    assert top.repo == "encode/httpx" and "api-change" in top.tags
    assert proxies.confidence >= settings.confidence_threshold
    # A curated record still answers its own error first
    assert first.ask("my agent stops with Agent interrupted").hits[0].record.repo != "django/django"
    started = time.perf_counter()
    again = Assistant(settings, embedder=embedder)  # the next start reads what the first one saved
    assert again.build_report.reason == "up to date (snapshot)" and time.perf_counter() - started < built_in / 4
    assert [h.record.id for h in again.search("Reverse for 'home' not found.")] == [
        h.record.id for h in first.search("Reverse for 'home' not found.")
    ]


def read_lines_of_bundled() -> list[dict]:
    return [row for path in BUNDLED_KB_DIR.glob("*.jsonl") for row in read_lines(path)]


def test_unpacking_needs_no_write_access_to_the_package(packed, tmp_path):
    _source, dest = packed
    os.chmod(dest, 0o555)
    try:
        folder = unpack_release_records(tmp_path / "unpacked", dest)
        assert len(list(folder.glob("*.jsonl"))) == 2
    finally:
        os.chmod(dest, 0o755)


def test_an_update_ships_only_the_lines_that_pass_a_strict_load_and_names_those_left_out(tmp_path):
    from assistant.releases.update import update_release_records

    built = tmp_path / "built"
    built.mkdir()
    rows = [_record(i) for i in range(3)]
    rows[1]["record"]["messagePattern"] = "(a+)+$"  # backtracks without bound: refused at load
    lines = [json.dumps(row) for row in rows] + ["{not json"]
    (built / "acme__widgets.jsonl").write_text("\n".join(lines) + "\n")
    report = update_release_records(tmp_path / "work", built=built, dest=tmp_path / "package")
    assert [(f.name, f.records) for f in report.shipped] == [("acme__widgets.jsonl", 2)]
    assert [d.split(":")[:2] for d in report.dropped] == [["acme__widgets.jsonl", "2"], ["acme__widgets.jsonl", "4"]]
    assert "left out 2 line(s)" in report.summary() and "coverage --write README.md" in report.summary()
    unpacked = unpack_release_records(tmp_path / "unpacked", tmp_path / "package")
    assert [json.loads(line)["record"]["id"] for line in (unpacked / "acme__widgets.jsonl").open()] == [
        f"{0:016x}",
        f"{2:016x}",
    ]


@pytest.mark.slow
def test_an_api_change_record_answers_its_removed_argument_before_pythons_own_typeerror(tmp_path, embedder):
    """httpx 0.28 removed ``proxies``: its API-change record is worded as Python words every unexpected keyword
    argument, so it used to be treated as a twin of Python's record (answering only with httpx named) and to
    rank below it by the ingested offset; a new user got Python's generic record at 0.99."""
    kb = tmp_path / "kb"
    kb.mkdir()
    python = [
        r for r in read_lines(BUNDLED_KB_DIR / "python__cpython.jsonl") if r["record"]["errorClass"] == "TypeError"
    ]
    write_lines(kb / "python__cpython.jsonl", python)
    change = _record(1, "encode/httpx")["record"] | {
        "errorClass": "TypeError",
        "errorMessage": "Client.__init__() got an unexpected keyword argument 'proxies'",
        "messagePattern": r"(?<![\w.])(?:Client\.)?__init__\(\) got an unexpected keyword argument 'proxies'",
        "filePath": "httpx/_client.py",
        "tags": ["httpx", "api-change", "type-error", "ingested", "extracted"],
    }
    write_lines(kb / "encode__httpx.jsonl", [{"record": change}])
    assistant = Assistant(Settings.load(env={}, kb=(kb,), index_dir=tmp_path / "index"), embedder=embedder)
    for paste in (
        "TypeError: Client.__init__() got an unexpected keyword argument 'proxies'",
        'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n    client = '
        'httpx.Client(proxies="http://localhost:8030")\nTypeError: Client.__init__() got an unexpected keyword '
        "argument 'proxies'",
    ):
        answer = assistant.ask(paste)
        assert answer.hits[0].record.id == change["id"], paste
        assert answer.confidence >= assistant.settings.confidence_threshold
    # Python's record still answers a keyword no API change names
    other = assistant.ask("TypeError: Widget.__init__() got an unexpected keyword argument 'colour'")
    assert other.hits[0].record.repo == "python/cpython"
