"""Pasted text made well-formed before anything reads it: no lone surrogates, no invisible characters.

Why: a Python ``str`` may hold lone surrogates (``"\\ud800"``, or the ``surrogateescape`` of invalid
UTF-8 in ``sys.argv``), which cannot be encoded: the tokenizer of the embedding model raised ``TypeError``
on them, from every front end. Zero-width characters (U+200B and the like, copied from chat apps and web
pages) between the letters of an error message kept a known error from matching its record. Both are
cheap to find, so the common text, which has neither, is returned as it is.
"""

from __future__ import annotations

import re

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# Invisible format characters that may sit inside words: zero-width space, non-joiner, joiner, word
# joiner, byte order mark, soft hyphen, Mongolian vowel separator, and the bidirectional controls.
_INVISIBLE_RE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def well_formed(text: str) -> str:
    """``text`` with surrogate pairs joined, lone surrogates as U+FFFD and invisible characters removed."""
    if _SURROGATE_RE.search(text):
        # A pair written as two escapes becomes its character; a lone surrogate (including the
        # surrogateescape of an invalid UTF-8 byte in argv) becomes U+FFFD.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return _INVISIBLE_RE.sub("", text)
