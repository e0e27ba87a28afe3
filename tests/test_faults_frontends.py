"""Front ends under faults: a corrupt, locked or read-only feedback file, malformed Slack requests to the
real Bolt app, and CLI input that must be refused before anything loads."""

from __future__ import annotations

import contextlib
import json
import os
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
