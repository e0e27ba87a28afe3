"""The chat's HTTP API answered from the starting page, before gradio has finished loading.

Why: a warm start is the index in about a second and gradio in several more; a paste sent to the chat's API
in between met the starting page's 503. From the moment the knowledge base is loaded, the starting page
answers gradio's own REST protocol for the chat's endpoints (``POST /gradio_api/call/chat`` then
``GET /gradio_api/call/chat/<event_id>``, and ``/ask`` alike) with the same Assistant and the same steps as
the page (``web_steps.py``), in the JSON that gradio sends for them. Anything else (the page, ``/config``,
gradio_client's queue) waits for gradio. When gradio is ready the starting page stops taking new calls and
hands over only once the calls it took are streamed (:meth:`EarlyApi.drain`), so no paste is lost.
"""

from __future__ import annotations

import inspect
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from ..api import Assistant
from ..errors import ErrataError
from .starting_page import Reply
from .web_render import citations_json
from .web_steps import ChatStopped, Step, chat_models, chat_steps, model_for

logger = logging.getLogger(__name__)

PREFIX = "/gradio_api/call/"
CONCURRENCY = 4  # as the page's handlers (web.py)
UNFETCHED_S = 60.0  # an answer nobody came for is dropped after this long
FETCH_GRACE_S = 2.0  # at the handover, how long a call taken may wait for its client to fetch it
UNCHANGED = {"__type__": "update"}  # gradio's JSON for ``gr.update()``
INPUTS = {"chat": 4, "ask": 1}
_END = object()


def _kind(value: object) -> str:
    """What a JSON value is, as an API user would name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    names = {int: "a number", float: "a number", str: "a string", list: "an array", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _error(message: str | None) -> dict[str, Any]:
    """gradio's ``event: error`` data for a ``gr.Error`` (``{"error": null}`` for anything else)."""
    if message is None:
        return {"error": None}
    return {"error": message, "duration": 10, "visible": True, "title": "Error"}


def _message(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message as gradio's Chatbot sends it (text made of a string is dedented, as gradio does)."""
    content = message["content"]
    parts = [{"text": inspect.cleandoc(content), "type": "text"}] if isinstance(content, str) else content
    return {"role": message["role"], "metadata": message.get("metadata"), "content": parts, "options": None}


def _history(value: Any) -> list[dict[str, Any]]:
    """The chat history sent with a paste, as gradio's Chatbot takes it: messages whose content is a list of
    text parts (gradio refuses a plain string too, saying nothing more: :class:`_Refused`)."""
    messages = [] if value is None else value
    text_part = lambda p: isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)  # noqa: E731
    ok = isinstance(messages, list) and all(
        isinstance(m, dict)
        and m.get("role") in ("user", "assistant")
        and isinstance(m.get("content"), list)
        and all(text_part(p) for p in m["content"])
        for m in messages
    )
    if not ok:
        raise _Refused
    parts = lambda m: [{"text": p["text"], "type": "text"} for p in m["content"]]  # noqa: E731
    return [{"role": m["role"], "content": parts(m)} for m in messages]


class _Refused(Exception):
    """Input gradio refuses with ``{"error": null}`` (a wrong number of inputs, a malformed history)."""


def chat_outputs(step: Step) -> list[Any]:
    """A step as gradio sends the page's outputs: textbox, chat, sources, state (never sent), comment box."""
    return [
        UNCHANGED if step.textbox is None else step.textbox,
        [_message(m) for m in step.history],
        {"props": UNCHANGED, "__type__": "update"} if step.sources is None else step.sources,
        None,
        {"visible": False, "__type__": "update"} if step.hide_comment else UNCHANGED,
    ]


