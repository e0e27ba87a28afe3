"""Turning pasted text into a Query: the error line, traceback frames and the libraries involved.

People paste whole tracebacks (chained ones too), bare ``Class: message`` lines, log lines with
timestamps and levels, ``warnings`` output (``path.py:12: SomeWarning: message``), any of these inside
markdown or Slack code fences, or ask in prose. The parser finds the one error line that matters (the
last raised), the frames, and the libraries, without calling any model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .django_page import django_page_error
from .error_line import EXC_LINE_RE, is_exception_class, looks_like_message
from .frames import FRAME_RE, SITE_PACKAGES_RE, Frame, is_pytest_report, read_frames, unframed
from .prose import described_message, inline_error, message_paragraph, raised_message, status_line
from .text_input import json_log_text, paste_text, well_formed

# The header IPython / Jupyter print above a traceback: ``ValueError      Traceback (most recent call last)``.
# It names the class even when the pasted traceback is cut before its last line.
_IPYTHON_HEAD_RE = re.compile(
    r"^\s*(?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Za-z_]\w*))\s{2,}Traceback \(most recent call last\)"
)
# VS Code's debugger: ``Exception has occurred: ConnectionError`` with the message after it or on the next line.
_DEBUGGER_RE = re.compile(
    r"^Exception has occurred:\s+(?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Za-z_]\w*))(?:\s+(?P<msg>\S.*))?$"
)
# An exception written as its repr: ``ValueError("Gadget mode turbo is unknown")``, ``ConnectError('...')``.
_REPR_RE = re.compile(
    r"(?<![\w.])(?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z]\w*))\((?P<q>['\"])(?P<msg>[^\n]*?)(?P=q)(?:,[^()\n]*)?\)"
)
# What stands before an exception's repr in a log line rather than in code: a colon, or asyncio's
# ``<Task finished ... exception=ValueError('...')>``.
_REPR_LEAD_RE = re.compile(r"(?::\s*|\bexception=)$")
# An error told at the end of a log message, after a colon: ``Gadget sync failed: ConnectionRefusedError: ...``.
_TOLD_RE = re.compile(r":\s(?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z]\w*(?:Error|Exception))):\s(?P<msg>\S.*)$")
# A rule pytest draws between its sections: ``===== 1 failed, 3 passed in 0.12s =====``, ``____ test_x ____``.
_RULE_RE = re.compile(r"^(?:={3,}|_{3,})(?: .*? (?:={3,}|_{3,}))?$")
# pytest's short test summary: ``FAILED tests/test_x.py::test_y - KeyError: 'amount'``.
_PYTEST_SUMMARY_RE = re.compile(r"^(?:FAILED|ERROR) \S+::\S+(?: - (?P<rest>.+))$")
# ``warnings`` output: ``/path/file.py:22: UserWarning: message``.
_WARNING_LINE_RE = re.compile(
    r"^(?P<path>\S.*?):(?P<lineno>\d+): (?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Za-z_]\w*Warning)):(?:\s(?P<msg>.*))?$"
)
_LEVEL_RE = re.compile(r"(?<![\w])(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|EXCEPTION)(?![\w])")
# What may stand before a log level: a timestamp, brackets, a process id, a logger name and separators.
_LOG_HEAD_RE = re.compile(r"^[\s\[\]()\d:.,TZ+\-/|]*(?:[\w.\-]+\s*[\]:|\-]+\s*)?[\s\[\]()\d:.,TZ+\-/|]*$")
# What may follow it: a process name (Celery's ``[... ERROR/MainProcess]``), separators, then an optional
# lower-case logger name (``httpx:``, ``root -``).
_LOG_SEPARATORS_RE = re.compile(r"^(?:/[\w.-]+)?[\s\]:|\-]*")
_LOGGER_RE = re.compile(r"^(?:[a-z_][\w.]*|[A-Za-z_]\w*(?:\.\w+)+)(?::[\w<>]+)*(?::\d+)?(?:\s*(?:\s-|\s\|)\s+|\s*:\s*)")
_FENCE_RE = re.compile(r"^\s*```[\w+-]*\s*$|```")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A source location that pytest prints under an error (``test_sess.py:12:  def sess_level(func_level)``, the
# fixtures of a ``ScopeMismatch``): where the message's own lines end.
_LOCATION_LINE_RE = re.compile(r"^\S+\.py:\d+:(?:\s|$)")
_CHAIN_MARKERS = ("During handling of the above exception", "The above exception was the direct cause")
# A Rust panic as the standard library prints it, before PyO3 raises it as ``pyo3_runtime.PanicException``:
# ``thread '<unnamed>' panicked at 'message', src/x.rs:12:5`` (Rust < 1.73) or ``... panicked at src/x.rs:12:5:``
# with the message after it (on the next line, or on the same one once a paste has run the lines together).
_PANIC_RE = re.compile(
    r"^thread '[^']*' panicked at (?:'(?P<old>.*)', \S+?\.rs:\d+:\d+|\S+?\.rs:\d+:\d+:(?:\s+(?P<new>\S.*?))?)"
    r"(?:\s*note: run with `RUST_BACKTRACE.*)?$"
)
_RUST_NOTE = "note: run with `RUST_BACKTRACE"
# A C or C++ check's own line, where a paste lost the Python line that carried it: FAISS's ``IndexPQ.cpp:226:
# Error: 'is_trained' failed``. Its text is the message; the class is not known.
_NATIVE_SOURCE_RE = re.compile(r"\.(?:c|cc|cpp|cxx|cu|h|hpp|pyx)$")
_NATIVE_LOCATION_RE = re.compile(r"^(?P<path>[\w./\\-]+\.(?:c|cc|cpp|cxx|cu|h|hpp|pyx)):\d+(?::\d+)?: (?P<msg>\S.*)$")


@dataclass(frozen=True)
class Query:
    """What errata understood of a paste."""

    text: str
    kind: str  # "traceback", "message", "log", "question" or "empty"
    exception_class: str | None = None
    exception_qualname: str | None = None
    message: str | None = None
    frames: tuple[Frame, ...] = ()
    libraries: tuple[str, ...] = ()
    truncated: bool = False
    notes: tuple[str, ...] = field(default=())
    # Error lines of the exceptions earlier in a chain ("During handling of the above exception ...").
    causes: tuple[str, ...] = ()
    # The log level when the error came from a log line.
    level: str | None = None
    # The C or C++ source file a native check's line names (``IndexPQ.cpp``: see _NATIVE_LOCATION_RE), which
    # raised the error where the Python frames end.
    raised_in: str | None = None

    @property
    def error_line(self) -> str | None:
        """``Class: message`` as it would be printed, when one was found."""
        if self.exception_class is None:
            return self.message
        return f"{self.exception_class}: {self.message}" if self.message else self.exception_class


@dataclass(frozen=True)
class _ErrorLine:
    index: int
    qual: str | None
    cls: str | None
    message: str | None
    level: str | None = None
    path: str | None = None


def clean_text(raw: str | bytes, max_chars: int) -> tuple[str, list[str]]:
    """Printable text, at most ``max_chars`` of it (keeping the end, where the error line is)."""
    notes: list[str] = []
    raw = paste_text(raw)  # a clear TypeError for what is not text (text_input.py)
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    raw = json_log_text(well_formed(raw))  # lone surrogates, zero-width characters, JSON logs (text_input.py)
    if "\x00" in raw or len(_CONTROL_RE.findall(raw[:10_000])) > 50:
        notes.append("the paste held binary data; it was dropped")
    text = _CONTROL_RE.sub("", raw).replace("\r\n", "\n").replace("\r", "\n")
    if len(text) > max_chars:
        text = text[-max_chars:]
        text = text[text.find("\n") + 1 :] if "\n" in text[:2000] else text
        notes.append(f"the paste was longer than {max_chars} characters; only its last part was read")
    return text.strip(), notes


def parse_query(raw: str | bytes, *, max_chars: int = 20_000) -> Query:
    """Find the final error line, frames and libraries in whatever was pasted."""
    text, notes = clean_text(raw, max_chars)
    if not text:
        return Query(text="", kind="empty", notes=tuple(notes))
    lines = [_FENCE_RE.sub("", line).rstrip() for line in text.split("\n")]
    if not is_pytest_report(lines):  # pytest marks its code lines with ``> ``
        lines = [line[2:] if line.startswith("> ") else line for line in lines]  # Slack / markdown quotes
    lines = unframed(lines)  # a quoted pytest report is read once its quotes are off
    body = "\n".join(lines).strip()
    frames = read_frames(lines)
    is_traceback = bool(frames) or any(line.strip().startswith("Traceback (most recent call last)") for line in lines)
    found = _error_lines(lines)
    last = _the_error(found)
    page = django_page_error(lines)  # Django's debug page: ``DisallowedHost at /`` and the message under it
    if page is not None:
        last = _ErrorLine(page.index, page.qual, page.cls, page.message)
    causes = tuple(_render(e) for e in found[:-1] if e.cls) if is_traceback else ()

    if is_traceback:
        kind = "traceback"
    elif last is not None and (last.level or last.path):
        kind = "log"
    elif last is not None and last.cls:
        kind = "message" if not _is_prose(lines, last) else "question"
    elif looks_like_message(body):
        kind = "message"
    else:
        kind = "question"

    qual, cls, message, level = (last.qual, last.cls, last.message, last.level) if last else (None, None, None, None)
    if is_traceback and cls is None:
        head = next(filter(None, map(_IPYTHON_HEAD_RE.match, lines)), None)
        if head is not None:
            qual, cls = head["qual"], head["cls"]
    if is_traceback and cls is not None and message is None:
        message = described_message(body, cls)
    if kind == "question":
        qual, cls, message = inline_error(body)
        if cls is None and message is None:
            qual, cls, message = raised_message(body) or (None, None, message_paragraph(lines) or status_line(lines))
    elif kind == "message" and last is None:
        message = body
    paths = [f.file for f in frames] + [e.path for e in found if e.path]
    libraries = _libraries(paths, qual)
    return Query(
        text=body,
        kind=kind,
        exception_class=cls,
        exception_qualname=qual,
        message=message,
        frames=frames,
        libraries=libraries,
        notes=tuple(notes),
        truncated=any("longer than" in n for n in notes),
        causes=causes,
        level=level,
        raised_in=last.path
        if last is not None and last.cls is None and _NATIVE_SOURCE_RE.search(last.path or "")
        else None,
    )


def _native_source(error: _ErrorLine | None) -> str | None:
    """The C or C++ file of a native check's line when that line is the error (see Query.raised_in)."""
    if error is None or error.cls is not None or not _NATIVE_SOURCE_RE.search(error.path or ""):
        return None
    return error.path


