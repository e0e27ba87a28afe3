"""The page that answers on the chat's port while it loads: real HTTP on a real socket."""

from __future__ import annotations

import logging
import socket
import struct
import urllib.error
import urllib.request

import pytest

from assistant.errors import ConfigurationError
from assistant.frontends.starting_page import StartingPage


def free_port() -> int:
    with socket.socket() as probe:  # not tests/web_server.py's: that module imports gradio (seconds)
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> urllib.error.HTTPError:
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(url, timeout=5)
    return caught.value


def test_it_answers_503_with_the_latest_status_and_frees_the_port_when_closed():
    port = free_port()
    with StartingPage("127.0.0.1", port, status="Loading <the> index") as page:
        first = _get(f"http://127.0.0.1:{port}/")
        assert first.code == 503 and first.headers["Retry-After"] == "1"
        body = first.read().decode()
        assert "errata is starting" in body and "Loading &lt;the&gt; index" in body  # escaped, not markup
        page.status = "Starting the chat"
        assert "Starting the chat" in _get(f"http://127.0.0.1:{port}/config").read().decode()  # any path
    # Closed: the port binds at once, as the chat's server binds it (SO_REUSEADDR, as uvicorn and
    # ports.py do: a connection of the page's left in TIME_WAIT is no clash, a listener still open is).
    # Binding without it failed about one run in ten: the page resets its connections, but a client
    # closing at the same moment as the page still leaves a TIME_WAIT on the port.
    with socket.socket() as after:
        after.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        after.bind(("127.0.0.1", port))
        after.listen()
    page.close()  # a second close is harmless


def test_a_taken_port_is_a_configuration_error_naming_the_setting():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ConfigurationError, match="ERRATA_PORT"):
            StartingPage("127.0.0.1", taken.getsockname()[1])


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
def test_an_ipv6_host_is_served_too():
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
            port = probe.getsockname()[1]
    except OSError:
        pytest.skip("IPv6 loopback unavailable")
    with StartingPage("::1", port):
        assert _get(f"http://[::1]:{port}/").code == 503


def _send_then_close(port: int, reset: bool = False) -> None:
    """A browser that asks for the page, takes its first bytes, then goes (a reload, a closed tab)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert client.recv(12).startswith(b"HTTP/1.")  # the page is being written now
        if reset:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _send_then_reset(port: int) -> None:
    _send_then_close(port, reset=True)


def _reset_before_asking(port: int) -> None:
    """A client that connects and resets the connection before sending a request."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.mark.parametrize(
    "leave", [_send_then_close, _send_then_reset, _reset_before_asking], ids=["closed", "reset", "reset-unasked"]
)
def test_a_client_that_goes_early_leaves_no_traceback(leave, capfd, caplog):
    port = free_port()
    # A page far larger than the socket buffers: writing it to a client that has gone fails (broken pipe or reset).
    with StartingPage("127.0.0.1", port, status="x" * 8_000_000):
        for _ in range(3):
            leave(port)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as after:  # still serving
            after.sendall(b"HEAD / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert after.recv(12).startswith(b"HTTP/1.0 503")
    # close() joined the request threads: whatever they had to say is written by now.
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
