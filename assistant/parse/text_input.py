"""Pasted text made well-formed before anything reads it: no lone surrogates, no invisible characters.

Why: a Python ``str`` may hold lone surrogates (``"\\ud800"``, or the ``surrogateescape`` of invalid
UTF-8 in ``sys.argv``), which cannot be encoded: the tokenizer of the embedding model raised ``TypeError``
on them, from every front end. Zero-width characters (U+200B and the like, copied from chat apps and web
pages) between the letters of an error message kept a known error from matching its record. A
terminal's colour codes around the class (``\x1b[1;31mValueError\x1b[0m: ...``) hid the error line. All are
cheap to find, so the common text, which has none, is returned as it is.
"""

from __future__ import annotations

import json
import re

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# Invisible format characters that may sit inside words: zero-width space, non-joiner, joiner, word
# joiner, byte order mark, soft hyphen, Mongolian vowel separator, and the bidirectional controls.
_INVISIBLE_RE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


# A terminal's colour and cursor codes (``\x1b[0;31m``), and the same codes whose escape character was lost
# on the way (a notebook's traceback pasted into a GitHub issue shows ``[0;31mValueError[0m``).
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_BARE_COLOUR_RE = re.compile(r"\[\d{1,3}(?:;\d{1,3})*m")


def paste_text(value: object) -> str | bytes:
    """What was pasted, as ``str`` or ``bytes``; a ``bytearray`` or ``memoryview`` is taken as its bytes.

    Every front end's text reaches the parser through here, so a wrong type (a number or a list from a JSON
    API, ``None``) is a ``TypeError`` naming what is accepted, not a regex's complaint about bytes.
    """
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    got = "None" if value is None else type(value).__name__
    raise TypeError(f"errata reads a paste as str, or as UTF-8 bytes or bytearray, not {got}")


def well_formed(text: str) -> str:
    """``text`` with surrogate pairs joined, lone surrogates as U+FFFD, and invisible characters and a
    terminal's colour codes removed."""
    text = without_lone_surrogates(text)
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
    if "[0" in text:
        codes = _BARE_COLOUR_RE.findall(text, 0, 20_000)
        if len(codes) >= 2 and any(c.startswith("[0") for c in codes):  # colours come with their reset, [0m
            text = _BARE_COLOUR_RE.sub("", text)
    return _INVISIBLE_RE.sub("", text)


def without_lone_surrogates(text: str) -> str:
    """``text`` with each surrogate pair joined into its character and each lone surrogate (including the
    surrogateescape of an invalid UTF-8 byte in argv) as U+FFFD: text every encoder accepts."""
    if not _SURROGATE_RE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def json_log_text(text: str) -> str:
    """``text`` with each line that is a JSON object (a structured log's record) written as its string
    values, one per line, their ``\\n`` escapes as new lines: the traceback a cloud log keeps in
    ``"exc_info"`` or ``"stack_trace"`` is then read as one. Other lines stay as they are."""
    if '{"' not in text:
        return text
    lines = []
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("{") and stripped.endswith("}") and len(stripped) <= 200_000:
            try:
                record = json.loads(stripped)
            except (ValueError, RecursionError):
                record = None
            if isinstance(record, dict):
                values = list(_strings(record))
                if any("\n" in v or "Error" in v or "Exception" in v for v in values):
                    lines.extend(values)
                    continue
        lines.append(line)
    return "\n".join(lines)


def _strings(value, depth: int = 0):
    """The string values of a JSON value, in order (nested ones too, a few levels down)."""
    if isinstance(value, str):
        yield value
    elif depth < 4 and isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif depth < 4 and isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)
