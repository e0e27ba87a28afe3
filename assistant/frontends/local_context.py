"""What the process that raised knows and a pasted traceback does not: who raised, and which versions.

A front end that sees the live exception can read its frames: the modules they ran in, the installed
distribution (and version) of each, and the user's own failing line with its neighbours from the file
on disk. It also knows which libraries took part at all, so a record about a library that appears in
no frame (and did not define the exception) cannot be what raised it.

Only the standard library is imported here: ``errata run`` loads this module before any error.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
import traceback
from dataclasses import dataclass, field
from functools import cache, lru_cache
from types import TracebackType
from typing import Any

PYTHON_REPO = "python/cpython"  # the records of Python's own errors (as retrieval.ownership names them)
# Lines shown on each side of the user's failing line.
NEIGHBOURS = 2
# Folders of a repository above its import package: ``src/httpx/...``; ``libs/cli/langgraph_cli/...``.
_SOURCE_FOLDERS = frozenset({"src", "lib", "python"})
_MONOREPO_FOLDERS = frozenset({"libs", "packages"})


@dataclass(frozen=True)
class SourceLines:
    """The user's failing line and its neighbours, read from the file on disk."""

    file: str
    line: int
    function: str
    lines: tuple[tuple[int, str], ...]  # (line number, text), the failing one among them

    def render(self, *, markdown: bool = False) -> str:
        width = len(str(self.lines[-1][0])) if self.lines else 1
        body = "\n".join(
            f"{'>' if number == self.line else ' '} {number:>{width}} | {text}" for number, text in self.lines
        )
        if markdown:
            body = f"```\n{body}\n```"
        return f"Your code, {self.file}:{self.line} in {self.function}:\n{body}"


@dataclass(frozen=True)
class LocalContext:
    """The live exception's frames, summarised for explaining it."""

    exception: str  # the qualified class name, as a traceback prints it
    modules: frozenset[str]  # top-level modules of every frame in the chain, and of the exception classes
    installed: dict[str, str] = field(default_factory=dict)  # distribution -> version, frames' libraries only
    user_code: SourceLines | None = None  # the innermost frame in the user's own code

    def involves(self, record: Any) -> bool:
        """Whether the library a record is about ran in a frame, or defined the exception. Python's own
        records (``python/cpython``) are about whatever Python ran: always in play."""
        if str(getattr(record, "repo", "")) == PYTHON_REPO:
            return True
        return bool(self.modules & set(record_packages(record)))

    def versions_line(self) -> str | None:
        if not self.installed:
            return None
        return "Libraries in the traceback: " + ", ".join(f"{d} {v}" for d, v in self.installed.items())


def from_exception(exc: BaseException, tb: TracebackType | None = None) -> LocalContext:
    """Read the frames of ``exc`` (``tb``, default its own traceback) and of the exceptions it was raised from."""
    modules: list[str] = []
    frames: list[tuple[str, int, str, str]] = []  # (file, line, function, top-level module) of ``exc`` itself
    for depth, error in enumerate(_chain(exc)):
        for root in _class_modules(type(error)):
            _add(modules, root)
        for file, line, function, module in _frames(tb if depth == 0 and tb is not None else error.__traceback__):
            _add(modules, module)
            if depth == 0:
                frames.append((file, line, function, module))
    installed: dict[str, str] = {}
    for module in modules:
        for dist, version in installed_distributions(module):
            installed.setdefault(dist, version)
    user = next((f for f in reversed(frames) if is_user_file(f[0])), None)
    return LocalContext(
        exception=_qualname(type(exc)),
        modules=frozenset(m for m in modules if m),
        installed=installed,
        user_code=read_source(*user[:3]) if user else None,
    )


def from_pasted_traceback(query: Any) -> LocalContext | None:
    """What a pasted traceback (a parsed ``Query``) tells of who took part: the folders of its frames' files.

    A library's import package is a folder on the path of each of its frames, wherever it is installed
    (site-packages, an editable checkout), so a record whose package names no folder of any frame, and
    not the exception's module, is about a library that did not run. Only a traceback with frames says
    this; for anything else there is no context (``None``), and the answer stands as retrieved.
    """
    if getattr(query, "kind", None) != "traceback" or not query.frames:
        return None
    folders = {part for frame in query.frames for part in re.split(r"[/\\]", frame.file)[:-1] if part}
    qualname = query.exception_qualname or query.exception_class or "this error"
    roots = {qualname.split(".")[0]} if "." in qualname else set()
    return LocalContext(exception=qualname, modules=frozenset(folders | roots | set(query.libraries)))


def format_traceback(exc: BaseException, tb: TracebackType | None = None) -> str:
    """The traceback as the interpreter prints it (chained exceptions included)."""
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


