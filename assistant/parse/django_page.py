"""Django's error pages as people paste them: the debug page and its "copy-and-paste view".

The debug page opens with ``DisallowedHost at /`` and the message on the next line, then a table of
``Request Method:``, ``Exception Type:``, ``Exception Value:`` ... rows; its copy-and-paste view ends a
traceback with ``Exception Type: TemplateDoesNotExist at /`` and ``Exception Value: home.html``. Neither is a
``Class: message`` line, so without this the error of the most pasted web framework went unread (the class
taken for a title, or ``Exception`` read as the class with ``Type: ...`` its message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .error_line import is_exception_class

# ``Exception Type: TemplateDoesNotExist at /blog/`` (the view's path is optional: a page of a command).
_TYPE_ROW_RE = re.compile(r"^Exception Type:\s*(?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Za-z_]\w*))(?:\s+at\s+\S+)?$")
_VALUE_ROW_RE = re.compile(r"^Exception Value:\s*(?P<msg>.*)$")
# The page's heading: ``NoReverseMatch at /accounts/login/``.
_HEADING_RE = re.compile(r"^(?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z][A-Za-z0-9]*))\s+at\s+/\S*$")
# The rows of the page's table, which end a message told over lines.
_ROW_RE = re.compile(
    r"^(?:Request Method|Request URL|Django Version|Exception Type|Exception Value|Exception Location|"
    r"Raised during|Python Executable|Python Version|Python Path|Server time|Installed \w+|Traceback)\b"
)
_CAMEL_HUMPS_RE = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+")


@dataclass(frozen=True)
class PageError:
    """The error a Django page reports: its class as the page names it and its message."""

    index: int  # the line it was read from
    qual: str
    cls: str
    message: str | None


def django_page_error(lines: list[str]) -> PageError | None:
    """The error of a Django debug page or copy-and-paste view in ``lines``, or None when there is none.

    The table's ``Exception Type``/``Exception Value`` rows are read first (they name the error whatever
    is pasted around them); else the page's heading, a class name ``at /path`` with the message under it."""
    stripped = [line.strip() for line in lines]
    for i, line in enumerate(stripped):
        row = _TYPE_ROW_RE.match(line)
        if row is not None:
            return PageError(i, row["qual"], row["cls"], _value_row(stripped, i + 1))
    for i, line in enumerate(stripped):
        heading = _HEADING_RE.match(line)
        message = _message_under(stripped, i + 1) if heading is not None else None
        if heading is not None and message and _names_an_exception(heading["cls"], stripped, i):
            return PageError(i, heading["qual"], heading["cls"], message)
    return None


def _names_an_exception(cls: str, lines: list[str], i: int) -> bool:
    """A heading's class is an exception's by its name (``...Error``, ``DisallowedHost``: words run together)
    or because the page's table follows it."""
    table_follows = any(_ROW_RE.match(line) for line in lines[i + 1 : i + 6])
    return table_follows or is_exception_class(cls, cls, None) or _CAMEL_HUMPS_RE.fullmatch(cls) is not None


def _value_row(lines: list[str], start: int) -> str | None:
    """The ``Exception Value:`` row after the type row: its text, or the lines under it when it is empty
    (the page as copied from a browser puts the value on the next line)."""
    for i in range(start, min(start + 3, len(lines))):
        row = _VALUE_ROW_RE.match(lines[i])
        if row is not None:
            return row["msg"].strip() or _message_under(lines, i + 1)
    return None


def _message_under(lines: list[str], start: int) -> str | None:
    """The message's lines from ``start``: up to a blank line or the next row of the page's table."""
    taken: list[str] = []
    for line in lines[start:]:
        if not line or _ROW_RE.match(line):
            break
        taken.append(line)
    return "\n".join(taken) or None
