import json
import subprocess
import sys

import pytest


def run_cli(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args], input=stdin, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_ask_reads_stdin_and_prints_json(bundled_index_dir, assistant):
    # `assistant` fixture has already built the index in bundled_index_dir: the CLI reuses it.
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/srv/job.py", line 9, in <module>\n'
        "    agent.run(task)\n"
        "smolagents.utils.AgentError: Agent interrupted.\n"
    )
    result = run_cli("ask", "-", "--json", "--index", str(bundled_index_dir), "--top-k", "3", stdin=traceback)
    assert result.returncode == 0, result.stderr
    assert "Loading weights" not in result.stderr  # no library progress bars on a plain ask
    answer = json.loads(result.stdout)
    assert answer["hits"][0]["recordId"] == "c6aeeba10bb30da8"
    assert len(answer["hits"]) == 3
    assert answer["citations"][0]["recordId"] == "c6aeeba10bb30da8"


@pytest.mark.slow
def test_build_reports_an_up_to_date_index(bundled_index_dir, assistant):
    result = run_cli("build", "--index", str(bundled_index_dir), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["rebuilt"] is False and report["total"] == len(assistant.records)


@pytest.mark.slow
def test_missing_knowledge_base_is_a_one_line_error(tmp_path):
    result = run_cli("ask", "anything", "--kb", str(tmp_path / "missing"), "--index", str(tmp_path / "i"))
    assert result.returncode == 2
    assert "errata: error: knowledge base" in result.stderr and "Traceback" not in result.stderr
