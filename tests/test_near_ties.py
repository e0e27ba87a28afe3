"""Records that read alike to every signal, told apart: a raise the traceback's innermost frame shows (one
message raised from two places in one file), a release-built record matching the pasted message alone, which
has no vector and so read as the farthest record to the cosine features, and the error a library's wrapper
prints inside its own message."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from assistant import Assistant, Settings
from assistant.knowledge.records import load_records
from assistant.knowledge.release_records import UNPACKED_DIR
from assistant.parse.query import parse_query
from assistant.retrieval.features import FEATURES
from assistant.retrieval.partial_messages import lend_dense
from assistant.retrieval.raise_site import raise_site_rows
from assistant.retrieval.wrapped_causes import told_error_span
from assistant.settings import BUNDLED_KB_DIR
from tests.conftest import ingested_line, write_lines

_FIELD_TRACEBACK = """Traceback (most recent call last):
  File "/srv/app/schemas.py", line 7, in <module>
    class Order(BaseModel):
  File "/srv/app/schemas.py", line 9, in Order
    items: list[int] = Field([], default_factory=list)
  File "/srv/venv/lib/python3.12/site-packages/pydantic/fields.py", line 1363, in Field
    return FieldInfo.from_field(
  File "/srv/venv/lib/python3.12/site-packages/pydantic/fields.py", line 317, in from_field
    return FieldInfo(default=default, **kwargs)
  File "/srv/venv/lib/python3.12/site-packages/pydantic/fields.py", line 253, in __init__
    raise TypeError('cannot specify both default and default_factory')
TypeError: cannot specify both default and default_factory
"""
_PRIVATE_ATTR_TRACEBACK = """Traceback (most recent call last):
  File "/srv/app/cache.py", line 12, in <module>
    class Cached(BaseModel):
  File "/srv/app/cache.py", line 14, in Cached
    _seen: dict = PrivateAttr({}, default_factory=dict)
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/srv/venv/lib/python3.12/site-packages/pydantic/fields.py", line 1565, in PrivateAttr
    raise TypeError('cannot specify both default and default_factory')
TypeError: cannot specify both default and default_factory
"""
_FIELD_ID = "173bd9df5660beaa"  # FieldInfo.__init__'s raise (fields.py 241-257)
_PRIVATE_ATTR_ID = "f8ae9c57b420c328"  # PrivateAttr()'s raise of the same words (fields.py 1558-1572)


def _assistant_over(tmp_path, embedder, *names: str, released: list[dict] | None = None) -> Assistant:
    """An assistant over copies of some bundled record files (and release-built lines, read as shipped: no
    vectors), in a fresh index folder."""
    kb = tmp_path / "kb"
    kb.mkdir()
    for name in names:
        shutil.copy(BUNDLED_KB_DIR / name, kb / name)
    folders = (kb,)
    if released:
        folder = tmp_path / UNPACKED_DIR  # records read from a folder of this name get no vector, as shipped
        folder.mkdir()
        write_lines(folder / "released.jsonl", released)
        folders = (kb, folder)
    return Assistant(Settings.load(env={}, kb=folders, index_dir=tmp_path / "index"), embedder=embedder)


def _pydantic_twins():
    records = {r.id: r for r in load_records([BUNDLED_KB_DIR / "pydantic__pydantic.jsonl"])}
    return [records[_PRIVATE_ATTR_ID], records[_FIELD_ID]]


def test_the_innermost_frame_tells_which_of_two_raises_of_one_message_it_was():
    twins = _pydantic_twins()
    features = np.zeros((2, len(FEATURES)))
    features[:, FEATURES.index("raising_frame")] = 1.0
    scores = np.array([20.4, 20.3])  # PrivateAttr's ahead by a hair, as the other signals had it
    query = parse_query(_FIELD_TRACEBACK)
    assert raise_site_rows(query, features, scores, twins.__getitem__) == [1]
    # Raised from a line neither excerpt covers, and shown by both: nothing tells them apart.
    elsewhere = parse_query(_FIELD_TRACEBACK.replace("line 253, in __init__", "line 900, in __init__"))
    assert raise_site_rows(elsewhere, features, scores, twins.__getitem__) == []
    # Only records raised from the innermost frame's file are weighed.
    features[:, FEATURES.index("raising_frame")] = 0.0
    assert raise_site_rows(query, features, scores, twins.__getitem__) == []


def test_a_record_matching_alone_takes_the_cosines_of_the_best_curated_record():
    dense = [i for i, name in enumerate(FEATURES) if name.startswith("dense")]
    features = np.zeros((3, len(FEATURES)))
    features[:, dense] = np.array([[0.7], [0.5], [-0.1]])  # the third, ingested, has no vector
    features[:, FEATURES.index("class_equal")] = 1.0
    scores = np.array([20.0, 22.0, 18.0])
    curated = np.array([True, True, False])
    alone = np.array([False, False, True])
    lend_dense(features, scores, curated, alone, has_class=True)
    assert features[2, dense].tolist() == features[1, dense].tolist()  # the best-scored curated one's
    other_class = np.zeros((2, len(FEATURES)))
    other_class[:, dense] = np.array([[0.7], [-0.1]])
    lend_dense(other_class, np.array([20.0, 18.0]), np.array([True, False]), np.array([False, True]), True)
    assert other_class[1, dense].max() == pytest.approx(-0.1)  # a message alike from another class keeps its own
    nearer = np.zeros((2, len(FEATURES)))
    nearer[:, dense] = np.array([[0.3], [0.6]])  # the record matching alone has a vector, and is the nearer
    nearer[:, FEATURES.index("class_equal")] = 1.0
    lend_dense(nearer, np.array([20.0, 18.0]), np.array([True, False]), np.array([False, True]), True)
    assert nearer[1, dense].min() == pytest.approx(0.6)


@pytest.mark.slow
def test_near_ties_rank_the_raise_that_was_pasted_first(tmp_path, embedder):
    azure_rule = ingested_line(
        "d4d4d4d4d4d4d4d4",
        "openai/openai-python",
        "ValueError",
        "base_url and azure_endpoint are mutually exclusive",
        "base_url and azure_endpoint are mutually exclusive",
        "src/openai/lib/azure.py",
        190,
    )
    assistant = _assistant_over(
        tmp_path, embedder, "pydantic__pydantic.jsonl", "openai__openai-python.jsonl", released=[azure_rule]
    )
    assert assistant.search(_FIELD_TRACEBACK)[0].record.id == _FIELD_ID
    # Without the frame's evidence FieldInfo's record, ahead by a hair, answered PrivateAttr's raise too.
    assert assistant.search(_PRIVATE_ATTR_TRACEBACK)[0].record.id == _PRIVATE_ATTR_ID
    # Without the cosines lent, the curated record of the arguments' other rule answered first.
    azure = assistant.search(
        "my AzureOpenAI client won't construct: ValueError: base_url and azure_endpoint are mutually exclusive. "
        "I must provide the endpoint from the AZURE_OPENAI_ENDPOINT environment variable, right?"
    )
    assert azure[0].record.id == "d4d4d4d4d4d4d4d4"


def test_a_wrappers_last_placeholder_is_where_it_prints_the_error_it_wraps():
    message = (
        "HTTPConnectionPool(host='db', port=5432): Max retries exceeded with url: /health (Caused by "
        "NewConnectionError(\"HTTPConnection(host='db', port=5432): Failed to establish a new connection\"))"
    )
    start = message.index("Max retries")
    told = told_error_span("Max retries exceeded with url: {url} (Caused by {reason!r})", message, start)
    assert told is not None and message[told[0] : told[1]].startswith("NewConnectionError(")
    assert message[told[1] :] == ")"  # the template's closing bracket, found last
    tool = "Error executing tool fetch_rows: Context is not available outside of a request"
    assert told_error_span("Error executing tool {self.name}: {e}", tool, 0) == (33, len(tool))
    # A placeholder with words after it is no wrapper's: crewAI's template variable is the subject
    assert told_error_span("Missing required template variable '{variable_error}' in description", tool, 0) is None


@pytest.mark.slow
def test_the_error_a_library_wraps_in_its_own_answers_before_the_wrapper(tmp_path, embedder):
    names = ("modelcontextprotocol__python-sdk.jsonl", "urllib3__urllib3.jsonl", "python__cpython.jsonl")
    assistant = _assistant_over(tmp_path, embedder, *names)
    tool = assistant.search(
        "Traceback (most recent call last):\n"
        '  File "/srv/bot/run.py", line 30, in main\n'
        '    await server.call_tool("export_rows", {"table": "users"})\n'
        '  File "/srv/venv/lib/python3.12/site-packages/mcp/server/mcpserver/tools/base.py", line 181, in run\n'
        '    raise ToolError(f"Error executing tool {self.name}: {e}") from e\n'
        "mcp.server.mcpserver.exceptions.ToolError: Error executing tool export_rows: Context is not available "
        "outside of a request"
    )
    assert tool[0].record.error_message == "Context is not available outside of a request"
    refused = assistant.search(
        "urllib3.exceptions.MaxRetryError: HTTPConnectionPool(host='db', port=5432): Max retries exceeded with "
        "url: /health (Caused by NewConnectionError(\"HTTPConnection(host='db', port=5432): Failed to establish "
        'a new connection: [Errno 111] Connection refused"))'
    )
    assert refused[0].record.error_class == "NewConnectionError"
    # Python's own wrapper is what its users look up: urllib's URLError keeps its place
    urlopen = assistant.search("urllib.error.URLError: <urlopen error [Errno 111] Connection refused>")
    assert urlopen[0].record.error_class == "URLError"


@pytest.mark.slow
def test_a_servers_reply_and_a_librarys_report_answer_before_the_general_record(tmp_path, embedder):
    """A client's status error prints the server's reply (vLLM's, through openai's ``Error code: 404 -
    {body}``); a library reporting one of Python's errors (pytest's conftest import failure) says where."""
    names = ("openai__openai-python.jsonl", "vllm-project__vllm.jsonl", "pytest-dev__pytest.jsonl")
    assistant = _assistant_over(tmp_path, embedder, *names, "python__cpython.jsonl")
    served = assistant.search(
        "Traceback (most recent call last):\n"
        '  File "/srv/chat/ask.py", line 12, in ask\n'
        '    reply = client.chat.completions.create(model="qwen-7b", messages=history)\n'
        '  File "/srv/venv/lib/python3.12/site-packages/openai/_base_client.py", line 1047, in request\n'
        "    raise self._make_status_error_from_response(err.response) from None\n"
        "openai.NotFoundError: Error code: 404 - {'error': {'message': 'The model `qwen-7b` does not exist. "
        "Valid aliases: Qwen/Qwen2.5-7B-Instruct.', 'type': 'NotFoundError', 'param': 'model', 'code': 404}}"
    )
    assert served[0].record.repo == "vllm-project/vllm"
    conftest = assistant.search(
        "ImportError while loading conftest '/ci/shop/tests/conftest.py'.\n"
        "tests/conftest.py:5: in <module>\n"
        "    from shop.db import make_session\n"
        "E   ModuleNotFoundError: No module named 'shop'"
    )
    assert conftest[0].record.repo == "pytest-dev/pytest"
