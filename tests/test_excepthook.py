"""``install()`` hooks and the IPython extension, each in a real subprocess of its own."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.frontends_support import RULE, closed_port, errata_env


def extension_name() -> str:
    """``%load_ext assistant`` once the package exports the extension's functions; the module until then."""
    import assistant

    return "assistant" if hasattr(assistant, "load_ipython_extension") else "assistant.frontends.ipython"


def run_python(tmp_path: Path, code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent(code).lstrip())
    return subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_install_explains_a_threads_and_the_main_threads_uncaught_errors(tmp_path, assistant, bundled_index_dir):
    done = run_python(
        tmp_path,
        f"""
        import threading

        import httpx

        import assistant

        # assistant.install once the package exports it; the module's own until then.
        install = getattr(assistant, "install", None)
        if install is None:
            from assistant.frontends.excepthook import install

        install()
        install()  # twice changes nothing


        def worker():
            jobs = {{}}
            jobs["report"]


        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        print("main goes on")
        httpx.get("http://127.0.0.1:{closed_port()}/")
        """,
        errata_env(bundled_index_dir),
    )
    assert done.returncode == 1
    assert done.stdout == "main goes on\n"
    thread_part, main_part = done.stderr.split("Traceback (most recent call last)", 2)[1:]
    # The thread: threading's own report, then errata's, from Python's KeyError record at the user's line.
    assert "KeyError: 'report'" in thread_part and thread_part.count(RULE) == 1
    assert "(python/cpython) [1]" in thread_part and "line 18" in thread_part
    # The main thread: the interpreter's traceback, then the httpx answer.
    assert main_part.count(RULE) == 1
    traceback_part, _, answer = main_part.partition(RULE)
    assert traceback_part.rstrip().endswith("httpx.ConnectError: [Errno 111] Connection refused")
    assert "(encode/httpx) [1]" in answer and "Installed here: httpx " in answer


@pytest.mark.slow
def test_install_leaves_keyboard_interrupt_and_exit_alone(tmp_path):
    env = errata_env(Path("/nonexistent/errata-index"))  # an explanation would fail loudly: none is tried
    done = run_python(
        tmp_path,
        """
        from assistant.frontends.excepthook import install

        install()
        raise KeyboardInterrupt
        """,
        env,
    )
    assert done.stderr.rstrip().endswith("KeyboardInterrupt")
    assert "errata" not in done.stderr
    code = "from assistant.frontends.excepthook import install\ninstall()\nraise SystemExit(4)\n"
    exited = run_python(tmp_path, code, env)
    assert exited.returncode == 4 and exited.stderr == ""


def test_uninstall_puts_the_previous_hooks_back():
    import threading

    from assistant.frontends.excepthook import install, uninstall

    before = sys.excepthook, threading.excepthook
    install()
    try:
        assert (sys.excepthook, threading.excepthook) != before
    finally:
        uninstall()
    assert (sys.excepthook, threading.excepthook) == before


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("IPython") is None, reason="IPython is not installed")
def test_the_ipython_extension_explains_a_cells_error_under_ipythons_traceback(tmp_path, assistant, bundled_index_dir):
    extension = extension_name()
    done = run_python(
        tmp_path,
        f"""
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance(colors="NoColor")
        shell.extension_manager.load_extension({extension!r})
        print("=== cell 1")
        first = shell.run_cell("import httpx\\nhttpx.get('http://127.0.0.1:{closed_port()}/')")
        print("=== cell 2")
        second = shell.run_cell("totals = {{'a': 1}}\\ntotals['b']")
        print("=== cell 3")
        shell.run_cell("print(1 + 1)")
        shell.extension_manager.unload_extension({extension!r})
        print("=== cell 4")
        shell.run_cell("[][0]")
        print("=== errors", type(first.error_in_exec).__name__, type(second.error_in_exec).__name__)
        """,
        errata_env(bundled_index_dir),
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    cell1, cell2, cell3, cell4 = re.split(r"^=== cell \d\n", out.split("=== errors")[0], flags=re.MULTILINE)[1:]
    traceback_part, rule, answer = cell1.partition(RULE)
    assert rule and "ConnectError: [Errno 111] Connection refused" in traceback_part  # IPython's traceback first
    assert "(encode/httpx) [1]" in answer and "Installed here: httpx " in answer
    assert "IPython" not in answer.split("Libraries in the traceback:")[1].split("\n")[0]
    traceback_part, rule, answer = cell2.partition(RULE)
    assert rule and "KeyError: 'b'" in traceback_part
    assert "(python/cpython) [1]" in answer and "`totals` has no key 'b'" in answer
    assert "> 2 | totals['b']" in answer  # the cell's own lines, as IPython keeps them
    assert cell3.strip() == "2"  # a cell that succeeds prints only its own output
    assert "IndexError" in cell4 and RULE not in cell4  # unloaded: IPython's traceback alone
    assert "=== errors ConnectError KeyError" in out
