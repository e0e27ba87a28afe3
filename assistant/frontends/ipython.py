"""``%load_ext assistant`` in IPython or Jupyter: a cell's uncaught exception is explained under its traceback.

The custom exception handler shows IPython's own traceback first, then the answer as a display object:
markdown in a notebook, plain text in a terminal. ``%unload_ext`` takes it away again.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any


def load_ipython_extension(ip: Any) -> None:
    ip.set_custom_exc((Exception,), _handler)


def unload_ipython_extension(ip: Any) -> None:
    ip.set_custom_exc((), None)


def _handler(
    shell: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None, tb_offset: Any = None
) -> None:
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    from IPython.display import display

    from .explain import RULE, explain_exception
    from .local_context import without_leading

    try:
        # Without IPython's own frame that ran the cell, as its traceback leaves it out too.
        explanation = explain_exception(value, tb=without_leading(tb, ("IPython",)))
    except Exception as failure:  # noqa: BLE001 - an errata failure is a note, the cell's error stays the error
        note = f"errata could not explain this error ({type(failure).__name__}: {failure})"
        display({"text/plain": f"{RULE}\n{note}"}, raw=True)
        return
    display(
        {"text/plain": f"{RULE}\n{explanation.render()}", "text/markdown": explanation.render(markdown=True)},
        raw=True,
    )
