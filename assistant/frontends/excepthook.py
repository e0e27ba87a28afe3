"""``assistant.install()``: explain uncaught exceptions under their traceback, in any Python program.

``sys.excepthook`` (the main thread) and ``threading.excepthook`` (other threads) are wrapped: the hook
that was there prints the traceback as before, then errata's answer follows on stderr. KeyboardInterrupt,
SystemExit and other non-``Exception`` errors are left to the old hook alone. The Assistant is made on the
first exception that needs it, so installing costs nothing at start.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType
from typing import Any

_previous: dict[str, Any] = {}


def install() -> None:
    """Set the hooks (once; a second call changes nothing)."""
    if "sys" in _previous:
        return
    _previous["sys"], _previous["threading"] = sys.excepthook, threading.excepthook
    sys.excepthook = _sys_hook
    threading.excepthook = _thread_hook


def uninstall() -> None:
    """Put back the hooks that were there before :func:`install`."""
    if "sys" in _previous:
        sys.excepthook = _previous.pop("sys")
        threading.excepthook = _previous.pop("threading")


def _sys_hook(etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    _previous.get("sys", sys.__excepthook__)(etype, value, tb)
    _explain(value, tb)


def _thread_hook(args: threading.ExceptHookArgs) -> None:
    _previous.get("threading", threading.__excepthook__)(args)
    if args.exc_value is not None:
        _explain(args.exc_value, args.exc_traceback)


def _explain(value: BaseException, tb: TracebackType | None) -> None:
    if not isinstance(value, Exception):
        return
    from .explain import explain_to

    explain_to(sys.stderr, value, tb)
