"""The web chat served for real on 127.0.0.1 and called through gradio_client, plus its rendering."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import gradio as gr
import pytest
from gradio_client import Client

from assistant import Assistant, ConfigurationError
from assistant.frontends.cli import main
from assistant.frontends.feedback import FeedbackStore
from assistant.frontends.web import (
    EXAMPLES,
    OFFLINE,
    ChatState,
    WebChat,
    build_app,
    launch,
    sources_html,
    user_markdown,
)

from .openai_server import OpenAIServer
from .web_server import free_port, served

ROOT = Path(__file__).resolve().parents[1]

TRACEBACK = EXAMPLES[0]  # a real httpx multipart TypeError, as a user would paste it
AGENT_PASTE = "smolagents.utils.AgentError: Agent interrupted."
LLM_REPLY = [
    "Your agent run was stopped on purpose: something called `agent.interrupt()` [1].\n\n",
    "**Fix:** catch `AgentError` around `agent.run(task)` ",
    "and treat *interrupted* as a cancellation [1].",
]


@pytest.fixture(scope="module")
def app(assistant, tmp_path_factory):
    with served(assistant, tmp_path_factory.mktemp("web") / "feedback.sqlite3") as running:
        yield running


@pytest.fixture(scope="module")
def client(app):
    return Client(app.url, analytics_enabled=False, verbose=False, download_files=False)


@pytest.fixture(scope="module")
def unsure_assistant(assistant, embedder):
    """The same knowledge base, but no answer is ever confident enough: every query abstains."""
    return Assistant(assistant.settings, embedder=embedder, confidence_threshold=1.01)


def test_ask_endpoint_returns_markdown_and_citations(client, assistant):
    text, citations = client.predict(TRACEBACK, api_name="/ask")
    expected = assistant.ask(TRACEBACK)
    assert text == expected.text
    assert citations, "a traceback that names a known error must come back with citations"
    first = citations[0]
    assert first["recordId"] == expected.citations[0].record_id
    assert first["repo"] == "encode/httpx"
    assert first["errorClass"] == "TypeError"
    assert first["githubUrl"].startswith("https://github.com/encode/httpx/")
    assert f"[{first['number']}]" in text


def test_ask_endpoint_is_listed_in_the_api(client):
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert "/ask" in endpoints
    assert [p["parameter_name"] for p in endpoints["/ask"]["parameters"]] == ["text"]


def test_chat_streams_the_user_message_first_then_the_answer_and_its_sources(client):
    job = client.submit(TRACEBACK, [], 3, None, api_name="/chat")
    outputs = list(job)
    assert len(outputs) >= 2
    _box, first_chat, first_sources, *_ = outputs[0]
    assert [m["role"] for m in first_chat] == ["user"]
    assert "```text\nTraceback (most recent call last):" in first_chat[0]["content"][0]["text"]
    assert "Searching" in first_sources

    _box, chat, sources, *_ = job.outputs()[-1]
    assert [m["role"] for m in chat] == ["user", "assistant"]
    answer_text = chat[1]["content"][0]["text"]
    assert "Multipart file uploads require" in answer_text and "[1]" in answer_text
    assert 'class="errata-card"' in sources
    assert 'href="https://github.com/encode/httpx/' in sources


def test_empty_input_adds_nothing_to_the_chat(client):
    job = client.submit("   ", [], 3, None, api_name="/chat")
    job.result()
    _box, chat, *_ = job.outputs()[-1]
    assert chat == []


def test_low_confidence_answer_shows_no_confident_match_with_related_records(unsure_assistant, tmp_path):
    answer = unsure_assistant.ask(TRACEBACK)
    assert not answer.grounded
    page = sources_html(answer)
    assert "No confident match" in page and "Possibly related" in page
    # Folded to a title line and a link each: no fix cards of records that do not match.
    related = {c.record_id for c in answer.citations}
    assert page.count('class="errata-related"') == len(related) > 0
    assert 'class="errata-card"' not in page and "<ol>" not in page
    chat = WebChat(unsure_assistant, FeedbackStore(tmp_path / "feedback.sqlite3"))
    *_, (_box, history, sources, _state, _fb) = chat.respond(TRACEBACK, [], ChatState(), 5, None)
    assert "No confident match" in history[-1]["content"]
    # The bar is said beside the confidence, and it is the answering Assistant's own (1.01 here, not 0.89).
    below = f"onfidence {answer.confidence:.2f}, below the 1.01 errata needs to answer"
    assert below in history[-1]["content"] and below in sources
    assert sources == sources_html(answer, threshold=unsure_assistant.settings.confidence_threshold)


def test_source_cards_escape_record_text_and_collapse_the_code(assistant):
    answer = assistant.ask(TRACEBACK)
    hit = answer.hits[0]
    hostile = dataclasses.replace(hit.record, error_message="<script>alert(1)</script>", github_url="javascript:x()")
    page = sources_html(dataclasses.replace(answer, hits=[dataclasses.replace(hit, record=hostile)]))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "javascript:" not in page
    real = sources_html(answer)
    assert "<details><summary>Code excerpt" in real  # collapsed until clicked
    assert all(f"<li>{s}</li>".replace("'", "&#x27;") in real for s in hit.record.solutions[:1])


def test_pasted_tracebacks_keep_their_layout():
    assert user_markdown("KeyError: 'x'") == "KeyError: 'x'"
    block = user_markdown('Traceback:\n  File "a.py", line 1\nValueError: ```odd``` text')
    assert block.startswith("````text\nTraceback:\n  File") and block.endswith("\n````")


def test_votes_comments_and_withdrawals_reach_sqlite(assistant, tmp_path):
    db = tmp_path / "feedback.sqlite3"
    chat = WebChat(assistant, FeedbackStore(db))
    *_, (_box, history, _sources, state, _fb) = chat.respond(TRACEBACK, [], ChatState(), 5, None)
    answer_index = len(history) - 1

    state, _box, note = chat.vote(state, gr.LikeData(None, {"index": answer_index, "value": "", "liked": False}))
    assert "not helpful" in note
    state, _box, note = chat.vote(state, gr.LikeData(None, {"index": answer_index, "value": "", "liked": True}))
    state, *_rest, note = chat.comment(state, "  fixed it, thanks ")
    assert "saved" in note
    rows = sqlite3.connect(db).execute("SELECT query, helpful, comment, record_ids, source FROM feedback").fetchall()
    assert len(rows) == 1  # changing the vote updates the row instead of adding one
    query, helpful, comment, record_ids, source = rows[0]
    assert query == TRACEBACK and helpful == 1 and comment == "fixed it, thanks" and source == "web"
    assert json.loads(record_ids) == [c.record_id for c in assistant.ask(TRACEBACK).citations]

    chat.vote(state, gr.LikeData(None, {"index": answer_index, "value": "", "liked": ""}))
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM feedback").fetchone() == (0,)

    _state, _box, note = chat.vote(state, gr.LikeData(None, {"index": 0, "value": "", "liked": True}))
    assert "errata's answers only" in note  # thumbs on the user's own message store nothing


def test_feedback_export_command_writes_eval_jsonl(tmp_path, capsys):
    db = tmp_path / "feedback.sqlite3"
    store = FeedbackStore(db)
    store.add(query="httpx.ConnectTimeout: timed out", answer="a", record_ids=["r1", "r2"], helpful=True)
    store.add(query="why", answer="b", record_ids=["r3"], helpful=False, comment="wrong library")
    out = tmp_path / "feedback.jsonl"
    assert main(["feedback", "export", str(out), "--db", str(db)]) == 0
    assert "wrote 2 feedback row(s)" in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["relevant"] for r in rows] == [["r1"], []]
    assert rows[1]["needs_label"] is True and rows[1]["comment"] == "wrong library"


@pytest.mark.slow
def test_python_app_py_serves_on_the_configured_port(assistant, bundled_index_dir, tmp_path):
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("ERRATA_")}
    env.update(
        ERRATA_PORT=str(port),
        ERRATA_INDEX_DIR=str(bundled_index_dir),
        ERRATA_FEEDBACK_DB=str(tmp_path / "f.db"),
        ERRATA_RELEASE_RECORDS="false",  # the test index is the curated records' (see conftest.py)
    )
    server = subprocess.Popen(
        [sys.executable, "app.py", "--host", "127.0.0.1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    starting_pages = []
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, f"app.py exited early:\n{server.communicate()[0]}"
            assert time.monotonic() < deadline, "app.py did not start serving within 180 s"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=2) as reply:
                    assert reply.status == 200
                    break
            except urllib.error.HTTPError as exc:  # the starting page, while gradio loads (seconds)
                starting_pages.append((exc.code, exc.headers.get("Retry-After"), exc.read().decode()))
                time.sleep(0.2)
            except OSError:
                time.sleep(0.2)
        client = Client(f"http://127.0.0.1:{port}/", analytics_enabled=False, verbose=False, download_files=False)
        text, citations = client.predict("KeyError: 'OPENAI_API_KEY'", api_name="/ask")
        assert text and all(c["recordId"] and c["repo"] for c in citations)
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0]
    assert f"serving on http://127.0.0.1:{port}" in output
    assert "index up to date" in output
    # The port answered before the chat could: a page that says errata is starting and reloads itself.
    assert starting_pages and all(code == 503 and retry == "1" for code, retry, _ in starting_pages)
    assert "errata is starting" in starting_pages[0][2] and 'http-equiv="refresh"' in starting_pages[0][2]


def test_llm_pieces_reach_the_chat_as_they_arrive_and_the_model_menu_can_pick_offline(assistant, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-web-0123456789")  # litellm reads the provider's own variable
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    gate = threading.Event()
    with OpenAIServer(LLM_REPLY, gate=gate) as server:
        settings = assistant.settings.replace(model="openai/test-model", api_base=server.base_url, llm_retries=0)
        chat = WebChat(Assistant(settings, embedder=assistant.embedder), FeedbackStore(tmp_path / "f.db"))
        assert chat.models == ["openai/test-model", OFFLINE]

        steps = chat.respond(AGENT_PASTE, [], ChatState(), 3, "openai/test-model")
        _box, history, sources, *_ = next(steps)
        assert [m["role"] for m in history] == ["user"] and "Searching" in sources
        _box, history, *_ = next(steps)
        # The first piece is on screen while the server still holds back the rest of its reply.
        assert "stopped on purpose" in history[-1]["content"] and not gate.is_set()
        gate.set()
        *_, (_box, history, sources, _state, _fb) = steps
        assert history[-1]["content"].startswith("".join(LLM_REPLY))
        assert 'class="errata-card"' in sources and len(server.requests) == 1

        *_, (_box, offline, *_rest) = chat.respond(AGENT_PASTE, [], ChatState(), 3, OFFLINE)
        assert len(server.requests) == 1  # the offline choice never calls the model
        assert offline[-1]["content"].startswith(assistant.ask(AGENT_PASTE, 3).text)


@pytest.mark.slow
def test_a_taken_port_is_an_error_that_says_what_to_do(assistant, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        settings = assistant.settings.replace(port=taken.getsockname()[1])
        demo = build_app(assistant, FeedbackStore(tmp_path / "f.db"))
        with pytest.raises(ConfigurationError, match="choose another with --port"):
            launch(demo, settings, block=False, quiet=True)
