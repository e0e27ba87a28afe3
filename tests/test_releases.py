"""errata ingest --releases: real pip downloads (from a --find-links folder of wheels built here), one
record per raise across releases, API-change records, and the real index for httpx (slow)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from assistant.frontends.cli import main
from assistant.knowledge.records import scan_records
from assistant.releases.archive import read_archive
from assistant.releases.build import ingest_releases_to_file
from assistant.releases.download import download_release
from assistant.releases.scan import cached_scan
from assistant.releases.versions import list_versions, select_versions
from tests.releases_toys import build_sdist, build_toy_index, build_wheel


@pytest.fixture(scope="module")
def toy_index(tmp_path_factory) -> Path:
    return build_toy_index(tmp_path_factory.mktemp("toy-index"))


def pip_args(index: Path) -> list[str]:
    return ["--no-index", "--find-links", str(index)]


def by_pattern(records, text):
    return [r for r in records if r.message_pattern and re.search(r.message_pattern, text)]


def test_spec_names_releases():
    available = ["0.9", "1.0", "1.1rc1", "1.1", "2.0"]
    assert select_versions(">=1.0", available) == ["1.0", "1.1", "2.0"]
    assert select_versions("2.0, 1.0", available) == ["1.0", "2.0"]
    assert select_versions("last:2", available) == ["1.1", "2.0"]
    assert select_versions(">=1.0,<2", available) == ["1.0", "1.1"]
    releases = ["0.27.0", "0.27.2", "0.28.0", "0.28.1", "0.29.0rc1", "1.0.0", "1.0.1", "1.1.0"]
    assert select_versions("minors:3", releases) == ["0.28.1", "1.0.1", "1.1.0"]  # the newest of each minor
    assert select_versions("minors:9", releases) == ["0.27.2", "0.28.1", "1.0.1", "1.1.0"]
    assert select_versions("minors:0", releases) == []
    # Evenly spaced over the whole history, the newest always kept, pre-releases left out.
    assert select_versions("spread:3", releases) == ["0.27.0", "0.28.1", "1.1.0"]
    assert select_versions("spread:20", releases) == [r for r in releases if "rc" not in r]
    assert select_versions("spread:1", releases) == ["1.1.0"] and select_versions("spread:0", releases) == []
    with pytest.raises(Exception, match="not a version specifier"):
        select_versions("newest please", available)


def test_a_packages_file_that_cannot_be_read_or_has_a_bad_line_is_named(tmp_path, capsys):
    missing = tmp_path / "nope.txt"
    assert main(["kb", "build-ecosystem", "--packages", str(missing), "-o", str(tmp_path / "kb")]) == 2
    assert f"cannot read the packages file {missing}: No such file or directory" in capsys.readouterr().err
    bad = tmp_path / "packages.txt"
    bad.write_text("httpx\n", encoding="utf-8")
    assert main(["kb", "build-ecosystem", "--packages", str(bad), "-o", str(tmp_path / "kb")]) == 2
    assert f"{bad}:1: expected 'NAME SPEC [TAG_FORMAT [REPO]] [retired=SPEC]'" in capsys.readouterr().err
    assert not (tmp_path / "kb").exists()


@pytest.mark.slow
def test_pip_lists_and_downloads_releases_into_a_reused_cache(toy_index, tmp_path):
    assert list_versions("toylib", pip_args(toy_index)) == ["1.0", "1.1", "2.0"]
    first = download_release("toylib", "1.1", tmp_path, pip_args(toy_index))
    assert first.name == "toylib-1.1-py3-none-any.whl" and first.parent == tmp_path / "archives" / "toylib"
    # Reused without pip: an index that is gone cannot be asked.
    assert download_release("toylib", "1.1", tmp_path, pip_args(tmp_path / "nowhere")) == first
    with pytest.raises(Exception, match="cannot download toylib==9.9"):
        download_release("toylib", "9.9", tmp_path, pip_args(toy_index))


@pytest.mark.slow
def test_sdist_is_the_fallback_and_is_read_without_unpacking(tmp_path):
    index = tmp_path / "index"
    index.mkdir()
    files = {"toysd/__init__.py": "from .core import f\n", "toysd/core.py": CORE}
    build_sdist(index, "toysd", "0.9", files)
    path = download_release("toysd", "0.9", tmp_path / "cache", [*pip_args(index), "--no-build-isolation"])
    assert path.name == "toysd-0.9.tar.gz"
    archive = read_archive(path)
    assert (archive.name, archive.version, archive.repo, archive.prefix) == ("toysd", "0.9", "acme/toysd", "src/")
    assert sorted(archive.sources) == ["toysd/__init__.py", "toysd/core.py"]  # not tests/
    scan = cached_scan(path, tmp_path / "cache")
    (entry,) = scan["entries"]
    assert entry["qualname"] == "f" and entry["record"]["filePath"] == "src/toysd/core.py"
    assert entry["record"]["githubUrl"].startswith("https://github.com/acme/toysd/blob/v0.9/src/toysd/core.py#L")
    assert scan["fromCache"] is False and cached_scan(path, tmp_path / "cache")["fromCache"] is True


CORE = '''
def f(x):
    """Check a value."""
    if x < 0:
        raise ValueError(f"the value {x} must be positive")
    return x
'''


@pytest.fixture(scope="module")
def toy_kb(toy_index, tmp_path_factory):
    """``errata ingest --package toylib --releases '>=1.0'``, then the same again: records, both file texts
    and the second run's report."""
    folder = tmp_path_factory.mktemp("toy-kb")
    out = folder / "toylib.jsonl"
    argv = ["ingest", "--package", "toylib", "--releases", ">=1.0", "-o", str(out)]
    argv += ["--releases-cache", str(folder / "cache"), "--pip-arg=--no-index", f"--pip-arg=--find-links={toy_index}"]
    assert main(argv) == 0
    first = out.read_text(encoding="utf-8")
    again = ingest_releases_to_file(out, "toylib", ">=1.0", cache=folder / "cache", pip_args=pip_args(toy_index))
    records = [found.record for found in scan_records(out, strict=True)]
    return records, (first, out.read_text(encoding="utf-8")), again


