"""Which source files ingest reads and how: names safe to show, a bounded size, the encoding a file declares,
and a bounded excerpt of it for a record's ``sourceCode``.

Why: a file's path becomes a record's ``filePath`` and the path of its GitHub link, and both reach pages. A
wheel member named ``evilpkg/a)![x](http://127.0.0.1:9/ingest-pixel.png)(b.py`` made the browser fetch that
URL from an offline answer, ``<img …>.py`` rendered as an image, ``../../../../tmp/x.py`` went into the
link, and a file named ``mod\\xff.py`` (not UTF-8) stopped ``errata ingest`` with nothing written. A name
that is not a plain relative path of letters, digits and ``_ . - +`` is refused with a note instead.
A 50 MB module needed 2.3 GB to ingest, and an 800 MB comment line became an 839 MB ``sourceCode``: files
over :data:`MAX_SOURCE_BYTES` are skipped unread, and an excerpt keeps at most :data:`EXCERPT_LINE_CHARS`
of a line and :data:`EXCERPT_CHARS` in all. Sources are decoded as they declare (PEP 263), not as UTF-8
whatever their coding cookie says.
"""

from __future__ import annotations

import io
import re
import tokenize

# A module bigger than this is skipped (whole libraries' largest modules are ~1 MB); ingest holds ~46 times a
# module's size while it parses it.
MAX_SOURCE_BYTES = 4 << 20
EXCERPT_LINE_CHARS = 300  # of one line of a record's source excerpt; longer lines end in "…"
EXCERPT_CHARS = 6_000  # of the whole excerpt: the 99.9th percentile of 88,000 release-built ones is 2,800
MAX_PATH_CHARS = 500
_SAFE_CHAR = re.compile(r"[\w.+-]")  # Unicode letters and digits: a surrogate or a control is none of them
_SURROGATE = re.compile("[\ud800-\udfff]")


def unsafe_path_reason(path: str) -> str | None:
    """Why ``path`` (``pkg/module.py``, relative, ``/``-separated) must not become a record's ``filePath``, or
    None when it is a plain relative path of safe characters."""
    if len(path) > MAX_PATH_CHARS:
        return f"not a safe file name: {len(path)} characters, over the limit of {MAX_PATH_CHARS}"
    if path.startswith("/") or re.match(r"[A-Za-z]:", path):
        return "not a safe file name: an absolute path"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "not a safe file name: an empty, '.' or '..' part"
    bad = next((char for char in path if char != "/" and not _SAFE_CHAR.match(char)), None)
    if bad is not None:
        return f"not a safe file name: it holds {bad!r} (letters, digits and _ . - + only)"
    return None


def shown(path: str) -> str:
    """``path`` printable in a note: a byte that was not UTF-8 (a surrogate escape) as ``\\udcff``."""
    return path.encode("utf-8", "backslashreplace").decode("utf-8")


def decode_source(raw: bytes, errors: str = "strict") -> str:
    """The text of a Python source file, decoded as its coding cookie or byte-order mark says (PEP 263).

    Raises ``SyntaxError`` for an unknown or inconsistent declaration and ``UnicodeDecodeError`` for bytes
    the declared encoding cannot read (with ``errors="strict"``)."""
    encoding, _lines = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return raw.decode(encoding, errors)


def excerpt(lines: list[str], start: int, end: int) -> tuple[str, int]:
    """Lines ``start`` to ``end`` (1-based, inclusive) as a record's ``sourceCode``, each cut to
    :data:`EXCERPT_LINE_CHARS`, stopping before :data:`EXCERPT_CHARS`; and the last line number kept."""
    kept: list[str] = []
    total = 0
    last = start - 1
    for number in range(start, end + 1):
        line = lines[number - 1]
        if len(line) > EXCERPT_LINE_CHARS:
            line = line[:EXCERPT_LINE_CHARS] + "…"
        total += len(line) + 1
        if kept and total > EXCERPT_CHARS:
            break
        kept.append(line)
        last = number
    return "\n".join(kept), max(last, start)


def utf8_safe(value: object) -> object:
    """``value`` (a string, or a list of them) with lone surrogates, which UTF-8 cannot hold, as U+FFFD: a
    message written ``"bad \\ud800"`` in the source stopped ingest when its record was hashed."""
    if isinstance(value, str):
        return value if value.isascii() else _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [utf8_safe(item) for item in value]
    return value
