"""Serve errata's web chat: ``python app.py [--host HOST] [--port PORT]``.

Builds or loads the vector index (with a progress bar), then serves the chat on http://127.0.0.1:7860
by default. It takes the same flags as ``errata serve`` (``--kb``, ``--index``, ``--model``, ...) and the
same ``ERRATA_*`` environment variables (``ERRATA_HOST``, ``ERRATA_PORT``, ...).
"""

from __future__ import annotations

import sys

from assistant.frontends.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
