"""The Slack bot: mentions and direct messages answered in threads, over slack-bolt.

A thin front end. It turns a Slack message into text for :meth:`Assistant.ask`, posts a "looking…"
reply at once and replaces it with the answer as Block Kit (see :mod:`assistant.mrkdwn`). Feedback
buttons write to the same :class:`FeedbackStore` as the web chat. Runs in Socket Mode (no public URL
needed) or HTTP mode (Slack POSTs signed requests to ``/slack/events``).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from slack_bolt import App, BoltContext
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_bolt.error import BoltError
from slack_sdk import WebClient

from ..answering.answer import Answer
from ..errors import ConfigurationError, ErrataError
from ..settings import Settings
from .feedback import FeedbackStore
from .ports import check_port_free
from .slack_blocks import (
    BLOCKS_PER_MESSAGE,
    FEEDBACK_ACTION_PREFIX,
    HELPFUL_ACTION,
    answer_blocks,
    fallback_text,
    parse_feedback_value,
    split_messages,
    split_text,
    to_mrkdwn,
)
from .slack_guard import guarded

if TYPE_CHECKING:
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    from ..api import Assistant

logger = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
LOOKING_TEXT = "Looking through the error records…"
DRAFTING_TEXT = "_drafting…_"
# While an LLM drafts, the reply shows the text so far at most this often (chat.update is rate-limited).
STREAM_INTERVAL = 1.5
APOLOGY_TEXT = "Sorry, something went wrong while answering this. The details are in the bot's log; please try again."
# Message subtypes that are still a person asking something; edits, deletions, joins... are not.
_ANSWERED_SUBTYPES = {None, "file_share", "thread_broadcast"}

_USER_RE = re.compile(r"<@(?P<id>[UW][A-Z0-9]+)(?:\|(?P<name>[^>]*))?>")
_CHANNEL_RE = re.compile(r"<#(?P<id>C[A-Z0-9]+)(?:\|(?P<name>[^>]*))?>")
_SPECIAL_RE = re.compile(r"<!(?P<what>[^>|]+)(?:\|(?P<label>[^>]*))?>")
_LINK_RE = re.compile(r"<(?P<url>[a-z][a-z0-9+.\-]*:[^>|]*)(?:\|(?P<label>[^>]*))?>")


def question_text(text: str, bot_user_id: str | None = None) -> str:
    """What a person asked, as plain text: mentions of the bot removed, Slack markup undone, fences on own lines.

    Slack escapes ``&``, ``<`` and ``>`` and wraps links and mentions in ``<...>``; a traceback pasted in a
    code block arrives as ```` ```Traceback ...``` ````. The query parser wants the text as printed.
    """

    def user(match: re.Match[str]) -> str:
        if match.group("id") == bot_user_id:
            return ""
        return "@" + (match.group("name") or match.group("id"))

    text = _USER_RE.sub(user, text)
    text = _CHANNEL_RE.sub(lambda m: "#" + (m.group("name") or m.group("id")), text)
    text = _SPECIAL_RE.sub(lambda m: m.group("label") or "", text)
    text = _LINK_RE.sub(lambda m: m.group("label") or m.group("url"), text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    text = re.sub(r"[ \t]*```[ \t]*", "\n```\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


class _Seen:
    """Keys of events already taken, so a retried or twice-delivered message is answered once."""

    def __init__(self, capacity: int = 10_000):
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def first(self, keys: Iterable[str]) -> bool:
        """True when none of ``keys`` was seen before; records them all either way."""
        keys = [k for k in keys if k]
        with self._lock:
            new = not any(k in self._keys for k in keys)
            for k in keys:
                self._keys[k] = None
                self._keys.move_to_end(k)
            while len(self._keys) > self._capacity:
                self._keys.popitem(last=False)
            return new


@dataclass(frozen=True)
class Exchange:
    """A question and the answer posted for it, kept so a feedback click can be stored with both."""

    query: str
    answer: str
    record_ids: tuple[str, ...]
    context: str


class _Exchanges:
    """The most recent exchanges by (channel, message ts) of the message holding the feedback buttons."""

    def __init__(self, capacity: int = 2_000):
        self._items: OrderedDict[tuple[str, str], Exchange] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def put(self, key: tuple[str, str], exchange: Exchange) -> None:
        with self._lock:
            self._items[key] = exchange
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)

    def get(self, key: tuple[str, str]) -> Exchange | None:
        with self._lock:
            return self._items.get(key)


def check_credentials(settings: Settings, mode: str) -> None:
    """Fail early, naming the variable to set, when ``mode`` lacks a token or secret it needs."""
    if mode not in {"http", "socket"}:
        raise ConfigurationError(f"unknown Slack mode {mode!r}; use 'http' or 'socket'")
    if not settings.slack_bot_token:
        raise ConfigurationError(
            "set SLACK_BOT_TOKEN to the app's bot token (xoxb-..., Slack app > OAuth & Permissions)"
        )
    if mode == "http" and not settings.slack_signing_secret:
        raise ConfigurationError(
            "set SLACK_SIGNING_SECRET (Slack app > Basic Information > App Credentials) for HTTP mode,"
            " or SLACK_APP_TOKEN for Socket Mode"
        )
    if mode == "socket" and not settings.slack_app_token:
        raise ConfigurationError(
            "set SLACK_APP_TOKEN to an app-level token (xapp-..., with connections:write) for Socket Mode"
        )


class SlackBot:
    """The Bolt app answering Slack messages with an :class:`Assistant`.

    ``mode`` is ``"http"`` (requests are verified with ``SLACK_SIGNING_SECRET``) or ``"socket"``. Building
    it calls Slack's ``auth.test`` once, at ``settings.slack_api_url``, to check the bot token.
    """

    def __init__(
        self,
        assistant: Assistant,
        settings: Settings | None = None,
        *,
        mode: str = "http",
        feedback: FeedbackStore | None = None,
        stream_interval: float = STREAM_INTERVAL,
    ):
        settings = settings or assistant.settings
        check_credentials(settings, mode)
        self.assistant = assistant
        self.settings = settings
        self.mode = mode
        self.feedback = feedback or FeedbackStore(settings.feedback_db)
        self.stream_interval = stream_interval
        self._seen = _Seen()
        self._exchanges = _Exchanges()
        client = WebClient(token=settings.slack_bot_token, base_url=_api_url(settings.slack_api_url))
        try:
            self.app = App(
                name="errata",
                signing_secret=settings.slack_signing_secret or "",
                client=client,  # carries the bot token and the API base URL
                request_verification_enabled=mode == "http",
                logger=logging.getLogger(f"{__name__}.bolt"),
            )
        except BoltError as exc:
            raise ConfigurationError(f"Slack did not accept the bot token: {exc}; check SLACK_BOT_TOKEN") from exc
        except OSError as exc:
            raise ConfigurationError(
                f"cannot reach the Slack Web API at {settings.slack_api_url}: {exc};"
                " check the network or ERRATA_SLACK_API_URL"
            ) from exc
        self.app.event("app_mention")(self._on_mention)
        self.app.event("message")(self._on_message)
        self.app.action(re.compile(f"^{FEEDBACK_ACTION_PREFIX}"))(self._on_feedback)

    # Events -----------------------------------------------------------------------------------

    def _on_mention(self, event: dict, body: dict, client: WebClient, context: BoltContext) -> None:
        self._take(event, body, client, context, in_thread=True)

    def _on_message(self, event: dict, body: dict, client: WebClient, context: BoltContext) -> None:
        # In channels the bot answers only when mentioned (the app_mention event); in DMs, every message.
        if event.get("channel_type") == "im":
            self._take(event, body, client, context, in_thread=False)

    def _take(self, event: dict, body: dict, client: WebClient, context: BoltContext, *, in_thread: bool) -> None:
        """Answer ``event`` unless it is a bot's, an edit, or a message already answered."""
        if event.get("bot_id") or event.get("subtype") not in _ANSWERED_SUBTYPES:
            return
        if context.bot_user_id and event.get("user") == context.bot_user_id:
            return
        channel, ts, text = event.get("channel"), event.get("ts"), event.get("text") or ""
        if not channel or not ts or not isinstance(text, str):  # Slack's text is a string: others are skipped
            logger.warning("skipping event %s: no channel, ts or text to answer", body.get("event_id"))
            return
        keys = [f"event:{body.get('event_id') or ''}", f"message:{channel}:{ts}"]
        if event.get("client_msg_id"):
            keys.append(f"client:{event['client_msg_id']}")
        if not self._seen.first(keys):
            logger.info("skipping event %s: already answered (a retry or second delivery)", body.get("event_id"))
            return
        thread_ts = event.get("thread_ts") or (ts if in_thread else None)
        text = question_text(text, context.bot_user_id)
        if not text and event.get("thread_ts") and event["thread_ts"] != ts:
            # "@errata ?" under a pasted traceback: answer the thread's first message.
            text = self._thread_start(client, channel, event["thread_ts"], context.bot_user_id)
        self.answer(client, channel, thread_ts, text)

    def _thread_start(self, client: WebClient, channel: str, thread_ts: str, bot_user_id: str | None) -> str:
        try:
            messages = client.conversations_replies(channel=channel, ts=thread_ts, limit=1).get("messages") or []
        except Exception:
            logger.warning("could not read the start of thread %s in %s", thread_ts, channel, exc_info=True)
            return ""
        return question_text(messages[0].get("text") or "", bot_user_id) if messages else ""

    def answer(self, client: WebClient, channel: str, thread_ts: str | None, text: str) -> None:
        """Post "looking…", then replace it with the answer (more messages when it is long)."""
        placeholder: str | None = None
        try:
            placeholder = client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=LOOKING_TEXT)["ts"]
            answer = self._draft(client, channel, placeholder, text)
            threshold = self.assistant.settings.confidence_threshold
            messages = split_messages(answer_blocks(answer, text, threshold))
            exchange = Exchange(
                query=text,
                answer=answer.text,
                record_ids=tuple(c.record_id for c in answer.citations),
                context=f"{channel}/{thread_ts or placeholder}",
            )
            # The buttons sit on the last message; the exchange is kept under it before it is shown, so a
            # click that comes at once finds it (else the click reads the answer back from the message).
            for i, blocks in enumerate(messages):
                last = i == len(messages) - 1
                if i == 0:
                    if last:
                        self._exchanges.put((channel, placeholder), exchange)
                    client.chat_update(channel=channel, ts=placeholder, text=fallback_text(blocks), blocks=blocks)
                else:
                    reply = client.chat_postMessage(
                        channel=channel, thread_ts=thread_ts, text=fallback_text(blocks), blocks=blocks
                    )
                    if last:
                        self._exchanges.put((channel, reply["ts"]), exchange)
        except Exception:
            logger.exception("answering a Slack message in %s (thread %s) failed", channel, thread_ts)
            self._apologize(client, channel, thread_ts, placeholder)

    def _draft(self, client: WebClient, channel: str, placeholder: str, text: str) -> Answer:
        """The answer from :meth:`Assistant.ask_stream`, showing the text drafted so far as it grows."""
        drafted: list[str] = []
        shown = time.monotonic()
        for piece in self.assistant.ask_stream(text):
            if isinstance(piece, Answer):
                return piece
            drafted.append(piece)
            if time.monotonic() - shown >= self.stream_interval:
                self._show_draft(client, channel, placeholder, "".join(drafted))
                shown = time.monotonic()
        raise ErrataError("the answer stream ended without an Answer; please report this")

    def _show_draft(self, client: WebClient, channel: str, placeholder: str, drafted: str) -> None:
        sections = split_text(to_mrkdwn(drafted))[: BLOCKS_PER_MESSAGE - 1]
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": t}} for t in sections]
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": DRAFTING_TEXT}]})
        try:
            client.chat_update(channel=channel, ts=placeholder, text=fallback_text(blocks), blocks=blocks)
        except Exception:  # a skipped progress update is harmless; the final answer follows
            logger.warning("could not show the draft so far in %s", channel, exc_info=True)

    def _apologize(self, client: WebClient, channel: str, thread_ts: str | None, placeholder: str | None) -> None:
        try:
            if placeholder:
                client.chat_update(channel=channel, ts=placeholder, text=APOLOGY_TEXT, blocks=[])
                return
        except Exception:
            logger.warning("could not replace the placeholder with an apology", exc_info=True)
        try:
            client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=APOLOGY_TEXT)
        except Exception:
            logger.warning("could not post an apology in %s", channel, exc_info=True)

    # Feedback ---------------------------------------------------------------------------------

    def _on_feedback(self, ack: Any, body: dict, action: dict, client: WebClient) -> None:
        ack()
        helpful = action.get("action_id") == HELPFUL_ACTION
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        message = body.get("message") or {}
        ts = message.get("ts") or (body.get("container") or {}).get("message_ts")
        user = (body.get("user") or {}).get("id")
        exchange = self._exchanges.get((channel, ts))
        if exchange is None:  # answered before a restart: take what the button and the message hold
            value = action.get("value")
            record_ids, query = parse_feedback_value(value if isinstance(value, str) else "")  # "": refused below
            exchange = Exchange(
                query, message.get("text") or "", tuple(record_ids), f"{channel}/{message.get('thread_ts') or ts}"
            )
        try:
            self.feedback.add(
                query=exchange.query,
                answer=exchange.answer,
                record_ids=list(exchange.record_ids),
                helpful=helpful,
                comment="",
                source="slack",
                context=exchange.context,
            )
            thanks = (
                "Thanks, noted as helpful." if helpful else "Thanks, noted as not helpful; it helps improve errata."
            )
        except Exception:  # a damaged or locked feedback file (FeedbackError): say so, keep answering
            logger.exception("storing Slack feedback from %s failed", user)
            thanks = "Sorry, your feedback could not be saved right now; errata keeps answering."
        if user and channel:
            try:
                client.chat_postEphemeral(channel=channel, user=user, thread_ts=message.get("thread_ts"), text=thanks)
            except Exception:
                logger.warning("could not thank %s for feedback", user, exc_info=True)

    # Serving ----------------------------------------------------------------------------------

    def http_server(self, host: str | None = None, port: int | None = None) -> WSGIServer:
        """A threaded HTTP server for ``/slack/events`` (not started: call ``serve_forever``)."""
        handler = guarded(SlackRequestHandler(self.app, path=EVENTS_PATH))  # 400/401, not 500 (slack_guard.py)
        host = self.settings.host if host is None else host
        port = self.settings.slack_port if port is None else port
        try:
            return make_server(host, port, handler, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot listen on {host}:{port}: {exc}; choose another ERRATA_SLACK_PORT"
            ) from exc

    def socket_mode_handler(self) -> SocketModeHandler:
        """Bolt's Socket Mode handler for this bot (``connect()`` / ``close()``, or ``start()`` to block)."""
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        return SocketModeHandler(self.app, self.settings.slack_app_token)

    def start_socket_mode(self) -> None:
        """Connect to Slack over a WebSocket and answer until interrupted."""
        self.socket_mode_handler().start()


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog, 5, reset connections of a burst of 50 events


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


def _api_url(url: str) -> str:
    return url if url.endswith("/") else url + "/"


def run(settings: Settings, mode: str | None = None) -> None:
    """``errata slack``: load the assistant, then serve Slack until interrupted.

    Without ``mode``, Socket Mode is used when ``SLACK_APP_TOKEN`` is set, else HTTP mode.
    """
    from ..api import Assistant, configure_serving_threads

    mode = mode or ("socket" if settings.slack_app_token else "http")
    check_credentials(settings, mode)
    if mode == "http":  # before seconds of loading (ports.py)
        check_port_free(settings.host, settings.slack_port, what="--port or ERRATA_SLACK_PORT")
    configure_serving_threads(settings)
    assistant = Assistant(settings, show_progress=sys.stderr.isatty(), build_in_child=True)
    bot = SlackBot(assistant, settings, mode=mode)
    if mode == "socket":
        print("errata Slack bot: connecting to Slack in Socket Mode", flush=True)
        bot.start_socket_mode()
        return
    server = bot.http_server()
    host, port = server.server_address[:2]
    print(f"errata Slack bot listening on http://{host}:{port}{EVENTS_PATH}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
