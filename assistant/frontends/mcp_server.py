"""``errata mcp``: errata as an MCP server over stdio, for coding agents.

Three tools, each a thin call into :class:`assistant.Assistant`: ``explain_error`` (the answer
markdown, its citations and confidence), ``search_errors`` (the nearest records) and ``get_record``
(one record in full). A pasted traceback is judged as the other front ends judge a live one: a record
about a library that appears in none of its frames' paths is no match (see ``local_context``).

The Assistant is loaded once, in the background as soon as the server starts, so the MCP handshake is
not held up by the model and the first tool call waits only for what is left of the load. Logs go to
stderr: stdout carries the protocol. Each frame is checked before the SDK reads it (:func:`check_frame`):
one it cannot read is answered with a JSON-RPC error and logged, never dropped in silence.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

# pydantic, which the SDK builds the tools' schemas with, needs this TypedDict before Python 3.12.
from typing_extensions import TypedDict

from ..parse.text_input import without_lone_surrogates

if TYPE_CHECKING:
    from assistant import Assistant, Settings

logger = logging.getLogger(__name__)


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
    import anyio

    loader = Loader(settings)
    server = build_server(loader)
    loader.start()
    anyio.run(_serve_stdio, server)


async def _serve_stdio(server: Any) -> None:
    """``server.run("stdio")`` with each frame checked first (see :func:`check_frame`).

    The SDK drops a frame it cannot read without a reply (logged only at debug level), so a client waits
    for ever on a request holding ``"\\ud800"``. Its stdio transport is given stdin read through
    :class:`CheckedFrames` instead; the SDK's low-level server is reached by its private name (2.x, 1.x).
    """
    from mcp.server.stdio import stdio_server

    lowlevel = getattr(server, "_lowlevel_server", None) or server._mcp_server
    frames = CheckedFrames(sys.stdin.buffer)
    async with stdio_server(stdin=frames) as (read_stream, write_stream):  # type: ignore[arg-type]
        frames.answer_through(write_stream)
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


class Refusal(NamedTuple):
    """A JSON-RPC error reply to a frame the server cannot take."""

    code: int  # PARSE_ERROR or INVALID_REQUEST
    message: str
    id: int | str | None


PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def check_frame(line: str) -> str | Refusal | None:
    """The frame to hand the SDK, the refusal to answer instead, or None for a blank line.

    A frame the SDK reads is passed as it is. One it cannot read is read again here: not JSON, or nested
    too deeply, is a parse error; JSON that is not a JSON-RPC message is an invalid request (answered with
    its id where it has one); a string holding a lone surrogate (the escape ``"\\ud800"``, which the SDK's
    JSON reader refuses) is repaired to U+FFFD and the frame passed on.
    """
    if not line.strip():
        return None
    if _readable(line):
        return line
    try:
        message = json.loads(line)
        repaired = json.dumps(_repaired(message))
    except RecursionError:
        return Refusal(PARSE_ERROR, "Parse error: JSON nested too deeply to read", None)
    except ValueError as exc:
        return Refusal(PARSE_ERROR, f"Parse error: the frame is not JSON ({exc})", None)
    if _readable(repaired):  # lone surrogates were its only fault
        return repaired
    return Refusal(INVALID_REQUEST, f"Invalid Request: {_what_is_wrong(message)}", _request_id(message))


def _readable(frame: str) -> bool:
    """Whether the SDK's own reader takes ``frame`` as a JSON-RPC message."""
    try:
        from mcp_types import jsonrpc_message_adapter

        validate = jsonrpc_message_adapter.validate_json
    except ImportError:  # the mcp 1.x SDK
        from mcp.types import JSONRPCMessage

        validate = JSONRPCMessage.model_validate_json
    try:
        validate(frame)
    except ValueError:  # pydantic's ValidationError, a ValueError
        return False
    return True


def _repaired(value: Any) -> Any:
    """A parsed JSON value with every string (keys too) free of lone surrogates."""
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, list):
        return [_repaired(item) for item in value]
    if isinstance(value, dict):
        return {_repaired(key): _repaired(item) for key, item in value.items()}
    return value


def _request_id(message: Any) -> int | str | None:
    """The frame's id where it has a valid one (an integer or a string), so the client can match the error."""
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, (int, str)) and not isinstance(found, bool) else None


def _what_is_wrong(message: Any) -> str:
    """What a JSON frame lacks to be a JSON-RPC message, in one sentence."""
    if isinstance(message, list):
        return "a JSON-RPC message is one object (batches are not supported)"
    if not isinstance(message, dict):
        return f"a JSON-RPC message is an object, not {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be "2.0"'
    if "method" not in message and not {"result", "error"} & message.keys():
        return 'the frame has no "method" (nor a "result" or "error")'
    if "method" in message and not isinstance(message["method"], str):
        return 'the "method" must be a string'
    if "id" in message and _request_id(message) is None and message["id"] is not None:
        return 'the "id" must be a string or an integer'
    if message.get("params") is not None and not isinstance(message["params"], dict):
        return 'the "params" must be an object'
    return "the frame is not a JSON-RPC 2.0 request, notification or response"


class CheckedFrames:
    """stdin as the SDK's stdio transport reads it (``async for line``), holding back each frame it cannot
    read and answering it with a JSON-RPC error through the transport's own write stream (one writer, so
    replies never interleave), logged on stderr."""

    def __init__(self, source: BinaryIO):
        import anyio

        self._lines = anyio.wrap_file(io.TextIOWrapper(source, encoding="utf-8", errors="replace"))
        self._replies: Any = None
        self._ready = anyio.Event()

    def answer_through(self, write_stream: Any) -> None:
        self._replies = write_stream
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[str]:
        async for line in self._lines:
            checked = check_frame(line)
            if isinstance(checked, Refusal):
                logger.warning("refused an MCP frame (%d): %s", checked.code, checked.message[:300])
                await self._ready.wait()
                await self._replies.send(_error_message(checked))
            elif checked is not None:
                yield checked


def _error_message(refusal: Refusal) -> Any:
    """The SDK's message for a JSON-RPC error reply."""
    from mcp.shared.message import SessionMessage

    try:
        from mcp_types import ErrorData, JSONRPCError

        wrap: Any = None
    except ImportError:  # the mcp 1.x SDK
        from mcp.types import ErrorData, JSONRPCError, JSONRPCMessage

        wrap = JSONRPCMessage
    error = JSONRPCError.model_construct(
        jsonrpc="2.0", id=refusal.id, error=ErrorData(code=refusal.code, message=refusal.message)
    )
    return SessionMessage(wrap(error) if wrap else error)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="serve errata's tools to an MCP client (a coding agent) over stdio")
    p.add_argument("--kb", action="append", help="knowledge-base folder or .jsonl file (repeatable)")
    p.add_argument("--index", dest="index_dir", help="index folder (default: index/)")
    p.add_argument("--model", help="litellm model that drafts explain_error's answer (default: offline)")
    p.add_argument("--api-base", dest="api_base", help="API base URL for the model")
    p.add_argument("-v", "--verbose", action="store_true", help="log what errata does (on stderr)")
