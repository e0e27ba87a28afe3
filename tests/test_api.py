from concurrent.futures import ThreadPoolExecutor

from assistant import Answer


def test_ask_ranks_the_interrupted_agent_record_first(assistant):
    answer = assistant.ask("my agent stops with Agent interrupted")
    assert isinstance(answer, Answer)
    assert answer.hits[0].record.id == "c6aeeba10bb30da8"
    assert answer.hits == sorted(answer.hits, key=lambda h: h.score, reverse=True)
    assert answer.citations[0].record_id == "c6aeeba10bb30da8"
    assert "[1]" in answer.text
    assert answer.citations[0].github_url in answer.text
    assert 0.0 <= answer.confidence <= 1.0


def test_concurrent_asks_from_threads_agree_with_serial_ones(assistant):
    queries = [
        "my agent stops with Agent interrupted",
        "httpx.ConnectTimeout: timed out",
        "pydantic says field required",
        "KeyError: 'OPENAI_API_KEY'",
    ] * 4
    serial = [assistant.search(q)[0].record.id for q in queries]
    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(lambda q: assistant.search(q)[0].record.id, queries))
    assert threaded == serial


def test_empty_binary_and_huge_pastes_get_answers_not_crashes(assistant):
    empty = assistant.ask("   \n\t ")
    assert empty.hits == [] and "Paste a traceback" in empty.text

    binary = assistant.ask(b"\x00\x01\x02\xff\xfe garbage \x00 Agent interrupted.")
    assert any("binary" in note for note in binary.notes)

    huge = "x = 1\n" * 50_000 + "smolagents.utils.AgentError: Agent interrupted."
    answer = assistant.ask(huge)
    assert any("longer than" in note for note in answer.notes)
    assert answer.hits[0].record.id == "c6aeeba10bb30da8"
