"""Front ends under faults: a corrupt, locked or read-only feedback file, malformed Slack requests to the
real Bolt app, and CLI input that must be refused before anything loads."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import select
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from assistant import Settings
from assistant.errors import ConfigurationError
from assistant.frontends.feedback import FeedbackError, FeedbackStore
from assistant.frontends.ports import check_port_free
from assistant.frontends.slack import SlackBot

from .slack_server import BOT_TOKEN, BOT_USER
from .test_slack import SIGNING_SECRET, BotServer, button_click, mention

REPO = Path(__file__).resolve().parents[1]


def _vote(store: FeedbackStore) -> int:
    return store.add(query="q", answer="a", record_ids=["r"], helpful=True)


def _open_handles(path: Path) -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{fd}") == str(path)
    return count


def test_a_corrupt_feedback_file_refuses_votes_with_a_message(tmp_path, caplog):
    path = tmp_path / "fb.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    store = FeedbackStore(path)  # no exception: the server starts
    assert any("votes are refused" in r.getMessage() for r in caplog.records)
    with pytest.raises(FeedbackError, match="move a damaged file away"):
        _vote(store)
    path.unlink()  # fixed by the operator: votes work again without a restart
    assert _vote(store) == 1


def test_a_feedback_file_damaged_after_start_raises_errata_errors_only(tmp_path):
    path = tmp_path / "fb.sqlite3"
    store = FeedbackStore(path)
    row = _vote(store)
    path.write_bytes(b"\0garbage" * 4096)
    for call in (lambda: _vote(store), lambda: store.update(row, helpful=False), lambda: store.delete(row)):
        with pytest.raises(FeedbackError):
            call()
    with pytest.raises(FeedbackError):
        list(store.all())


@pytest.mark.slow
def test_a_locked_feedback_file_refuses_a_vote_within_seconds(tmp_path):
    path = tmp_path / "fb.sqlite3"
    store = FeedbackStore(path)
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        with pytest.raises(FeedbackError, match="locked"):
            _vote(store)
        assert time.monotonic() - started < 5
    finally:
        holder.rollback()
        holder.close()
    assert _vote(store) == 1


def test_a_read_only_feedback_file_refuses_votes(tmp_path):
    mount = tmp_path / f"ro-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        FeedbackStore(mount / "fb.sqlite3").add(query="q", answer="a", record_ids=[], helpful=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        store = FeedbackStore(mount / "fb.sqlite3")
        with pytest.raises(FeedbackError, match="readonly|read-only"):
            _vote(store)
        assert len(list(store.all())) == 1  # reading still works
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_votes_leave_no_connection_open(tmp_path):
    path = tmp_path / "fb.sqlite3"
    store = FeedbackStore(path)
    for _ in range(100):
        store.update(_vote(store), comment="c")
    list(store.all())
    assert _open_handles(path) == 0


def test_the_web_chat_starts_and_answers_with_a_corrupt_feedback_file(assistant, tmp_path):
    from assistant.frontends.web import VOTE_FAILED, ChatState, Turn, WebChat

    path = tmp_path / "fb.sqlite3"
    path.write_bytes(b"not sqlite" * 100)
    chat = WebChat(assistant, FeedbackStore(path))
    text, citations = chat.ask("smolagents.utils.AgentError: Agent interrupted.")
    assert citations and citations[0]["recordId"] == "c6aeeba10bb30da8"
    state = ChatState(turns={1: Turn("q", text, ["c6aeeba10bb30da8"])})

    class Like:
        index, liked = 1, True

    _state, _box, note = chat.vote(state, Like())
    assert note == VOTE_FAILED


# --- Slack: the real Bolt app over HTTP ----------------------------------------------------------


@pytest.fixture
def bot(assistant, slack, tmp_path, bundled_index_dir):
    env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    settings = Settings.load(
        env=env, index_dir=bundled_index_dir, release_records=False, slack_api_url=slack.url, feedback_db=tmp_path / "f"
    )
    (tmp_path / "f").write_bytes(b"corrupt" * 1000)  # and the feedback file is damaged too
    server = BotServer(SlackBot(assistant, settings, stream_interval=3600.0))
    yield server
    server.close()


@pytest.mark.parametrize("timestamp", ["abc", "1e9", "-5", " ", "1.5", "\xb2"])
def test_a_non_numeric_slack_timestamp_is_401(bot, timestamp):
    status, _ = bot.post(json.dumps({"type": "event_callback"}), "application/json", timestamp=timestamp)
    assert status == 401


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("[]", "application/json"),
        ("3", "application/json"),
        ('"x"', "application/json"),
        ("{not json", "application/json"),
        ("payload=%5B%5D", "application/x-www-form-urlencoded"),
        ("payload=nope", "application/x-www-form-urlencoded"),
    ],
)
def test_a_slack_body_that_is_not_an_object_is_400(bot, body, content_type):
    status, _ = bot.post(body, content_type)
    assert status == 400


def test_a_vote_on_a_broken_feedback_file_is_answered_with_a_message(bot, slack):
    bot.event(mention(f"<@{BOT_USER}> my agent stops with Agent interrupted", ts="1700000000.000900"))
    update = slack.wait_for("chat.update")[0]
    assert bot.click(button_click(update, 0, thread_ts="1700000000.000900"))[0] == 200
    sorry = slack.wait_for("chat.postEphemeral")[0]
    assert "could not be saved" in sorry["text"]


# --- the CLI: refused before loading ---------------------------------------------------------------


def _errata(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "assistant", *args], capture_output=True, text=True, env=env, timeout=timeout
    )
    return done, time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_asking_nothing_is_refused_at_once(text):
    done, took = _errata("ask", text)
    assert done.returncode == 2 and "nothing to ask" in done.stderr and "Traceback" not in done.stderr
    assert took < 15  # no model or index loaded


@pytest.mark.slow
@pytest.mark.parametrize("k", ["0", "-3", "many"])
def test_a_top_k_below_one_is_refused(k):
    done, _ = _errata("ask", "KeyError: 'x'", "--top-k", k)
    assert done.returncode == 2 and "--top-k" in done.stderr


@pytest.mark.slow
def test_a_port_in_use_is_reported_before_loading():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done, took = _errata("serve", "--port", str(port))
    assert done.returncode == 2 and f"cannot serve on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr
    assert took < 15 and "loading the knowledge base" not in done.stdout


def test_check_port_free_names_the_setting():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ConfigurationError, match="ERRATA_SLACK_PORT"):
            check_port_free("127.0.0.1", taken.getsockname()[1], what="--port or ERRATA_SLACK_PORT")
    check_port_free("127.0.0.1", 0)


def test_settings_refuse_a_top_k_of_zero():
    with pytest.raises(ConfigurationError, match="top_k"):
        Settings.load(env={"ERRATA_TOP_K": "0"})


# --- input of the wrong type or shape, on every front end ---------------------------------------------


def test_the_ask_api_says_what_is_wrong_with_a_paste_that_is_not_a_string(assistant, tmp_path):
    """``/ask`` with a number, null, an array or an object answered ``{"error": null}``."""
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    from .web_server import served

    with served(assistant, tmp_path / "fb.sqlite3") as app:
        client = Client(app.url, analytics_enabled=False, verbose=False, download_files=False)
        for value, kind in [(5, "a number"), (None, "null"), (["x"], "an array"), ({"text": "x"}, "an object")]:
            with pytest.raises(AppError, match=f"/ask takes the paste as a JSON string, not {kind}"):
                client.predict(value, api_name="/ask")
        text, citations = client.predict("smolagents.utils.AgentError: Agent interrupted.", api_name="/ask")
    assert citations[0]["recordId"] == "c6aeeba10bb30da8"  # and the server goes on answering


def test_a_feedback_file_deleted_after_start_is_made_again(tmp_path, caplog):
    path = tmp_path / "fb.sqlite3"
    store = FeedbackStore(path)
    _vote(store)
    path.unlink()
    assert _vote(store) == 1  # no restart needed
    assert [row.query for row in store.all()] == ["q"]
    assert any("made again" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "vote",
    [
        {"query": "", "answer": "a", "record_ids": ["r"], "helpful": True},
        {"query": "  \n", "answer": "a", "record_ids": ["r"], "helpful": True},
        {"query": None, "answer": "a", "record_ids": ["r"], "helpful": True},
        {"query": "q", "answer": "a", "record_ids": "r1", "helpful": True},
        {"query": "q", "answer": "a", "record_ids": [5], "helpful": True},
        {"query": "q", "answer": "a", "record_ids": ["r"], "helpful": "yes"},
    ],
)
def test_a_garbage_vote_is_refused_not_stored(tmp_path, vote):
    store = FeedbackStore(tmp_path / "fb.sqlite3")
    with pytest.raises(FeedbackError, match="not stored"):
        store.add(**vote)
    assert not list(store.all())


@pytest.fixture
def sound_bot(assistant, slack, tmp_path, bundled_index_dir):
    """The Slack bot with a working feedback file."""
    env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    settings = Settings.load(
        env=env, index_dir=bundled_index_dir, release_records=False, slack_api_url=slack.url, feedback_db=tmp_path / "f"
    )
    server = BotServer(SlackBot(assistant, settings, stream_interval=3600.0))
    yield server
    server.close()


@pytest.mark.parametrize("value", ["}{garbage", '{"r": 5}', "[]", 7])
def test_a_click_with_a_garbage_button_value_stores_nothing(sound_bot, slack, value):
    sound_bot.event(mention(f"<@{BOT_USER}> my agent stops with Agent interrupted", ts="1700000000.000901"))
    update = slack.wait_for("chat.update")[0]
    click = button_click(update, 0, thread_ts="1700000000.000901")
    click["actions"][0]["value"] = value
    click["message"]["ts"] = click["container"]["message_ts"] = "1700000999.000001"  # an exchange it never had
    assert sound_bot.click(click)[0] == 200
    assert "could not be saved" in slack.wait_for("chat.postEphemeral")[0]["text"]
    assert not list(sound_bot.bot.feedback.all())


@pytest.mark.parametrize("text", [5, ["Agent interrupted"], {"t": "x"}])
def test_a_slack_event_whose_text_is_not_a_string_is_skipped_with_a_warning(sound_bot, slack, caplog, text):
    with caplog.at_level(logging.WARNING):
        assert sound_bot.event(mention(text, ts="1700000000.000902"))[0] == 200
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("skipping event" in r.getMessage() for r in caplog.records):
            time.sleep(0.05)
    assert any("skipping event" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not slack.chat_calls()


def test_an_overlong_numeric_slack_timestamp_is_401_not_500(bot):
    """Bolt subtracted 400 digits from ``time()``: OverflowError, HTTP 500."""
    status, _ = bot.post(json.dumps({"type": "event_callback"}), "application/json", timestamp="9" * 400)
    assert status == 401


def test_the_pip_arg_form_the_help_shows_parses():
    from assistant.frontends.cli import build_parser

    parser = build_parser()
    for command in (
        ["ingest", "--package", "p", "--releases", "latest", "-o", "o.jsonl"],
        ["kb", "build-ecosystem", "-o", "out"],
    ):
        # The help showed "extra pip option, e.g. --no-index", and ``--pip-arg --no-index`` is an argparse error.
        shown = re.findall(r"--pip-arg[= ]-[-\w]+", " ".join(_help_of(parser, command).split()))
        assert shown, "the help shows no whole --pip-arg example"
        for form in shown:
            assert parser.parse_args([*command, *form.split()]).pip_args == ["--no-index"]


def _help_of(parser: argparse.ArgumentParser, command: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parser.parse_args([*command[: 2 if command[0] == "kb" else 1], "--help"])
    return out.getvalue()


# --- MCP: frames the SDK cannot read get a JSON-RPC error, over the real server's stdio ----------------

AGENT_CALL = (
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"explain_error",'
    '"arguments":{"text":"\\ud800 smolagents.utils.AgentError: Agent interrupted."}}}'
)
BAD_FRAMES = [  # (frame, JSON-RPC error code, the id the reply carries, what the message says)
    (b"{not json", -32700, None, "not JSON"),
    (b"\xff\xfe\x00\x01\x80binary", -32700, None, "not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, -32700, None, "nested too deeply"),
    (
        b'{"jsonrpc":"2.0","id":5,"method":"ping","params":' + b'{"a":' * 5_000 + b"1" + b"}" * 5_001,
        -32700,
        None,
        "nested",
    ),
    (b'{"jsonrpc":"2.0","id":6}', -32600, 6, 'no "method"'),
    (b'{"jsonrpc":"2.0","id":"seven","params":{}}', -32600, "seven", 'no "method"'),
    (b'{"jsonrpc":"1.0","id":8,"method":"ping"}', -32600, 8, '"jsonrpc"'),
    (b'{"jsonrpc":"2.0","id":9,"method":42}', -32600, 9, '"method" must be a string'),
    (b"[]", -32600, None, "batches"),
    (b"3", -32600, None, "not int"),
]


BAD_FRAME_NAMES = [
    "not-json", "binary", "deep-array", "deep-params", "no-method", "no-method-string-id", "jsonrpc-1.0",
    "method-not-string", "batch", "number",
]  # fmt: skip


@pytest.mark.parametrize(("frame", "code", "request_id", "says"), BAD_FRAMES, ids=BAD_FRAME_NAMES)
def test_an_mcp_frame_the_sdk_cannot_read_is_refused_with_a_json_rpc_error(frame, code, request_id, says):
    pytest.importorskip("mcp")
    from assistant.frontends.mcp_server import Refusal, check_frame

    refusal = check_frame(frame.decode("utf-8", errors="replace"))
    assert isinstance(refusal, Refusal) and (refusal.code, refusal.id) == (code, request_id)
    assert says in refusal.message


def test_an_mcp_request_holding_a_lone_surrogate_is_repaired_not_dropped():
    pytest.importorskip("mcp")
    from assistant.frontends.mcp_server import check_frame

    frame = check_frame(AGENT_CALL % 2)
    assert isinstance(frame, str) and json.loads(frame)["params"]["arguments"]["text"].startswith("\ufffd smolagents")


class McpPipe:
    """``errata mcp`` in a subprocess, spoken to in raw JSON-RPC lines over its stdin and stdout."""

    def __init__(self, index_dir: Path, log: Path):
        from .frontends_support import errata_env

        self.log = log.open("wb")  # a file, not a pipe: the server's warnings never fill a buffer and block it
        self.process = subprocess.Popen(
            [sys.executable, "-m", "assistant", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=errata_env(index_dir),
        )

    def send(self, frame: bytes) -> None:
        self.process.stdin.write(frame + b"\n")
        self.process.stdin.flush()

    def reply(self, request_id: int | str | None, timeout: float = 120) -> dict:
        """The next reply carrying ``request_id`` (others, such as log notifications, are passed over)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            line = self.process.stdout.readline()
            assert line, "the MCP server closed its stdout"
            message = json.loads(line)
            if "method" not in message and message.get("id") == request_id:
                return message
        raise AssertionError(f"no reply with id {request_id!r} within {timeout} s")

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.mark.slow
def test_the_mcp_server_answers_every_bad_frame_and_keeps_serving(assistant, bundled_index_dir, tmp_path):
    """Invalid JSON, binary, deep nesting and method-less frames were dropped without a reply, and a request
    holding ``"\\ud800"`` was never answered: a client waited for ever, nothing logged."""
    pipe = McpPipe(bundled_index_dir, tmp_path / "stderr.txt")
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        pipe.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode())
        assert pipe.reply(1)["result"]["serverInfo"]["name"] == "errata"
        pipe.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for frame, code, request_id, says in BAD_FRAMES:
            pipe.send(frame)
            error = pipe.reply(request_id)["error"]
            assert error["code"] == code and says in error["message"]
            pipe.send(b'{"jsonrpc":"2.0","id":100,"method":"ping"}')
            assert pipe.reply(100)["result"] == {}  # still serving
        pipe.send((AGENT_CALL % 2).encode())
        answered = pipe.reply(2, timeout=240)["result"]
        assert not answered.get("isError") and answered["structuredContent"]["citations"][0]["recordId"] == (
            "c6aeeba10bb30da8"
        )
    finally:
        pipe.close()
    logged = (tmp_path / "stderr.txt").read_text(errors="replace")
    assert logged.count("refused an MCP frame") == len(BAD_FRAMES)
