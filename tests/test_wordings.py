"""A curated record keeps the older wordings of the ingested records of its raise that give way to it."""

from __future__ import annotations

import json
import re

import pytest

from assistant import Assistant, Settings
from assistant.ingest.messages import Placeholder, bounded_message_pattern, message_pattern
from assistant.knowledge.pattern_safety import unbounded_reason
from assistant.knowledge.records import LoadReport, load_records
from assistant.releases.earlier_wordings import extract_wordings
from assistant.releases.patterns import combine_bounded, combine_patterns
from assistant.storage.shelf import RecordShelf

from .conftest import read_lines, write_lines

CURATED_ID = "c18fb92a81a91715"  # ollama's ValueError "File {self.value} does not exist"
OLD_WORDING = "ValueError: Image file /tmp/cat.png was not found on this machine"
# pydantic-ai's deprecation message: three ``(.+?)`` around short literals.
DEPRECATION = ["`", Placeholder("f"), "(", Placeholder("old"), "=...)` is deprecated, use `", Placeholder("new"), "=`."]


def _twin(curated: dict, **changes) -> dict:
    """An ingested record of the curated record's raise, as a merge over releases writes it: the newest
    wording's message, a pattern for it and for an older wording, another line."""
    pattern = combine_patterns([curated["messagePattern"], r"Image file (.+?) was not found on this machine"])
    twin = dict(curated, id="0123456789abcdef", lineNumber=curated["lineNumber"] + 40, tags=["ingested", "reworded"])
    twin.update({"messagePattern": pattern, **changes})
    return twin


@pytest.fixture
def kb_with_twin(small_kb):
    rows = read_lines(small_kb / "ollama__ollama-python.jsonl")
    curated = next(r["record"] for r in rows if r["record"]["id"] == CURATED_ID)
    (small_kb / "older").mkdir()
    write_lines(small_kb / "older" / "ollama__ollama-python.jsonl", [{"record": _twin(curated)}])
    return small_kb, curated


def _pattern_of(records, record_id: str) -> str:
    return next(r.message_pattern for r in records if r.id == record_id)


def test_a_curated_record_inherits_the_older_wording_of_its_ingested_twin(kb_with_twin):
    kb, curated = kb_with_twin
    assert not re.search(curated["messagePattern"], OLD_WORDING)
    report = LoadReport()
    records = load_records(kb, report=report)
    assert report.superseded == 1 and "0123456789abcdef" not in {r.id for r in records}
    inherited = _pattern_of(records, CURATED_ID)
    assert re.search(inherited, OLD_WORDING) and re.search(inherited, "File /tmp/cat.png does not exist")
    # Every other record is as its line says, and the shelf (what serving reads) agrees with the list.
    untouched = {r.id: r for r in load_records(kb / "ollama__ollama-python.jsonl")}
    assert all(r == untouched[r.id] for r in records if r.id in untouched and r.id != CURATED_ID)
    shelf = RecordShelf.load(kb)
    assert [r.to_dict() for r in shelf] == [r.to_dict() for r in records]


def test_no_curated_record_inherits_a_pattern_its_siblings_share(small_kb):
    """Four curated ollama records split one raise (``{error} (status code: ...)``) by the server's text;
    an ingested pattern of that raise would make each of them match the others' texts."""
    rows = read_lines(small_kb / "ollama__ollama-python.jsonl")
    siblings = [r["record"] for r in rows if r["record"]["errorMessage"] == "{error} (status code: {status_code})"]
    assert len(siblings) >= 2
    twin = dict(siblings[0], id="0123456789abcdef", messagePattern=r"\(status code: (.+?)\)", tags=["ingested"])
    (small_kb / "older").mkdir()
    write_lines(small_kb / "older" / "ollama.jsonl", [{"record": twin}])
    report = LoadReport()
    records = load_records(small_kb, report=report)
    assert report.superseded == 1
    assert {_pattern_of(records, s["id"]) for s in siblings} == {s["messagePattern"] for s in siblings}


def test_a_twin_of_a_placeholder_alone_adds_no_wording(kb_with_twin):
    kb, curated = kb_with_twin
    write_lines(kb / "older" / "ollama__ollama-python.jsonl", [{"record": _twin(curated, messagePattern="(.+?)")}])
    assert _pattern_of(load_records(kb), CURATED_ID) == curated["messagePattern"]


def test_a_twin_of_one_wording_or_of_another_records_wording_adds_none(kb_with_twin):
    """A twin not tagged ``reworded`` had one wording: its pattern is the curated one's, only looser. An
    earlier wording that is another curated record's message today would make this record match it."""
    kb, curated = kb_with_twin
    twin = _twin(curated, tags=["ingested"])
    write_lines(kb / "older" / "ollama__ollama-python.jsonl", [{"record": twin}])
    assert _pattern_of(load_records(kb), CURATED_ID) == curated["messagePattern"]
    taking = combine_patterns([curated["messagePattern"], r"Invalid image data, expected (.+?) string"])
    write_lines(kb / "older" / "ollama__ollama-python.jsonl", [{"record": _twin(curated, messagePattern=taking)}])
    assert _pattern_of(load_records(kb), CURATED_ID) == curated["messagePattern"]


