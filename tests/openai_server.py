"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol, for tests.

It answers ``POST /v1/chat/completions`` (and ``/chat/completions``) as OpenAI does: a JSON
completion, or with ``"stream": true`` server-sent events, one ``data: {chunk}`` per piece and a
final ``data: [DONE]``. Tests script the reply, an HTTP error status, a delay before answering, a gate
that holds the stream after its first piece, or a pause between pieces (a trickle); every request body
is kept for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import SHUTDOWN_POLL_S

Reply = str | Sequence[str] | Callable[[dict[str, Any]], str | Sequence[str]]


class OpenAIServer:
    """Use as a context manager; ``base_url`` goes into ``api_base``."""

    def __init__(
        self,
        reply: Reply = "",
        *,
        status: int = 200,
        error_body: str | None = None,
        delay: float = 0.0,
        gate: threading.Event | None = None,
        piece_delay: float = 0.0,
    ):
        self.reply = reply
        self.status = status
        self.error_body = error_body
        self.delay = delay
        self.gate = gate
        self.piece_delay = piece_delay  # seconds between streamed pieces: a reply that trickles in
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        if self.gate is not None:
            self.gate.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def pieces(self, body: dict[str, Any]) -> list[str]:
        reply = self.reply(body) if callable(self.reply) else self.reply
        return [reply] if isinstance(reply, str) else list(reply)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if server.delay:
                    server._stop.wait(server.delay)
                if server.status != 200:
                    message = server.error_body or "The server had an error while processing your request."
                    self._json(server.status, {"error": {"message": message, "type": "server_error"}})
                    return
                pieces = server.pieces(body)
                if body.get("stream"):
                    self._stream(body, pieces)
                else:
                    self._json(200, _completion(body, "".join(pieces)))

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], pieces: list[str]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()  # HTTP/1.0: the stream ends when the connection closes
                created = int(time.time())
                for i, piece in enumerate(pieces):
                    delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
                    self._event(_chunk(body, created, delta, None))
                    if i == 0 and server.gate is not None:
                        server.gate.wait(timeout=30)
                    if server.piece_delay and server._stop.wait(server.piece_delay):
                        return
                self._event(_chunk(body, created, {}, "stop"))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, payload: dict[str, Any]) -> None:
                self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
                self.wfile.flush()

        return Handler


def _chunk(body: dict[str, Any], created: int, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": created,
        "model": body.get("model", "test-model"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "test-model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def use_dummy_key(monkeypatch, key: str) -> None:
    """litellm reads the provider's usual variable; errata never sees it as a setting. No base URL from the
    environment may send the requests anywhere but the test server."""
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)


def llm_assistant(assistant, server: OpenAIServer, model: str, **settings):
    """The shared Assistant's records and index, drafting with ``model`` on the test server (no retries
    unless asked)."""
    from assistant import Assistant

    changed = assistant.settings.replace(**{"model": model, "api_base": server.base_url, "llm_retries": 0, **settings})
    return Assistant(changed, embedder=assistant.embedder)