def _render(error: _ErrorLine) -> str:
    return f"{error.cls}: {error.message}" if error.cls and error.message else (error.cls or error.message or "")


def _the_error(found: list[_ErrorLine]) -> _ErrorLine | None:
    """The error the paste is about: the last one, unless that is a ``warnings`` line printed after an
    exception (a notebook's log goes on after the ``ValueError`` with a library's ``FutureWarning``) or a log
    line telling an exception printed above it."""
    if not found:
        return None
    last = found[-1]
    if last.level and not last.cls and last.message:
        # A log line reporting an exception printed above it (``WARNING - Todo failed: 1 validation error for
        # Crew`` under ``pydantic_core...ValidationError: 1 validation error for Crew``): the exception is the error.
        told = [e for e in found[:-1] if e.cls and e.message and e.message.split("\n", 1)[0] in last.message]
        if told:
            return told[-1]
    if last.path and last.cls and last.cls.endswith("Warning"):
        raised = [e for e in found if e.cls and not e.path and not e.cls.endswith("Warning")]
        if raised:
            return raised[-1]
    return last


def _error_lines(lines: list[str]) -> list[_ErrorLine]:
    """Every exception, warning or log error line, in order, each with its continuation lines."""
    found: list[_ErrorLine] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        error = _match_error_line(i, line)
        if error is None:
            i += 1
            continue
        j = i + 1
        extra: list[str] = []
        # Messages may run over several lines; a log line's where it ends with a colon (uvicorn's ``... bind on
        # address ('0.0.0.0', 8000):`` and ``address already in use`` under it).
        if (error.cls and (not error.path or not error.message)) or (
            error.level and (error.message or "").endswith(":")
        ):
            while j < len(lines):
                nxt = lines[j].strip()
                if (
                    not nxt
                    or FRAME_RE.match(lines[j])
                    or nxt.startswith(("Traceback (most recent", *_CHAIN_MARKERS))
                    or _RULE_RE.match(nxt)
                    or _LOCATION_LINE_RE.match(nxt)
                    or nxt.startswith(_RUST_NOTE)
                    or _match_error_line(j, nxt) is not None
                ):
                    break
                extra.append(nxt)
                j += 1
        if extra:
            message = "\n".join([error.message or "", *extra]).strip()
            error = _ErrorLine(error.index, error.qual, error.cls, message or None, error.level, error.path)
        found.append(error)
        i = j
    return found


