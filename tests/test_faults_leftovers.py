"""The leftovers of issue 47 ("Trust, second pass"): ``--pip-arg --no-index`` as a user types it, the web chat's
``/chat`` given a paste that is no string, alternations under a repeat that Python's parser folds out of sight,
a rebuild after manifest damage taking the shipped vectors, and the piece manifest checksummed."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, KnowledgeBaseError, Settings, load_records
from assistant.index.pieces import PIECES_MANIFEST, open_piece_vectors
from assistant.knowledge.pattern_safety import pattern_problem, unbounded_reason
from assistant.knowledge.records import LoadReport

from .conftest import read_lines, write_lines
from .test_faults_index import INTERRUPTED_ID, _flip_id, _keep_time
from .test_index import CountingEmbedder

INTERRUPTED = "smolagents.utils.AgentError: Agent interrupted."
OLLAMA = "ollama__ollama-python.jsonl"

# --- 1. ``--pip-arg --no-index``: the space form, as the help shows it ------------------------------------

PIP_COMMANDS = [
    ["ingest", "--package", "p", "--releases", "latest", "-o", "o.jsonl"],
    ["kb", "build-ecosystem", "-o", "out"],
    ["kb", "update"],
]


@pytest.mark.parametrize("command", PIP_COMMANDS, ids=["ingest", "build-ecosystem", "update"])
def test_a_pip_option_after_pip_arg_is_its_value_not_an_option_of_errata(command):
    """``--pip-arg --no-index`` was "argument --pip-arg: expected one argument"; only ``--pip-arg=--no-index`` did."""
    from assistant.frontends.cli import build_parser

    parser = build_parser()
    args = parser.parse_args([*command, "--pip-arg", "--no-index", "--pip-arg", "--index-url", "--pip-arg=http://x/"])
    assert args.pip_args == ["--no-index", "--index-url", "http://x/"]
    assert parser.parse_args([*command, "--pip-arg=--no-index"]).pip_args == ["--no-index"]


def test_the_pip_arg_words_are_joined_from_the_command_line_too(monkeypatch):
    """``errata`` itself parses ``sys.argv``: the same joining applies there, and not past ``--``."""
    from assistant.frontends.cli import _joined_pip_args, build_parser

    monkeypatch.setattr("sys.argv", ["errata", "kb", "build-ecosystem", "-o", "out", "--pip-arg", "--no-index"])
    assert build_parser().parse_args().pip_args == ["--no-index"]
    assert _joined_pip_args(["ask", "--", "--pip-arg", "-x"]) == ["ask", "--", "--pip-arg", "-x"]
    assert _joined_pip_args(["kb", "--pip-arg"]) == ["kb", "--pip-arg"]  # argparse says the value is missing


# --- 2. the web chat's ``/chat`` given a paste that is no string ----------------------------------------


def _call(url: str, endpoint: str, data: list) -> tuple[str, dict | list | None]:
    """One call of a gradio endpoint over HTTP, as any client makes it: (the last event's name, its data)."""
    import httpx

    started = httpx.post(f"{url}gradio_api/call/{endpoint}", json={"data": data}, timeout=30)
    started.raise_for_status()
    stream = httpx.get(f"{url}gradio_api/call/{endpoint}/{started.json()['event_id']}", timeout=60).text
    events = [line.removeprefix("event: ") for line in stream.splitlines() if line.startswith("event: ")]
    payloads = [line.removeprefix("data: ") for line in stream.splitlines() if line.startswith("data: ")]
    return events[-1], json.loads(payloads[-1])


@pytest.mark.slow
def test_the_chat_endpoint_says_what_is_wrong_with_a_paste_that_is_not_a_string(assistant, tmp_path):
    """gradio's Textbox turned 5, ["x"] and {"t": "x"} into the text "5", "['x']" and "{'t': 'x'}" and answered
    that; null got no answer and no message; a number of sources sent as a string got ``{"error": null}``."""
    from .web_server import served

    with served(assistant, tmp_path / "fb.sqlite3") as app:
        for value, kind in [(5, "a number"), (None, "null"), (["x"], "an array"), ({"t": "x"}, "an object")]:
            event, data = _call(app.url, "chat", [value, [], 3, None])
            assert event == "error"
            assert data["error"] == f"/chat takes the paste as a JSON string, not {kind}"
        event, data = _call(app.url, "chat", [INTERRUPTED, [], "3", None])
        assert (event, data["error"]) == ("error", "/chat takes the number of sources as a JSON number, not a string")
        event, data = _call(app.url, "chat", [INTERRUPTED, [], 3, None])  # and the chat goes on answering
    assert event == "complete"
    assert "Agent interrupted" in json.dumps(data[1][-1]["content"])


# --- 3. alternations of overlapping branches under a repeat -------------------------------------------

FOLDED = [
    "(?:a|a)+$",  # identical branches (Python's parser makes it a(?:|), the trial alone caught it)
    "(?:[a-c]|[b-d])+$",  # folded by the parser into the one class [a-d]: passed every check
    r"(?:[0-9]|\d)+$",
    r"Agent interrupted (?:\w|\d)+!",
    "(?:ab|ab)*x",
    "(a|a){1,500}$",
]


@pytest.mark.parametrize("pattern", FOLDED)
def test_an_alternation_of_overlapping_branches_under_a_repeat_is_refused_without_a_trial(pattern, monkeypatch):
    import assistant.knowledge.pattern_safety as safety

    monkeypatch.setattr(safety, "_over_budget", lambda compiled, text: False)  # a machine too busy to time it
    safety.unbounded_reason.cache_clear()
    try:
        reason = unbounded_reason(pattern)
    finally:
        safety.unbounded_reason.cache_clear()
    assert reason is not None and reason.startswith("repeats an alternation two of whose branches both match")


def test_the_folded_alternation_really_backtracks_in_the_matcher():
    """Why it is refused: the ``regex`` module the matcher runs tries both branches of what Python's parser
    shows as one class (a 30-character run takes seconds; its budget ends it, a query at a time)."""
    import regex

    with pytest.raises(TimeoutError):
        regex.compile("(?:[a-c]|[b-d])+$").search("b" * 30 + "\x00", timeout=0.5)
    started = time.perf_counter()
    regex.compile("[a-d]+$").search("b" * 30 + "\x00", timeout=0.5)  # the class it looks like: at once
    assert time.perf_counter() - started < 0.1


@pytest.mark.parametrize(
    "pattern",
    [
        "(?:a|b)+$",
        r"(?:\w|-)+ failed",
        r"(?:.|\n)*x",
        "(?:a|a){2}$",  # a bounded repeat: four ways at most
        r"[|]+ and \|",
        "[]|]+x",
        r"(?:'[^']*'|\"[^\"]*\")+,",
        r"\[Errno 2\] No such file or directory(?:: .+)?|\[WinError [23]\] The system cannot find the",
    ],
)
def test_alternations_whose_branches_differ_are_still_accepted(pattern):
    assert pattern_problem(pattern) is None


def test_an_overlapping_alternation_in_a_knowledge_base_is_refused_with_file_and_line(small_kb):
    path = small_kb / OLLAMA
    rows = read_lines(path)
    rows[2]["record"]["messagePattern"] = "model '(?:[a-z]|[a-z0-9])+' not found"
    write_lines(path, rows)
    report = LoadReport()
    records = load_records(small_kb, report=report)
    assert report.skipped == 1
    assert report.problems[0].startswith(f"{path}:3: messagePattern: repeats an alternation")
    assert len(records) == len(load_records(small_kb, report=LoadReport())) and records
    with pytest.raises(KnowledgeBaseError, match=f"{path}:3: messagePattern: repeats an alternation"):
        load_records(small_kb, strict=True)


# --- 4. a damaged vector manifest: the rebuild takes the shipped vectors -------------------------------


class CountingAssistantEmbedder(CountingEmbedder):
    """A counting embedder an Assistant can load (it asks for the model up front)."""

    @property
    def model(self):
        return self.real.model


def _start(kb: Path, index_dir: Path, embedder) -> Assistant:
    return Assistant(Settings.load(env={}, release_records=False), kb=kb, index_dir=index_dir, embedder=embedder)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["one-bit-flip", "not-json", "emptied"])
