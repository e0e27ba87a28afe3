"""``errata run``: real scripts in real subprocesses, compared with what ``python script.py`` does."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.frontends_support import ROOT, RULE, closed_port, errata_env


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def errata_run(script: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "assistant", "run", str(script), *args], script.parent, env)


def write(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(code).lstrip())
    return path


@pytest.mark.slow
def test_a_failing_httpx_call_gets_its_traceback_then_an_answer_citing_httpx(tmp_path, assistant, bundled_index_dir):
    script = write(
        tmp_path,
        "fetch.py",
        f"""
        import httpx

        print("fetching")
        httpx.get("http://127.0.0.1:{closed_port()}/health")
        """,
    )
    done = errata_run(script, env=errata_env(bundled_index_dir))

    assert done.returncode == 1
    assert done.stdout == "fetching\n"
    err = done.stderr
    assert err.startswith("Traceback (most recent call last):\n")
    assert "runpy" not in err and "assistant/frontends" not in err  # the traceback python itself would print
    traceback_part, _, answer = err.partition(RULE)
    assert traceback_part.rstrip().endswith("httpx.ConnectError: [Errno 111] Connection refused")
    assert "(encode/httpx) [1]" in answer
    assert "[1] encode/httpx ConnectError" in answer
    assert f"Installed here: httpx {importlib.metadata.version('httpx')}" in answer
    assert "Libraries in the traceback: httpx" in answer and "httpcore" in answer
    assert f"Your code, {script}:4 in <module>:" in answer
    assert '> 4 | httpx.get("http://127.0.0.1:' in answer


@pytest.mark.slow
def test_a_key_error_in_user_code_is_not_pinned_on_a_library(tmp_path, assistant, bundled_index_dir):
    script = write(
        tmp_path,
        "settings.py",
        """
        config = {"name": "demo"}


        def main():
            print("starting")
            return config["missing"]


        main()
        """,
    )
    done = errata_run(script, env=errata_env(bundled_index_dir))

    assert done.returncode == 1
    assert done.stdout == "starting\n"
    traceback_part, rule, answer = done.stderr.partition(RULE)
    assert rule and traceback_part.rstrip().endswith("KeyError: 'missing'")
    # Python's own error in the user's code: Python's record, pointed at the user's line and key.
    assert "(python/cpython) [1]" in answer and "line 6" in answer
    assert "`config` has no key 'missing'" in answer
    assert "Installed here" not in answer
    assert '> 6 |     return config["missing"]' in answer
    assert '    print("starting")' in answer  # the neighbours, read from the file


@pytest.mark.slow
def test_a_succeeding_script_runs_as_python_runs_it_and_errata_stays_silent(tmp_path):
    script = write(
        tmp_path,
        "ok.py",
        """
        import os
        import sys

        print(__name__, sys.argv, os.path.basename(__file__), sys.path[0] == os.path.dirname(__file__))
        print("model loaded:", "sentence_transformers" in sys.modules or "torch" in sys.modules)
        print("to stderr", file=sys.stderr)
        """,
    )
    env = errata_env(Path("/nonexistent/errata-index"))  # never read: nothing to explain
    by_python = run([sys.executable, str(script), "a", "--flag"], tmp_path, env)
    by_errata = errata_run(script, "a", "--flag", env=env)

    assert by_errata.returncode == by_python.returncode == 0
    assert by_errata.stdout == by_python.stdout
    first_line = by_errata.stdout.splitlines()[0]
    assert first_line.startswith("__main__ [") and first_line.endswith("'a', '--flag'] ok.py True")
    assert "model loaded: False" in by_errata.stdout
    assert by_errata.stderr == by_python.stderr == "to stderr\n"


def errata_frames(stderr: str) -> list[str]:
    """The traceback lines of errata's own frames (and runpy's, which ran the script): none of them is the
    user's, and ``python script.py`` shows none. By module path, so a clone in a folder named errata passes."""
    own = (str(ROOT / "assistant") + os.sep, "runpy")
    return [line for line in stderr.splitlines() if line.lstrip().startswith('File "') and any(o in line for o in own)]