class EarlyApi:
    """The chat's ``/chat`` and ``/ask`` calls, answered by ``assistant`` until :meth:`drain`; the starting
    page calls it for every request (:attr:`~.starting_page.StartingPage.api`)."""

    def __init__(self, assistant: Assistant):
        self.assistant = assistant
        self.models = chat_models(assistant.settings)
        self._lock = threading.Condition()
        self._events: dict[str, tuple[float, queue.Queue]] = {}  # answers not yet fetched
        self._streaming = 0
        self._dropped = 0  # calls taken but never fetched
        self._closing = False
        self._slots = threading.BoundedSemaphore(CONCURRENCY)

    def __call__(self, method: str, path: str, body: bytes) -> Reply | None:
        """The reply to a request, or None where the starting page answers (anything but these calls)."""
        if not path.startswith(PREFIX):
            return None
        name, _, event_id = path[len(PREFIX) :].partition("?")[0].partition("/")
        if name not in INPUTS:
            return None
        if method == "POST" and not event_id:
            return self._submit(name, body)
        if method == "GET" and event_id and "/" not in event_id:
            return self._stream(event_id)
        return None

    def drain(self, timeout: float) -> bool:
        """Takes no new call, and waits (up to ``timeout`` seconds) until every call taken is streamed to its
        client; a call not fetched within :data:`FETCH_GRACE_S` of being taken is dropped (a client fetches at
        once: one that does not cannot hold the chat up). True when every call taken was streamed."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closing = True
            while True:
                now = time.monotonic()
                late = [key for key, (made, _) in self._events.items() if now - made > FETCH_GRACE_S]
                for key in late:
                    del self._events[key]
                    self._dropped += 1
                if not (self._events or self._streaming):
                    return not self._dropped
                if now >= deadline:
                    return False
                self._lock.wait(min(deadline - now, 0.1))

    # --- the two requests of gradio's REST protocol ---

    def _submit(self, name: str, body: bytes) -> Reply | None:
        try:
            data = json.loads(body or b"null")["data"]
        except (ValueError, TypeError, KeyError):
            detail = [{"type": "missing", "loc": ["body", "data"], "msg": "Field required"}]
            return _json(422, {"detail": detail})
        if not isinstance(data, list):
            return _json(422, {"detail": [{"type": "list_type", "loc": ["body", "data"], "msg": "a JSON array"}]})
        events: queue.Queue = queue.Queue()
        event_id = uuid.uuid4().hex
        with self._lock:
            if self._closing:
                return None  # the chat takes the port in a moment: the starting page says so (503, Retry-After)
            now = time.monotonic()
            for stale in [key for key, (made, _) in self._events.items() if now - made > UNFETCHED_S]:
                del self._events[stale]
            self._events[event_id] = (now, events)
        worker = threading.Thread(target=self._run, args=(name, data, events), name="errata-early-call", daemon=True)
        worker.start()
        return _json(200, {"event_id": event_id})

    def _stream(self, event_id: str) -> Reply:
        with self._lock:
            taken = self._events.pop(event_id, None)
        if taken is None:
            return Reply(200, "text/event-stream; charset=utf-8", iter([_sse("error", "404: Not Found")]))
        return Reply(200, "text/event-stream; charset=utf-8", self._events_of(taken[1]))

    def _events_of(self, events: queue.Queue) -> Iterator[bytes]:
        """The call's events as they come. Counted from its first chunk on; before that, the request's thread
        holds the handover up on its own (``StartingPage.close`` waits for every request it is answering)."""
        with self._lock:
            self._streaming += 1
        try:
            while (item := events.get()) is not _END:
                yield _sse(*item)
        finally:
            with self._lock:
                self._streaming -= 1
                self._lock.notify_all()

    # --- the answers ---

    def _run(self, name: str, data: list[Any], events: queue.Queue) -> None:
        with self._slots:
            try:
                if len(data) != INPUTS[name]:
                    raise _Refused
                last = None
                for last in self._chat(*data) if name == "chat" else self._ask(*data):
                    if name == "chat":
                        events.put(("generating", last))
                events.put(("complete", last))
            except ChatStopped as exc:
                events.put(("error", _error(str(exc))))
            except _Refused:
                events.put(("error", _error(None)))
            except Exception:  # as gradio: logged here, the client told nothing more
                logger.exception("the early /%s call failed", name)
                events.put(("error", _error(None)))
            finally:
                events.put(_END)

    def _chat(self, text: Any, history: Any, k: Any, model: Any) -> Iterator[list[Any]]:
        if not isinstance(text, str):
            raise ChatStopped(f"/chat takes the paste as a JSON string, not {_kind(text)}")
        messages = _history(history)
        if not isinstance(k, (int, float)) or isinstance(k, bool):
            raise ChatStopped(f"/chat takes the number of sources as a JSON number, not {_kind(k)}")
        if model is not None and model not in self.models:
            raise ChatStopped(f"Value: {model} is not in the list of choices: {self.models}")  # gradio's words
        chosen = model_for(model, self.models)
        assistant = self.assistant
        stream = lambda: assistant.ask_stream(text, int(k) if k else None, model=chosen)  # noqa: E731
        for step in chat_steps(stream, assistant.settings.confidence_threshold, text, messages):
            yield chat_outputs(step)

    def _ask(self, text: Any) -> Iterator[list[Any]]:
        if not isinstance(text, str):
            raise ChatStopped(f"/ask takes the paste as a JSON string, not {_kind(text)}")
        try:
            answer = self.assistant.ask(text)
        except ErrataError as exc:
            raise ChatStopped(str(exc)) from exc
        yield [[answer.text, citations_json(answer)]]  # gr.api's one output: the pair


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _json(status: int, payload: Any) -> Reply:
    return Reply(status, "application/json", iter([json.dumps(payload).encode()]))
