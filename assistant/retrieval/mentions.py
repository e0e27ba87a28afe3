"""Which libraries a paste names: their package, repository and folder names, and a few aliases.

``signals.library_names`` finds the names every library's records share (``slack_bolt``, ``bolt``,
``bolt_python``); people also name a client library by its product ("the claude sdk"), which no record
path shows: those aliases are data (``library_aliases.json``). A name counts as a whole word, spelt with
``_``, ``-`` or a space.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigurationError
from ..storage.postings import Postings
from .ownership import BUILTIN_EXCEPTIONS

ALIASES_PATH = Path(__file__).with_name("library_aliases.json")


@functools.cache
def _aliases_file(path: Path) -> dict:
    """``library_aliases.json`` as read: both its tables come from one read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the library aliases from {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"cannot read the library aliases from {path}: not a JSON object")
    return data


@functools.cache
def library_aliases(path: Path = ALIASES_PATH) -> dict[str, tuple[str, ...]]:
    """repo -> the aliases people name it by, from ``library_aliases.json``."""
    try:
        data = _aliases_file(path)["aliases"]
        return {str(repo): tuple(str(a).lower() for a in names) for repo, names in data.items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigurationError(f"cannot read the library aliases from {path}: {exc}") from exc


@functools.cache
def library_companions(path: Path = ALIASES_PATH) -> dict[str, tuple[str, ...]]:
    """repo -> the libraries it runs on, whose errors a paste naming it shows (``runs_on`` in
    ``library_aliases.json``: Keras, and TensorFlow under it)."""
    try:
        data = _aliases_file(path).get("runs_on", {})
        return {str(repo): tuple(str(r) for r in under) for repo, under in data.items()}
    except (TypeError, AttributeError) as exc:
        raise ConfigurationError(f"cannot read the libraries' companions from {path}: {exc}") from exc


class LibraryMentions:
    """Finds the repos whose names a text mentions; built once per knowledge base."""

    def __init__(
        self,
        library_names: Mapping[str, frozenset[str]],
        aliases: Mapping[str, tuple[str, ...]],
        companions: Mapping[str, tuple[str, ...]] | None = None,
    ):
        # A library named puts in play those it runs on that this knowledge base holds.
        self.companions = {
            repo: tuple(c for c in under if c in library_names) for repo, under in (companions or {}).items()
        }
        self.repo_of = {name: repo for repo, names in library_names.items() for name in names}
        spelt = {v: self.repo_of[w] for w in self.repo_of for v in {w, w.replace("_", "-"), w.replace("_", " ")}}
        for repo, names in aliases.items():
            if repo in library_names:  # an alias of a library this knowledge base does not hold names nothing
                spelt.update({a: repo for a in names if a not in spelt})
        self._repo_of_spelling = {v.lower(): repo for v, repo in spelt.items()}
        # No name is a library's own (every repo shares its names with another): nothing can be mentioned.
        alternatives = "|".join(re.escape(v) for v in sorted(spelt, key=len, reverse=True))
        self._pattern = (
            re.compile(r"(?<![\w.-])(" + alternatives + r")(?![\w-])", re.IGNORECASE) if alternatives else None
        )

    def named(self, text: str) -> set[str]:
        """The repos ``text`` names."""
        if self._pattern is None:
            return set()
        repos = {self._repo_of_spelling[m.group(1).lower()] for m in self._pattern.finditer(text)}
        return repos.union(*(self.companions.get(repo, ()) for repo in repos))


class ClassOwners:
    """The library a paste's exception class names when no other raises it: ``ArrowInvalid``, printed without
    its module, is pyarrow's as surely as a ``pyarrow/`` frame would say (a class several libraries raise,
    ``ValidationError``, names none; nor does a built-in class or Python's own ``python_repo``)."""

    def __init__(self, classes: Postings, repos: Postings, python_repo: str):
        self.classes = classes
        self.repos = repos
        self.python_repo = python_repo
        self._owner: dict[str, str | None] = {}

    def owner(self, exception_class: str | None, qualname: str | None) -> str | None:
        """The repo of the only library whose records raise ``exception_class``, for a class printed bare."""
        if not exception_class or "." in (qualname or "") or exception_class in BUILTIN_EXCEPTIONS:
            return None
        if exception_class not in self.classes:  # not cached: a server meets endless made-up class names
            return None
        if exception_class not in self._owner:  # at most one entry per class the records raise
            groups = self.repos.groups_of(self.classes.get(exception_class))
            keys = self.repos.keys or []
            repo = keys[int(groups[0])] if len(groups) == 1 else None
            self._owner[exception_class] = repo if repo != self.python_repo else None
        return self._owner[exception_class]