def test_a_rebuild_after_manifest_damage_takes_the_shipped_vectors_not_every_record_again(
    small_kb, tmp_path, embedder, caplog, damage
):
    """It re-embedded every record (40-80 s on the bundled ones) though their vectors ship with errata."""
    index_dir = tmp_path / "index"
    first = _start(small_kb, index_dir, embedder)
    whole = first.ask(INTERRUPTED)
    manifest = index_dir / "manifest.json"
    if damage == "one-bit-flip":
        _keep_time(manifest, _flip_id)
    else:
        manifest.write_text("{" if damage == "not-json" else "")
    counting = CountingAssistantEmbedder(embedder)
    with caplog.at_level(logging.WARNING):
        again = _start(small_kb, index_dir, counting)
    assert again.build_report.rebuilt
    assert again.build_report.embedded == 0 and counting.encoded == 0
    answer = again.ask(INTERRUPTED)
    assert answer.hits[0].record.id == INTERRUPTED_ID == whole.hits[0].record.id
    assert abs(answer.confidence - whole.confidence) < 0.02
    assert _start(small_kb, index_dir, embedder).build_report.reason == "up to date (snapshot)"


# --- 5. the piece manifest is checksummed -------------------------------------------------------------


def _swap_piece_keys(path: Path) -> tuple[int, int]:
    """Swap the piece hashes of the first two records holding every piece (size kept): returns their rows."""
    text = path.read_text()
    manifest = json.loads(text)
    a, b = [i for i, row in enumerate(manifest["keys"]) if all(row)][:2]
    for first, second in zip(manifest["keys"][a], manifest["keys"][b], strict=True):
        text = text.replace(first, "\0").replace(second, first).replace("\0", second)
    path.write_text(text)
    return a, b