@pytest.mark.parametrize(
    "code",
    [
        "import sys\nsys.exit(3)\n",
        "raise SystemExit('bye')\n",
        "import atexit\natexit.register(print, 'atexit ran')\n\ndef stop():\n    raise KeyboardInterrupt\n\nstop()\n",
    ],
    ids=["exit-3", "exit-message", "keyboard-interrupt"],
)
@pytest.mark.slow
def test_exit_and_interrupt_keep_pythons_status_and_are_not_explained(tmp_path, code):
    folder = tmp_path / "errata"  # a folder named like the tool: only errata's frames count, not the word
    folder.mkdir()
    script = write(folder, "stop.py", code)
    env = errata_env(Path("/nonexistent/errata-index"))
    by_python = run([sys.executable, str(script)], folder, env)
    by_errata = errata_run(script, env=env)

    assert by_errata.returncode == by_python.returncode
    assert by_errata.stdout == by_python.stdout
    assert errata_frames(by_errata.stderr) == []
    assert by_errata.stderr == by_python.stderr  # an interrupt's traceback too: the script's frames only
    assert RULE not in by_errata.stderr
    if "KeyboardInterrupt" in code:
        assert by_errata.stdout == "atexit ran\n"  # Python's exit: atexit runs, then the SIGINT status
        assert by_errata.returncode in (-signal.SIGINT, 128 + signal.SIGINT)
        assert f'File "{script}", line 5, in stop' in by_errata.stderr


@pytest.mark.parametrize(
    "code",
    [
        "def load(path):\n    return open(path).read()\n\n\nload('/nonexistent/errata-input.txt')\n",
        "def broken(:\n    pass\n",
    ],
    ids=["error-in-a-function", "syntax-error"],
)
@pytest.mark.slow
def test_an_explained_error_shows_the_traceback_python_shows(tmp_path, code, assistant, bundled_index_dir):
    folder = tmp_path / "errata"
    folder.mkdir()
    script = write(folder, "job.py", code)
    env = errata_env(bundled_index_dir)
    by_python = run([sys.executable, str(script)], folder, env)
    by_errata = errata_run(script, env=env)

    assert by_errata.returncode == by_python.returncode == 1
    traceback_part, rule, _answer = by_errata.stderr.partition(RULE)
    assert rule and traceback_part == by_python.stderr
    assert errata_frames(by_errata.stderr) == []


@pytest.mark.slow
def test_a_missing_script_is_reported_like_python_does(tmp_path):
    done = errata_run(tmp_path / "nope.py", env=errata_env())
    assert done.returncode == 2
    assert "can't open file" in done.stderr and "nope.py" in done.stderr


def test_local_context_reads_the_live_frames_versions_and_the_users_lines():
    """No model: the context of a real httpx error raised here, and which records it rules out."""
    from types import SimpleNamespace

    import httpx

    from assistant.frontends.local_context import from_exception, installed_version, record_packages

    try:
        httpx.get(f"http://127.0.0.1:{closed_port()}/")
    except httpx.ConnectError as exc:
        context = from_exception(exc)
    assert context.exception == "httpx.ConnectError"
    assert {"httpx", "httpcore"} <= context.modules
    assert context.installed["httpx"] == importlib.metadata.version("httpx")
    assert context.user_code is not None and context.user_code.file == __file__
    assert 'httpx.get(f"http://127.0.0.1:{closed_port()}/")' in dict(context.user_code.lines)[context.user_code.line]

    httpx_record = SimpleNamespace(repo="encode/httpx", file_path="httpx/_transports/default.py")
    ollama_record = SimpleNamespace(repo="ollama/ollama-python", file_path="ollama/_types.py")
    assert context.involves(httpx_record) and not context.involves(ollama_record)
    assert installed_version(httpx_record) == ("httpx", importlib.metadata.version("httpx"))
    assert record_packages(SimpleNamespace(repo="slackapi/bolt-python", file_path="slack_bolt/app/app.py")) == [
        "bolt",
        "slack_bolt",
    ]
    assert record_packages(SimpleNamespace(repo="langchain-ai/langgraph", file_path="libs/cli/langgraph_cli/x.py")) == [
        "langgraph",
        "langgraph_cli",
    ]
