"""The chat's answer to one paste as a series of plain steps, without gradio.

Why: the page (``web.py``) and the chat's API answered while gradio still imports (``web_early.py``, seconds
before the page is up) must stream the same messages, sources and errors; gradio takes seconds to import,
so what they share cannot need it. Each front end turns a :class:`Step` into its own output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..answering.answer import Answer
from ..answering.sanitize import ShownMarkdown
from ..api import OFFLINE as API_OFFLINE
from ..errors import ErrataError
from ..settings import Settings
from .web_render import answer_markdown, sources_html, user_markdown

OFFLINE = "offline (from the records, no LLM)"
EMPTY_PASTE = "Paste a traceback, an error line or a question first."
STOPPED = "errata stopped before finishing the answer; try again."


@dataclass(frozen=True)
class Step:
    """What the chat shows after one step of an answer. ``None`` (or ``False``) leaves an output as it is."""

    history: list[dict[str, Any]]
    textbox: str | None = None
    sources: str | None = None
    hide_comment: bool = False
    warning: str | None = None  # a notice for the reader; nothing was asked
    answer: Answer | None = None  # on the last step of an answer only


class ChatStopped(Exception):
    """The answer could not be given; the message says what to do (shown as the chat's error)."""


def chat_models(settings: Settings) -> list[str]:
    """The model menu: the configured models, plus answers composed offline; empty with no model configured."""
    configured = [m for m in (settings.model, *settings.fallback_models) if m]
    return [*dict.fromkeys(configured), OFFLINE] if configured else []


def model_for(choice: str | None, models: list[str]) -> str | None:
    """The Assistant's ``model`` for a menu choice: a model other than the configured one is called like a
    fallback (on its provider's own endpoint); one not in the menu means the configured one."""
    return API_OFFLINE if choice == OFFLINE else (choice if choice in models else None)


def chat_steps(
    stream: Callable[[], Iterable[str | Answer]], threshold: float, text: str, history: list[dict[str, Any]] | None
) -> Iterator[Step]:
    """Stream one answer into the chat: the paste first, then the draft as it grows, then the answer and its
    sources. ``stream()`` starts the Assistant's ``ask_stream``; ``threshold`` is that Assistant's confidence
    threshold. Raises :class:`ChatStopped` when no answer can be given."""
    history = list(history or [])
    if not (text or "").strip():
        yield Step(history, warning=EMPTY_PASTE)
        return
    history.append({"role": "user", "content": user_markdown(text)})
    yield Step(list(history), textbox="", sources=sources_html(None, pending=True), hide_comment=True)
    history.append({"role": "assistant", "content": ""})
    drafted = ""
    shown = ShownMarkdown()  # the whole draft so far is sanitized at each piece, never a piece alone
    answer: Answer | None = None
    try:
        for item in stream():
            if isinstance(item, Answer):
                answer = item
            elif item:
                drafted += item
                history[-1] = {"role": "assistant", "content": shown.show(drafted)}
                yield Step(list(history))
    except ErrataError as exc:  # the message says what to do
        raise ChatStopped(str(exc)) from exc
    if answer is None:  # an Assistant must end with an Answer; say so rather than hang the page
        raise ChatStopped(STOPPED)
    history[-1] = {"role": "assistant", "content": answer_markdown(answer, threshold)}
    yield Step(history, sources=sources_html(answer, threshold=threshold), answer=answer)
