"""One explanation of one live exception, shared by ``errata run``, the hooks and the pytest plugin.

Each front end is thin: the traceback text goes to :class:`assistant.Assistant` (text in, ``Answer``
out) and the local context read from the frames (see ``local_context``) decides what to add: the
installed version of the library whose record answers, the user's own lines, and whether the record's
library took part at all.

The Assistant loads a model (seconds), so it is made on the first exception that needs explaining and
never before; nothing heavier than the standard library is imported until then.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from .local_context import LocalContext, format_traceback, from_exception, installed_version

if TYPE_CHECKING:
    from assistant import Answer, Assistant, Settings

RULE = "-" * 20 + " errata " + "-" * 20

_shared: Assistant | None = None
_shared_settings: Settings | None = None
_shared_lock = threading.Lock()


def use_settings(settings: Settings | None) -> None:
    """Settings for the shared Assistant when it is made (``errata run --kb ...``); default ``ERRATA_*``."""
    global _shared_settings
    _shared_settings = settings


def use_assistant(assistant: Assistant | None) -> None:
    """Explain with an Assistant the host already has (a test session's, a server's); ``None`` forgets it."""
    global _shared
    with _shared_lock:
        _shared = assistant


def shared_assistant() -> Assistant:
    """One Assistant per process, made on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            from assistant import Assistant, Settings

            _shared = Assistant(_shared_settings or Settings.load(), show_progress=sys.stderr.isatty())
        return _shared


@dataclass(frozen=True)
class Explanation:
    """An answer and what the front end knows beside it."""

    answer: Answer
    context: LocalContext | None
    confident: bool  # the answer's confidence reached the threshold
    unrelated: bool  # confident, but about a library that ran in no frame and did not define the exception
    installed: tuple[str, str] | None  # (distribution, version) of the answering record's library

    @property
    def matched(self) -> bool:
        return self.confident and not self.unrelated

    @property
    def top(self):
        return self.answer.hits[0].record if self.answer.hits else None

    def one_line(self) -> str:
        """The answer in one line, for the no-match case and for lists of failures."""
        top = self.top
        if self.matched and top is not None:
            line = f"{top.error_class}: {top.error_message} ({top.repo}, record {top.id})"
            line += f", confidence {self.answer.confidence:.2f}"
            return line + (f"; installed here: {_pair(self.installed)}" if self.installed else "")
        exception = self.context.exception if self.context else "this error"
        if self.unrelated and top is not None:
            code = self.context.user_code if self.context else None
            where = f" (raised in your code, {os.path.basename(code.file)}:{code.line})" if code else ""
            return (
                f"No record matches {exception}{where}: the nearest record ({top.repo} {top.error_class}) is "
                "about a library that ran in none of its frames."
            )
        nearest = f" (nearest: {top.repo} {top.error_class}, confidence {self.answer.confidence:.2f})" if top else ""
        return f"No record in the knowledge base matches {exception}{nearest}."

    def render(self, *, code: bool = True, markdown: bool = False) -> str:
        """The full text under a traceback: the answer, its sources, versions and the user's lines.

        ``markdown`` keeps line breaks and the code block when the text is rendered as markdown (Jupyter).
        """
        lines_end = "  \n" if markdown else "\n"
        parts = [self.answer.text.strip() if not self.unrelated else f"**{self.one_line()}**"]
        if self.matched and self.answer.citations:
            parts.append(
                lines_end.join(
                    f"[{c.number}] {c.repo} {c.error_class} ({c.record_id}) {c.github_url or ''}".rstrip()
                    for c in self.answer.citations
                )
            )
        facts = []
        if self.matched and self.installed:
            facts.append(f"Installed here: {_pair(self.installed)}")
        if self.context and self.context.versions_line():
            facts.append(self.context.versions_line())
        if not self.unrelated:
            facts.append(f"confidence: {self.answer.confidence:.2f}")
        if facts:
            parts.append(lines_end.join(facts))
        if code and self.context and self.context.user_code:
            parts.append(self.context.user_code.render(markdown=markdown))
        return "\n\n".join(parts)


def _pair(pair: tuple[str, str] | None) -> str:
    return f"{pair[0]} {pair[1]}" if pair else ""


def explain_exception(
    exc: BaseException, assistant: Assistant | None = None, tb: TracebackType | None = None
) -> Explanation:
    """Explain a live exception: its traceback (``tb``, default its own) answered, judged against its frames."""
    return explain_text(format_traceback(exc, tb), from_exception(exc, tb), assistant)


def explain_text(text: str, context: LocalContext | None, assistant: Assistant | None = None) -> Explanation:
    assistant = assistant or shared_assistant()
    answer = assistant.ask(text, installed=context.installed if context is not None else None)
    confident = bool(answer.hits) and answer.confidence >= assistant.settings.confidence_threshold
    top = answer.hits[0].record if answer.hits else None
    if context is not None:
        # Libraries named in the text too: a worker's traceback re-raised here (multiprocessing,
        # concurrent.futures) reaches us only as text.
        context = _with_text_libraries(context, assistant.parse(text).libraries)
    unrelated = bool(confident and top is not None and context is not None and not context.involves(top))
    installed = installed_version(top) if confident and top is not None and not unrelated else None
    return Explanation(answer, context, confident, unrelated, installed)


def _with_text_libraries(context: LocalContext, libraries: tuple[str, ...]) -> LocalContext:
    from dataclasses import replace

    return replace(context, modules=context.modules | frozenset(libraries))


def explain_to(
    stream: TextIO, exc: BaseException, tb: TracebackType | None = None, *, code: bool = True
) -> Explanation | None:
    """Write the explanation of ``exc`` under a rule to ``stream``; an errata failure is one line there.

    Whatever goes wrong inside errata must not hide the user's own error, so nothing is raised.
    """
    try:
        if getattr(stream, "isatty", lambda: False)():
            print("errata: looking this error up ...", end="\r", file=stream, flush=True)
        explanation = explain_exception(exc, tb=tb)
    except Exception as failure:  # noqa: BLE001 - any errata failure becomes a note, never a new error
        print(f"{RULE}\nerrata could not explain this error ({type(failure).__name__}: {failure})", file=stream)
        return None
    print(f"{RULE}\n{explanation.render(code=code)}", file=stream, flush=True)
    return explanation
