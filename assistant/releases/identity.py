"""Which raise a record describes, independent of its line: the key that survives code moving around.

:func:`raise_identity` needs only what curated and ingested records both have (repo, file, class and
message), so a loader can let a curated record win over an ingested one of the same raise even when
the lines differ. Merging across releases (:mod:`.merge`) adds the enclosing function, which only
ingested records know, and matches reworded messages by similarity.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping
from typing import Any

# A Record or its JSON dict: records.py imports this module, so it names no type of records.py.
Record = Any

PLACEHOLDER_RE = re.compile(r"\{[^{}]*\}")  # ``{name}``, ``{key!r}``: what a message knows only at run time
# Two message templates (or identities) at least this alike are one raise reworded.
REWORDED = 0.5
_REPO_PATH_PREFIXES = ("src/",)


def message_template(message: str) -> str:
    """A message with placeholders blanked (``{name}`` and ``{key!r}`` both become ``{}``), lower case,
    whitespace collapsed and trailing punctuation dropped: what stays when only names in the code change."""
    text = PLACEHOLDER_RE.sub("{}", message)
    return " ".join(text.split()).strip().rstrip(".!:;,").lower()


def module_path(file_path: str) -> str:
    """The file as the package names it: ``src/httpx/_client.py`` and ``httpx/_client.py`` are one file."""
    for prefix in _REPO_PATH_PREFIXES:
        if file_path.startswith(prefix):
            return file_path[len(prefix) :]
    return file_path


def _field(record: Record | Mapping[str, Any], attr: str, json_name: str) -> Any:
    return record.get(json_name) if isinstance(record, Mapping) else getattr(record, attr)


def _identity_parts(record: Record | Mapping[str, Any]) -> tuple[str, str, str, str]:
    """Repo (lower case), file as the package names it, class and message template of a record."""
    repo = str(_field(record, "repo", "repo")).lower()
    file_path = module_path(str(_field(record, "file_path", "filePath")))
    error_class = str(_field(record, "error_class", "errorClass"))
    template = message_template(str(_field(record, "error_message", "errorMessage")))
    return repo, file_path, error_class, template


def raise_identity(record: Record | Mapping[str, Any]) -> str:
    """``repo|file|class|message template`` of a record (a :class:`Record` or its JSON dict).

    Equal for a curated record and an ingested one of the same ``raise`` whatever their line numbers;
    a reworded message is a different identity here (the release merge matches rewordings itself).
    """
    return "|".join(_identity_parts(record))


def message_identity(record: Record | Mapping[str, Any]) -> str:
    """``repo|class|message template``: one library's error worded one way, wherever it is raised. A curated
    record of it answers for an ingested one in any file (a monorepo's ``libs/langgraph/langgraph/...``
    is the wheel's ``langgraph/...``; a message raised in two modules is one error to its user)."""
    repo, _file_path, error_class, template = _identity_parts(record)
    return f"{repo}|{error_class}|{template}"


def identity_id(identity: str) -> str:
    """A 16-hex record id from an identity: the same raise gets the same id on every run."""
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]


# A message template that begins another is one raise cut or grown only past this many words of its own.
GROWN_FROM_WORDS = 4
_TEMPLATE_WORD_RE = re.compile(r"[a-z][a-z0-9_]+")


def one_begins_the_other(a: str, b: str) -> bool:
    """Whether one message template (:func:`message_template`) begins the other at a word boundary with at
    least ``GROWN_FROM_WORDS`` words of its own text: one raise whose message a release cut or grew."""
    shorter, longer = sorted((a, b), key=len)
    if not longer.startswith(shorter) or len(_TEMPLATE_WORD_RE.findall(shorter.replace("{}", " "))) < GROWN_FROM_WORDS:
        return False
    return len(longer) == len(shorter) or not longer[len(shorter)].isalnum()


def similarity(a: str, b: str) -> float:
    """How alike two message templates are (0..1), for matching a reworded message to its earlier self."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def kebab(text: str) -> str:
    """``Client.__init__`` -> ``client-init``: the spelling of slugs and tags."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", text)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
