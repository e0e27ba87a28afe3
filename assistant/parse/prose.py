"""Errors told in prose: the class and message people name inside what they wrote around them.

"it fails with ValueError: base_url ...", "a TypeError saying \"...\"", "the client raises UnexpectedResponse",
"the server logs say 'WORKER TIMEOUT (pid:27)'", or a message set apart as a paragraph of its own. Read
only where the paste is a question (``query.py`` decides); what is found is the Query's class and message.
"""

from __future__ import annotations

import re

from .error_line import EXC_LINE_RE, QUESTION_START_RE, is_exception_class, looks_like_message

# An exception class named inside prose, its message after a colon: "it fails with ValueError: base_url ...".
_INLINE_EXC_RE = re.compile(
    r"(?<![\w.])(?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z]\w*(?:Error|Exception|Warning)))(?::\s(?P<msg>.+))?"
)
# A message written beside a class named in prose: quoted right before it (``the "Target modules ... not
# found" ValueError``), quoted right after it (``a TypeError saying "..."``), or told in a clause that quotes
# a name (``an AttributeError that the model has no attribute 'add_adapter'``).
_QUOTED_BEFORE_RE = re.compile(r"(?P<q>[\"`])(?P<msg>[^\"`\n]{8,300})(?P=q)\s*$")
_QUOTED_AFTER_RE = re.compile(
    r"^s?\s*(?:\(|,|:|saying|says|that says|with(?: the)? message)?\s*(?P<q>[\"`])(?P<msg>[^\"`\n]{8,300})(?P=q)"
)
# A class named after a verb of raising, even one not ending in Error: ``the client raises UnexpectedResponse``.
_RAISED_CLASS_RE = re.compile(
    r"\b(?:raises|raised|raising|throws|threw|thrown|throwing)\s+(?:an?\s+|the\s+)?"
    r"(?P<qual>(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+))(?!\w|\.\w)"
)
# A message quoted after a verb of failing or a "with", its class not named: ``raises `Object of type 'type'
# is not ...```, ``crashes at startup with "Invalid args for response field!"``.
_RAISED_MESSAGE_RE = re.compile(
    r"\b(?P<verb>raises|raised|throws|threw|with|says|say|said|saying|shows|showed|prints|printed|gives|gave|"
    r"returns|returned|returning|get|got|getting)\s+(?:an?\s+|the\s+)?(?:error\s+|message\s+)?"
    r"(?P<q>[\"`'])(?P<msg>[^\n]{8,300}?)(?P=q)(?!\w)"
)
# What marks a line as an error message rather than a title: a quoted name, ``... Error: ...`` (a compiler's
# ``fatal error: ...`` too), or a class named in a whole sentence (``Adapter ChatAdapter failed to parse the LM
# response.``).
_MESSAGE_MARK_RE = re.compile(r"'[^'\s]+'|\"[^\"\s]+\"|[Ee]rror: |^.*\b[A-Z][a-z]+[A-Z]\w*\b.*\w\.$")
# ``403 Forbidden: ...``, ``504 Server Error: Gateway Timeout for url: ...``.
_STATUS_LINE_RE = re.compile(r"^[1-5]\d\d (?:[A-Z][A-Za-z-]*)(?: [A-Z][A-Za-z-]*)*: \S")
# The last words of a line that introduces the message set apart under it.
_INTRODUCING_VERB_RE = re.compile(
    r"\b(?:say|says|said|saying|get|gets|got|getting|gives|gave|shows|showed|prints|printed|returns|returned|"
    r"reads|raises|raised|throws|threw|fails with|failed with|crashes with|errors? out with)$",
    re.IGNORECASE,
)
_CLAUSE_AFTER_RE = re.compile(r"^s?\s+(?:that|saying|telling me)\s+(?P<msg>[^\n.?!]*'[^'\n]+'[^\n.?!]*)")
# Where one sentence ends and the next begins, inside a line.
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[\"'`(\[]?[A-Z])")
# A dash between clauses (not a hyphen, which messages hold): the question often follows one on the line.
_CLAUSE_DASH_RE = re.compile(r"\s+[\u2014\u2013]\s+")
# A sentence that tells what happened rather than continuing the message: it goes on the story
# ("Same thing later when ...", "Also ...") or speaks in the first person ("... when I run it").
_REMARK_RE = re.compile(r"^(?i:same|also|then|but|and|so|even|still|thanks)\b|\b(?:I|I'm|I've|I'd|my|me)\b")


def inline_error(text: str) -> tuple[str | None, str | None, str | None]:
    """An error quoted inside prose: its qualified name, class and the rest of its line."""
    raised = list(_RAISED_CLASS_RE.finditer(text))
    named = [*_INLINE_EXC_RE.finditer(text), *raised]
    if raised and len({m["cls"] for m in named}) > 1:
        # Two errors told of: the one said to be raised is the paste's ("hf_hub_download raises
        # OfflineModeIsEnabled ... and with offline off I get LocalEntryNotFoundError").
        chosen = raised[-1]["cls"]
        named = [m for m in named if m["cls"] == chosen]
    last = max(named, key=lambda m: (m.start("qual"), m.re is _INLINE_EXC_RE), default=None)
    if last is None:
        return None, None, None
    if not _first_line(last):
        # Named again without its message after it was printed with one (``category=OptimizeWarning)``, the
        # warning's source line under ``OptimizeWarning: Covariance of the parameters could not be estimated``).
        told = [m for m in named if m.re is _INLINE_EXC_RE and m["cls"] == last["cls"] and m["msg"]]
        last = told[-1] if told else last
    message = _first_line(last)
    opener = text[last.start("qual") - 1] if last.start("qual") > 0 else ""
    if opener in ("'", '"', "`"):
        message = _until_closing_quote(message, opener)
    if not message:
        return last["qual"], last["cls"], _message_beside(text, last.start("qual"), last.end())
    return last["qual"], last["cls"], _without_question(message) or None