def without_leading(tb: TracebackType | None, modules: tuple[str, ...]) -> TracebackType | None:
    """``tb`` from its first frame outside ``modules`` (top-level names): a host's frames that ran user code
    (IPython's cell runner, pytest's test runner) are not part of the error."""
    start = tb
    while start is not None and _module_root(start) in modules:
        start = start.tb_next
    return start or tb


def _module_root(tb: TracebackType) -> str:
    return str(tb.tb_frame.f_globals.get("__name__") or "").split(".")[0]


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` first, then its causes and contexts, each once."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo:
        error = todo.pop(0)
        if any(error is s for s in seen):
            continue
        seen.append(error)
        todo += [e for e in (error.__cause__, error.__context__) if e is not None]
    return seen


def _frames(tb: TracebackType | None):
    while tb is not None:
        code = tb.tb_frame.f_code
        yield code.co_filename, tb.tb_lineno, code.co_name, _module_root(tb)
        tb = tb.tb_next


def _class_modules(cls: type) -> list[str]:
    """Top-level modules of an exception class and its bases (``httpx.ConnectError`` -> ``httpx``)."""
    roots = [str(getattr(c, "__module__", "") or "").split(".")[0] for c in cls.__mro__]
    return [r for r in roots if r not in {"builtins", "__main__", ""}]


def _qualname(cls: type) -> str:
    module = getattr(cls, "__module__", "")
    return cls.__qualname__ if module in {"builtins", "__main__", None, ""} else f"{module}.{cls.__qualname__}"


def _add(items: list[str], item: str) -> None:
    if item and item not in items:
        items.append(item)


def is_user_file(path: str) -> bool:
    """Source outside the interpreter's own library and installed packages: a file, or a cell IPython keeps."""
    if not path or not (os.path.isfile(path) or path in linecache.cache):
        return False
    path = os.path.realpath(path)
    return not any(path.startswith(folder + os.sep) for folder in _library_folders())


@lru_cache(maxsize=1)
def _library_folders() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    folders = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    folders |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    return tuple(sorted(os.path.realpath(f) for f in folders if f))


def read_source(file: str, line: int, function: str, neighbours: int = NEIGHBOURS) -> SourceLines | None:
    """The failing line and ``neighbours`` lines on each side, as the file now reads on disk."""
    linecache.checkcache(file)
    lines = linecache.getlines(file)
    if not 0 < line <= len(lines):
        return None
    first, last = max(1, line - neighbours), min(len(lines), line + neighbours)
    while last > line and not lines[last - 1].strip():
        last -= 1  # no blank lines trailing after the failing one
    picked = tuple((n, lines[n - 1].rstrip("\n")) for n in range(first, last + 1))
    return SourceLines(file, line, function, picked)


@lru_cache(maxsize=1)
def _packages_distributions() -> dict[str, list[str]]:
    import importlib.metadata  # here, not at the top: only an error to explain needs it

    return importlib.metadata.packages_distributions()


@cache
def installed_distributions(module: str) -> tuple[tuple[str, str], ...]:
    """The installed distributions that provide top-level module ``module``, with their versions."""
    import importlib.metadata

    found = []
    for dist in _packages_distributions().get(module, []):
        try:
            found.append((dist, importlib.metadata.version(dist)))
        except importlib.metadata.PackageNotFoundError:
            continue
    return tuple(dict(found).items())


def record_packages(record: Any) -> list[str]:
    """Import names a record's library may have: its repo's name, then the top folder of its raising file.

    ``encode/httpx`` -> ``httpx``; ``slackapi/bolt-python`` with ``slack_bolt/app/app.py`` -> ``bolt``,
    ``slack_bolt``; ``libs/cli/langgraph_cli/cli.py`` -> ``langgraph``, ``langgraph_cli``. Only the top
    folder counts: a subfolder such as ``utils`` would match the user's own ``utils.py``.
    """
    repo_name = str(getattr(record, "repo", "")).rsplit("/", 1)[-1]
    for suffix in ("-sdk-python", "-python", "-py"):
        repo_name = repo_name.removesuffix(suffix)
    names = [repo_name.replace("-", "_")]
    folders = [p for p in str(getattr(record, "file_path", "") or "").split("/")[:-1] if p]
    if folders and folders[0] in _MONOREPO_FOLDERS:
        folders = folders[2:]  # libs/<project>/<package>/...
    elif folders and folders[0] in _SOURCE_FOLDERS:
        folders = folders[1:]
    if folders and folders[0].isidentifier():
        names.append(folders[0])
    return [n for n in dict.fromkeys(names) if n]


def installed_version(record: Any) -> tuple[str, str] | None:
    """The installed distribution and version of the library a record is about, when it is installed."""
    import importlib.metadata

    for name in record_packages(record):
        found = installed_distributions(name)
        if found:
            return found[0]
        try:
            return name, importlib.metadata.version(name)
        except (importlib.metadata.PackageNotFoundError, ValueError):
            continue
    return None