def _match_error_line(index: int, line: str) -> _ErrorLine | None:
    if not line or FRAME_RE.match(line):
        return None
    summary = _PYTEST_SUMMARY_RE.match(line)  # ``FAILED tests/test_x.py::test_y - KeyError: 'amount'``
    if summary:
        line = summary["rest"]
    m = _WARNING_LINE_RE.match(line)
    if m:
        return _ErrorLine(index, m["qual"], m["cls"], (m["msg"] or "").strip() or None, None, m["path"])
    m = _DEBUGGER_RE.match(line)
    if m:
        return _ErrorLine(index, m["qual"], m["cls"], (m["msg"] or "").strip() or None, None)
    m = _PANIC_RE.match(line)
    if m:
        message = (m["old"] or m["new"] or "").strip() or None
        return _ErrorLine(index, "pyo3_runtime.PanicException", "PanicException", message, None)
    m = _NATIVE_LOCATION_RE.match(line)
    if m:
        return _ErrorLine(index, None, None, m["msg"].strip(), None, m["path"])
    level = None
    stripped = line
    lm = _LEVEL_RE.search(line[:80])
    if lm and _LOG_HEAD_RE.match(line[: lm.start()]):
        level = "WARNING" if lm["level"] == "WARN" else lm["level"]
        rest = line[lm.end() :]
        stripped = rest[_LOG_SEPARATORS_RE.match(rest).end() :].strip()
        m = EXC_LINE_RE.match(stripped)
        if not (m and is_exception_class(m["qual"], m["cls"], m["msg"])):
            logger = _LOGGER_RE.match(stripped)
            stripped = stripped[logger.end() :].strip() if logger else stripped
    m = EXC_LINE_RE.match(stripped)
    if m and is_exception_class(m["qual"], m["cls"], m["msg"]):
        return _ErrorLine(index, m["qual"], m["cls"], (m["msg"] or "").strip() or None, level)
    r = _REPR_RE.search(stripped)
    if r and r["cls"].endswith(("Error", "Exception")) and _REPR_LEAD_RE.search(stripped[: r.start()]):
        # An exception told as its repr after a colon (Celery's ``raised unexpected: ValueError("...")``) or
        # asyncio's ``exception=``; not a line of code (``raise ValueError("...")``).
        return _ErrorLine(index, r["qual"], r["cls"], r["msg"].strip() or None, level)
    if level and stripped:
        told = _TOLD_RE.search(stripped)  # ``Gadget sync failed: ConnectionRefusedError: [Errno 111] ...``
        if told and is_exception_class(told["qual"], told["cls"], told["msg"]):
            return _ErrorLine(index, told["qual"], told["cls"], told["msg"].strip(), level)
        return _ErrorLine(index, None, None, stripped, level)
    return None


