"""Importing gradio for the chat's server without the work a server never uses (about half of its import).

Why: ``import gradio`` is most of a warm start (~5 s of CPU on a 2-core machine). Of that, ~1.5 s is gradio
re-deriving every component's type stub (``.pyi``) from its source at each import
(``component_meta.create_or_modify_pyi``: an aid for editors, which even rewrites files in site-packages),
and ~1 s is importing IPython and mcp for gradio's notebook magic and its MCP server. gradio treats both as
optional (it imports them under ``try/except ImportError``), and the chat uses neither (it is launched with
``mcp_server=False``; gradio also imports IPython when it builds the page, to ask whether it runs in Colab).
Only the serving process hides them, for its whole life (``web_serve.py``); a process that imports ``web``
itself (the tests) gets gradio as it comes.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

STUBS_MODULE = "gradio.component_meta"
STUBS_FUNCTION = "create_or_modify_pyi"
# Imported by gradio only for features the chat does not use; gradio runs without them.
OPTIONAL = ("IPython", "mcp")


@contextmanager
def lean_gradio_import(optional: Sequence[str] = OPTIONAL) -> Iterator[None]:
    """Within it, a first ``import gradio`` skips the stub writing, and the ``optional`` packages cannot be
    imported (gradio goes without them); afterwards they import as usual. Does nothing where gradio is
    imported already."""
    if "gradio" in sys.modules:
        yield
        return
    finder = _NoStubsFinder()
    sys.meta_path.insert(0, finder)
    hidden = [name for name in optional if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment] - the documented way to make an import fail
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def _no_stubs(*_args: Any, **_kwargs: Any) -> None:
    """Writes no type stub: a server has no editor to serve them to."""


class _NoStubsFinder(importlib.abc.MetaPathFinder):
    """Finds gradio's component metaclass module as usual, through a loader that switches its stub writing
    off right after the module runs (before any component class is made)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != STUBS_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _NoStubsLoader(spec.loader)
        return spec


class _NoStubsLoader(importlib.abc.Loader):
    """The module's own loader, and then the stub writer replaced by :func:`_no_stubs`."""

    def __init__(self, loader: Any):
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        if callable(getattr(module, STUBS_FUNCTION, None)):
            setattr(module, STUBS_FUNCTION, _no_stubs)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ... as the module's own loader
        return getattr(self._loader, name)
