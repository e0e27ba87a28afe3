"""Hostile and unlucky input: lone surrogates, invalid UTF-8 in argv, zero-width characters, 50 threads at
once, patterns that overflow or backtrack, JSON nested past the recursion limit. Real records, the real
model, the real CLI in a subprocess."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from assistant import Settings
from assistant.errors import KnowledgeBaseError
from assistant.knowledge.records import LoadReport, load_records
from assistant.retrieval.matching import PatternMatcher
from assistant.storage.shelf import RecordShelf

from .conftest import read_lines, write_lines

REPO = Path(__file__).resolve().parents[1]
INTERRUPTED = "smolagents.utils.AgentError: Agent interrupted."
INTERRUPTED_ID = "c6aeeba10bb30da8"
CONNECT = "httpx.ConnectError: [Errno 111] Connection refused"


@pytest.mark.parametrize(
    "text",
    [
        "\ud800 " + INTERRUPTED,
        INTERRUPTED + " \udfff",
        "\udcff\udcfe " + INTERRUPTED,  # what invalid UTF-8 in argv becomes (surrogateescape)
        "\ud83d\ude00 " + INTERRUPTED,  # a pair written as two escapes: an emoji
    ],
)
def test_surrogates_in_the_text_answer_normally(assistant, text):
    answer = assistant.ask(text)
    assert answer.hits[0].record.id == INTERRUPTED_ID and answer.confidence > 0.9
    json.dumps(answer.to_dict(), ensure_ascii=False).encode("utf-8")  # every front end can encode it


@pytest.mark.parametrize("mark", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"])
def test_zero_width_characters_between_letters_still_match(assistant, mark):
    text = "smolagents.utils.AgentError: Agent inter" + mark + "rupted."
    answer = assistant.ask(text)
    assert answer.hits[0].record.id == INTERRUPTED_ID and answer.confidence > 0.9


@pytest.mark.slow
def test_invalid_utf8_in_argv_answers_from_the_cli(assistant, bundled_index_dir):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [os.fsencode(sys.executable), b"-m", b"assistant", b"ask", b"\xff\xfe " + INTERRUPTED.encode()]
    argv += [b"--index", os.fsencode(bundled_index_dir)]
    done = subprocess.run(argv, capture_output=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in done.stderr and INTERRUPTED_ID.encode() in done.stdout


@pytest.mark.parametrize(
    "line",
    [
        "│" + " " * 19_000 + "x",  # a Rich box line of spaces: a regex with a lazy middle took minutes
        "│ " * 9_000,
        "tests/" + "a" * 19_000 + ".py:12 in",  # a location frame that never closes
        "E  " + " " * 19_000 + "x",  # a pytest E line
        "/" + "a.py " * 3_800 + " in f(" + "(" * 1_000,  # an IPython 7 frame with no end
    ],
)
def test_a_long_line_in_a_pasted_layout_parses_in_linear_time(line):
    """The traceback layouts (Rich, pytest, IPython) are read per line; none may backtrack on a long one."""
    from assistant.parse.query import parse_query

    paste = "╭─ Traceback (most recent call last) ─╮\n" + line + "\nValueError: boom"
    started = time.process_time()
    query = parse_query(paste)
    assert time.process_time() - started < 0.5
    assert query.exception_class == "ValueError"


@pytest.mark.slow
def test_fifty_threads_do_not_disable_ordinary_patterns(assistant):
    """Contention alone (50 asks on two cores) must not drop a pattern: judged by its own CPU time."""
    baseline = assistant.ask(CONNECT)
    assert baseline.confidence > 0.9
    assistant.retriever.matcher.slow_patterns.clear()
    results: list[float] = []
    errors: list[BaseException] = []
    start = threading.Barrier(50)

    def one() -> None:
        try:
            start.wait()
            for _ in range(2):
                results.append(assistant.ask(CONNECT).confidence)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not assistant.retriever.matcher.slow_patterns
    assert min(results) == pytest.approx(baseline.confidence, abs=1e-6)
    assert assistant.ask(CONNECT).confidence == pytest.approx(baseline.confidence, abs=1e-6)


def test_a_wall_clock_timeout_without_cpu_use_is_retried_not_dropped():
    """A search descheduled past its wall-clock limit (simulated: a limit far below any real search) is
    tried again with a longer one and still matches; the pattern is not dropped."""
    matcher = PatternMatcher(timeout_s=1e-9)
    matcher.timeout_s = 0.05  # CPU budget as usual; the first wall-clock limit is tiny
    text = "x" * 100_000 + " Agent interrupted."
    assert matcher.search(__import__("regex").compile(r"Agent interrupted\."), text)
    assert not matcher.slow_patterns


def test_a_catastrophic_pattern_at_query_time_is_dropped_naming_its_record(assistant, caplog):
    matcher = assistant.retriever.matcher
    source = assistant.retriever.signals.patterns[0]
    record = assistant.records[int(assistant.retriever.signals.pattern_records.numbered(0)[0])]
    with caplog.at_level(logging.WARNING):
        matcher._drop(source)
    matcher.slow_patterns.discard(source)
    message = next(r.getMessage() for r in caplog.records if "no longer used" in r.getMessage())
    assert record.id in message and record.source.rsplit(":", 1)[0] in message and ":" in record.source


def _kb_with(tmp_path: Path, small_kb: Path, **changes) -> tuple[Path, str]:
    path = small_kb / "huggingface__smolagents.jsonl"
    rows = read_lines(path)
    rows[3]["record"].update(changes)
    write_lines(path, rows)
    return path, rows[3]["record"]["id"]


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("a{99999999999}", "does not compile"),
        (r"(\w+\s?)+$", "backtracks"),
        (r"(x+x+)+y", "backtracks"),
    ],
)
def test_a_bad_pattern_skips_only_its_record_naming_file_and_line(tmp_path, small_kb, pattern, problem):
    path, _id = _kb_with(tmp_path, small_kb, messagePattern=pattern)
    report = LoadReport()
    records = load_records([small_kb], report=report)
    assert len(records) == len(read_lines(path)) + len(read_lines(small_kb / "ollama__ollama-python.jsonl")) - 1
    assert report.skipped == 1 and f"{path}:4: messagePattern:" in report.problems[0] and problem in report.problems[0]
    with pytest.raises(KnowledgeBaseError, match=f"{path.name}:4: messagePattern"):
        load_records([small_kb], strict=True)


def test_deeply_nested_json_skips_the_line_naming_it(small_kb):
    path = small_kb / "huggingface__smolagents.jsonl"
    with path.open("a") as handle:
        handle.write("[" * 100_000 + "]" * 100_000 + "\n")
    lines = len(path.read_text().splitlines())
    report = LoadReport()
    shelf = RecordShelf.load([small_kb], report=report)
    assert len(shelf) == lines - 1 + len(read_lines(small_kb / "ollama__ollama-python.jsonl"))
    assert report.problems == [f"{path}:{lines}: JSON nested too deeply to read"]


def test_ordinary_knowledge_base_patterns_are_never_rejected():
    report = LoadReport()
    load_records(list(Settings.load(env={}).kb), report=report)
    assert not [p for p in report.problems if "messagePattern" in p]


# --- what stands before the traceback, and what is not text ----------------------------------------

AGENT_TRACEBACK = """\
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/smolagents/agents.py", line 547, in _run_stream
    raise AgentError("Agent interrupted.", self.logger)
