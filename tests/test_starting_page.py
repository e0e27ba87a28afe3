"""The page that answers on the chat's port while it loads: real HTTP on a real socket."""

from __future__ import annotations

import socket
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