@pytest.mark.slow
def test_one_record_per_raise_across_moved_lines_and_rewording(toy_kb):
    records, _, _ = toy_kb
    old = "ValueError: Invalid timeout -1: must be positive"
    new = "ValueError: Invalid timeout -1: it must be a positive number"
    (record,) = by_pattern(records, old)
    assert by_pattern(records, new) == [record]
    assert record.error_message == "Invalid timeout {timeout}: it must be a positive number"  # the newest wording
    assert "release-first:1.0" in record.tags and "release-last:2.0" in record.tags
    assert record.line_number == 16  # at 2.0, not 1.0's line 8
    assert record.github_url == "https://github.com/acme/toylib/blob/v2.0/toylib/_client.py#L8-L24"
    assert "`timeout is not None and timeout < 0`" in record.documentation  # the guard
    assert "Make a client that sends requests." in record.documentation  # the docstring sentence
    assert "1.0–2.0 (3 of 3 releases read)" in record.documentation
    assert 'Earlier wording: "Invalid timeout {timeout}: must be positive" (1.0)' in record.documentation
    assert "reworded" in record.tags  # what lets a curated record of this raise inherit the pattern
    # The words both wordings share stay outside the alternation, where the pattern index can file them.
    assert record.message_pattern == "Invalid timeout (.+?): (?:it must be a positive number|must be positive)"


@pytest.mark.slow
def test_a_raise_that_went_says_when(toy_kb):
    records, _, _ = toy_kb
    (warning,) = by_pattern(records, "DeprecationWarning: The 'proxies' argument is deprecated. Use 'proxy' instead.")
    assert tuple(t for t in warning.tags if t.startswith("release-")) == ("release-first:1.0", "release-last:1.1")
    assert "Not found in 2.0 or later" in warning.documentation
    assert warning.github_url.startswith("https://github.com/acme/toylib/blob/v1.1/")


