"""HTTP status codes told by number, searched by their reason phrase too.

People asking write "a 403 error" or "HTTP 429" where the library's message prints ``403 Forbidden`` or ``429 Too
Many Requests`` around a placeholder (``{response.status_code} Forbidden: ...``): the code alone meets no
word of the template, its phrase does. A number counts only where the text says it is a status (``HTTP``,
``status``, ``code`` or ``error`` beside it), not in "500 rows".
"""

from __future__ import annotations

import re
from http import HTTPStatus

_STATUS_RE = re.compile(
    r"\b(?:HTTP(?:/[\d.]+)?|status(?:[ _]code)?|code|error)\W{0,3}(?P<a>[45]\d\d)\b"
    r"|\b(?P<b>[45]\d\d)\W{0,3}(?:\w+\s)?(?:error|status|response)\b",
    re.IGNORECASE,
)
_PHRASES = {status.value: status.phrase for status in HTTPStatus if 400 <= status.value < 600}


def with_status_phrases(text: str) -> str:
    """``text`` followed by the reason phrases of the HTTP status codes it tells (none: ``text`` itself)."""
    codes = {int(m["a"] or m["b"]) for m in _STATUS_RE.finditer(text[:20_000])}
    phrases = [_PHRASES[code] for code in sorted(codes) if code in _PHRASES]
    return f"{text}\n{' '.join(phrases)}" if phrases else text
