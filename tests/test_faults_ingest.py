"""Hostile and unlucky sources for ``errata ingest`` and release archives (issue 47): member names made to
inject a link or leave the package, members and lines too big to hold, coding cookies, undecodable names."""

from __future__ import annotations

import io
import json
import os
import tarfile
import tracemalloc
import zipfile

from assistant.frontends.cli import main
from assistant.ingest.output import read_records
from assistant.ingest.raises import ingest
from assistant.ingest.source_files import EXCERPT_CHARS, MAX_SOURCE_BYTES
from assistant.knowledge.records import load_records
from assistant.releases.archive import read_archive
from assistant.releases.scan import scan_archive
from tests.releases_toys import METADATA, build_sdist, build_wheel

GOOD = 'def connect(url):\n    raise ConnectionError(f"Could not reach the server at {url}, check the address")\n'
PIXEL = "evilpkg/a)![x](http://127.0.0.1:9/ingest-pixel.png)(b.py"
IMAGE = "evilpkg/<img src=http://127.0.0.1:9/x.png>.py"
HOSTILE_NAMES = [PIXEL, IMAGE, "../../../../tmp/evil.py", "evilpkg/../../outside.py"]


def _raise(words: str) -> str:
    return f'def run(value):\n    raise ValueError("{words} for this value")\n'


def _shown(scan: dict) -> str:
    """Everything of a scan's records that reaches a page: file paths and links."""
    return json.dumps([[e["record"]["filePath"], e["record"]["githubUrl"]] for e in scan["entries"]])


def test_wheel_members_named_to_inject_a_link_or_leave_the_package_are_refused(tmp_path):
    """A member named ``evilpkg/a)![x](http://127.0.0.1:9/ingest-pixel.png)(b.py`` made the browser fetch that
    URL from the offline answer; ``../`` names ended up in ``githubUrl``."""
    files = {"evilpkg/__init__.py": "", "evilpkg/client.py": GOOD}
    files.update({name: _raise(f"hostile member number {i}") for i, name in enumerate(HOSTILE_NAMES)})
    wheel = build_wheel(tmp_path, "evilpkg", "0.2.0", files)
    scan = scan_archive(wheel)
    assert [e["record"]["filePath"] for e in scan["entries"]] == ["evilpkg/client.py"]
    shown = _shown(scan)
    assert "127.0.0.1" not in shown and "<img" not in shown and ".." not in shown
    skipped = "\n".join(scan["report"]["skipped_files"])
    assert all(name in skipped for name in HOSTILE_NAMES)
    assert "not a safe file name" in skipped


def test_sdist_members_with_hostile_names_are_refused(tmp_path):
    sdist = build_sdist(tmp_path, "evilpkg", "0.2.0", {"evilpkg/__init__.py": "", "evilpkg/<b>x</b>.py": GOOD})
    with tarfile.open(sdist) as archive:
        assert "evilpkg-0.2.0/src/evilpkg/<b>x</b>.py" in archive.getnames()
    archive = read_archive(sdist)
    assert "evilpkg/<b>x</b>.py" not in archive.sources
    assert any("<b>x</b>.py" in note for note in archive.skipped)
    tar_path = tmp_path / "other-1.0.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        for name, text in {"other-1.0/PKG-INFO": METADATA, "other-1.0/../../evil.py": GOOD}.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    assert not any(".." in name for name in read_archive(tar_path).sources)


def test_a_member_over_the_size_limit_is_skipped_with_a_note_and_never_read_whole(tmp_path):
    """An 816 KB wheel held an 800 MB comment line; it became an 839 MB record."""
    wheel = tmp_path / "bigpkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bigpkg/__init__.py", GOOD)
        archive.writestr("bigpkg/huge.py", _raise("the huge module") + "#" * (2 * MAX_SOURCE_BYTES) + "\n")
        archive.writestr("bigpkg-1.0.dist-info/METADATA", METADATA.format(name="bigpkg", version="1.0"))
    assert wheel.stat().st_size < 100_000
    tracemalloc.start()
    try:
        archive = read_archive(wheel)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MAX_SOURCE_BYTES
    assert list(archive.sources) == ["bigpkg/__init__.py"]
    assert any(note.startswith("bigpkg/huge.py: ") and "over the limit" in note for note in archive.skipped)


def test_a_long_line_beside_a_raise_is_cut_in_the_source_excerpt(tmp_path):
    module = _raise("the token has expired") + "# " + "x" * 1_000_000 + "\n" + "y = 1\n" * 5
    wheel = build_wheel(tmp_path, "longpkg", "1.0", {"longpkg/__init__.py": "", "longpkg/auth.py": module})
    [entry] = scan_archive(wheel)["entries"]
    source = entry["record"]["sourceCode"]
    assert len(source) <= EXCERPT_CHARS
    assert 'raise ValueError("the token has expired for this value")' in source
    assert "xxx…" in source
    folder = tmp_path / "longpkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "auth.py").write_text(module)
    [record] = ingest(folder)[0]
    assert len(record.source_code) <= EXCERPT_CHARS and "xxx…" in record.source_code


