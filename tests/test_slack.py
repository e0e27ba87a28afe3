"""The Slack bot end to end: the real Bolt app served over HTTP on 127.0.0.1, signed Slack requests, and a
local server that speaks the Slack Web API and records every call the bot makes."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import logging
import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from assistant import Assistant, ConfigurationError, Settings, parse_query
from assistant.answering.answer import Answer, Citation
from assistant.frontends.feedback import FeedbackStore
from assistant.frontends.slack import APOLOGY_TEXT, DRAFTING_TEXT, LOOKING_TEXT, SlackBot, question_text
from assistant.frontends.slack_blocks import (
    BLOCKS_PER_MESSAGE,
    HELPFUL_ACTION,
    NOT_HELPFUL_ACTION,
    SECTION_LIMIT,
    answer_blocks,
    split_messages,
    split_text,
    to_mrkdwn,
)
from assistant.settings import BUNDLED_KB_DIR

from . import SHUTDOWN_POLL_S
from .conftest import read_lines, write_lines
from .slack_server import APP_TOKEN, BOT_ID, BOT_TOKEN, BOT_USER, SocketModeServer

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
INTERRUPTED_ID = "c6aeeba10bb30da8"
NO_DRAFTS = 3600.0  # a stream interval no answer reaches: one chat.update per answer
TRACEBACK_MENTION = (
    f"<@{BOT_USER}> the nightly job died:\n"
    "```Traceback (most recent call last):\n"
    '  File "/srv/job.py", line 12, in &lt;module&gt;\n'
    "    agent.run(task)\n"
    '  File "/usr/lib/python3.11/site-packages/smolagents/agents.py", line 547, in _run_stream\n'
    '    raise AgentError("Agent interrupted.", self.logger)\n'
    "smolagents.utils.AgentError: Agent interrupted.```"
)


@pytest.fixture
def settings(slack, tmp_path, bundled_index_dir) -> Settings:
    env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    return Settings.load(
        env=env,
        index_dir=bundled_index_dir,
        release_records=False,
        slack_api_url=slack.url,
        feedback_db=tmp_path / "fb.db",
    )


class SlackSender:
    """Sends requests to a bot's events URL the way Slack does: signed with the signing secret."""

    def __init__(self, url: str):
        self.url = url
        self._event_ids = itertools.count(1)

    def post(
        self,
        body: str,
        content_type: str,
        *,
        secret: str = SIGNING_SECRET,
        headers: dict | None = None,
        timestamp: str | None = None,
    ):
        timestamp = timestamp or str(int(time.time()))
        digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
        request = urllib.request.Request(
            self.url,
            data=body.encode(),
            method="POST",
            headers={
                "Content-Type": content_type,
                "X-Slack-Request-Timestamp": timestamp,
                "X-Slack-Signature": f"v0={digest}",
                **(headers or {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def event(self, event: dict, *, event_id: str | None = None, **kwargs):
        payload = event_callback(event, event_id or f"Ev{next(self._event_ids):08d}")
        return self.post(json.dumps(payload), "application/json", **kwargs)

    def click(self, payload: dict):
        body = urllib.parse.urlencode({"payload": json.dumps(payload)})
        return self.post(body, "application/x-www-form-urlencoded")


class BotServer(SlackSender):
    """A SlackBot in HTTP mode on a free local port."""

    def __init__(self, bot: SlackBot):
        self.bot = bot
        self.server = bot.http_server("127.0.0.1", 0)
        super().__init__(f"http://127.0.0.1:{self.server.server_address[1]}/slack/events")
        threading.Thread(target=self.server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def bot(assistant, settings):
    server = BotServer(SlackBot(assistant, settings, stream_interval=NO_DRAFTS))
    yield server
    server.close()


def event_callback(event: dict, event_id: str) -> dict:
    """The Events API body Slack sends for ``event``."""
    return {
        "token": "legacy",
        "team_id": "T1",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [{"team_id": "T1", "user_id": BOT_USER, "is_bot": True}],
        "event": event,
    }


def button_click(answer_update: dict, button: int, thread_ts: str, user: str = "U7") -> dict:
    """The block_actions payload Slack sends when ``user`` clicks a button of the answer ``answer_update`` set."""
    actions = [b for b in answer_update["blocks"] if b["type"] == "actions"][0]
    return {
        "type": "block_actions",
        "team": {"id": "T1"},
        "user": {"id": user},
        "api_app_id": "A1",
        "container": {"type": "message", "message_ts": answer_update["ts"], "channel_id": answer_update["channel"]},
        "channel": {"id": answer_update["channel"]},
        "message": {
            "type": "message",
            "ts": answer_update["ts"],
            "thread_ts": thread_ts,
            "text": answer_update["text"],
            "blocks": answer_update["blocks"],
        },
        "actions": [{**actions["elements"][button], "block_id": actions["block_id"], "action_ts": "1700000300.1"}],
        "response_url": "https://hooks.slack.invalid/actions/1",
        "trigger_id": "1.2.3",
    }


def mention(text: str, ts: str = "1700000000.000100", channel: str = "C1", **extra) -> dict:
    return {"type": "app_mention", "user": "U2", "text": text, "ts": ts, "channel": channel, **extra}


def dm(text: str, ts: str = "1700000001.000100", **extra) -> dict:
    return {"type": "message", "channel_type": "im", "channel": "D1", "user": "U2", "text": text, "ts": ts, **extra}


def block_texts(blocks: list[dict]) -> str:
    texts = []
    for block in blocks:
        if "text" in block:
            texts.append(block["text"]["text"])
        texts += [e["text"] for e in block.get("elements", []) if isinstance(e.get("text"), str)]
    return "\n".join(texts)


def test_a_mention_gets_looking_in_its_thread_then_the_answer_with_sources(bot, slack, assistant):
    status, _ = bot.event(mention(TRACEBACK_MENTION))
    assert status == 200

    update = slack.wait_for("chat.update")[0]
    looking = slack.wait_for("chat.postMessage")[0]
    assert looking["channel"] == "C1" and looking["thread_ts"] == "1700000000.000100"
    assert looking["text"] == LOOKING_TEXT
    assert update["channel"] == "C1"
    assert update["ts"].startswith("1700000100.")  # the "looking…" message is the one replaced

    expected = assistant.ask(question_text(TRACEBACK_MENTION, BOT_USER))
    assert expected.citations[0].record_id == INTERRUPTED_ID
    blocks = update["blocks"]
    shown = block_texts(blocks)
    assert "*AgentError: Agent interrupted.*" in shown  # markdown bold became Slack bold
    assert f"<{expected.citations[0].github_url}|huggingface/smolagents · AgentError>" in shown
    assert f"<{expected.citations[0].github_url}|[1]>" in shown  # the citation marker links its source
    assert INTERRUPTED_ID in shown
    assert f"confidence {expected.confidence:.2f}" in shown
    actions = [b for b in blocks if b["type"] == "actions"][0]
    assert [e["action_id"] for e in actions["elements"]] == [HELPFUL_ACTION, NOT_HELPFUL_ACTION]
    assert [m for m, _ in slack.chat_calls()] == ["chat.postMessage", "chat.update"]


def test_no_confident_match_says_the_bar_the_answering_assistant_needs(assistant, embedder, settings, slack):
    unsure = Assistant(assistant.settings, embedder=embedder, confidence_threshold=1.01)  # nothing reaches it
    server = BotServer(SlackBot(unsure, settings, stream_interval=NO_DRAFTS))
    try:
        status, _ = server.event(mention(TRACEBACK_MENTION))
        assert status == 200
        shown = block_texts(slack.wait_for("chat.update")[0]["blocks"])
    finally:
        server.close()
    expected = unsure.ask(question_text(TRACEBACK_MENTION, BOT_USER))
    assert not expected.grounded
    # Not the 0.89 of the settings the bot was given: the bar of the Assistant that answered.
    assert f"no confident match · confidence {expected.confidence:.2f}, below the 1.01 errata needs to answer" in shown


def test_the_answer_grows_in_place_while_it_is_drafted(assistant, settings, slack):
    server = BotServer(SlackBot(assistant, settings, stream_interval=0.0))
    try:
        server.event(mention(f"<@{BOT_USER}> my agent stops with Agent interrupted", ts="1700000000.000700"))
        final = slack.wait_for("chat.update", where=lambda a: DRAFTING_TEXT not in block_texts(a["blocks"]))[0]
    finally:
        server.close()
    updates = slack.wait_for("chat.update")
    drafts, last = updates[:-1], updates[-1]
    assert last is final and drafts, "each drafted piece should have been shown"
    assert {u["ts"] for u in updates} == {slack.posted[0][1]}  # all in place of the "looking…" reply
    shown = [block_texts(d["blocks"]).removesuffix(DRAFTING_TEXT).strip() for d in drafts]
    assert [len(t) for t in shown] == sorted(len(t) for t in shown)
    # Drafts show citations as plain [n]; the final answer links each to its source.
    final_text = re.sub(r"<[^|>]+\|(\[\d+\])>", r"\1", block_texts(final["blocks"]))
    assert shown[0].splitlines()[0] in final_text
    assert any(b["type"] == "actions" for b in final["blocks"])


def test_a_bad_signature_gets_401_and_nothing_is_posted(bot, slack):
    status, _ = bot.event(mention(f"<@{BOT_USER}> Agent interrupted."), secret="not-the-signing-secret")
    assert status == 401
    status, _ = bot.post(json.dumps({"type": "event_callback"}), "application/json", secret="")
    assert status == 401
    stale = str(int(time.time()) - 600)  # a replayed request: right signature, ten minutes old
    status, _ = bot.event(mention(f"<@{BOT_USER}> Agent interrupted."), timestamp=stale)
    assert status == 401
    time.sleep(0.5)
    assert slack.chat_calls() == []


def test_the_request_url_check_is_answered_with_the_challenge(bot, slack):
    body = json.dumps(
        {
            "token": "legacy",
            "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
            "type": "url_verification",
        }
    )
    status, reply = bot.post(body, "application/json")
    assert status == 200 and "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" in reply
    assert slack.chat_calls() == []


def test_a_retried_or_twice_delivered_event_is_answered_once(bot, slack):
    event = mention(f"<@{BOT_USER}> my agent stops with Agent interrupted", client_msg_id="m-1")
    assert bot.event(event, event_id="Ev1")[0] == 200
    retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
    assert bot.event(event, event_id="Ev1", headers=retry)[0] == 200
    assert bot.event(event, event_id="Ev2")[0] == 200  # the same message delivered again as a new event
    slack.wait_for("chat.update")
    time.sleep(1.0)
    assert [m for m, _ in slack.chat_calls()] == ["chat.postMessage", "chat.update"]


def test_a_direct_message_is_answered_in_the_dm(bot, slack):
    assert bot.event(dm("httpx.ConnectTimeout: timed out"))[0] == 200
    update = slack.wait_for("chat.update")[0]
    looking = slack.wait_for("chat.postMessage")[0]
    assert looking["channel"] == "D1" and "thread_ts" not in looking
    assert update["channel"] == "D1"
    assert "ConnectTimeout" in block_texts(update["blocks"])


def test_bot_messages_edits_and_own_posts_are_ignored(bot, slack):
    bot.event(dm("Agent interrupted.", ts="1.1", bot_id="B999", subtype="bot_message"))
    bot.event(dm("Agent interrupted.", ts="1.2", subtype="message_changed"))
    bot.event(dm("Agent interrupted.", ts="1.3", user=BOT_USER))
    bot.event(dm(LOOKING_TEXT, ts="1.4", bot_id=BOT_ID))
    bot.event(dm("KeyError: 'OPENAI_API_KEY'", ts="1.5"))  # a person: answered
    slack.wait_for("chat.update")
    time.sleep(0.5)
    assert [m for m, _ in slack.chat_calls()] == ["chat.postMessage", "chat.update"]


def test_a_channel_message_without_a_mention_is_not_answered(bot, slack):
    bot.event({"type": "message", "channel_type": "channel", "channel": "C1", "user": "U2", "text": "x", "ts": "2.1"})
    time.sleep(0.5)
    assert slack.chat_calls() == []


def test_a_bare_mention_in_a_thread_answers_the_thread_start(bot, slack):
    slack.threads[("C1", "1700000000.000001")] = [
        {"type": "message", "user": "U3", "ts": "1700000000.000001", "text": "```httpx.ConnectTimeout: timed out```"}
    ]
    bot.event(mention(f"<@{BOT_USER}>", ts="1700000000.000900", thread_ts="1700000000.000001"))
    update = slack.wait_for("chat.update")[0]
    assert slack.wait_for("chat.postMessage")[0]["thread_ts"] == "1700000000.000001"
    assert "ConnectTimeout" in block_texts(update["blocks"])


def test_a_feedback_click_is_stored_with_the_question_and_answer(bot, slack, assistant, settings):
    text = f"<@{BOT_USER}> my agent stops with Agent interrupted"
    bot.event(mention(text, ts="1700000000.000300"))
    update = slack.wait_for("chat.update")[0]
    status, _ = bot.click(button_click(update, 0, thread_ts="1700000000.000300"))
    assert status == 200
    thanks = slack.wait_for("chat.postEphemeral")[0]
    assert thanks["user"] == "U7" and thanks["channel"] == "C1"

    rows = list(FeedbackStore(settings.feedback_db).all())
    assert len(rows) == 1
    row = rows[0]
    expected = assistant.ask("my agent stops with Agent interrupted")
    assert (row.helpful, row.source) == (True, "slack")
    assert row.query == "my agent stops with Agent interrupted"
    assert row.answer == expected.text
    assert row.record_ids[0] == INTERRUPTED_ID
    assert row.context == "C1/1700000000.000300"

    # After a restart the bot no longer remembers the exchange; the button and the message still tell.
    restarted = BotServer(SlackBot(assistant, settings))
    try:
        assert restarted.click(button_click(update, 1, thread_ts="1700000000.000300"))[0] == 200
        slack.wait_for("chat.postEphemeral", count=2)
    finally:
        restarted.close()
    rows = list(FeedbackStore(settings.feedback_db).all())
    assert len(rows) == 2 and rows[1].helpful is False
    assert rows[1].record_ids[0] == INTERRUPTED_ID
    assert rows[1].query.endswith("Agent interrupted")
    assert rows[1].context == "C1/1700000000.000300"


@pytest.mark.slow
def test_socket_mode_answers_an_event_once_and_takes_a_click(assistant, settings, slack):
    link = SocketModeServer()
    slack.socket_url = link.url
    bot = SlackBot(assistant, settings.replace(slack_app_token=APP_TOKEN), mode="socket", stream_interval=NO_DRAFTS)
    handler = bot.socket_mode_handler()
    try:
        handler.connect()
        body = event_callback(mention(f"<@{BOT_USER}> httpx.ConnectTimeout: timed out", ts="1700000000.000800"), "EvS1")
        envelope = {"type": "events_api", "accepts_response_payload": False, "payload": body}
        link.push({**envelope, "envelope_id": "env-1", "retry_attempt": 0, "retry_reason": ""})
        link.wait_for_ack("env-1")
        update = slack.wait_for("chat.update")[0]
        assert "ConnectTimeout" in block_texts(update["blocks"])
        link.push({**envelope, "envelope_id": "env-2", "retry_attempt": 1, "retry_reason": "timeout"})
        link.wait_for_ack("env-2")

        click = button_click(update, 0, thread_ts="1700000000.000800")
        link.push({"type": "interactive", "envelope_id": "env-3", "accepts_response_payload": True, "payload": click})
        link.wait_for_ack("env-3")
        slack.wait_for("chat.postEphemeral")
    finally:
        handler.close()
        link.close()
    assert ("apps.connections.open", {}) in slack.calls
    assert [m for m, _ in slack.chat_calls()] == ["chat.postMessage", "chat.update", "chat.postEphemeral"]
    rows = list(FeedbackStore(settings.feedback_db).all())
    assert [(r.helpful, r.context) for r in rows] == [(True, "C1/1700000000.000800")]


def test_a_socket_mode_bot_needs_an_app_token(assistant, settings):
    with pytest.raises(ConfigurationError, match="SLACK_APP_TOKEN"):
        SlackBot(assistant, settings, mode="socket")


def test_an_error_gets_an_apology_in_the_thread_and_the_bot_keeps_running(bot, slack, caplog):
    slack.fail_next["chat.update"] = "msg_too_long"
    with caplog.at_level(logging.ERROR, logger="assistant.frontends.slack"):
        bot.event(mention(f"<@{BOT_USER}> Agent interrupted.", ts="1700000000.000400"))
        updates = slack.wait_for("chat.update", count=2)
    assert updates[1]["text"] == APOLOGY_TEXT and updates[1]["ts"] == updates[0]["ts"]
    assert any("msg_too_long" in r.getMessage() + str(r.exc_info) for r in caplog.records)

    bot.event(mention(f"<@{BOT_USER}> httpx.ConnectTimeout: timed out", ts="1700000000.000500"))
    updates = slack.wait_for("chat.update", count=3)
    assert "ConnectTimeout" in block_texts(updates[2]["blocks"])


def test_a_long_answer_is_split_across_blocks_and_messages_without_loss(
    slack, settings, embedder, tmp_path, bundled_index_dir
):
    # A record whose documentation and trigger are ~95,000 characters each (a field may hold 100,000): the
    # offline answer quotes both whole.
    row = next(
        r for r in read_lines(BUNDLED_KB_DIR / "huggingface__smolagents.jsonl") if r["record"]["id"] == INTERRUPTED_ID
    )
    words = [f"w{i:05d}" for i in range(27_000)]
    halves = words[:13_500], words[13_500:]
    for field, half in zip(("documentation", "triggerScenarios"), halves, strict=True):
        row["record"][field] = "\n\n".join(" ".join(half[i : i + 300]) for i in range(0, len(half), 300))
    kb = tmp_path / "kb"
    kb.mkdir()
    write_lines(kb / "long.jsonl", [row])
    assistant = Assistant(settings, kb=kb, index_dir=tmp_path / "index", embedder=embedder)
    server = BotServer(SlackBot(assistant, settings, stream_interval=NO_DRAFTS))
    try:
        server.event(mention(f"<@{BOT_USER}> AgentError: Agent interrupted.", ts="1700000000.000600"))
        update = slack.wait_for("chat.update")[0]
        slack.wait_for("chat.postMessage", count=2)
        time.sleep(0.5)  # let the remaining parts arrive
        posts = slack.wait_for("chat.postMessage")
    finally:
        server.close()
    messages = [update["blocks"]] + [p["blocks"] for p in posts[1:]]
    assert len(messages) >= 2
    assert all(p["thread_ts"] == "1700000000.000600" for p in posts)
    assert all(len(m) <= BLOCKS_PER_MESSAGE for m in messages)
    sections = [b["text"]["text"] for m in messages for b in m if b["type"] == "section"]
    assert all(len(s) <= SECTION_LIMIT for s in sections)
    shown = " ".join(sections).split()
    assert [w for w in shown if w.startswith("w") and w[1:].isdigit()] == words
    assert messages[-1][-1]["type"] == "actions"  # the feedback buttons close the last message


def test_markdown_becomes_slack_mrkdwn():
    md = (
        "## Fix\n**Bold** and *it* and [the code](https://x.test/a?b=1&c=2) `a<b>`\n- item\n> a **quote** <x>\n"
        "use *args and **kwargs\n```python\nx = a < b\n```"
    )
    assert to_mrkdwn(md).splitlines() == [
        "*Fix*",
        "*Bold* and _it_ and <https://x.test/a?b=1&amp;c=2|the code> `a&lt;b&gt;`",
        "• item",
        ">a *quote* &lt;x&gt;",
        "use *args and **kwargs",
        "```",
        "x = a &lt; b",
        "```",
    ]


def test_split_text_keeps_code_blocks_closed_and_every_line():
    lines = [f"line {i} " + "x" * (i % 90) for i in range(400)]
    text = "intro\n```\n" + "\n".join(lines) + "\n```\nend " + "y" * 5000
    pieces = split_text(text, 1000)
    assert all(len(p) <= 1000 and p.count("```") % 2 == 0 for p in pieces)
    joined = "\n".join(p for p in pieces).replace("```\n", "").replace("\n```", "")
    for line in lines:
        assert line in joined
    assert "".join(pieces).count("y") == 5000


def test_answer_blocks_group_into_messages_of_at_most_50():
    text = "\n\n".join(f"paragraph {i} " + "z" * 2500 for i in range(120))
    answer = Answer(
        text, [Citation(1, "r1", "o/r", "KeyError", "https://github.com/o/r/blob/x/f.py#L1")], [], 0.9, True
    )
    messages = split_messages(answer_blocks(answer, "q"))
    assert [len(m) for m in messages][:-1] == [50, 50] and all(len(m) <= 50 for m in messages)
    sections = [b["text"]["text"] for m in messages for b in m if b["type"] == "section"]
    assert [s.split()[1] for s in sections] == [str(i) for i in range(120)]


def test_a_traceback_pasted_in_a_slack_code_block_parses_as_one():
    query = parse_query(question_text(TRACEBACK_MENTION, BOT_USER))
    assert query.kind == "traceback"
    assert (query.exception_class, query.message) == ("AgentError", "Agent interrupted.")
    assert "smolagents" in query.libraries and query.frames[0].function == "<module>"


def test_question_text_undoes_slack_markup():
    raw = (
        f"<@{BOT_USER}> see <https://ci.test/run/1|the run> by <@U9|ana> in <#C5|ci>:"
        "```File \"a.py\", line 1, in &lt;module&gt;\nKeyError: 'a' &amp; more```"
    )
    assert question_text(raw, BOT_USER) == (
        "see the run by @ana in #ci:\n```\nFile \"a.py\", line 1, in <module>\nKeyError: 'a' & more\n```"
    )


def test_slack_credentials_come_from_slacks_own_variables(tmp_path, assistant):
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "SLACK_SIGNING_SECRET": "s"}
    loaded = Settings.load(env=env)
    assert (loaded.slack_bot_token, loaded.slack_app_token, loaded.slack_signing_secret) == ("xoxb-1", "xapp-1", "s")
    assert "xoxb-1" not in repr(loaded)
    with pytest.raises(ConfigurationError, match="SLACK_BOT_TOKEN"):
        SlackBot(assistant, Settings.load(env={}, feedback_db=tmp_path / "f.db"))
    with pytest.raises(ConfigurationError, match="SLACK_SIGNING_SECRET"):
        SlackBot(assistant, Settings.load(env={"SLACK_BOT_TOKEN": "xoxb-1"}, feedback_db=tmp_path / "f.db"))


def test_a_rejected_bot_token_is_a_configuration_error(slack, settings, assistant):
    with pytest.raises(ConfigurationError, match="SLACK_BOT_TOKEN"):
        SlackBot(assistant, settings.replace(slack_bot_token="xoxb-wrong"))


def test_events_path_is_the_only_route(bot):
    request = urllib.request.Request(bot.url.replace("/slack/events", "/other"), data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=10)
    assert err.value.code == 404


@pytest.mark.slow
def test_errata_slack_serves_http_mode_until_stopped(slack, tmp_path, bundled_index_dir, assistant):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "ERRATA_SLACK_API_URL": slack.url,
        "ERRATA_FEEDBACK_DB": str(tmp_path / "fb.db"),
    }
    env.pop("SLACK_APP_TOKEN", None)
    command = [sys.executable, "-m", "assistant", "slack", "--http", "--port", str(port)]
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as err:  # a file, not a pipe: a chatty child never blocks on a full pipe
        process = subprocess.Popen(
            [*command, "--index", str(bundled_index_dir)], env=env, stdout=subprocess.PIPE, stderr=err, text=True
        )
    try:
        ready, _, _ = select.select([process.stdout], [], [], 180)
        line = process.stdout.readline() if ready else ""
        if f"listening on http://127.0.0.1:{port}/slack/events" not in line:
            process.kill()
            process.wait(timeout=30)
            pytest.fail(f"errata slack did not start: {line!r} {stderr.read_text()[-3000:]}")
        client = SlackSender(f"http://127.0.0.1:{port}/slack/events")
        assert client.event(mention(f"<@{BOT_USER}> httpx.ConnectTimeout: timed out"))[0] == 200
        final = slack.wait_for("chat.update", where=lambda a: DRAFTING_TEXT not in block_texts(a["blocks"]))[0]
        assert "ConnectTimeout" in block_texts(final["blocks"])
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
def test_errata_slack_without_a_token_says_what_to_set(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_") and not k.startswith("ERRATA_SLACK")}
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "slack"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "SLACK_BOT_TOKEN" in result.stderr and "Traceback" not in result.stderr
