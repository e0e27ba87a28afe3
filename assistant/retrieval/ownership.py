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
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..knowledge.records import Record
from ..parse.frames import SITE_PACKAGES_RE
from ..parse.query import Query
from ..storage.postings import Postings
from .candidates import NONE
from .features import Found
from .matching import PatternMatcher, compile_pattern
from .patterns import required_words, text_words
from .signals import PLACEHOLDER_RE, SignalIndex, is_generic_message, message_words
from .sorted_sets import difference, intersection, union

PYTHON_REPO = "python/cpython"

BUILTIN_EXCEPTIONS = frozenset(
    name for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, BaseException)
)
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins", "exceptions", "__main__"}
# A word in at most this share of the records' messages is the library's own (Pillow's ``transparency``).
RARE_WORD_SHARE = 0.0002


def is_pythons_class(query: Query, python_classes: frozenset[str]) -> bool:
    """The exception class is a built-in one or the standard library's (``json.decoder.JSONDecodeError``)."""
    cls, qualname = query.exception_class, query.exception_qualname or ""
    if not cls:
        return False
    if "." in qualname:
        return qualname.split(".")[0] in _STDLIB
    return cls in BUILTIN_EXCEPTIONS or cls in python_classes


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


def raised_on_the_users_line(query: Query) -> bool:
    """The innermost frame of a whole traceback is the user's own code and its line raises nothing itself
    (``for i in range(n / 2):``): Python or a compiled extension raised the error there, not a package's
    Python code, whose own frame would be innermost. A ``raise`` on the line may re-raise a package's error."""
    if not query.frames or query.truncated:
        return False
    last = query.frames[-1]
    return not last.in_library and not (last.code or "").lstrip().startswith("raise")


# Frames left out of a pasted traceback (``...`` on a line of its own, also inside an exception group's ``|``):
# the innermost frame shown may not be the innermost.
_ELIDED_RE = re.compile(r"^[\s|]*(?:\.\.\.|\u2026)\s*$", re.MULTILINE)


def raising_package(query: Query) -> str | None:
    """The installed package whose line is the innermost frame of a whole traceback, shown with its code and
    raising nothing itself (transformers' ``seq_length = input_ids.size(1)``): Python or a compiled extension
    raised the error there (torch's C++ ``Dimension out of range``), not another package's Python code, whose
    own frame would be innermost. Not where the paste left frames out."""
    if not query.frames or query.truncated or _ELIDED_RE.search(query.text):
        return None
    last = query.frames[-1]
    found = SITE_PACKAGES_RE.search(last.file.replace("\\", "/"))
    code = (last.code or "").lstrip()
    # ``yield``: an exception thrown into a generator passes through its frame, raised elsewhere.
    return found["lib"] if found and code and not code.startswith(("raise", "assert", "yield")) else None


def _renderings(record: Record) -> list[str]:
    """The record's message with its placeholders filled as a name, a quoted name and a number, bare and
    after ``Class: ``."""
    out = []
    for filler in ("x", "'x'", "1"):
        text = PLACEHOLDER_RE.sub(filler, record.error_message)
        out += [text, f"{record.error_class}: {text}"]
    return out