def test_ingest_skips_an_oversized_module_with_a_note_and_writes_the_rest(tmp_path, capsys):
    """A 50 MB .py needed 2.3 GB to ingest."""
    folder = tmp_path / "bigpkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "client.py").write_text(GOOD)
    (folder / "huge.py").write_text(_raise("the huge module") + "#" * MAX_SOURCE_BYTES + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["ingest", str(folder), "-o", str(out), "--no-compiled", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r.file_path for r in read_records(out)] == ["bigpkg/client.py"]
    assert any(note.startswith("bigpkg/huge.py: ") and "bytes" in note for note in report["skipped_files"])


def test_ingest_of_a_folder_with_undecodable_and_hostile_file_names_writes_the_rest(tmp_path, capsys):
    """``mod\\xff.py`` crashed ``make_record`` (UnicodeEncodeError) and nothing was written."""
    folder = tmp_path / "oddpkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "client.py").write_text(GOOD)
    with open(os.path.join(os.fsencode(folder), b"mod\xff.py"), "w") as handle:
        handle.write(_raise("undecodable name"))
    (folder / "a)![x](pixel.png)(b.py").write_text(_raise("markdown name"))
    (folder / "<img src=x onerror=alert(1)>.py").write_text(_raise("html name"))
    out = tmp_path / "out.jsonl"
    assert main(["ingest", str(folder), "-o", str(out), "--no-compiled"]) == 0
    printed = capsys.readouterr().out
    assert "3 file(s) skipped" in printed
    records = load_records(out, strict=True)
    assert [r.file_path for r in records] == ["oddpkg/client.py"]


def test_a_coding_cookie_is_honoured(tmp_path):
    """latin-1 sources were read as UTF-8: unparsable in a folder, replacement characters in a wheel."""
    module = '# -*- coding: latin-1 -*-\ndef close():\n    raise OSError("le café est fermé pour la journée")\n'
    folder = tmp_path / "cafe"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "shop.py").write_bytes(module.encode("latin-1"))
    records, report = ingest(folder)
    assert report.unparsable_files == []
    assert [r.error_message for r in records] == ["le café est fermé pour la journée"]
    wheel = tmp_path / "cafe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("cafe/__init__.py", "")
        archive.writestr("cafe/shop.py", module.encode("latin-1"))
        archive.writestr("cafe-1.0.dist-info/METADATA", METADATA.format(name="cafe", version="1.0"))
    assert read_archive(wheel).sources["cafe/shop.py"] == module


def test_a_lone_surrogate_in_a_message_does_not_stop_ingest(tmp_path):
    folder = tmp_path / "surr"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "text.py").write_text(_raise("bad \\ud800 escape") + "\n\n" + GOOD.replace("connect", "other"))
    out = tmp_path / "out.jsonl"
    assert main(["ingest", str(folder), "-o", str(out), "--no-compiled"]) == 0
    records = load_records(out, strict=True)
    assert sorted(r.error_message for r in records) == [
        "Could not reach the server at {url}, check the address",
        "bad \ufffd escape for this value",
    ]
    assert all(len(r.content_hash) == 32 for r in records)


def test_toy_helpers_still_build_a_plain_release(tmp_path):
    """The limits leave ordinary releases alone: every module of a plain wheel is read, nothing is skipped."""
    wheel = build_wheel(tmp_path, "plain", "1.0", {"plain/__init__.py": "", "plain/client.py": GOOD})
    archive = read_archive(wheel)
    assert sorted(archive.sources) == ["plain/__init__.py", "plain/client.py"] and archive.skipped == []


def test_a_message_over_the_record_limit_is_skipped_not_fatal(tmp_path):
    """A raise whose literal message is 30,000 characters makes a record no knowledge base accepts: it is
    counted as skipped, where it stopped the build that loaded the scan."""
    module = _raise("the value " * 3_000) + GOOD
    wheel = build_wheel(tmp_path, "wordy", "1.0", {"wordy/__init__.py": "", "wordy/talk.py": module})
    scan = scan_archive(wheel)
    assert [e["record"]["errorMessage"] for e in scan["entries"]] == [
        "Could not reach the server at {url}, check the address"
    ]
    assert scan["report"]["skipped"]["invalid record (errorMessage)"] == 1
    folder = tmp_path / "wordy"
    folder.mkdir()
    (folder / "talk.py").write_text(module)
    records, report = ingest(folder)
    assert len(records) == 1 and report.skipped["invalid record (errorMessage)"] == 1
