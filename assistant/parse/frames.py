"""Traceback frames in the layouts people paste: Python's own, IPython 8 and 7, pytest's failure report
and Rich's boxed tracebacks. ``query.py`` finds the error line; this module reads where it was raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A traceback frame line: File "path", line N, in func
FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
# IPython / Jupyter frames: ``File ~/proj/app.py:12, in main(x)`` and ``Cell In[3], line 5``.
_IPYTHON_FRAME_RE = re.compile(
    r"^\s*(?:File (?P<file>\S.*?):(?P<line>\d+)|(?P<cell>Cell In\s?\[\d*\]), line (?P<cell_line>\d+))"
    r"(?:, in (?P<func>[^\s(]+)(?:\(.*\))?)?\s*$"  # IPython 8 shows the arguments: ``in f(x, y)``
)
# IPython 7 and older name the file and function only: ``/usr/lib/python3.7/site-packages/x/y.py in f(a, b)``
# or ``<ipython-input-3-1c2d> in <module>()``; the line number is the one the arrow below points at.
_IPYTHON7_FRAME_RE = re.compile(
    r"^\s*(?P<file>(?:/|~|[A-Za-z]:\\|\.{1,2}/)\S*\.py|<ipython-input-[\w-]+>) in (?P<func>[^\s(]+)(?:\(.*\))?\s*$"
)
# pytest's and Rich's frames: ``tests/test_api.py:12: in test_get`` and ``│ /app/crew.py:512 in kickoff │``.
_PY_FILE = r"(?P<file>(?:[A-Za-z]:)?[^:\s][^:]*?\.py):(?P<line>\d+)"  # ``C:\app\x.py:12`` too
_LOCATION_FRAME_RE = re.compile(rf"^\s*{_PY_FILE}:? in (?P<func>[^\s(]+)\s*$")
# pytest's last location line, ``tests/test_api.py:12: KeyError``: where the test failed, and with what.
_PYTEST_WHERE_RE = re.compile(rf"^{_PY_FILE}: (?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*$")
# pytest marks the failing source line with ``>`` and prefixes the error's lines with ``E``.
_PYTEST_CODE_RE = re.compile(r"^>\s+(?P<code>\S.*)$")
_PYTEST_ERROR_RE = re.compile(r"^E {2,}(?P<rest>\S.*)$")
# Rich draws a traceback in a box (``│ ... │``) and marks the failing line ``❱ 512 │ code``.
_RICH_BORDERS = "│┃|"
_RICH_CODE_RE = re.compile(r"^\s*❱\s*\d+\s*│(?P<code>.*)$")
# The failing line under an IPython frame: ``----> 5 total += row["amount"]``.
_IPYTHON_ARROW_RE = re.compile(r"^-+>\s*(?P<line>\d+)\s(?P<code>.*)$")
# Where installed packages and Python's own modules live.
SITE_PACKAGES_RE = re.compile(r"(?:site|dist)-packages[/\\](?P<lib>[A-Za-z_][\w\-]*)")
_STDLIB_PATH_RE = re.compile(r"[/\\]lib[/\\](?:python|pypy)\d[\d.]*[/\\](?!(?:site|dist)-packages)")


# The columns a log viewer prints before each line: ``api-1  | ``, ``168.5s | 231 | `` (one space kept off).
_COLUMNS_RE = re.compile(r"^(?P<prefix>(?:[\w.:-]+[ \t]*\|(?: |$))+)")
# A CI log's timestamp before each line: GitHub Actions' ``2024-05-01T10:00:00.1234567Z ``.
_STAMP_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")
# An exception group's drawing (Python 3.11+): ``  | `` before each line of a traceback inside it, and the
# ``+-+---- 1 ----`` rules between its sub-exceptions.
_GROUP_BAR_RE = re.compile(r"^[ \t]*(?:\| ?|\+ (?=Exception Group Traceback))")
_GROUP_RULE_RE = re.compile(r"^[ \t]*\+[-+]*(?:-+ (?:\d+|\.\.\.) -+|-+)?[ \t]*$")
_GROUP_INDEX_RE = re.compile(r"^[ \t]*\+-\+-+ \d+ -+[ \t]*$")  # ``+-+---------------- 1 ----------------``


@dataclass(frozen=True)
class Frame:
    """One frame of a traceback: where the code ran, and the source line shown under it when pasted."""

    file: str
    line: int
    function: str | None
    code: str | None = None  # the source line the traceback shows under the frame

    @property
    def in_library(self) -> bool:
        """Installed packages' code (site-packages) or Python's own (its lib folder), not the user's."""
        path = self.file.replace("\\", "/")
        return self.in_installed_package or bool(_STDLIB_PATH_RE.search(path) or path.startswith("<frozen"))

    @property
    def in_installed_package(self) -> bool:
        """An installed package's code (site-packages), not Python's own lib folder nor the user's."""
        return bool(SITE_PACKAGES_RE.search(self.file.replace("\\", "/")))


