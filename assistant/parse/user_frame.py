"""Pointing Python's own error at the user's line: where it happened and what the message names there.

Why: a record of Python's ``KeyError`` says what a KeyError is; the user wants "``row`` has no key
'amount', at app.py line 12". The traceback tells the user's innermost frame and the source line shown
under it; the message tells the key, attribute, name or argument; the source line tells which expression.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .frames import Frame
from .query import Query

_KEY_RE = re.compile(r"^(?P<key>'[^'\n]*'|\"[^\"\n]*\"|-?\d+|None|True|False)$")
_ATTRIBUTE_RE = re.compile(r"'(?P<type>[\w.]+)' object has no attribute '(?P<name>\w+)'")
_MODULE_ATTRIBUTE_RE = re.compile(r"module '(?P<module>[\w.]+)' has no attribute '(?P<name>\w+)'")
_NAME_RE = re.compile(r"name '(?P<name>\w+)' is not defined")
_KEYWORD_RE = re.compile(r"(?P<func>[\w.<>]+)\(\) got an unexpected keyword argument '(?P<kw>\w+)'")
_MODULE_RE = re.compile(r"No module named '(?P<module>[\w.]+)'")
_EXPRESSION = r"[A-Za-z_][\w.]*(?:\([^()]*\))?(?:\[[^\[\]]*\])*"


@dataclass(frozen=True)
class UserLine:
    """The user's frame and, when the message and the line tell it, what went wrong there."""

    frame: Frame
    what: str | None

    def markdown(self) -> str:
        where = f"`{_short(self.frame.file)}`, line {self.frame.line}"
        if self.frame.function and self.frame.function != "<module>":
            where += f", in `{self.frame.function}`"
        text = f"**Where:** {where}" + (f": `{self.frame.code}`" if self.frame.code else "")
        return text + (f"\n\n**What:** {self.what}" if self.what else "")


def user_line(query: Query) -> UserLine | None:
    """The innermost frame of the user's own code and what the message names there, if it has frames."""
    own = [f for f in query.frames if not f.in_library]
    if not own:
        return None
    frame = own[-1]
    return UserLine(frame, _what(query.exception_class or "", (query.message or "").strip(), frame.code or ""))


def _what(cls: str, message: str, code: str) -> str | None:
    if cls == "KeyError" and (m := _KEY_RE.match(message)):
        key = m["key"]
        target = _subscripted(code, key)
        return f"`{target}` has no key {key}." if target else f"the mapping has no key {key}."
    if cls == "AttributeError" and (m := _MODULE_ATTRIBUTE_RE.search(message)):
        return f"module `{m['module']}` has no attribute `{m['name']}` (in the version installed here)."
    if cls == "AttributeError" and (m := _ATTRIBUTE_RE.search(message)):
        owner = _attribute_owner(code, m["name"])
        if m["type"] == "NoneType":
            subject = f"`{owner}`" if owner else "a value"
            return f"{subject} is `None` here, so it has no attribute `{m['name']}`."
        subject = f"`{owner}` (a `{m['type']}`)" if owner else f"a `{m['type']}`"
        return f"{subject} has no attribute `{m['name']}`."
    if cls in ("NameError", "UnboundLocalError") and (m := _NAME_RE.search(message)):
        return f"`{m['name']}` is used before anything of that name is defined or imported."
    if cls == "TypeError" and (m := _KEYWORD_RE.search(message)):
        return f"`{m['func']}()` takes no argument named `{m['kw']}`."
    if cls in ("ModuleNotFoundError", "ImportError") and (m := _MODULE_RE.search(message)):
        return f"module `{m['module']}` is not installed in the Python that ran this (or its name is misspelled)."
    return None


def _subscripted(code: str, key: str) -> str | None:
    """The expression subscripted with ``key`` in the source line: ``row`` in ``row["amount"]``."""
    inner = re.escape(key[1:-1]) if key[:1] in "'\"" else re.escape(key)
    m = re.search(rf"({_EXPRESSION})\[\s*['\"]?{inner}['\"]?\s*\]", code)
    if m:
        return m.group(1)
    subscripts = re.findall(rf"({_EXPRESSION})\[[^\[\]]+\]", code)  # d[key] with the key in a variable
    return subscripts[0] if len(subscripts) == 1 else None


def _attribute_owner(code: str, name: str) -> str | None:
    """The expression whose attribute ``name`` is read in the source line: ``user`` in ``user.name``."""
    m = re.search(rf"({_EXPRESSION})\.{re.escape(name)}\b", code)
    return m.group(1) if m else None


def _short(path: str) -> str:
    """The file's last two path parts: enough to find it, short enough to read."""
    parts = re.split(r"[/\\]", path)
    return "/".join(parts[-2:]) if len(parts) > 2 else path