def test_removed_keyword_argument_record(toy_kb):
    records, _, _ = toy_kb
    (record,) = by_pattern(records, "TypeError: Client.__init__() got an unexpected keyword argument 'proxies'")
    assert by_pattern(records, "Client.__init__() got an unexpected keyword argument 'proxies'") == [record]
    assert by_pattern(records, "__init__() got an unexpected keyword argument 'proxies'") == [record]  # Python 3.9
    assert not by_pattern(records, "AsyncClient.__init__() got an unexpected keyword argument 'proxies'")
    assert (record.error_type, record.error_class, record.repo) == ("exception", "TypeError", "acme/toylib")
    assert {"toylib", "api-change", "ingested", "release-first:2.0"} <= set(record.tags)
    assert "toylib 2.0 removed it (1.1 had it)" in record.documentation
    assert "toylib 1.1 warned: \"The 'proxies' argument is deprecated. Use 'proxy' instead.\"" in record.documentation
    assert record.solutions[0] == "Use 'proxy' instead (toylib 1.1 deprecation warning)"
    assert any('pip install "toylib<2.0"' in s for s in record.solutions)
    assert "toylib.Client(proxy=value)" in record.example_fix
    assert record.github_url == "https://github.com/acme/toylib/blob/v1.1/toylib/_client.py#L11"  # the parameter in 1.1


def test_removed_module_name_and_method_records(toy_kb):
    records, _, _ = toy_kb
    cases = {
        "ModuleNotFoundError: No module named 'toylib.legacy'": "ModuleNotFoundError",
        "ImportError: cannot import name 'old_helper' from 'toylib' (/x/toylib/__init__.py)": "ImportError",
        "AttributeError: module 'toylib' has no attribute 'old_helper'": "AttributeError",
        "AttributeError: 'Client' object has no attribute 'send'": "AttributeError",
    }
    for text, error_class in cases.items():
        found = [r for r in by_pattern(records, text) if "api-change" in r.tags]
        assert [r.error_class for r in found] == [error_class], text
        assert "toylib 2.0 removed it" in found[0].documentation
    (method,) = by_pattern(records, "AttributeError: type object 'Client' has no attribute 'send'")
    assert "`send_request`, added in 2.0, probably takes its place." in method.documentation
    assert not by_pattern(records, "cannot import name 'AsyncClient' from 'toylib'")  # added, not removed
    # The raise in send() is the same raise in send_request(): one record, at 2.0.
    (raise_record,) = by_pattern(records, "NotImplementedError: Sending is not implemented by the base client")
    assert "release-first:1.0" in raise_record.tags and "release-last:2.0" in raise_record.tags
    assert "`Client.send_request`" in raise_record.documentation


def test_a_rerun_reads_the_cache_and_writes_the_same_records(toy_kb):
    records, (first, second), again = toy_kb
    assert [r["cached"] for r in again.releases] == [True, True, True]
    assert first == second  # same ids, same text
    assert len({r.id for r in records}) == len(records) and len({r.slug for r in records}) == len(records)
    assert (again.records, again.raise_records, again.api_change_records) == (len(records), 4, 5)