def test_the_inherited_pattern_survives_the_start_up_snapshot(kb_with_twin, tmp_path, embedder):
    kb, _curated = kb_with_twin
    settings = Settings.load(env={}, kb=(kb,), index_dir=tmp_path / "index")
    for start in ("cold", "from the snapshot"):
        assistant = Assistant(settings, embedder=embedder)
        assert (assistant.build_report.reason == "up to date (snapshot)") == (start == "from the snapshot")
        _query, retrieval = assistant.retrieve(OLD_WORDING)
        assert retrieval.hits[0].record.id == CURATED_ID, start
        assert "pattern" in retrieval.hits[0].why, start


def test_extract_wordings_keeps_only_twins_that_add_a_wording(kb_with_twin, tmp_path):
    kb, curated = kb_with_twin
    build = tmp_path / "build"
    build.mkdir()
    same = dict(curated, id="1111111111111111", lineNumber=curated["lineNumber"] + 1, tags=["ingested"])
    unrelated = dict(same, id="2222222222222222", errorMessage="Something else {x}", messagePattern="Something else")
    write_lines(build / "ollama__ollama-python.jsonl", [{"record": r} for r in (_twin(curated), same, unrelated)])
    curated_kb = [kb / "ollama__ollama-python.jsonl", kb / "huggingface__smolagents.jsonl"]
    report = extract_wordings(curated_kb, [build], tmp_path / "wordings")
    written = read_lines(tmp_path / "wordings" / "ollama__ollama-python.jsonl")
    assert [row["record"]["id"] for row in written] == ["0123456789abcdef"]
    assert report.curated == 1 and report.files == {"ollama__ollama-python.jsonl": 1}
    assert json.loads(json.dumps(written))  # plain knowledge-base lines, loadable as such
    assert _pattern_of(load_records([*curated_kb, tmp_path / "wordings"]), CURATED_ID) != curated["messagePattern"]


def test_a_message_with_many_placeholders_gets_a_pattern_the_knowledge_base_accepts():
    """The full pattern of pydantic-ai's deprecation message backtracked for seconds, and the release build
    that merged it stopped with an error."""
    parts = DEPRECATION
    assert unbounded_reason(message_pattern(parts))
    pattern = bounded_message_pattern(parts)
    assert unbounded_reason(pattern) is None
    assert re.search(pattern, "DeprecationWarning: `Agent(result_type=...)` is deprecated, use `output_type=`.")
    simple = ["Exceeded maximum retries (", Placeholder("n"), ") for result validation"]
    assert bounded_message_pattern(simple) == message_pattern(simple)


def test_wordings_are_combined_only_while_the_pattern_stays_bounded():
    """A release whose wording (from an older ingest) backtracks leaves the others' wordings whole."""
    newest = r"Exceeded maximum output retries \((.+?)\)"
    older = r"Exceeded maximum retries \((.+?)\) for validation"
    unbounded = message_pattern(DEPRECATION)
    assert unbounded_reason(unbounded)
    combined = combine_bounded([newest, unbounded, older])
    assert unbounded_reason(combined) is None
    assert re.search(combined, "Exceeded maximum retries (1) for validation")
    assert re.search(combined, "Exceeded maximum output retries (3)")
    assert not re.search(combined, "`Agent(result_type=...)` is deprecated, use `output_type")


def _long_curated(kb) -> dict:
    """A curated smolagents record whose message has many literal words and no placeholder."""
    from assistant.retrieval.signals import message_words

    rows = read_lines(kb / "huggingface__smolagents.jsonl")
    return next(
        r["record"]
        for r in rows
        if "{" not in r["record"]["errorMessage"] and len(message_words(r["record"]["errorMessage"])) >= 8
    )


def _elsewhere(curated: dict, message: str) -> dict:
    """An ingested record of the curated record's library and class, in another file and at another line."""
    pattern = re.escape(message)
    return dict(
        curated,
        id="0123456789abcdef",
        filePath="smolagents/_older.py",
        lineNumber=7,
        errorMessage=message,
        messagePattern=pattern,
        tags=["ingested"],
    )


@pytest.mark.parametrize("change", ["cut", "grown"])
def test_an_ingested_raise_whose_message_a_release_cut_or_grew_gives_way_to_the_curated_one(small_kb, change):
    """fastapi 0.83's ``Invalid args for response field! ... field type`` grew a tail in 0.89: the older
    release's record, in another file, is still the curated raise and must not outrank it."""
    curated = _long_curated(small_kb)
    words = curated["errorMessage"].split()
    message = " ".join(words[:-2]) if change == "cut" else curated["errorMessage"] + " See the docs for more."
    (small_kb / "older").mkdir()
    write_lines(small_kb / "older" / "smolagents.jsonl", [{"record": _elsewhere(curated, message)}])
    report = LoadReport()
    records = load_records(small_kb, report=report)
    assert report.superseded == 1 and "0123456789abcdef" not in {r.id for r in records}


def test_an_ingested_raise_sharing_only_a_generic_beginning_with_a_curated_one_stays(small_kb):
    curated = _long_curated(small_kb)
    message = " ".join(curated["errorMessage"].split()[:2])  # two words: as generic as "cannot import name"
    (small_kb / "older").mkdir()
    write_lines(small_kb / "older" / "smolagents.jsonl", [{"record": _elsewhere(curated, message)}])
    report = LoadReport()
    records = load_records(small_kb, report=report)
    assert report.superseded == 0 and "0123456789abcdef" in {r.id for r in records}
