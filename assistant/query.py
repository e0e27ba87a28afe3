"""Turning pasted text into a Query: the error line, traceback frames and the libraries involved."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A traceback frame line: File "path", line N, in func
_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
# The final exception line: optional dotted module path, class name, colon, message.
_EXC_LINE_RE = re.compile(
    r"^(?P<qual>(?:[A-Za-z_][\w]*\.)*(?P<cls>[A-Za-z_]\w*(?:Error|Exception|Warning|Exit|Interrupt|"
    r"Iteration|Fault|Failure|Timeout|Denied|Invalid|NotFound|Refused)\w*))(?::\s?(?P<msg>.*))?$"
)
_SITE_PACKAGES_RE = re.compile(r"(?:site|dist)-packages[/\\](?P<lib>[A-Za-z_][\w\-]*)")
_LOG_PREFIX_RE = re.compile(
    r"^\s*(?:\[?\d{4}-\d{2}-\d{2}[T ][\d:.,]+(?:Z|[+-]\d{2}:?\d{2})?\]?\s*)?"
    r"(?:\[?(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?:?\s*)"
    r"(?:\[?[\w.\-]+\]?\s*[:\-]\s*)?",
    re.IGNORECASE,
)
_FENCE_RE = re.compile(r"```[\w+-]*\n?")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str | None


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

    @property
    def error_line(self) -> str | None:
        """``Class: message`` as it would be printed, when one was found."""
        if self.exception_class is None:
            return self.message
        return f"{self.exception_class}: {self.message}" if self.message else self.exception_class


def clean_text(raw: str | bytes, max_chars: int) -> tuple[str, list[str]]:
    """Printable text, at most ``max_chars`` of it (keeping the end, where the error line is)."""
    notes: list[str] = []
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
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
    body = _FENCE_RE.sub("", text).replace("```", "")
    lines = [line.rstrip() for line in body.split("\n")]
    frames = tuple(
        Frame(m["file"], int(m["line"]), (m["func"] or "").strip() or None)
        for m in (_FRAME_RE.match(line) for line in lines)
        if m
    )
    libraries = _libraries(frame.file for frame in frames)
    is_traceback = bool(frames) or any(line.startswith("Traceback (most recent call last)") for line in lines)

    qual, cls, message, log_level = _last_exception_line(lines)
    if is_traceback:
        kind = "traceback"
    elif log_level:
        kind = "log"
    elif cls is not None or _looks_like_message(body):
        kind = "message"
    else:
        kind = "question"
    if kind == "question":
        qual = cls = None
        message = None
    return Query(
        text=body.strip(),
        kind=kind,
        exception_class=cls,
        exception_qualname=qual,
        message=message,
        frames=frames,
        libraries=libraries,
        notes=tuple(notes),
        truncated=any("longer than" in n for n in notes),
    )


def _libraries(files) -> tuple[str, ...]:
    seen: list[str] = []
    for file in files:
        m = _SITE_PACKAGES_RE.search(file)
        if m:
            lib = m["lib"].split("-")[0].lower()
            if lib not in seen:
                seen.append(lib)
    return tuple(seen)


def _last_exception_line(lines: list[str]) -> tuple[str | None, str | None, str | None, str | None]:
    """The last ``pkg.Class: message`` line (with its continuation lines), and a log level if any."""
    level = None
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip()
        if not line:
            continue
        prefix = _LOG_PREFIX_RE.match(line)
        stripped = line[prefix.end() :] if prefix and prefix.end() else line
        if prefix and prefix["level"]:
            level = level or prefix["level"].upper()
        m = _EXC_LINE_RE.match(stripped)
        if m and not _FRAME_RE.match(lines[i]):
            message = (m["msg"] or "").strip()
            tail = [t.strip() for t in lines[i + 1 :] if t.strip() and not _FRAME_RE.match(t)]
            if tail and not any(t.startswith(("During handling", "The above exception")) for t in tail):
                message = " ".join([message, *tail]).strip()
            return m["qual"], m["cls"], message or None, level
    if level:
        last = next(line for line in reversed(lines) if line.strip())
        prefix = _LOG_PREFIX_RE.match(last.strip())
        return None, None, last.strip()[prefix.end() if prefix else 0 :].strip() or None, level
    return None, None, None, None


def _looks_like_message(text: str) -> bool:
    """A single short line that is not phrased as a question."""
    stripped = text.strip()
    return (
        "\n" not in stripped
        and not stripped.endswith("?")
        and len(stripped) < 400
        and not re.match(r"^(how|why|what|when|where|which|can|does|do|is|my|i|we|our)\b", stripped, re.IGNORECASE)
    )
