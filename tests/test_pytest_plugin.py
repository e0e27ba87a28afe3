"""``pytest --errata``: pytester runs real failing tests; the plugin adds its section, or stays out of the way."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from assistant.frontends import explain
from tests.frontends_support import ROOT, closed_port

pytest_plugins = ["pytester"]
PLUGIN = "assistant.frontends.pytest_plugin"


def plugin_args() -> list[str]:
    """``-p`` the plugin unless its ``pytest11`` entry point is installed (then pytest loads it itself)."""
    installed = any(ep.value == PLUGIN for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", PLUGIN]


@pytest.fixture
def failing_tests(pytester: pytest.Pytester) -> Path:
    return pytester.makepyfile(
        test_service=f"""
        import httpx


        def test_health():
            httpx.get("http://127.0.0.1:{closed_port()}/health")


        def test_health_again():
            httpx.get("http://127.0.0.1:{closed_port()}/health")


        def test_totals():
            totals = {{"a": 1}}
            assert totals["b"] == 1


        def test_fine():
            assert True
        """
    )


@pytest.fixture
def shared(assistant):
    """The plugin explains with the session's Assistant (real, already loaded) instead of loading another."""
    explain.use_assistant(assistant)
    yield assistant
    explain.use_assistant(None)


@pytest.mark.slow
def test_each_failure_gets_an_errata_section_computed_once_per_error(pytester, failing_tests, shared):
    result = pytester.runpytest(*plugin_args(), "--errata", "-p", "no:cacheprovider")

    result.assert_outcomes(failed=3, passed=1)
    out = result.stdout.str()
    sections = out.split("- errata -")[1:]
    assert len(sections) == 3
    httpx_sections = [s for s in sections if "(encode/httpx) [1]" in s]
    assert len(httpx_sections) == 2
    assert all(f"Installed here: httpx {importlib.metadata.version('httpx')}" in s for s in httpx_sections)
    assert all("pytest" not in s.split("Libraries in the traceback:")[1].split("\n")[0] for s in httpx_sections)
    # The user's own KeyError: Python's own record, never a library's.
    (key_section,) = [s for s in sections if "KeyError" in s.split("\n", 2)[1]]
    assert "(python/cpython) [1]" in key_section and "ollama" not in key_section
    assert "errata: explained 3 failure(s), 2 distinct error(s)" in out


@pytest.mark.slow
def test_without_the_flag_nothing_changes(pytester, failing_tests):
    result = pytester.runpytest(*plugin_args(), "-p", "no:cacheprovider")

    result.assert_outcomes(failed=3, passed=1)
    out = result.stdout.str()
    # Only pytest's own header names the installed plugin; no section, no summary line.
    assert "errata" not in out.replace("errata-0.1.0", "")
    assert "--errata" in pytester.runpytest(*plugin_args(), "--help").stdout.str()


@pytest.mark.slow
def test_an_errata_failure_is_a_one_line_note_and_the_run_is_unchanged(pytester, monkeypatch):
    """A knowledge base that cannot be read: the tests' own outcome stands, errata says why in one line."""
    pytester.makepyfile(
        test_two="""
        def test_one():
            raise ValueError("first")


        def test_two():
            raise ValueError("second")
        """
    )
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("ERRATA_KB", str(pytester.path / "no-such-kb"))
    monkeypatch.setenv("ERRATA_INDEX_DIR", str(pytester.path / "index"))
    result = pytester.runpytest_subprocess(*plugin_args(), "--errata", "-p", "no:cacheprovider")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=2)
    notes = [line for line in result.stdout.lines if line.startswith("errata could not explain this failure")]
    assert len(notes) == 2, result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str()
