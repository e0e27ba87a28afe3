"""``errata run script.py [args...]``: run a script as ``python script.py`` would, and explain its crash.

The script runs unchanged in this process (``runpy.run_path`` as ``__main__``, ``sys.argv`` its own,
``sys.path[0]`` its folder). On an uncaught exception the traceback is printed as the interpreter
prints it (through ``sys.excepthook``, so a script's own hook still applies), errata's answer under it,
both on stderr, and the exit status is 1. Every traceback shown starts at the script's own frames: errata's
and runpy's, which ``python script.py`` does not have, are cut off. ``SystemExit`` and ``KeyboardInterrupt``
pass through unexplained, so their status and output are Python's own (an interrupt is printed by
Python as it leaves, through a hook that cuts those frames too). A script that succeeds never loads
errata's model: the Assistant is made only when there is an error to explain.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assistant import Settings


def run_script(path: str, args: Sequence[str] = ()) -> int:
    """Run ``path`` as the main module; the exit status ``python path args...`` would give."""
    script = os.path.abspath(path)
    if not os.path.exists(script):
        print(f"errata run: can't open file {path!r}: [Errno 2] No such file or directory", file=sys.stderr)
        return 2
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(script)
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except KeyboardInterrupt as exc:
        # Python prints an uncaught interrupt, runs atexit, then ends by SIGINT: it leaves as it would.
        sys.excepthook = _hook_from_script(sys.excepthook, exc, script)
        raise
    except BaseException as exc:  # noqa: BLE001 - what the interpreter would report as uncaught
        tb = _from_script(exc.__traceback__, script)
        exc.__traceback__ = tb
        sys.excepthook(type(exc), exc, tb)
        if isinstance(exc, Exception):
            from .explain import explain_to

            explain_to(sys.stderr, exc)
        return 1
    return 0


_ERRATA_DIR = str(Path(__file__).resolve().parents[1]) + os.sep
_RUNPY_FILES = {"<frozen runpy>", runpy.__file__, getattr(runpy, "__cached__", None)}


def _from_script(tb: TracebackType | None, script: str) -> TracebackType | None:
    """The traceback without errata's and runpy's frames above the script's, as ``python script.py`` shows.

    It starts at the script's first frame; where there is none (a ``SyntaxError`` in the script, a folder or
    zip file run by its ``__main__.py``) at the first frame that is neither errata's nor runpy's, or nowhere.
    """
    start = tb
    while start is not None and start.tb_frame.f_code.co_filename != script:
        start = start.tb_next
    if start is not None:
        return start
    while tb is not None and _is_runner(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def _is_runner(filename: str) -> bool:
    """A frame of the machinery that ran the script: errata's own code or runpy."""
    return filename in _RUNPY_FILES or os.path.abspath(filename).startswith(_ERRATA_DIR)


Hook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def _hook_from_script(hook: Hook, interrupt: BaseException, script: str) -> Hook:
    """``hook``, but for ``interrupt`` given the traceback from the script on (the frames errata and runpy
    add as it propagates out of them are cut off when Python prints it)."""

    def excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> object:
        if value is interrupt:
            tb = _from_script(tb, script)
            value.__traceback__ = tb
        return hook(kind, value, tb)

    return excepthook


def add_parser(sub) -> None:
    """``errata run [--kb DIR] [--index DIR] [--model M] script.py [args...]``."""
    p = sub.add_parser("run", help="run a Python script; explain its error if it fails")
    p.add_argument("--kb", action="append", help="knowledge-base folder or .jsonl file (repeatable)")
    p.add_argument("--index", dest="index_dir", help="index folder (default: index/)")
    p.add_argument("--model", help="litellm model that drafts the answer (default: offline)")
    p.add_argument("--api-base", dest="api_base", help="API base URL for the model")
    p.add_argument("script", help="the script to run, as python SCRIPT would")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")


def main(args: argparse.Namespace, settings: Settings) -> int:
    """The ``run`` subcommand: the settings are used only if an error needs explaining."""
    from .explain import use_settings

    use_settings(settings)
    return run_script(args.script, args.args)