@pytest.mark.slow
def test_swapped_hashes_in_the_piece_manifest_are_found_never_used(small_kb, tmp_path, embedder, caplog):
    """Two records' piece hashes swapped (size and time kept) gave each the other's piece vectors at the next
    build: the rows were taken by the damaged hashes."""
    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    before = np.array(open_piece_vectors(records, embedder, index_dir).vectors)
    a, b = [0, 0]

    def damage(path: Path) -> None:
        nonlocal a, b
        a, b = _swap_piece_keys(path)

    _keep_time(index_dir / PIECES_MANIFEST, damage)
    counting = CountingEmbedder(embedder)
    with caplog.at_level(logging.WARNING):
        after = np.array(open_piece_vectors(records, counting, index_dir).vectors)
    assert any(PIECES_MANIFEST in r.getMessage() and "other bytes" in r.getMessage() for r in caplog.records)
    assert counting.encoded > 0  # nothing was taken from the damaged file
    for row, other in ((a, b), (b, a)):
        for piece in range(before.shape[1]):
            assert float(after[row, piece] @ before[row, piece]) > 0.99
            assert float(after[row, piece] @ before[other, piece]) < 0.99
    counting.encoded = 0
    open_piece_vectors(records, counting, index_dir)
    assert counting.encoded == 0  # written again, sealed and whole


@pytest.mark.slow
def test_an_older_unsealed_piece_manifest_is_used_only_for_the_records_it_names(small_kb, tmp_path, embedder):
    records = load_records(small_kb)
    index_dir = tmp_path / "index"
    open_piece_vectors(records, embedder, index_dir)
    path = index_dir / PIECES_MANIFEST
    manifest = json.loads(path.read_text())
    del manifest["sha256"]
    path.write_text(json.dumps(manifest))  # as an errata before seals wrote it
    counting = CountingEmbedder(embedder)
    open_piece_vectors(records, counting, index_dir)
    assert counting.encoded == 0
    assert path.read_text().rstrip().endswith('"\n}') and "sha256" in json.loads(path.read_text())


@pytest.mark.slow
def test_a_damaged_piece_manifest_in_an_index_is_taken_again_from_the_shipped_vectors(small_kb, tmp_path, embedder):
    index_dir = tmp_path / "index"
    question = "why was my agent interrupted in smolagents?"
    whole = _start(small_kb, index_dir, embedder).ask(question)
    before = np.load(index_dir / "pieces.npy")
    rows: list[int] = []
    _keep_time(index_dir / PIECES_MANIFEST, lambda path: rows.extend(_swap_piece_keys(path)))
    counting = CountingAssistantEmbedder(embedder)
    again = _start(small_kb, index_dir, counting)
    assert counting.encoded == 0  # the bundled records' pieces ship with errata
    after = np.load(index_dir / "pieces.npy")
    for row, other in (rows, rows[::-1]):  # each record has its own pieces again, not the other's
        assert np.einsum("pd,pd->p", after[row], before[row]).min() > 0.99
        assert np.einsum("pd,pd->p", after[row], before[other]).max() < 0.99
    answer = again.ask(question)
    assert answer.hits[0].record.id == whole.hits[0].record.id and abs(answer.confidence - whole.confidence) < 0.02
    assert _start(small_kb, index_dir, embedder).build_report.reason == "up to date (snapshot)"