def unframed(lines: list[str]) -> list[str]:
    """The lines of a paste with pytest's ``E`` prefixes, Rich's box borders and a log viewer's columns taken
    off, so their error lines read as plain ones (``E       KeyError: 'amount'``, ``│ /app/crew.py:512 in
    kickoff │``, docker compose's ``api-1  | ValueError: ...``), a CI log's timestamps and an exception group's
    ``|`` bars."""
    lines = _without_columns(lines)
    lines = _without_stamps(lines)
    if any("Exception Group Traceback" in line or _GROUP_INDEX_RE.match(line) for line in lines):
        lines = [_GROUP_BAR_RE.sub("", line) for line in lines if not _GROUP_RULE_RE.match(line)]
    if any(line.lstrip().startswith("╭") and "Traceback" in line for line in lines):
        lines = [_unboxed(line) for line in lines]
    if is_pytest_report(lines):
        lines = [m["rest"] if (m := _PYTEST_ERROR_RE.match(line)) else line for line in lines]
    return lines


def _without_columns(lines: list[str]) -> list[str]:
    """Lines without the columns a log viewer prints before each (docker compose's ``api-1  | ``, Kaggle's
    ``168.5s | 231 | ``): taken off only when most lines have as many, so a ``a | b`` in prose stays."""
    counts = [m["prefix"].count("|") if (m := _COLUMNS_RE.match(line)) else 0 for line in lines]
    filled = [c for line, c in zip(lines, counts, strict=True) if line.strip()]
    columns = max(set(filled), key=filled.count) if filled else 0
    if not columns or not _most(filled.count(columns), lines):
        return lines
    return [
        line[_COLUMNS_RE.match(line).end() :] if count == columns else line
        for line, count in zip(lines, counts, strict=True)
    ]


def _most(count: int, lines: list[str]) -> bool:
    """Whether ``count`` lines are most of the non-blank ``lines`` (and at least two): a prefix every log
    line carries, not one line that happens to start so."""
    return count >= max(2, 0.6 * sum(1 for line in lines if line.strip()))


def _without_stamps(lines: list[str]) -> list[str]:
    """Lines without a CI log's timestamps, when most lines carry one."""
    if not _most(sum(1 for line in lines if _STAMP_RE.match(line)), lines):
        return lines
    return [_STAMP_RE.sub("", line, count=1) for line in lines]


def _unboxed(line: str) -> str:
    """A line of Rich's box without its borders (string operations: a regex with a lazy middle and
    optional trailing spaces took seconds on a line of a few thousand spaces)."""
    inner = line.strip()
    if not inner or inner[0] not in _RICH_BORDERS:
        return line
    inner = inner[1:]
    if inner and inner[-1] in _RICH_BORDERS:
        inner = inner[:-1]
    return inner.strip()


def _location_code(lines: list[str], i: int) -> str | None:
    """The source line shown under a pytest or Rich frame: Rich's ``❱`` line, else pytest's indented one."""
    for nxt in lines[i + 1 : i + 12]:
        if _LOCATION_FRAME_RE.match(nxt):
            break
        if m := _RICH_CODE_RE.match(nxt) or _PYTEST_CODE_RE.match(nxt.strip()):
            return m["code"].replace("│", " ").strip() or None
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    return nxt.strip() if nxt[:1].isspace() and nxt.strip() else None


def _arrow_below(lines: list[str], i: int) -> re.Match[str] | None:
    """The ``---->`` line IPython shows under the frame at line ``i``: the frame's line and its source."""
    return next(filter(None, map(_IPYTHON_ARROW_RE.match, lines[i + 1 : i + 12])), None)


def read_frames(lines: list[str]) -> tuple[Frame, ...]:
    """Each traceback frame with the source line shown under it (plain, IPython/Jupyter, pytest and Rich
    layouts; :func:`unframed` lines)."""
    frames: list[Frame] = []
    for i, line in enumerate(lines):
        m = FRAME_RE.match(line)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            usable = code and not FRAME_RE.match(lines[i + 1]) and lines[i + 1][:1].isspace()
            func = (m["func"] or "").strip() or None
            frames.append(Frame(m["file"], int(m["line"]), func, code if usable else None))
            continue
        m = _IPYTHON_FRAME_RE.match(line)
        if m:
            arrow = _arrow_below(lines, i)
            file = m["file"] or m["cell"]
            frames.append(
                Frame(file, int(m["line"] or m["cell_line"]), m["func"], arrow["code"].strip() if arrow else None)
            )
            continue
        m = _IPYTHON7_FRAME_RE.match(line)
        if m:
            arrow = _arrow_below(lines, i)
            if arrow:  # IPython always points at the frame's line; without one it is prose that looks alike
                frames.append(Frame(m["file"], int(arrow["line"]), m["func"], arrow["code"].strip()))
            continue
        m = _LOCATION_FRAME_RE.match(line)
        if m:
            frames.append(Frame(m["file"], int(m["line"]), m["func"], _location_code(lines, i)))
            continue
        m = _PYTEST_WHERE_RE.match(line)
        if m:  # the test's own frame: the code is the ``>`` line above it
            above = (c for c in map(_PYTEST_CODE_RE.match, reversed(lines[max(0, i - 30) : i])) if c)
            code = next(above, None)
            frames.append(Frame(m["file"], int(m["line"]), None, code["code"].strip() if code else None))
    return tuple(frames)


def is_pytest_report(lines: list[str]) -> bool:
    """A pytest failure report: its error lines are prefixed with ``E``."""
    return any(_PYTEST_ERROR_RE.match(line) for line in lines)