def _first_line(named: re.Match) -> str:
    """The first line of the message written after a class named in prose ("" when none is)."""
    return (named.groupdict().get("msg") or "").split("\n")[0].strip()


def message_paragraph(lines: list[str]) -> str | None:
    """A message pasted without its class as a paragraph of its own, the question told around it.

    ``No module named 'langgraph.prebuilt'``, a blank line, then how it started: a single short line set apart,
    not phrased as a question, that quotes a name or reads ``... Error: ...`` (a title line does neither)."""
    for i, line in enumerate(lines):
        stripped = line.strip()
        alone = (i == 0 or not lines[i - 1].strip()) and (i + 1 == len(lines) or not lines[i + 1].strip())
        if stripped and alone and looks_like_message(stripped) and _MESSAGE_MARK_RE.search(stripped):
            return stripped
        if stripped and alone and _introduced(lines, i) and _quoted_sentence(stripped):
            return stripped
    return None


def status_line(lines: list[str]) -> str | None:
    """A server's reply as a client prints it, an HTTP status and its reason before the message (``403
    Forbidden: Please enable access to public gated repositories ...``), where a question quotes no other."""
    for line in lines:
        if _STATUS_LINE_RE.match(line.strip()):
            return line.strip()
    return None


def _introduced(lines: list[str], i: int) -> bool:
    """Whether the paragraph at ``i`` follows a line that ends with a colon ("... and it keeps saying:") or a
    verb of saying or failing ("Why does model.fit say", "... and I get")."""
    before = [line.strip() for line in lines[max(0, i - 3) : i] if line.strip()]
    return bool(before) and (before[-1].endswith(":") or _INTRODUCING_VERB_RE.search(before[-1]) is not None)


def _quoted_sentence(text: str) -> bool:
    """A line a colon introduced reads as the message quoted, not the question: one line, no question,
    not longer than a message (``You are trying to offload the whole model to the disk. Please use the
    `disk_offload` function instead.``, seventeen words and no quote)."""
    return len(text) < 400 and not text.endswith("?") and not QUESTION_START_RE.match(text) and len(text.split()) <= 60


def raised_message(text: str) -> tuple[str | None, str | None, str] | None:
    """The first message quoted after a verb of failing (see ``_RAISED_MESSAGE_RE``), when no class is named;
    with its class when the quote starts with one (``"gradio.exceptions.Error: Data incompatible ..."``)."""
    # After a bare "with", code in backticks is as likely as a message (``with `data: dict = {}```).
    found = [m for m in _RAISED_MESSAGE_RE.finditer(text) if m["verb"] != "with" or m["q"] == '"']
    if not found:
        return None
    quoted = found[0]["msg"].strip()
    m = EXC_LINE_RE.match(quoted)
    if m and m["msg"] and is_exception_class(m["qual"], m["cls"], m["msg"]):
        return m["qual"], m["cls"], m["msg"].strip()
    return None, None, quoted


def _message_beside(text: str, start: int, end: int) -> str | None:
    """The message people wrote next to a class they named without one (see ``_QUOTED_BEFORE_RE``)."""
    before = _QUOTED_BEFORE_RE.search(text[max(0, start - 320) : start])
    if before:
        return before["msg"].strip()
    after = text[end : end + 400]
    m = _QUOTED_AFTER_RE.match(after) or _CLAUSE_AFTER_RE.match(after)
    return m["msg"].strip() if m else None


def described_message(text: str, cls: str) -> str | None:
    """For a traceback cut before its message: the message told in prose next to the class's name."""
    for m in reversed(list(_INLINE_EXC_RE.finditer(text))):
        if m["cls"] == cls and not m["msg"]:
            message = _message_beside(text, m.start(), m.end())
            if message:
                return message
    return None


def _until_closing_quote(message: str, quote: str) -> str:
    """A quoted error ends at the quote that closes it: the first one, outside quotes of its own, before a space."""
    inside = 0
    for i, c in enumerate(message):
        if c != quote or (0 < i < len(message) - 1 and message[i - 1].isalnum() and message[i + 1].isalnum()):
            continue  # not a quote, or an apostrophe inside a word ("can't")
        if inside % 2 == 0 and (i + 1 == len(message) or message[i + 1] in " \t.,;:?!)"):
            return message[:i].strip()
        inside += 1
    return message


def _without_question(message: str) -> str:
    """An error quoted in prose, without the question that follows it on the same line.

    The message's first sentence is kept; later ones (or clauses after a dash) are dropped from the first
    that asks (ends in ``?`` or starts like a question) or tells the story around the error (see
    ``_REMARK_RE``).
    """
    sentences = [part for sentence in _SENTENCE_RE.split(message) for part in _CLAUSE_DASH_RE.split(sentence)]
    kept = sentences[:1]
    for sentence in sentences[1:]:
        if sentence.rstrip().endswith("?") or QUESTION_START_RE.match(sentence) or _REMARK_RE.search(sentence):
            break
        kept.append(sentence)
    return " ".join(kept).strip()
