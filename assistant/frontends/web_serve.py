"""``python app.py`` / ``errata serve``: answer on the port at once, load, then hand the port to the chat.

Why: the chat needs gradio (seconds to import on 2 cores) and the index (a second warm, tens of seconds on a
first build). The port answers at once with a page saying what errata is doing (starting_page.py); as soon
as the knowledge base is loaded, that page also answers the chat's API (web_early.py), so a warm start
answers a paste within two seconds; gradio is imported then, without what a server never uses
(web_import.py, for the life of the server), and the chat takes the port over once the calls the page took
are answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..settings import Settings
from .starting_page import StartingPage

if TYPE_CHECKING:
    from ..api import Assistant
    from .web_early import EarlyApi

HANDOVER_S = 60.0  # the longest the chat waits for answers the starting page is streaming (an LLM's too)


def serve(settings: Settings) -> None:
    """Build or load the index (with a progress bar), then serve the chat until interrupted."""
    from .web_import import lean_gradio_import

    # Bound before anything heavy is imported, so the port answers (or a port in use is reported) at once
    # (port 0: any port, later).
    page = StartingPage(settings.host, settings.port) if settings.port else None
    # For the whole life of the server: gradio also looks for IPython when it builds and serves the page.
    with lean_gradio_import():
        try:
            assistant = _load(settings)
            early = _answer_early(page, assistant) if page else None
            from . import web

            demo = web.build_app(assistant)
            if early and not early.drain(HANDOVER_S):
                print("errata: a call to the chat's API was not fetched or not finished in time", flush=True)
        finally:
            if page:
                page.close()
        url = web.launch(demo, settings, block=False, quiet=True)
        print(f"errata: serving on {url} (Ctrl+C stops)", flush=True)
        demo.block_thread()


def _answer_early(page: StartingPage, assistant: Assistant) -> EarlyApi:
    """The starting page answers the chat's API from now on (web_early.py)."""
    from .web_early import EarlyApi

    early = EarlyApi(assistant)
    page.api = early
    page.status = "Knowledge base ready (the chat's API answers already); starting the chat…"
    return early


def _load(settings: Settings) -> Assistant:
    """The Assistant serving the chat, its index built first where needed (in a child process)."""
    from ..api import Assistant, configure_serving_threads

    print(f"errata: loading the knowledge base and the index in {settings.index_dir} …", flush=True)
    configure_serving_threads(settings)
    assistant = Assistant(settings, show_progress=True, build_in_child=True)
    print(f"errata: {assistant.build_report.summary()}", flush=True)
    return assistant
