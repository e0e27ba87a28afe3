"""What an error line looks like: ``Class: message``, a class name that is an exception's, a line that is one.

Shared by the parse of pasted lines (``query.py``) and of errors told in prose (``prose.py``).
"""

from __future__ import annotations

import builtins
import re

# ``pkg.module.Class: message`` (the message is optional for a class that is clearly an exception), also
# as apps and frameworks log it: ``KeyError encountered: '__start__'``, ``ValueError occurred: ...``.
EXC_LINE_RE = re.compile(
    r"^(?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Za-z_]\w*))"
    r"(?:(?:\s(?:encountered|occurred|raised|was raised|thrown|caught))?:(?:\s(?P<msg>.*))?)?$"
)
_EXC_SUFFIXES = (
    "Error",
    "Exception",
    "Warning",
    "Exit",
    "Interrupt",
    "Iteration",
    "Fault",
    "Failure",
    "Timeout",
    "Denied",
    "Invalid",
    "NotFound",
    "Refused",
    "Exceeded",
)
_CAMEL_CASE_RE = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+")
_BUILTIN_EXCEPTIONS = frozenset(
    name for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, BaseException)
)
# How a question, or a first-person remark, starts.
QUESTION_START_RE = re.compile(
    r"^(how|why|what|when|where|which|who|can|could|does|do|did|is|are|should|would|my|i|i'm|im|we|our|"
    r"any|anyone|hey|hi|hello|help|trying|getting|using)\b",
    re.IGNORECASE,
)


def is_exception_class(qual: str, cls: str, message: str | None) -> bool:
    """Whether ``qual`` names an exception class rather than a prose word before a colon."""
    if cls in _BUILTIN_EXCEPTIONS or cls.endswith(_EXC_SUFFIXES):
        return True
    if message is None:
        return False
    # ``pydantic_ai.exceptions.UnexpectedModelBehavior: ...``: a dotted path to a capitalised name.
    if "." in qual:
        return cls[:1].isupper() and not qual.startswith(("http.", "https."))
    # ``ScopeMismatch: You tried to access ...``: words run together in CamelCase, then a sentence (not a
    # version or an address, as in ``PyTorch: 2.1.0``).
    return _CAMEL_CASE_RE.fullmatch(cls) is not None and message[:1].isalpha() and not message.startswith("http")


def looks_like_message(text: str) -> bool:
    """A single short line that is not phrased as a question."""
    stripped = text.strip()
    return (
        "\n" not in stripped
        and not stripped.endswith("?")
        and len(stripped) < 400
        and not QUESTION_START_RE.match(stripped)
        and len(stripped.split()) <= 15  # longer lines without an exception class are prose
    )
