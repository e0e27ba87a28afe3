"""``errata mcp``: errata as an MCP server over stdio, for coding agents.

Three tools, each a thin call into :class:`assistant.Assistant`: ``explain_error`` (the answer
markdown, its citations and confidence), ``search_errors`` (the nearest records) and ``get_record``
(one record in full). A pasted traceback is judged as the other front ends judge a live one: a record
about a library that appears in none of its frames' paths is no match (see ``local_context``).

The Assistant is loaded once, in the background as soon as the server starts, so the MCP handshake is
not held up by the model and the first tool call waits only for what is left of the load. Logs go to
stderr: stdout carries the protocol.
"""

from __future__ import annotations

import argparse
import threading
from typing import TYPE_CHECKING, Any

# pydantic, which the SDK builds the tools' schemas with, needs this TypedDict before Python 3.12.
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from assistant import Assistant, Settings


# Citations and hits in errata's one JSON shape (``Citation.to_dict``, ``Hit.to_dict``: the schema's names).
class CitationOut(TypedDict):
    number: int
    recordId: str
    repo: str
    errorClass: str
    githubUrl: str | None
    solution: str | None


class HitOut(TypedDict):
    recordId: str
    repo: str
    errorClass: str
    message: str
    score: float
    why: list[str]
    githubUrl: str | None


class Explained(TypedDict):
    text: str  # markdown, citing [n]
    confidence: float
    confident: bool  # confidence reached the threshold; else the text says no record matches
    citations: list[CitationOut]
    installed: str | None  # "httpx 0.28.1": the answering library, as installed where this server runs


class Loader:
    """Makes the Assistant once, in a thread started by :meth:`start`; :meth:`get` waits for it."""

    def __init__(self, settings: Settings | None = None):
        self._settings = settings
        self._done = threading.Event()
        self._assistant: Assistant | None = None
        self._error: BaseException | None = None
        self._started = False
        self._lock = threading.Lock()
        self._ids: dict[str, int] | None = None

    def start(self) -> None:
        with self._lock:
            if not self._started:
                self._started = True
                threading.Thread(target=self._load, name="errata-load", daemon=True).start()

    def _load(self) -> None:
        try:
            from assistant import Assistant, Settings
            from assistant.api import configure_serving_threads

            settings = self._settings or Settings.load()
            self._assistant = Assistant(settings)
            configure_serving_threads(settings)  # a serving process, as the web chat and the Slack bot are
        except BaseException as exc:  # noqa: BLE001 - reported by every tool call instead
            self._error = exc
        finally:
            self._done.set()

    def get(self) -> Assistant:
        self.start()
        self._done.wait()
        if self._assistant is None:
            raise RuntimeError(f"errata could not load its knowledge base: {self._error}")
        return self._assistant

    def position(self, record_id: str) -> int | None:
        """Where a record id is in the knowledge base (the id map is built on the first look-up)."""
        assistant = self.get()
        with self._lock:
            if self._ids is None:
                records = assistant.records
                ids = records.ids() if hasattr(records, "ids") else [r.id for r in records]
                self._ids = {record_id: i for i, record_id in enumerate(ids)}
            return self._ids.get(record_id)


def build_server(loader: Loader):
    """The MCP server with errata's three tools, over ``loader``'s Assistant."""
    try:
        from mcp.server.mcpserver import MCPServer as Server
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # the mcp 1.x SDK
        from mcp.server.fastmcp import FastMCP as Server
        from mcp.server.fastmcp.exceptions import ToolError

    server = Server(
        "errata",
        instructions=(
            "errata explains Python errors from a knowledge base of real error records raised by public "
            "libraries. Pass a whole traceback when you have one. When confident is false, no record matches: "
            "do not present the nearest records as the cause."
        ),
    )

    def loaded() -> Assistant:
        try:
            return loader.get()
        except RuntimeError as exc:  # the client is told why, not only that the tool failed
            raise ToolError(str(exc)) from exc

    @server.tool()
    def explain_error(text: str) -> Explained:
        """Explain a Python traceback, error line or question about an error, citing knowledge-base records.

        Returns the answer as markdown citing [n], the cited records, the confidence and whether it is
        confident enough to trust (when not, the text says that no record matches).
        """
        from .explain import explain_text
        from .local_context import from_pasted_traceback

        assistant = loaded()
        explanation = explain_text(text, from_pasted_traceback(assistant.parse(text)), assistant)
        answer = explanation.answer
        if explanation.unrelated:  # the nearest record's library ran in none of the traceback's frames
            return Explained(
                text=explanation.one_line(),
                confidence=round(float(answer.confidence), 4),
                confident=False,
                citations=[],
                installed=None,
            )
        installed = f"{explanation.installed[0]} {explanation.installed[1]}" if explanation.installed else None
        return Explained(
            text=answer.text + (f"\n\nInstalled where errata runs: {installed}" if installed else ""),
            confidence=round(float(answer.confidence), 4),
            confident=explanation.matched,
            citations=[c.to_dict() for c in answer.citations],
            installed=installed,
        )

    @server.tool()
    def search_errors(text: str, k: int = 5) -> list[HitOut]:
        """The knowledge-base records nearest to an error text, best first (k of them, at most 20)."""
        hits = loaded().search(text, max(1, min(int(k), 20)))
        return [h.to_dict() for h in hits]

    @server.tool()
    def get_record(id: str) -> dict[str, Any]:
        """One knowledge-base record in full (message, documentation, solutions, example fix, source link)."""
        loaded()
        position = loader.position(id.strip())
        if position is None:
            raise ToolError(f"no record with id {id!r}; ids come from explain_error or search_errors")
        return loaded().records[position].to_dict()

    return server


def serve(settings: Settings | None = None) -> None:
    """Serve over stdio until the client closes it; the knowledge base loads meanwhile."""
    loader = Loader(settings)
    server = build_server(loader)
    loader.start()
    server.run("stdio")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="serve errata's tools to an MCP client (a coding agent) over stdio")
    p.add_argument("--kb", action="append", help="knowledge-base folder or .jsonl file (repeatable)")
    p.add_argument("--index", dest="index_dir", help="index folder (default: index/)")
    p.add_argument("--model", help="litellm model that drafts explain_error's answer (default: offline)")
    p.add_argument("--api-base", dest="api_base", help="API base URL for the model")
    p.add_argument("-v", "--verbose", action="store_true", help="log what errata does (on stderr)")
