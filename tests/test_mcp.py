"""``errata mcp``: the SDK's own stdio client starts the server as a subprocess and calls its tools."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from tests.frontends_support import errata_env

mcp = pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

SMOLAGENTS_TRACEBACK = """\
Traceback (most recent call last):
  File "/home/dev/agent.py", line 12, in <module>
    agent.run("Summarise the quarterly report")
  File "/usr/lib/python3.11/site-packages/smolagents/agents.py", line 547, in _run_stream
    raise AgentError("Agent interrupted.", self.logger)
smolagents.utils.AgentError: Agent interrupted."""

USER_KEY_ERROR = """\
Traceback (most recent call last):
  File "/home/dev/report.py", line 9, in <module>
    main()
  File "/home/dev/report.py", line 6, in main
    return totals["march"]
KeyError: 'march'"""


def field(result: Any, snake: str, camel: str) -> Any:
    """A CallToolResult field under the SDK 2.x name or the 1.x one."""
    return getattr(result, snake, None) if hasattr(result, snake) else getattr(result, camel)


async def session_calls(env: dict[str, str]) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "assistant", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        explained = await session.call_tool("explain_error", {"text": SMOLAGENTS_TRACEBACK})
        searched = await session.call_tool("search_errors", {"text": "Agent interrupted.", "k": 3})
        record_id = field(explained, "structured_content", "structuredContent")["citations"][0]["recordId"]
        record = await session.call_tool("get_record", {"id": record_id})
        missing = await session.call_tool("get_record", {"id": "0000000000000000"})
        user_error = await session.call_tool("explain_error", {"text": USER_KEY_ERROR})
    return {
        "tools": tools,
        "explained": explained,
        "searched": searched,
        "record": record,
        "missing": missing,
        "user_error": user_error,
    }


@pytest.mark.slow
def test_an_mcp_client_lists_the_tools_and_gets_a_smolagents_citation(assistant, bundled_index_dir):
    calls = asyncio.run(asyncio.wait_for(session_calls(errata_env(bundled_index_dir)), timeout=240))

    assert {t.name for t in calls["tools"].tools} == {"explain_error", "search_errors", "get_record"}
    explain_tool = next(t for t in calls["tools"].tools if t.name == "explain_error")
    assert "traceback" in (explain_tool.description or "")

    explained = calls["explained"]
    assert not field(explained, "is_error", "isError")
    body = field(explained, "structured_content", "structuredContent")
    assert body["confident"] is True and body["confidence"] >= 0.87
    assert body["citations"][0]["repo"] == "huggingface/smolagents"
    assert body["citations"][0]["errorClass"] == "AgentError"
    assert "Agent interrupted." in body["text"] and "[1]" in body["text"]
    assert explained.content[0].type == "text" and "huggingface/smolagents" in explained.content[0].text

    hits = field(calls["searched"], "structured_content", "structuredContent")["result"]
    assert len(hits) == 3
    assert hits[0]["repo"] == "huggingface/smolagents" and hits[0]["message"] == "Agent interrupted."
    assert {"recordId", "repo", "errorClass", "message", "score", "githubUrl"} <= set(hits[0])
    assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]

    record = field(calls["record"], "structured_content", "structuredContent")
    assert record["id"] == body["citations"][0]["recordId"]
    assert record["errorMessage"] == "Agent interrupted." and record["solutions"]

    missing = calls["missing"]
    assert field(missing, "is_error", "isError")
    assert "no record with id '0000000000000000'" in missing.content[0].text

    # A pasted KeyError from the user's own code: Python's own record answers, no library's.
    user_error = field(calls["user_error"], "structured_content", "structuredContent")
    assert user_error["confident"] is True
    assert [c["repo"] for c in user_error["citations"]] == ["python/cpython"]
