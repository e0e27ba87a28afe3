"""README.md stays short and true: its commands exist, its settings table is Settings', its knowledge list is
the bundled records'. Each check is a function run on the README and, to show it can fail, on planted text."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from assistant.frontends.cli import build_parser
from assistant.knowledge import coverage
from assistant.settings import BUNDLED_KB_DIR, Settings

README = Path(__file__).resolve().parents[1] / "README.md"
MAX_LINES = 300
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"`([^`\n]+)`")
_COMMAND = re.compile(r"(?<![\w/.@-])errata[ \t]+([a-z][a-z0-9-]*)(?:[ \t]+([a-z][a-z0-9-]*))?")
_VARIABLE = re.compile(r"`((?:ERRATA|SLACK)_[A-Z0-9_]+)`")


@pytest.fixture(scope="module")
def readme() -> str:
    return README.read_text(encoding="utf-8")


def code_texts(markdown: str) -> list[str]:
    """The fenced code blocks and inline code spans of ``markdown``: where commands are written."""
    blocks = [m.group(1) for m in _FENCE.finditer(markdown)]
    return blocks + _SPAN.findall(_FENCE.sub("", markdown))


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def named_commands(markdown: str) -> set[str]:
    """Every ``errata SUB`` (and ``errata SUB ACTION`` where SUB has actions) that the code in ``markdown`` names."""
    commands = _subcommands(build_parser())
    named = set()
    for text in code_texts(markdown):
        for sub, action in _COMMAND.findall(text):
            named.add(f"{sub} {action}" if sub in commands and _subcommands(commands[sub]) and action else sub)
    return named


def unknown_commands(markdown: str) -> set[str]:
    """The commands ``markdown`` names that the ``errata`` parser does not have."""
    commands = _subcommands(build_parser())
    unknown = set()
    for name in named_commands(markdown):
        sub, _, action = name.partition(" ")
        if sub not in commands or (action and action not in _subcommands(commands[sub])):
            unknown.add(name)
    return unknown


def variables_settings_read() -> set[str]:
    """The environment variables ``Settings.load`` looks up: asked of an environment that notes each name."""

    asked: set[str] = set()

    class Noting(dict):
        def get(self, key, default=None):
            asked.add(key)
            return default

    Settings.load(env=Noting())
    return {name for name in asked if name}


def settings_table_variables(markdown: str) -> list[str]:
    """The variables in the first column of the table under ``## Settings``."""
    section = re.search(r"^## Settings\n(.*?)(?=^## |\Z)", markdown, re.MULTILINE | re.DOTALL)
    assert section, "README.md has no '## Settings' section"
    names = []
    for line in section.group(1).splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            names += _VARIABLE.findall(line.split("|")[1])
    return names


def table_problems(markdown: str) -> list[str]:
    read, listed = variables_settings_read(), settings_table_variables(markdown)
    problems = [f"missing from the table: {name}" for name in sorted(read - set(listed))]
    problems += [f"in the table but not read by Settings: {name}" for name in sorted(set(listed) - read)]
    problems += [f"listed twice: {name}" for name in sorted({n for n in listed if listed.count(n) > 1})]
    return problems


def forbidden_paths(markdown: str) -> list[str]:
    return [text for text in ("../shared", "/opt/") if text in markdown]


# (a) short


def test_readme_is_at_most_300_lines(readme):
    assert len(readme.splitlines()) <= MAX_LINES


# (b) commands


def test_every_errata_command_the_readme_names_exists(readme):
    named = named_commands(readme)
    assert {"ask", "serve", "run", "mcp", "slack", "kb build-ecosystem", "feedback export"} <= named
    assert not unknown_commands(readme)


def test_a_misnamed_command_is_caught():
    text = "Run `errata frobnicate`, then:\n```bash\nerrata kb frob -o out\nerrata ask 'x'\n```\n"
    assert unknown_commands(text) == {"frobnicate", "kb frob"}
    assert "ask" in named_commands(text)


# (c) settings


def test_the_settings_table_lists_exactly_what_settings_reads(readme):
    read = variables_settings_read()
    assert {"ERRATA_MODEL", "ERRATA_KB", "SLACK_BOT_TOKEN", "ERRATA_SLACK_BOT_TOKEN"} <= read
    assert table_problems(readme) == []


def test_a_missing_or_extra_settings_row_is_caught(readme):
    without_model = "\n".join(line for line in readme.splitlines() if not line.startswith("| `ERRATA_MODEL`"))
    assert table_problems(without_model) == ["missing from the table: ERRATA_MODEL"]
    extra = readme.replace("| `ERRATA_TOP_K` |", "| `ERRATA_TOP_K` |\n| `ERRATA_NOT_A_SETTING` | - | - |\n|", 1)
    assert "in the table but not read by Settings: ERRATA_NOT_A_SETTING" in table_problems(extra)


# (d) what it knows


@pytest.fixture(scope="module")
def knowledge_block() -> str:
    return coverage.knowledge_block()


def test_the_knowledge_block_is_current(readme, knowledge_block):
    assert coverage.current_block(readme) == knowledge_block, (
        "run: python -m assistant.knowledge.coverage --write README.md"
    )
    assert "python/cpython" not in knowledge_block and "Python's own errors" in knowledge_block


def test_a_stale_knowledge_block_is_caught(readme, knowledge_block):
    stale = coverage.replace_block(readme, knowledge_block.replace("httpx", "httpy"))
    assert coverage.current_block(stale) != knowledge_block
    assert coverage.current_block(coverage.replace_block(stale, knowledge_block)) == knowledge_block


def test_the_coverage_command_checks_and_writes(tmp_path, readme, knowledge_block, monkeypatch):
    monkeypatch.setattr(coverage, "knowledge_block", lambda kb_dir=None: knowledge_block)
    target = tmp_path / "README.md"
    target.write_text(coverage.replace_block(readme, "stale"), encoding="utf-8")
    assert coverage.main(["--check", str(target)]) == 1
    assert coverage.main(["--write", str(target)]) == 0
    assert coverage.main(["--check", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == coverage.replace_block(readme, knowledge_block)
    target.write_text("no markers here", encoding="utf-8")
    assert coverage.main(["--check", str(target)]) == 2


def test_the_knowledge_block_lists_every_repository(tmp_path):
    """A library the names table does not know is still listed, under its repository's name."""
    entry = json.loads(sorted(BUNDLED_KB_DIR.glob("*.jsonl"))[0].read_text(encoding="utf-8").splitlines()[0])
    entry["record"]["repo"] = "acme/widgets"
    (tmp_path / "acme__widgets.jsonl").write_text(json.dumps(entry) + "\n", encoding="utf-8")
    block = coverage.knowledge_block(tmp_path)
    assert "holds 1 error record from 1 library;" in block
    assert "- **Other libraries**: widgets 1" in block and "Python's own" not in block


# (e) nothing machine-specific


def test_no_machine_specific_paths(readme):
    assert forbidden_paths(readme) == []
    assert forbidden_paths("pip install --find-links /opt/wheels; see ../shared/kb") == ["../shared", "/opt/"]