class PythonOwnership:
    """Which records cannot answer an error, by whose error it is (see the module's docstring)."""

    def __init__(self, records: Sequence[Record], signals: SignalIndex, matcher: PatternMatcher):
        self.records = records
        self.signals = signals
        self.matcher = matcher
        self.python = signals.repos.get(PYTHON_REPO)  # Python's own records, as ascending positions
        python_records = [records[p] for p in self.python.tolist()]
        self.python_classes = frozenset(r.error_class for r in python_records)
        self._class_of = np.array([r.error_class for r in python_records], dtype=object)
        self._python_records = python_records
        self._compiled: dict[str, list[tuple[Record, Any, list[str] | None]]] | None = None  # see _patterns
        self._twins: dict[str, np.ndarray] = {}  # error class -> library records worded as Python words it

    def _generic_curated(self, positions: np.ndarray, cls: str) -> np.ndarray:
        """Of ``positions`` (those a pattern found), the libraries' curated records of a class other than ``cls``
        whose message is a generic template (see signals.is_generic_message). Ascending."""
        curated = difference(difference(positions, self.signals.ingested), self.python)
        kept = [
            p
            for p in curated.tolist()
            if self.records[p].error_class != cls and is_generic_message(self.records[p].error_message)
        ]
        return np.asarray(kept, dtype=np.int64)

    @property
    def _patterns(self) -> dict[str, list[tuple[Record, Any, list[str] | None]]]:
        """Error class -> Python's records of it: the record, its compiled pattern, and the message words every
        text it matches holds (None: no word can be proven, every record of the class is tried). Compiled
        when first asked for: where the build saved the twins (``wording_twins``), never (0.1 s of a start)."""
        if self._compiled is None:
            self._compiled = {}
            for r in self._python_records:
                compiled = compile_pattern(r.message_pattern) if r.message_pattern else None
                if compiled is not None:
                    keys = sorted(w for w in required_words(r.message_pattern) if w in message_words(w))
                    self._compiled.setdefault(r.error_class, []).append((r, compiled, keys or None))
        return self._compiled

    def not_in_play(self, query: Query, found: Found) -> tuple[np.ndarray, bool]:
        """The records that cannot answer this error, as ascending positions and whether they are given as
        every record *but* those (so no array of every record is made per query in a large knowledge base):
        for a Python error in a traceback, every library's record but those of the libraries in play and
        those whose own wording the paste matches; with no traceback to tell, the library records worded as
        Python's own message, but those of a library seen or named."""
        if not len(self.python) or not query.exception_class:
            return NONE, False
        if not is_pythons_class(query, self.python_classes):
            if query.kind == "question":  # a question about a library's exception: every record may bear on it
                return NONE, False
            # A library's own exception (``httpx.ConnectTimeout: timed out``): Python's records of other
            # classes are not what raised it, however their generic patterns read; nor, where its library is
            # in play, another library's curated record of another class worded in a few common words
            # (pytest's ``{target!r} has no attribute {name!r}`` for Jinja's ``UndefinedError``).
            others = self.python[self._class_of != query.exception_class]
            if found.known is None:
                return others, False
            # Only those a pattern found can rank: the rest are not read.
            found_here = difference(union(found.on_message, found.on_text), found.known)
            return union(others, self._generic_curated(found_here, query.exception_class)), False
        twins = self._wording_twins(query.exception_class or "")
        if raised_by_a_package(query):
            # A package raised a built-in class with its own message: not Python's records, nor another
            # library's worded as Python's own (pandas' ``KeyError: '{key}'`` for gradio_client's raise).
            return union(self.python, twins if found.known is None else difference(twins, found.known)), False
        if found.known is not None and not query.frames:
            # A library named with no traceback to tell (a question never has one): its records may answer,
            # but not another library's worded as Python's own message (``KeyError: '__start__'`` in a
            # question about LangGraph; sqlalchemy's ``{methname} got an unexpected keyword argument`` in a
            # question about gradio's arguments).
            return difference(twins, found.known), False
        if query.frames:
            # Python raised it, in the user's code or inside a package: Python's records answer, and a
            # library's only where that library is in play (its frames, its module, named) or its own
            # wording matches (a compiled extension raises in the user's frame: ``TypeError:
            # TextInputSequence must be str`` is tokenizers'), never another library's of the same class.
            matched = difference(union(found.on_message, found.on_text), twins)
            allowed = union(self.python, matched)
            allowed = allowed if found.known is None else union(allowed, found.known)
            if raised_on_the_users_line(query):
                allowed = difference(allowed, self._python_raises(matched, found.known))
            elif package := raising_package(query):  # another package's Python raise, in play or not
                allowed = difference(
                    allowed, self._python_raises(union(found.on_message, found.on_text), None, package)
                )
            return allowed, True
        return twins, False

    def _python_raises(self, positions: np.ndarray, known: np.ndarray | None, but: str | None = None) -> np.ndarray:
        """Of ``positions``, the release-built records of a ``raise`` in a package's Python code, of packages
        not in play (``known``): such a raise shows the package's frame, so a traceback whose innermost
        frame is the user's own line cannot be it (torch's polyfill of ``range`` raises Python's own
        ``'float' object cannot be interpreted as an integer``). ``but``: a package whose raises are kept."""
        if not len(positions) or not len(self.signals.ingested):
            return NONE
        candidates = intersection(positions, self.signals.ingested)
        if known is not None:
            candidates = difference(candidates, known)
        keep = [p for p in candidates.tolist() if _raised_in_python(self.records[p].file_path, but)]
        return np.asarray(keep, dtype=np.int64)

    def _wording_twins(self, cls: str) -> np.ndarray:
        if cls not in self._twins:
            saved = self.signals.wording_twins  # found by the build (see wording_twins), else now
            found = self._find_twins(cls) if saved is None else np.asarray(saved.get(cls), dtype=np.int64)
            self._twins[cls] = found
        return self._twins[cls]

    def _find_twins(self, cls: str) -> np.ndarray:
        """The library records of class ``cls`` worded as Python's own message of that class (a generic template
        such as ``'{type}' object has no attribute '{name}'`` or a bare ``'{key}'``): without the library in
        play, such a record cannot tell its raise from Python's. Either pattern matching the other's message,
        its placeholders filled in, makes a twin. Only records that could match are tried: those whose message
        holds the words a Python pattern requires, and the patterns filed under a word of Python's message
        (a first query of a class in 90,000 records took 30 s when every pair was tried)."""
        pythons = self._patterns.get(cls)
        library = difference(self.signals.classes.get(cls), self.python)
        if not pythons or not len(library):
            return NONE
        twins: set[int] = set()
        in_library = np.zeros(len(self.records), dtype=bool)
        in_library[library] = True
        for _python, compiled, keys in pythons:  # Python's pattern matching the library record's message
            held = library if keys is None else self.signals.message_words.intersection(keys)
            for position in held[in_library[held]].tolist():
                if position not in twins and any(
                    self.matcher.search(compiled, text) for text in _renderings(self.records[position])
                ):
                    twins.add(position)
        index, holders = self.signals.pattern_index, self.signals.pattern_records
        library_patterns = holders.groups_of(library)
        for python, _compiled, _keys in pythons:  # the library record's pattern matching Python's message
            for text in _renderings(python):
                words = text_words([text])
                for number in intersection(index.filed_under(words), library_patterns).tolist():
                    held = holders.numbered(number)
                    held = held[in_library[held]].tolist()
                    if twins.issuperset(held):
                        continue
                    source = self.signals.patterns[number]
                    if required_words(source) <= words and self._search(source, text):
                        twins.update(held)
        # A removed API's record (``Client.__init__() got an unexpected keyword argument 'proxies'``) is worded
        # as Python words it by design, and names the library's own API: not a twin.
        found = np.asarray(sorted(twins), dtype=np.int64)
        return found[np.isin(found, self.signals.api_changes, invert=True)]

    def _search(self, source: str, text: str) -> bool:
        pattern = compile_pattern(source)
        return pattern is not None and self.matcher.search(pattern, text)


