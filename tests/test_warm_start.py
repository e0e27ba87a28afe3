"""A warm ``python app.py`` answers a paste before gradio is up: the starting page answers the chat's API
(``web_early.py``) in gradio's own REST protocol, with the same answer as the chat; real HTTP throughout."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from assistant.frontends.starting_page import StartingPage
from assistant.frontends.web_early import EarlyApi

ROOT = Path(__file__).resolve().parents[1]
PASTE = "smolagents.utils.AgentError: Agent interrupted."


def free_port() -> int:
    with socket.socket() as probe:  # not tests/web_server.py's: that module imports gradio (seconds)
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def submit(base: str, name: str, data: object) -> str:
    """POST one call as gradio's REST API takes it; returns its event id."""
    body = json.dumps({"data": data}).encode()
    request = urllib.request.Request(f"{base}gradio_api/call/{name}", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())["event_id"]


def events(base: str, name: str, event_id: str) -> list[tuple[str, object]]:
    """The server-sent events of a call, as (event, data)."""
    with urllib.request.urlopen(f"{base}gradio_api/call/{name}/{event_id}", timeout=60) as reply:
        assert reply.headers["Content-Type"].startswith("text/event-stream")
        text = reply.read().decode()
    out = []
    for block in filter(None, text.split("\n\n")):
        event, data = block.split("\n", 1)
        out.append((event.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def call(base: str, name: str, data: object) -> list[tuple[str, object]]:
    return events(base, name, submit(base, name, data))


@pytest.fixture
def early(assistant):
    port = free_port()
    with StartingPage("127.0.0.1", port) as page:
        api = EarlyApi(assistant)
        page.api = api
        yield f"http://127.0.0.1:{port}/", api


def test_the_starting_page_answers_a_paste_streamed_as_the_chat_streams_it(early, assistant):
    base, _api = early
    got = call(base, "chat", [PASTE, [], 3, None])
    kinds = [kind for kind, _ in got]
    assert kinds[-1] == "complete" and set(kinds[:-1]) == {"generating"} and len(kinds) >= 3
    first = got[0][1]
    assert first[0] == "" and [m["role"] for m in first[1]] == ["user"] and "Searching" in first[2]
    assert first[4] == {"visible": False, "__type__": "update"}
    box, chat, sources, state, comment = got[-1][1]
    assert box == {"__type__": "update"} and state is None and comment == {"__type__": "update"}
    assert [m["role"] for m in chat] == ["user", "assistant"]
    answer = assistant.ask(PASTE, 3)
    assert chat[1]["content"][0]["text"].startswith(answer.text.strip()) and "[1]" in chat[1]["content"][0]["text"]
    assert 'class="errata-card"' in sources and "huggingface/smolagents" in sources
    text, citations = call(base, "ask", [PASTE])[-1][1][0]
    assert text == answer.text and citations[0]["recordId"] == answer.citations[0].record_id


def test_wrong_input_gets_gradios_errors_and_the_rest_of_the_port_still_says_starting(early):
    base, _api = early
    assert call(base, "chat", [5, [], 3, None]) == [
        (
            "error",
            {
                "error": "/chat takes the paste as a JSON string, not a number",
                "duration": 10,
                "visible": True,
                "title": "Error",
            },
        )
    ]
    assert call(base, "chat", ["x"]) == [("error", {"error": None})]  # too few inputs: gradio says nothing more
    assert call(base, "chat", [PASTE, [{"role": "user", "content": "no parts"}], 3, None]) == [
        ("error", {"error": None})
    ]
    assert call(base, "ask", [["a"]])[0][1]["error"] == "/ask takes the paste as a JSON string, not an array"
    assert events(base, "chat", "f" * 32) == [("error", "404: Not Found")]  # an id never given, or fetched already
    empty = call(base, "chat", ["   ", [], 3, None])
    assert [kind for kind, _ in empty] == ["generating", "complete"] and empty[-1][1][1] == []
    for path, body in (("config", None), ("gradio_api/info", None), ("gradio_api/queue/join", b"{}")):
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(urllib.request.Request(base + path, body), timeout=5)
        assert caught.value.code == 503 and caught.value.headers["Retry-After"] == "1"
    request = urllib.request.Request(f"{base}gradio_api/call/chat", b"{not json", {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 422


def test_once_the_api_answers_the_page_is_a_chat_on_it_and_other_paths_say_starting(early):
    base, _api = early
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(base, timeout=5)
    page = caught.value.read().decode()
    assert caught.value.code == 503 and caught.value.headers["Retry-After"] == "1"  # still not gradio's chat
    assert 'id="errata-early-query"' in page and "gradio_api/call/ask" in page
    assert 'http-equiv="refresh"' not in page  # it would wipe what the user typed
    assert " src=" not in page and "innerHTML" not in page  # no outside script; text set as text only
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(base + "config", timeout=5)
    assert "errata is starting" in caught.value.read().decode()


def test_the_handover_waits_for_calls_taken_and_takes_no_new_one(early):
    base, api = early
    event_id = submit(base, "chat", [PASTE, [], 3, None])
    assert not api.drain(0.2)  # taken, not fetched: the chat may not take the port yet
    with pytest.raises(urllib.error.HTTPError) as caught:  # a new call is told to come back in a second
        submit(base, "chat", [PASTE, [], 3, None])
    assert caught.value.code == 503 and caught.value.headers["Retry-After"] == "1"
    done = threading.Event()
    waiter = threading.Thread(target=lambda: api.drain(30) and done.set())
    waiter.start()
    assert events(base, "chat", event_id)[-1][0] == "complete"  # the call taken is answered in full
    waiter.join(30)
    assert done.is_set()


@pytest.mark.slow
def test_the_early_answer_is_the_chats_own_byte_for_byte(assistant, tmp_path, early):
    """The same calls to gradio's chat (served for real) and to the starting page give the same events."""
    from .web_server import served

    base, _api = early
    cases = [
        ("chat", [PASTE, [], 3, None]),
        ("chat", [PASTE, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], 2, None]),
        ("chat", ["   ", [], 3, None]),
        ("chat", [PASTE, [], "3", None]),
        ("chat", [PASTE, [], 3, "gpt-x"]),
        ("chat", ["x"]),
        ("ask", [PASTE]),
        ("ask", [3]),
    ]
    with served(assistant, tmp_path / "feedback.sqlite3") as app:
        for name, data in cases:
            assert call(base, name, data) == call(app.url, name, data), (name, data)


def page_says_starting(base: str) -> bool:
    """Whether the port still shows the starting page (503) rather than the chat's config."""
    while True:
        try:
            urllib.request.urlopen(base + "config", timeout=5).close()
            return False
        except urllib.error.HTTPError as exc:
            return exc.code == 503
        except OSError:  # the starting page resets its connections once it has answered
            time.sleep(0.02)


@pytest.mark.slow
def test_python_app_py_answers_a_paste_while_the_page_still_says_starting(bundled_index_dir, tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    env = {key: value for key, value in os.environ.items() if not key.startswith("ERRATA_")}
    env.update(
        ERRATA_INDEX_DIR=str(bundled_index_dir),
        ERRATA_FEEDBACK_DB=str(tmp_path / "f.db"),
        ERRATA_RELEASE_RECORDS="false",  # the test index is the curated records' (see conftest.py)
        PYTHONPATH=str(ROOT),
    )
    server = subprocess.Popen(
        [sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        answered = []  # (whether the page still said "starting" just after, the final chat)
        while not answered or answered[-1][0]:
            assert server.poll() is None, f"app.py exited early:\n{server.communicate()[0]}"
            assert time.monotonic() < deadline, "app.py did not answer a paste within 180 s"
            try:
                final = call(base, "chat", [PASTE, [], 3, None])[-1]
            except (urllib.error.HTTPError, OSError):  # before the knowledge base is loaded; the handover
                time.sleep(0.05)
                continue
            assert final[0] == "complete", final
            starting = page_says_starting(base)
            answered.append((starting, final[1][1]))
        # Answered while the page said "starting", and after gradio took over: the same chat.
        assert answered[0][0] and not answered[-1][0], [starting for starting, _ in answered]
        assert answered[0][1] == answered[-1][1] and "Agent interrupted" in answered[0][1][1]["content"][0]["text"]
        for line in server.stdout:  # launch() returns, and says so, just after gradio answers
            if f"serving on http://127.0.0.1:{port}" in line:
                break
        else:
            raise AssertionError("app.py never said it was serving")
    finally:
        server.terminate()
        server.communicate(timeout=30)


@pytest.mark.slow
def test_the_lean_gradio_import_gives_a_working_gradio_and_hides_nothing_after(tmp_path):
    script = """
import sys
from assistant.frontends.web_import import lean_gradio_import
with lean_gradio_import():
    import gradio
    import gradio.component_meta as meta
    assert meta.create_or_modify_pyi.__name__ == "_no_stubs"
    try:
        import IPython
    except ImportError:
        pass
    else:
        raise AssertionError("IPython imported inside")
    with gradio.Blocks() as demo:
        gradio.Textbox()
assert sys.modules.get("IPython", 1) is not None and sys.modules.get("mcp", 1) is not None
import IPython, mcp  # afterwards, as usual
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_a_call_never_fetched_holds_the_handover_up_only_briefly(early, monkeypatch):
    base, api = early
    monkeypatch.setattr("assistant.frontends.web_early.FETCH_GRACE_S", 0.3)
    event_id = submit(base, "ask", [PASTE])
    started = time.monotonic()
    assert not api.drain(30)  # dropped: the client did not come for it
    assert time.monotonic() - started < 5
    assert events(base, "ask", event_id) == [("error", "404: Not Found")]