def test_cli_refuses_a_path_with_releases(tmp_path, capsys):
    assert main(["ingest", str(tmp_path), "--releases", "1.0", "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "give --package NAME" in capsys.readouterr().err


@pytest.mark.slow
def test_httpx_from_the_real_index(tmp_path, capsys):
    """The issue's target: httpx 0.27.2 -> 0.28.0 from PyPI (two ~75 kB wheels). Deselect with -m 'not slow'."""
    out = tmp_path / "httpx.jsonl"
    argv = ["ingest", "--package", "httpx", "--releases", "0.27.2,0.28.0", "-o", str(out)]
    status = main([*argv, "--releases-cache", str(tmp_path / "cache"), "--tag-format", "{version}"])
    if status == 2 and "cannot download" in (err := capsys.readouterr().err):
        pytest.skip(f"the package index cannot be reached: {err.strip()}")
    assert status == 0
    records = [found.record for found in scan_records(out, strict=True)]
    (record,) = by_pattern(records, "TypeError: Client.__init__() got an unexpected keyword argument 'proxies'")
    assert by_pattern(records, "Client.__init__() got an unexpected keyword argument 'proxies'") == [record]
    assert "0.28.0" in record.documentation and "proxy" in record.documentation
    assert any('pip install "httpx<0.28.0"' in s for s in record.solutions)
    assert record.github_url.startswith("https://github.com/encode/httpx/blob/0.27.2/httpx/_client.py#L")
    assert sum("api-change" in r.tags for r in records) >= 4  # proxies and app on Client and AsyncClient


@pytest.mark.slow
def test_build_ecosystem_on_a_process_pool_resumes_from_the_cache(toy_index, tmp_path, capsys):
    packages = tmp_path / "packages.txt"
    packages.write_text("# name spec tag\ntoylib last:2 {version}\nnot-a-toy >=1\n", encoding="utf-8")
    argv = ["kb", "build-ecosystem", "--packages", str(packages), "-o", str(tmp_path / "kb"), "--workers", "2"]
    argv += ["--releases-cache", str(tmp_path / "cache"), "--pip-arg=--no-index", f"--pip-arg=--find-links={toy_index}"]
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (toylib,) = report["packages"]
    assert (toylib["releases"], toylib["first"], toylib["last"]) == (2, "1.1", "2.0")
    assert report["failed"] and report["failed"][0].startswith("not-a-toy: cannot list the releases")
    records = [found.record for found in scan_records(tmp_path / "kb" / "acme__toylib.jsonl", strict=True)]
    assert len(records) == toylib["records"] and all(
        r.github_url is None or "/blob/2.0/" in r.github_url or "/blob/1.1/" in r.github_url for r in records
    )
    scans = sorted((tmp_path / "cache" / "scans").iterdir())
    assert len(scans) == 2
    stamps = [p.stat().st_mtime_ns for p in scans]
    assert main(argv) == 0  # the rerun scans nothing again
    assert [p.stat().st_mtime_ns for p in sorted((tmp_path / "cache" / "scans").iterdir())] == stamps

    # A fourth column names the repository (for packages whose metadata names none): files and links follow.
    packages.write_text("toylib last:2 {version} someone/toy-fork\n", encoding="utf-8")
    assert main(argv) == 0
    forked = [found.record for found in scan_records(tmp_path / "kb" / "someone__toy-fork.jsonl", strict=True)]
    assert len(forked) == toylib["records"] and {r.repo for r in forked} == {"someone/toy-fork"}
    assert any(r.github_url and r.github_url.startswith("https://github.com/someone/toy-fork/") for r in forked)

    # A second package of the same repository (gradio_client beside gradio) gets its own file, not the first's.
    client_index = tmp_path / "client-index"
    client_index.mkdir()
    client = {"toyclient/__init__.py": "def call(name):\n    raise LookupError(f'No endpoint named {name}')\n"}
    build_wheel(client_index, "toyclient", "1.0", client)
    packages.write_text("toylib last:2 {version} someone/toy-fork\ntoyclient 1.0 {version} someone/toy-fork\n")
    assert main([*argv, f"--pip-arg=--find-links={client_index}"]) == 0
    kept = [found.record for found in scan_records(tmp_path / "kb" / "someone__toy-fork.jsonl", strict=True)]
    assert len(kept) == toylib["records"]
    both = scan_records(tmp_path / "kb" / "someone__toy-fork__toyclient.jsonl", strict=True)
    assert [found.record.error_message for found in both] == ["No endpoint named {name}"]


@pytest.mark.slow
def test_older_releases_add_only_their_retired_specific_raises(toy_index, tmp_path, capsys):
    """``--retired``: of toylib 1.0 and 1.1, only the raise 2.0 no longer has (``old_helper``'s RuntimeError);
    not the deprecation warning 2.0 dropped, nor the raise that moved to ``send_request``; the records of
    the recent release keep their ids."""
    packages = tmp_path / "packages.txt"
    packages.write_text("toylib last:1 {version}\n", encoding="utf-8")
    argv = ["kb", "build-ecosystem", "--packages", str(packages), "--workers", "1", "--json"]
    argv += ["--releases-cache", str(tmp_path / "cache"), "--pip-arg=--no-index", f"--pip-arg=--find-links={toy_index}"]
    assert main([*argv, "-o", str(tmp_path / "recent")]) == 0
    capsys.readouterr()
    assert main([*argv, "-o", str(tmp_path / "retired"), "--retired", "spread:3"]) == 0
    (toylib,) = json.loads(capsys.readouterr().out)["packages"]
    assert (toylib["releases"], toylib["older_releases"], toylib["retired_records"]) == (3, 2, 1)
    recent = [found.record for found in scan_records(tmp_path / "recent" / "acme__toylib.jsonl", strict=True)]
    both = [found.record for found in scan_records(tmp_path / "retired" / "acme__toylib.jsonl", strict=True)]
    (gone,) = [r for r in both if "retired" in r.tags]
    assert [r.id for r in both if r is not gone] == [r.id for r in recent]
    assert (gone.error_class, gone.error_message) == ("RuntimeError", "old_helper is gone, call the client directly")
    assert "release-last:1.1" in gone.tags and "Not found in 2.0 or later" in gone.documentation
    assert gone.github_url.startswith("https://github.com/acme/toylib/blob/1.1/toylib/legacy.py")
    assert not by_pattern([gone], "DeprecationWarning: The 'proxies' argument is deprecated. Use 'proxy' instead.")

    # A raise 2.0 still has, reworded since 1.0, answers 1.0's wording too, and says which releases had it.
    old_wording = "ValueError: Invalid timeout -1: must be positive"
    assert not by_pattern(recent, old_wording)
    (followed,) = by_pattern(both, old_wording)
    assert followed.error_message == "Invalid timeout {timeout}: it must be a positive number"
    assert 'Older releases\' wording: "Invalid timeout {timeout}: must be positive" (1.0).' in followed.documentation
    assert "reworded" in followed.tags and toylib["older_wordings"] == 1


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="ray is installed")
def test_ray_without_ray_says_what_to_install(tmp_path, capsys):
    packages = tmp_path / "packages.txt"
    packages.write_text("toylib 1.0\n", encoding="utf-8")
    argv = ["kb", "build-ecosystem", "--packages", str(packages), "-o", str(tmp_path / "kb"), "--ray", "auto"]
    assert main(argv) == 2
    assert "--ray needs the ray package: pip install 'errata[ray]'" in capsys.readouterr().err


def _entry(line: int) -> dict:
    record = {
        "id": "0" * 16,
        "repo": "toy/toylib",
        "slug": "invalid-path",
        "errorMessage": "Invalid path",
        "messagePattern": "Invalid path",
        "errorType": "exception",
        "errorClass": "ValueError",
        "filePath": "toylib/paths.py",
        "lineNumber": line,
        "documentation": "Raised by parse.",
        "tags": ["ingested"],
        "githubUrl": None,
        "analyzedSha": "v1",
    }
    return {"record": record, "qualname": "parse"}


def test_the_same_message_raised_many_times_in_one_function_gets_one_id_each():
    """Two raises of one message in a function, then a third in the next release: three ids, none twice
    (the ecosystem build gave qdrant-client's json_path_parser two records of one id)."""
    from assistant.releases.merge import merge_scans

    three = [
        {"version": "1.0", "repo": "toy/toylib", "name": "toylib", "entries": [_entry(10), _entry(14)]},
        {"version": "1.1", "repo": "toy/toylib", "name": "toylib", "entries": [_entry(10), _entry(14), _entry(18)]},
    ]
    ids = [r["id"] for r in merge_scans(three)]
    assert len(ids) == 3 and len(set(ids)) == 3
    assert ids == [r["id"] for r in merge_scans(three)]  # stable across runs


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install 'errata[ray]')")
def test_build_ecosystem_on_a_local_ray_cluster_gives_the_process_pools_records(toy_index, tmp_path, capsys):
    """--ray local: ray.init() starts a cluster of this machine's cores; the tasks are the same functions."""
    import ray

    packages = tmp_path / "packages.txt"
    packages.write_text("toylib last:2 {version}\n", encoding="utf-8")
    common = ["--packages", str(packages), "--releases-cache", str(tmp_path / "cache")]
    common += ["--pip-arg=--no-index", f"--pip-arg=--find-links={toy_index}", "--json"]
    try:
        assert main(["kb", "build-ecosystem", "-o", str(tmp_path / "ray"), "--ray", "local", *common]) == 0
    finally:
        ray.shutdown()
    on_ray = json.loads(capsys.readouterr().out)
    assert main(["kb", "build-ecosystem", "-o", str(tmp_path / "pool"), "--workers", "2", *common]) == 0
    on_pool = json.loads(capsys.readouterr().out)
    assert on_ray["failed"] == [] and on_ray["packages"][0]["releases"] == 2
    assert on_ray["records"] == on_pool["records"] > 0
    ray_file = (tmp_path / "ray" / "acme__toylib.jsonl").read_text()
    assert ray_file == (tmp_path / "pool" / "acme__toylib.jsonl").read_text()