def wording_twins(records: Sequence[Record], signals: SignalIndex) -> Postings:
    """The wording twins of each of Python's error classes (``PythonOwnership._find_twins``), for the signals a
    knowledge base's build saves: found at a query, the first of a class cost up to 0.6 s in 90,000 records
    (TypeError's 18 patterns against 5,000 records); every class's together take ~2 s, once."""
    ownership = PythonOwnership(records, signals, PatternMatcher())
    found = {cls: ownership._find_twins(cls) for cls in sorted(ownership._patterns)}
    found = {cls: positions for cls, positions in found.items() if len(positions)}
    starts = np.zeros(len(found) + 1, dtype=np.int64)
    np.cumsum([len(positions) for positions in found.values()], out=starts[1:])
    positions = np.concatenate(list(found.values())) if found else NONE
    return Postings(list(found), starts, positions.astype(np.int64))


def unrecorded_owner(query: Query, record: Record) -> str | None:
    """The library whose own cause errata has no record of, when ``record`` (the best) is Python's and the
    error was raised inside or through that library: the exception's module is the library's
    (``jinja2.exceptions.TemplateNotFound``), or the innermost frame not Python's own is the library's
    (a ``KeyError`` inside langgraph). Python's record then explains the error in general, not its cause
    there. ``None`` where Python's record is the answer (an error in the user's own code) or is not first."""
    if record.repo != PYTHON_REPO:
        return None
    qualname = query.exception_qualname or ""
    if "." in qualname and qualname.split(".")[0] not in _STDLIB:
        return qualname.split(".")[0]
    for frame in reversed(query.frames):  # innermost first
        found = SITE_PACKAGES_RE.search(frame.file.replace("\\", "/"))
        if found:
            return found.group("lib")
        if not frame.in_library:  # the user's code raised it
            return None
    return None


def distinctive_templates(records: Sequence[Record], signals: SignalIndex, positions: np.ndarray) -> np.ndarray:
    """Of generic templates (few literal words: see signals.GENERIC_WORDS) whose pattern matched the pasted
    message, those with a word few other messages have: ``bad transparency mask`` is Pillow's own, not the
    kind of short message any library raises (``Could not convert {} with type {}: {}``). Ascending."""
    rare = int(RARE_WORD_SHARE * len(signals))
    if rare < 1:  # too few records to tell a rare word from a common one
        return positions[:0]
    kept = [
        p
        for p in positions.tolist()
        if any(signals.message_words.count(w) <= rare for w in message_words(records[p].error_message))
    ]
    return np.asarray(kept, dtype=positions.dtype)


def generic_elsewhere(generic_ingested: np.ndarray, found: Found) -> np.ndarray:
    """Generic ingested templates (``generic_ingested``: see signals.GENERIC_WORDS) of libraries not in play,
    but for those with a word of their own (``found.distinctive``): they match messages of any library, so
    they answer no error of another's. Ascending positions."""
    generic = generic_ingested
    if found.known is not None:
        generic = np.setdiff1d(generic, found.known, assume_unique=True)
    return np.setdiff1d(generic, found.distinctive, assume_unique=True)


def _raised_in_python(path: str, but: str | None) -> bool:
    """A ``.py`` file, not of the package ``but`` (its first folders: ``torch/_refs/...``, ``src/torch/...``)."""
    return path.endswith(".py") and not (but and but in path.replace("\\", "/").split("/")[:2])
