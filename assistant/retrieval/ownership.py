"""Whose error is it: Python's own, raised in the user's code, or a library's.

Why: a ``KeyError: 'amount'`` from ``row["amount"]`` in one's own code used to be answered, confidently,
with a library's record whose pattern happens to read like Python's own message. Python's records
(``python/cpython``) answer errors that Python raises; a library's record answers only where that library
is in play: in the traceback's frames, named in the paste, or the module of the exception class.
"""

from __future__ import annotations

import builtins
import re
import sys
from collections.abc import Callable, Sequence

import numpy as np

from ..query import Query
from ..records import Record

PYTHON_REPO = "python/cpython"

_BUILTIN_EXCEPTIONS = frozenset(
    name for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, BaseException)
)
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins", "exceptions", "__main__"}
_PLACEHOLDER_RE = re.compile(r"\{[^{}]*\}")


def is_pythons_class(query: Query, python_classes: frozenset[str]) -> bool:
    """The exception class is a built-in one or the standard library's (``json.decoder.JSONDecodeError``)."""
    cls, qualname = query.exception_class, query.exception_qualname or ""
    if not cls:
        return False
    if "." in qualname:
        return qualname.split(".")[0] in _STDLIB
    return cls in _BUILTIN_EXCEPTIONS or cls in python_classes


# ``raise KeyError(...)``: an exception constructed on the line (a bare ``raise`` or ``raise exc`` re-raises
# one that may be Python's own).
_CONSTRUCTED_RAISE_RE = re.compile(r"^raise\s+[\w.]+\(")


def raised_by_a_package(query: Query) -> bool:
    """The innermost frame is an installed package's and its line constructs the exception: the package
    raised a built-in class with a message of its own (``raise KeyError("Could not find 'data' key ...")``
    in gradio_client), which Python's records, about what Python itself raises, do not describe."""
    if not query.frames:
        return False
    last = query.frames[-1]
    return bool(last.in_installed_package and last.code and _CONSTRUCTED_RAISE_RE.match(last.code.strip()))


def python_wording_twins(
    records: Sequence[Record],
    positions: np.ndarray,
    python_records: dict[str, list[tuple[Record, Callable[[str], object]]]],
    search: Callable[[str, str], bool],
) -> np.ndarray:
    """Of the library records at ``positions``, those worded as Python's own message of the same class (a
    generic template such as ``'{type}' object has no attribute '{name}'`` or a bare ``'{key}'``): without
    the library in play, such a record cannot tell its raise from Python's. Either pattern matching the
    other's message, its placeholders filled in, makes a twin."""
    twins = []
    for position in positions.tolist():
        record = records[position]
        pythons = python_records.get(record.error_class)
        if not pythons or record.repo == PYTHON_REPO:
            continue
        own = _renderings(record)
        if any(matches(text) for _r, matches in pythons for text in own) or any(
            record.message_pattern and search(record.message_pattern, text)
            for python, _m in pythons
            for text in _renderings(python)
        ):
            twins.append(position)
    return np.asarray(twins, dtype=np.int64)


def _renderings(record: Record) -> list[str]:
    """The record's message with its placeholders filled as a name, a quoted name and a number, bare and
    after ``Class: ``."""
    out = []
    for filler in ("x", "'x'", "1"):
        text = _PLACEHOLDER_RE.sub(filler, record.error_message)
        out += [text, f"{record.error_class}: {text}"]
    return out
