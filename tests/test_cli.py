import json
import os
import pty
import re
import subprocess
import sys

import pytest

from assistant.frontends.cli import main
from tests.frontends_support import errata_env


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


AGENT_ERROR = "smolagents.utils.AgentError: Agent interrupted."
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\]8;[^\x1b]*\x1b\\")


@pytest.mark.slow
def test_ask_in_a_pipe_prints_plain_text_and_says_the_threshold_it_missed(bundled_index_dir, assistant):
    result = run_cli("ask", AGENT_ERROR, "--index", str(bundled_index_dir))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("AgentError: Agent interrupted. (huggingface/smolagents) [1]\n")
    assert "What it means: Agents support graceful interruption" in out and "Fix (best first):\n1. " in out
    assert "**" not in out and "\x1b" not in out and "```" not in out
    assert "\n    try:\n        agent.run(task)\n" in out  # the example fix, indented instead of fenced
    assert "[1] huggingface/smolagents AgentError (c6aeeba10bb30da8) https://github.com/" in out
    assert out.endswith("\nconfidence: 1.00\n")

    # The same paste with a bar no answer reaches (set as a user would): the bar is said, not hard-coded.
    env = {**errata_env(bundled_index_dir), "ERRATA_CONFIDENCE_THRESHOLD": "1.01"}
    unsure = subprocess.run(
        [sys.executable, "-m", "assistant", "ask", AGENT_ERROR], env=env, capture_output=True, text=True, timeout=300
    )
    assert unsure.returncode == 0, unsure.stderr
    assert "No record in the knowledge base matches this error." in unsure.stdout
    last = unsure.stdout.rstrip("\n").splitlines()[-1]
    assert re.fullmatch(r"No confident match: confidence 1\.00, below the 1\.01 errata needs to answer", last), last


def read_pty(master: int) -> bytes:
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end closed (EIO on Linux)
            return out
        if not chunk:
            return out
        out += chunk


@pytest.mark.slow
def test_ask_in_a_terminal_renders_the_markdown_with_rich(bundled_index_dir, assistant):
    master, terminal = pty.openpty()
    env = {k: v for k, v in errata_env(bundled_index_dir).items() if k not in {"NO_COLOR", "TERM"}}
    env.update(TERM="xterm-256color", COLUMNS="120")
    with subprocess.Popen(
        [sys.executable, "-m", "assistant", "ask", AGENT_ERROR],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=subprocess.PIPE,
        env=env,
    ) as proc:
        os.close(terminal)
        raw = read_pty(master).decode()
        assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()
    os.close(master)
    assert "**" not in raw
    assert "\x1b[1mAgentError: Agent interrupted.\x1b[0m" in raw  # bold, as rich draws markdown's **...**
    assert "\x1b[1mWhat it means:\x1b[0m" in raw
    text = ANSI.sub("", raw)
    assert "(huggingface/smolagents) [1]" in text and "agent.run(task)" in text
    assert "confidence: 1.00" in text
    # The citation's link is one line, for the terminal to wrap (a link cut by a newline is no link).
    assert re.search(r"\[1\] huggingface/smolagents AgentError \(c6aeeba10bb30da8\) https://github\.com/\S{80,}", text)


def test_ask_help_says_where_llm_keys_go_and_errata_help_shows_examples(capsys):
    with pytest.raises(SystemExit):
        main(["ask", "--help"])
    ask_help = " ".join(capsys.readouterr().out.split())
    assert "ERRATA_MODEL" in ask_help and "litellm model name, e.g. gpt-4o-mini" in ask_help
    assert "read from its usual environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)" in ask_help
    assert "composed offline" in ask_help
    with pytest.raises(SystemExit):
        main(["--help"])
    top_help = capsys.readouterr().out
    assert "errata ask \"KeyError: 'OPENAI_API_KEY'\"" in top_help
    assert "python job.py 2>&1 | errata ask -" in top_help
    shown = {}
    for command in ("refresh-kb", "eval"):  # the maintainers' checkout is named as such, not as a bare path
        with pytest.raises(SystemExit):
            main([command, "--help"])
        shown[command] = " ".join(capsys.readouterr().out.split())
        assert "../shared" not in shown[command]
    assert "where errata's maintainers keep the curated knowledge base" in shown["refresh-kb"]