def test_a_raise_only_older_releases_had_takes_the_renamed_repositorys_name():
    """fastapi's older releases name tiangolo/fastapi: a raise only they had is still fastapi/fastapi's, so
    a curated fastapi record of it wins over it (it had outranked the curated record)."""
    from assistant.releases.ecosystem import _under_one_repository
    from assistant.releases.merge import merge_scans

    old = _entry(10)
    url = "https://github.com/old-owner/toylib/blob/1.0/toylib/paths.py#L10"
    old["record"] = dict(old["record"], repo="old-owner/toylib", githubUrl=url)
    scans = [
        {"version": "1.0", "repo": "old-owner/toylib", "name": "toylib", "entries": [old]},
        {"version": "1.1", "repo": "toy/toylib", "name": "toylib", "entries": []},
    ]
    assert merge_scans(scans)[0]["repo"] == "old-owner/toylib"
    (gone,) = merge_scans(_under_one_repository(scans, recent={"1.1"}))
    assert gone["repo"] == "toy/toylib"
    assert gone["githubUrl"] == "https://github.com/toy/toylib/blob/1.0/toylib/paths.py#L10"
    assert scans[0]["entries"][0]["record"]["repo"] == "old-owner/toylib"  # the cached scans are not changed


def test_a_raise_gone_from_its_function_but_raised_elsewhere_in_recent_releases_is_not_retired():
    """langgraph 0.2's ``recursion_limit must be at least 1`` is 1.2's too, from rewritten code the merge
    does not follow: the recent record answers it, and a retired twin beside it only splits the answer.
    A specific message only older releases raise is retired; a snake_case name makes three words specific."""
    from assistant.releases.retired import older_raises

    def entry(message: str, file: str, qualname: str) -> dict:
        found = _entry(10)
        record = dict(found["record"], errorMessage=message, messagePattern=message, filePath=file)
        return {"record": record, "qualname": qualname}

    limit = "recursion_limit must be at least 1"
    gone = "Both invocation_id and new_message are None."
    scans = [
        {
            "version": "1.0",
            "repo": "toy/toylib",
            "name": "toylib",
            "entries": [entry(limit, "toylib/pregel.py", "invoke"), entry(gone, "toylib/runner.py", "run")],
        },
        {
            "version": "2.0",
            "repo": "toy/toylib",
            "name": "toylib",
            "entries": [entry(limit, "toylib/_internal/_config.py", "ensure_config")],
        },
    ]
    found = older_raises(scans[:1], scans[1:])
    assert [r["errorMessage"] for r in found.retired] == [gone]
    assert "retired" in found.retired[0]["tags"] and "release-last:1.0" in found.retired[0]["tags"]