def _libraries(paths, qualname: str | None) -> tuple[str, ...]:
    """Top-level packages seen in site-packages paths, then the module of the exception class."""
    seen: list[str] = []
    for path in paths:
        m = SITE_PACKAGES_RE.search(path)
        if m:
            lib = normalize_library(m["lib"].split("-")[0])
            if lib not in seen:
                seen.append(lib)
    if qualname and "." in qualname:
        root = normalize_library(qualname.split(".")[0])
        if root not in seen and root not in {"builtins", "exceptions", "__main__"}:
            seen.append(root)
    return tuple(seen)


def normalize_library(name: str) -> str:
    """``Sentence-Transformers`` and ``sentence_transformers`` name the same library."""
    return name.strip().lower().replace("-", "_")


def _is_prose(lines: list[str], error: _ErrorLine) -> bool:
    """An error line that is only part of what people wrote around it, ending in a question.

    An error line set apart on its own (a blank line or the paste's start before it, as people paste what
    their program printed) or ending the paste is the error itself, whatever is written around it."""
    if error.cls and error.message:
        set_apart = error.index == 0 or not lines[error.index - 1].strip()
        if set_apart or not any(line.strip() for line in lines[error.index + 1 :]):  # or it ends the paste
            return False
    other = [line for i, line in enumerate(lines) if line.strip() and i != error.index]
    words = sum(len(line.split()) for line in other)
    return words > 12 and "?" in "\n".join(other)
