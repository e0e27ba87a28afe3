"""The web chat served for real on 127.0.0.1 (a free port), for the web and browser tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from assistant import Assistant
from assistant.frontends.feedback import FeedbackStore
from assistant.frontends.web import build_app, launch


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Served:
    url: str
    feedback: FeedbackStore


@contextmanager
def served(assistant: Assistant, feedback_db: Path) -> Iterator[Served]:
    """Launch the chat in this process, in a background thread, and close it afterwards."""
    feedback = FeedbackStore(feedback_db)
    demo = build_app(assistant, feedback)
    settings = assistant.settings.replace(host="127.0.0.1", port=free_port())
    url = launch(demo, settings, block=False, quiet=True)
    try:
        yield Served(url, feedback)
    finally:
        demo.close()
