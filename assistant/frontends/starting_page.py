"""A page that answers on the chat's port while the chat itself loads.

Why: importing gradio alone takes ~4 s on a 2-core machine, and a first build of the index tens of
seconds. A browser opened at once would meet "connection refused"; this page answers at once instead
(HTTP 503 with ``Retry-After``, so no client mistakes it for the chat), says what errata is doing, and
reloads itself until the chat takes the port over. From the moment the knowledge base is loaded it also
answers the chat's API (:attr:`StartingPage.api`, ``web_early.py``), so a paste sent then is not refused, and
its page is a plain chat on that API (``early_chat.py``) until gradio's takes over.
"""

from __future__ import annotations

import html
import socket
import struct
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .early_chat import EARLY_CHAT_PAGE
from .ports import cannot_serve

HANDLER_TIMEOUT = 5.0  # seconds a request may take to arrive
MAX_BODY = 16 * 1024 * 1024  # bytes of a request to the API (a paste is cut far below this)
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="1">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>errata is starting</title>
<style>body{{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}}
</style></head><body><h1>errata is starting…</h1><p>{status}</p>
<p>This page reloads itself; the chat appears here when it is ready.</p></body></html>
"""


@dataclass(frozen=True)
class Reply:
    """An answer of :attr:`StartingPage.api`: its status, type and body (written chunk by chunk, as made)."""

    status: int
    content_type: str
    chunks: Iterable[bytes]


# (method, path, body) -> the reply, or None where the starting page answers.
Api = Callable[[str, str, bytes], "Reply | None"]


class StartingPage:
    """Serves :data:`PAGE` on ``host:port`` from a daemon thread until :meth:`close`.

    ``status`` (what errata is doing now) may be changed at any time; each reload shows the latest. ``api``,
    once set, is asked first about every GET and POST; what it does not answer gets the page.
    """

    def __init__(self, host: str, port: int, status: str = "Loading the knowledge base…"):
        self.status = status
        self.api: Api | None = None
        page = self

        class Handler(BaseHTTPRequestHandler):
            timeout = HANDLER_TIMEOUT  # a client that connects and sends nothing cannot hold close() up
            answered_api = False

            def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
                if not self._api("GET", b""):
                    self._page()

            def do_HEAD(self) -> None:  # noqa: N802
                self._page()

            def do_POST(self) -> None:  # noqa: N802
                length = self.headers.get("Content-Length") or "0"
                if not length.isdigit() or int(length) > MAX_BODY:
                    self.send_error(413 if length.isdigit() else 411)
                    return
                if not self._api("POST", self.rfile.read(int(length))):
                    self._page()

            def _api(self, method: str, body: bytes) -> bool:
                reply = page.api(method, self.path, body) if page.api else None
                if reply is None:
                    return False
                self.answered_api = True  # closed as usual in finish(): a reset could cut the reply short
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Cache-Control", "no-store")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in reply.chunks:  # an answer streams as it is drafted
                    self.wfile.write(chunk)
                    self.wfile.flush()
                return True

            def _page(self) -> None:
                # Once the chat's API answers, the page itself offers it (early_chat.py); other paths still
                # say the chat is starting.
                if page.api is not None and self.path.split("?", 1)[0] == "/":
                    body = EARLY_CHAT_PAGE.encode()
                else:
                    body = PAGE.format(status=html.escape(page.status)).encode()
                self.send_response(503)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Retry-After", "1")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def finish(self) -> None:
                super().finish()
                if self.answered_api:
                    return
                # Reset rather than linger: no TIME_WAIT left on the port the chat binds next.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

            def log_message(self, format: str, *args) -> None:  # noqa: A002 - the signature http.server calls
                pass  # the console shows errata's own progress, not a line per reload

        try:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]  # "::" is IPv6
            server_class = type("StartingServer", (_QuietServer,), {"address_family": family})
            self._server = server_class((host, port), Handler)
        except OSError as exc:
            raise cannot_serve(host, port, exc) from exc
        # Request threads are joined by server_close(): a response still being written holds the port.
        self._server.daemon_threads = False
        self._thread = threading.Thread(target=self._server.serve_forever, name="errata-starting-page", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stops answering and frees the port (idempotent)."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> StartingPage:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class _QuietServer(ThreadingHTTPServer):
    """A client that goes before its page is sent (a reload, a closed tab) is no error to print."""

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # broken pipe, reset, aborted
            return
        super().handle_error(request, client_address)
