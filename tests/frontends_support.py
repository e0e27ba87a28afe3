"""Helpers shared by the front-end tests: a subprocess environment running this checkout, a closed port."""

from __future__ import annotations

import os
import socket
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The line errata prints between a traceback and its answer.
RULE = "-" * 20 + " errata " + "-" * 20


def errata_env(index_dir: Path | None = None) -> dict[str, str]:
    """This checkout's code (also in subprocesses), the test index, no other ERRATA_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ERRATA_")}
    env["ERRATA_RELEASE_RECORDS"] = "false"  # the test index is the curated records' (see conftest.py)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    if index_dir is not None:
        env["ERRATA_INDEX_DIR"] = str(index_dir)
    return env


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