smolagents.utils.AgentError: Agent interrupted."""


@pytest.mark.parametrize(
    "before",
    [
        "-" * 3_000 + "\n",  # a rule of dashes
        "=" * 2_000 + "\n",
        "x" * 10_000_000 + "\n",  # a 10 MB line
        "\u0301" * 50_000 + "\n",  # combining marks
    ],
    ids=["dashes", "equals", "10MB-line", "combining-marks"],
)
def test_a_wordless_start_before_a_traceback_still_answers(assistant, before):
    """The first 2,000 characters of a paste held no two words: errata said "no record matches" (0.05)
    while the right record ranked first."""
    started = time.monotonic()
    answer = assistant.ask(before + AGENT_TRACEBACK)
    assert time.monotonic() - started < 2
    assert answer.hits[0].record.id == INTERRUPTED_ID and answer.confidence > 0.9


def test_a_paste_of_one_repeated_word_still_asks_for_more(assistant):
    started = time.monotonic()
    answer = assistant.ask("error " * 3_000 + "Error")
    assert time.monotonic() - started < 2 and answer.confidence <= 0.05 and "No record" in answer.text


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_bytes_of_any_kind_are_read_as_utf8(assistant, kind):
    answer = assistant.ask(kind(INTERRUPTED.encode()))
    assert answer.hits[0].record.id == INTERRUPTED_ID and answer.confidence > 0.9


@pytest.mark.parametrize(("value", "named"), [(5, "int"), (None, "None"), (["x"], "list"), ({"t": "x"}, "dict")])
def test_a_paste_that_is_not_text_is_a_type_error_naming_the_accepted_types(assistant, value, named):
    accepted = f"errata reads a paste as str, or as UTF-8 bytes or bytearray, not {named}"
    for call in (assistant.ask, assistant.search, lambda v: next(iter(assistant.ask_stream(v)))):
        with pytest.raises(TypeError, match=accepted):
            call(value)
