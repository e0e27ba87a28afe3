"""Local servers that speak Slack's protocols, for tests: the Web API over HTTP and Socket Mode over a WebSocket.

Both run on 127.0.0.1 in daemon threads and record what the bot sent, so tests assert on real traffic.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import SHUTDOWN_POLL_S

BOT_TOKEN = "xoxb-test-token"
APP_TOKEN = "xapp-test-token"
BOT_USER = "UBOT"
BOT_ID = "BBOT"


class FakeSlack:
    """A local Slack Web API: answers like Slack does and records (method, args) of each call."""

    def __init__(self, socket_url: str | None = None):
        self.socket_url = socket_url  # what apps.connections.open hands out (Socket Mode)
        self.calls: list[tuple[str, dict]] = []
        self.threads: dict[tuple[str, str], list[dict]] = {}
        self.fail_next: dict[str, str] = {}
        self._ts = itertools.count(1)
        self.posted: list[tuple[str, str]] = []  # (channel, ts) of each chat.postMessage, in order
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._serve(urllib.parse.urlsplit(self.path).query)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    args = json.loads(body or "{}")
                    self._serve("", args)
                else:
                    self._serve(body)

            def _serve(self, form: str, args: dict | None = None):
                args = dict(args or {})
                args.update({k: v[-1] for k, v in urllib.parse.parse_qs(form).items()})
                method = urllib.parse.urlsplit(self.path).path.rsplit("/", 1)[-1]
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                reply = fake.respond(method, args, token)
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/"
        threading.Thread(target=self.server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True).start()

    def respond(self, method: str, args: dict, token: str) -> dict:
        with self._lock:
            self.calls.append((method, args))
            if method == "apps.connections.open":
                if token != APP_TOKEN:
                    return {"ok": False, "error": "not_allowed_token_type"}
                return {"ok": True, "url": self.socket_url}
            if token != BOT_TOKEN:
                return {"ok": False, "error": "invalid_auth"}
            if method in self.fail_next:
                return {"ok": False, "error": self.fail_next.pop(method)}
            if method == "auth.test":
                return {
                    "ok": True,
                    "url": "https://errata-test.slack.com/",
                    "team": "errata",
                    "user": "errata",
                    "team_id": "T1",
                    "user_id": BOT_USER,
                    "bot_id": BOT_ID,
                    "is_enterprise_install": False,
                }
            if method.startswith("chat.") and not args.get("channel"):
                return {"ok": False, "error": "channel_not_found"}
            if method == "chat.postMessage":
                ts = f"1700000100.{next(self._ts):06d}"
                self.posted.append((args["channel"], ts))
                return {
                    "ok": True,
                    "channel": args["channel"],
                    "ts": ts,
                    "message": {"text": args.get("text"), "ts": ts},
                }
            if method == "chat.update":
                if (args["channel"], args.get("ts")) not in self.posted:
                    return {"ok": False, "error": "message_not_found"}
                return {"ok": True, "channel": args["channel"], "ts": args["ts"], "text": args.get("text")}
            if method == "chat.postEphemeral":
                return {"ok": True, "message_ts": f"1700000200.{next(self._ts):06d}"}
            if method == "conversations.replies":
                messages = self.threads.get((args.get("channel"), args.get("ts")))
                if messages is None:
                    return {"ok": False, "error": "thread_not_found"}
                return {"ok": True, "messages": messages[: int(args.get("limit", 1000))], "has_more": False}
            return {"ok": False, "error": "unknown_method"}

    def chat_calls(self) -> list[tuple[str, dict]]:
        with self._lock:
            return [(m, a) for m, a in self.calls if m.startswith("chat.")]

    def wait_for(self, method: str, count: int = 1, timeout: float = 60, where=lambda args: True) -> list[dict]:
        """The args of the calls of ``method`` (that match ``where``), waiting for ``count`` of them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [a for m, a in self.chat_calls() if m == method and where(a)]
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise AssertionError(f"no {count} {method} call(s) within {timeout}s; calls: {self.calls}")

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class SocketModeServer:
    """A local Socket Mode endpoint: a WebSocket server (RFC 6455) that says hello, sends Slack's envelopes,
    answers pings and records the acks (``{"envelope_id": ...}``) the client sends back."""

    _GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    def __init__(self):
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"ws://127.0.0.1:{self._listener.getsockname()[1]}/link/?ticket=test"
        self.acks: list[dict] = []
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()
        self._connected = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = conn.recv(4096)
            if not chunk:
                return
            request += chunk
        lines = request.decode().split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        digest = hashlib.sha1((headers["sec-websocket-key"] + self._GUID).encode()).digest()
        conn.sendall(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + base64.b64encode(digest) + b"\r\n\r\n"
        )
        with self._lock:
            self._connections.append(conn)
        hello = {"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A1"}, "debug_info": {}}
        self._send(conn, 0x1, json.dumps(hello).encode())
        self._connected.set()
        try:
            while True:
                opcode, payload = self._read_frame(conn)
                if opcode is None or opcode == 0x8:
                    return
                if opcode == 0x9:
                    self._send(conn, 0xA, payload)
                elif opcode == 0x1:
                    with self._lock:
                        self.acks.append(json.loads(payload))
        except OSError:
            return

    @staticmethod
    def _read_exactly(conn: socket.socket, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def _read_frame(self, conn: socket.socket) -> tuple[int | None, bytes]:
        head = self._read_exactly(conn, 2)
        if head is None:
            return None, b""
        opcode, masked, length = head[0] & 0x0F, head[1] & 0x80, head[1] & 0x7F
        if length == 126:
            length = struct.unpack("!H", self._read_exactly(conn, 2) or b"\0\0")[0]
        elif length == 127:
            length = struct.unpack("!Q", self._read_exactly(conn, 8) or b"\0" * 8)[0]
        mask = self._read_exactly(conn, 4) if masked else b"\0\0\0\0"
        payload = self._read_exactly(conn, length) if length else b""
        if mask is None or payload is None:
            return None, b""
        return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(payload))

    def _send(self, conn: socket.socket, opcode: int, data: bytes) -> None:
        n = len(data)
        if n <= 125:
            header = struct.pack("!BB", 0x80 | opcode, n)
        elif n <= 0xFFFF:
            header = struct.pack("!BBH", 0x80 | opcode, 126, n)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 127, n)
        with self._lock:
            conn.sendall(header + data)

    def push(self, envelope: dict, timeout: float = 30) -> None:
        """Send an envelope to the most recent connection, as Slack does."""
        if not self._connected.wait(timeout):
            raise AssertionError("no Socket Mode client connected")
        with self._lock:
            conn = self._connections[-1]
        self._send(conn, 0x1, json.dumps(envelope).encode())

    def wait_for_ack(self, envelope_id: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for ack in self.acks:
                    if ack.get("envelope_id") == envelope_id:
                        return ack
            time.sleep(0.05)
        raise AssertionError(f"no ack for envelope {envelope_id}; acks: {self.acks}")

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for conn in self._connections:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
