"""``python app.py`` / ``errata serve``: answer on the port at once, load, then hand the port to the chat.

Why: the chat needs gradio (~4 s to import on 2 cores) and the index (tens of seconds on a first build).
The port answers within a fraction of a second with a page saying what errata is doing (starting_page.py),
gradio is imported on a thread while the knowledge base loads, and the chat takes the port over when both
are ready.
"""

from __future__ import annotations

import threading

from ..api import Assistant, configure_serving_threads
from ..settings import Settings
from .starting_page import StartingPage


def serve(settings: Settings) -> None:
    """Build or load the index (with a progress bar), then serve the chat until interrupted."""
    # Bound before seconds of loading, so a port in use is reported at once (port 0: any port, later).
    page = StartingPage(settings.host, settings.port) if settings.port else None
    try:
        chat_module = _import_in_background()
        print(f"errata: loading the knowledge base and the index in {settings.index_dir} …", flush=True)
        configure_serving_threads(settings)
        assistant = Assistant(settings, show_progress=True, build_in_child=True)
        print(f"errata: {assistant.build_report.summary()}", flush=True)
        if page:
            page.status = "Knowledge base ready; starting the chat…"
        web = chat_module()
        demo = web.build_app(assistant)
    finally:
        if page:
            page.close()
    url = web.launch(demo, settings, block=False, quiet=True)
    print(f"errata: serving on {url} (Ctrl+C stops)", flush=True)
    demo.block_thread()


def _import_in_background():
    """Starts importing the chat module (gradio) on a thread; the returned call waits for it and returns it
    (an import error is raised there, in the caller's thread)."""
    box: dict[str, object] = {}

    def load() -> None:
        try:
            from . import web

            box["module"] = web
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=load, name="errata-import-gradio", daemon=True)
    thread.start()

    def wait():
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["module"]

    return wait
