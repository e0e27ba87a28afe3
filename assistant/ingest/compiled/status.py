"""Apache Arrow's C++ returns errors as ``Status`` values that pyarrow raises (``check_status`` in
``pyarrow/error.pxi``): ``Status::Invalid("Column ", i, " named ", name, " expected length ", n, ...)`` prints
as ``pyarrow.lib.ArrowInvalid: Column 3 named text expected length 75 ...``. The arguments are concatenated
(literals as text, anything else a placeholder). Read only in trees that use Arrow's ``status.h``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..messages import Part, Placeholder
from .lexing import one_line

# Status code -> the class check_status raises (IOError is OSError itself).
ARROW_CLASSES = {
    "Invalid": "ArrowInvalid",
    "IOError": "OSError",
    "OutOfMemory": "ArrowMemoryError",
    "KeyError": "ArrowKeyError",
    "NotImplemented": "ArrowNotImplementedError",
    "TypeError": "ArrowTypeError",
    "CapacityError": "ArrowCapacityError",
    "IndexError": "ArrowIndexError",
    "SerializationError": "ArrowSerializationError",
    "Cancelled": "ArrowCancelled",
}
# Parquet's C++ throws ParquetException; pyarrow's catch turns it into an IOError status.
ARROW_THROWN = {"ParquetException": "OSError", "ParquetStatusException": "OSError"}
_STATUS_RE = re.compile(r"(?<![\w.>])(?:(?:arrow)?::)?Status::(" + "|".join(ARROW_CLASSES) + r")\s*\(")


def uses_arrow_status(files: Mapping[str, str]) -> bool:
    """Whether the tree is Arrow's or builds on it (includes ``arrow/status.h`` or defines it)."""
    return any(name.endswith("arrow/status.h") or "arrow/status.h" in text for name, text in files.items())


def read_statuses(reader: Any) -> None:
    """Each ``Status::Code(args...)`` of the file ``reader`` (c_sources' reader) reads, as a raise."""
    for m in _STATUS_RE.finditer(reader.source.masked):
        args, close = reader.args(m.end() - 1)
        if not args:
            reader.skipped["without a message"] += 1
            continue
        error_class = ARROW_CLASSES[m.group(1)]
        if len(args) == 1:
            values = reader.messages(args[0])
        else:
            parts: list[Part] = []
            for arg in args:
                literal = reader.literal(arg)
                parts.append(literal if literal is not None else Placeholder(one_line(reader.text(arg))))
            values = [parts]
        for parts in values:
            reader.add("exception", error_class, parts, m.start(), close, [])
