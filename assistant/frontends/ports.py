"""Whether a server can listen where it is told to, checked before the knowledge base loads.

Why: loading takes seconds (twenty on a first start); a port already in use was reported only after
that. Binding a socket for a moment answers at once. Another process could still take the port in
between, which the server's own bind then reports as before.
"""

from __future__ import annotations

import socket

from ..errors import ConfigurationError

WEB_SETTINGS = "--port/--host or ERRATA_PORT/ERRATA_HOST"


def cannot_serve(host: str, port: int, exc: OSError, what: str = WEB_SETTINGS) -> ConfigurationError:
    """The one wording of "this address cannot be served on", naming the setting to change."""
    return ConfigurationError(f"cannot serve on {host}:{port} ({exc.strerror or exc}); choose another with {what}")


def check_port_free(host: str, port: int, *, what: str = WEB_SETTINGS) -> None:
    """Raise :class:`ConfigurationError` naming the setting to change when ``host:port`` cannot be bound."""
    if port == 0:
        return  # any free port
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise cannot_serve(host, port, exc, what) from exc
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind: TIME_WAIT is no clash
        try:
            probe.bind(address)
        except OSError as exc:
            raise cannot_serve(host, port, exc, what) from exc
