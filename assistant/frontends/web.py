"""The web chat (Gradio): paste a traceback, watch the answer stream in, read its sources, say if it helped.

This module only turns clicks into calls of :class:`~assistant.api.Assistant` and its
:class:`~assistant.answer.Answer` into chat messages and source cards; retrieval and drafting live elsewhere.
``python app.py`` (or ``errata serve``) starts it through :func:`~assistant.frontends.web_serve.serve`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Gradio's own switch, not an errata option: no telemetry or version check may leave the machine.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from ..answering.answer import Answer  # noqa: E402
from ..api import Assistant  # noqa: E402
from ..settings import Settings  # noqa: E402
from .feedback import FeedbackError, FeedbackStore  # noqa: E402
from .ports import cannot_serve  # noqa: E402
from .web_render import MAX_SOURCES, citations_json, sources_html  # noqa: E402
from .web_render import answer_markdown as answer_markdown  # noqa: E402 - rendering, as the tests name it
from .web_render import user_markdown as user_markdown  # noqa: E402
from .web_steps import OFFLINE as OFFLINE  # noqa: E402 - the menu's offline choice, as the tests name it
from .web_steps import ChatStopped, chat_models, chat_steps, model_for  # noqa: E402

logger = logging.getLogger(__name__)

VOTE_FAILED = "Sorry, your feedback could not be saved right now (the feedback store is unavailable)."

EXAMPLES = [
    "Traceback (most recent call last):\n"
    '  File "/app/upload.py", line 12, in <module>\n'
    '    client.post("/files", files={"file": io.StringIO("data")})\n'
    '  File "/usr/lib/python3.11/site-packages/httpx/_multipart.py", line 88, in __init__\n'
    "    raise TypeError(\n"
    "TypeError: Multipart file uploads require 'io.BytesIO', not 'io.StringIO'.",
    "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache "
    "and outgoing traffic has been disabled.",
    "my agent stops with Agent interrupted",
    "langgraph says Found edge starting at unknown node",
]

CSS = """
.errata-sources { display: flex; flex-direction: column; gap: 10px; }
.errata-banner { padding: 10px 12px; border-radius: 8px; font-weight: 600; }
.errata-banner.ok { background: var(--color-green-50, #ecfdf5); color: #065f46; border: 1px solid #a7f3d0; }
.errata-banner.unsure { background: #fffbeb; color: #92400e; border: 1px solid #fcd34d; }
.errata-banner small { display: block; font-weight: 400; margin-top: 2px; }
.errata-card { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 10px 12px;
  background: var(--block-background-fill); overflow-wrap: anywhere; }
.errata-card h4 { margin: 0 0 4px 0; font-size: 0.95rem; }
.errata-card .meta { font-size: 0.8rem; color: var(--body-text-color-subdued); margin-bottom: 6px; }
.errata-card .msg { font-family: var(--font-mono); font-size: 0.82rem; margin: 4px 0 6px 0; }
.errata-card ol { margin: 4px 0 6px 1.2rem; padding: 0; font-size: 0.88rem; }
.errata-related { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 6px 10px;
  margin: 6px 0; font-size: 0.88rem; }
.errata-related .msg { font-size: 0.85rem; margin: 6px 0 2px 0; }
.errata-card details summary { cursor: pointer; font-size: 0.85rem; }
.errata-card pre { max-height: 320px; overflow: auto; font-size: 0.78rem; white-space: pre; }
.errata-card a.code-link { font-size: 0.85rem; }
.errata-empty { color: var(--body-text-color-subdued); font-size: 0.9rem; }
.errata-sources > details > summary { cursor: pointer; padding: 4px 2px; }
.gallery { overflow-wrap: anywhere; }
@media (max-width: 640px) { .errata-header p { font-size: 0.85rem; } }
"""

# Gradio scopes ``css`` to the inside of the app, so the page margins (32 px a side, too wide for a
# phone) are narrowed by a plain style tag in <head>.
HEAD = "<style>@media (max-width: 640px) { .gradio-container .main.app { padding: 12px 6px !important; } }</style>"

# The chat keeps the start of the newest answer in view, not its end: an answer's first lines (the error,
# "Where:", "What:") are what a reader needs first, and a long answer scrolled to its bottom hides them.
# Gradio's own autoscroll (to the bottom) is off; this follows the answer while it streams and after,
# until the reader scrolls or clicks in the chat. A new question is scrolled into view as it is asked.
SCROLL_JS = """
() => {
  const log = () => document.querySelector("#errata-chat [role='log']");
  let asked = -1, reader = false, queued = false;
  const follow = () => {
    queued = false;
    const box = log();
    if (!box) return;
    const users = box.querySelectorAll("[data-testid='user']");
    if (users.length !== asked) { asked = users.length; reader = false; }
    if (reader || !users.length) return;
    const question = users[users.length - 1];
    const answers = [...box.querySelectorAll("[data-testid='bot']")].filter(
      (bot) => question.compareDocumentPosition(bot) & Node.DOCUMENT_POSITION_FOLLOWING);
    if (!answers.length) { box.scrollTop = box.scrollHeight; return; }
    const start = answers[0].closest(".message-row") || answers[0];
    box.scrollTop += start.getBoundingClientRect().top - box.getBoundingClientRect().top;
  };
  const soon = () => { if (!queued) { queued = true; requestAnimationFrame(follow); } };
  new MutationObserver(soon).observe(document.body, {childList: true, subtree: true, characterData: true});
  for (const kind of ["wheel", "touchstart", "keydown", "pointerdown"]) {
    document.addEventListener(kind, (event) => {
      const box = log();
      if (box && box.contains(event.target)) reader = true;
    }, {capture: true, passive: true});
  }
}
"""

THEME = gr.themes.Soft(primary_hue="indigo")


# --- the chat's behaviour, independent of the page layout ---


@dataclass
class Turn:
    """One answered question, kept so that feedback on its message can be stored with it."""

    query: str
    answer: str
    record_ids: list[str]
    feedback_id: int | None = None


@dataclass
class ChatState:
    """Per-browser-session state: the turns by the chat index of their answer message."""

    turns: dict[int, Turn] = field(default_factory=dict)
    last_voted: int | None = None


class WebChat:
    """The handlers behind the page; each one calls the Assistant or the feedback store, nothing deeper."""

    def __init__(self, assistant: Assistant, feedback: FeedbackStore | None = None):
        self.assistant = assistant
        self.settings = assistant.settings
        self.feedback = feedback or FeedbackStore(self.settings.feedback_db)
        self.models = chat_models(self.settings)  # the model menu

    @property
    def model_choice_enabled(self) -> bool:
        return bool(self.models)

    def stream(self, text: str, k: int | None = None, model: str | None = None) -> Iterator[str | Answer]:
        """The one Assistant answers for every model in the menu (:func:`~.web_steps.model_for`)."""
        return self.assistant.ask_stream(text, k, model=model_for(model, self.models))

    def respond(
        self, text: str, history: list[dict[str, Any]], state: ChatState, k: float, model: str | None
    ) -> Iterator[tuple[Any, ...]]:
        """Stream one answer into the chat; yields (textbox, chat, sources, state, feedback box)."""
        state = state or ChatState()
        threshold = self.settings.confidence_threshold  # the bar of the Assistant that answers
        steps = chat_steps(lambda: self.stream(text, int(k) if k else None, model), threshold, text, history)
        try:
            for step in steps:
                if step.warning:
                    gr.Warning(step.warning)
                if step.answer is not None:
                    turn = Turn(text, step.answer.text, [c.record_id for c in step.answer.citations])
                    state.turns[len(step.history) - 1] = turn
                yield (
                    gr.update() if step.textbox is None else step.textbox,
                    step.history,
                    gr.update() if step.sources is None else step.sources,
                    state,
                    gr.update(visible=False) if step.hide_comment else gr.update(),
                )
        except ChatStopped as exc:  # shown as a notice in the page; the message says what to do
            raise gr.Error(str(exc)) from exc

    def vote(self, state: ChatState, data: gr.LikeData) -> tuple[ChatState, Any, str]:
        """Thumbs up or down on an answer: store (or change, or take back) the vote; offer a comment box."""
        try:
            return self._vote(state or ChatState(), data)
        except FeedbackError as exc:  # a damaged or locked feedback file: the chat goes on
            logger.warning("%s", exc)
            return state or ChatState(), gr.update(visible=False), VOTE_FAILED

    def _vote(self, state: ChatState, data: gr.LikeData) -> tuple[ChatState, Any, str]:
        index = data.index[0] if isinstance(data.index, (list, tuple)) else data.index
        turn = state.turns.get(int(index))
        if turn is None:
            return state, gr.update(visible=False), "Feedback works on errata's answers only."
        if data.liked in (True, False):
            helpful = bool(data.liked)
            if turn.feedback_id is None or not self.feedback.update(turn.feedback_id, helpful=helpful):
                turn.feedback_id = self.feedback.add(
                    query=turn.query, answer=turn.answer, record_ids=turn.record_ids, helpful=helpful, source="web"
                )
            state.last_voted = int(index)
            word = "helpful" if helpful else "not helpful"
            return state, gr.update(visible=True), f"Saved: marked {word}. Add a comment below if you like."
        if turn.feedback_id is not None:  # the thumb was clicked again: the vote is withdrawn
            self.feedback.delete(turn.feedback_id)
            turn.feedback_id = None
        state.last_voted = None
        return state, gr.update(visible=False), "Vote removed."

    def comment(self, state: ChatState, comment: str) -> tuple[ChatState, Any, Any, str]:
        """Attach the typed comment to the last vote."""
        state = state or ChatState()
        turn = state.turns.get(state.last_voted) if state.last_voted is not None else None
        if turn is None or turn.feedback_id is None:
            return state, gr.update(), gr.update(), "Click 👍 or 👎 on an answer first."
        try:
            self.feedback.update(turn.feedback_id, comment=(comment or "").strip())
        except FeedbackError as exc:
            logger.warning("%s", exc)
            return state, gr.update(), gr.update(), VOTE_FAILED
        return state, "", gr.update(visible=False), "Thanks, your comment is saved."

    def clear(self) -> tuple[Any, ...]:
        return [], ChatState(), sources_html(None), gr.update(visible=False), "", ""

    def ask(self, text: str) -> tuple[str, list[dict[str, Any]]]:
        """Answer pasted text: returns the answer markdown and its citations (recordId, repo, errorClass,
        githubUrl)."""
        if not isinstance(text, str):  # JSON of another type: said in the reply, not ``{"error": null}``
            raise gr.Error(f"/ask takes the paste as a JSON string, not {_json_kind(text)}")
        answer = self.assistant.ask(text)
        return answer.text, citations_json(answer)


def _refusing_other_json(component: Any, takes: str, accepts: Any) -> Any:
    """``component``, refusing as an input of ``/chat`` a JSON value ``accepts`` says no to, with a message saying
    what it ``takes``. Why: gradio's Textbox turned a number, an array or an object into its Python text (the
    chat answered ``"{'t': 'x'}"``), took null for an empty box (no answer, nothing said), and its Slider failed on
    a string with ``{"error": null}``; all before any handler of errata's runs."""
    preprocess = component.preprocess

    def checked(payload: Any) -> Any:
        if not accepts(payload):
            raise gr.Error(f"/chat takes {takes}, not {_json_kind(payload)}")
        return preprocess(payload)

    component.preprocess = checked  # this instance only: the page itself always sends what it takes
    return component


def _json_kind(value: object) -> str:
    """What a JSON value is, as an API user would name it."""
    kinds = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


# --- the page ---


def build_app(assistant: Assistant, feedback: FeedbackStore | None = None) -> gr.Blocks:
    """The Gradio Blocks of the chat; launch it with :func:`launch` (theme and CSS go in at launch)."""
    chat = WebChat(assistant, feedback)
    settings = assistant.settings
    with gr.Blocks(title="errata: answers for Python errors", analytics_enabled=False) as demo:
        state = gr.State(ChatState())
        gr.Markdown(
            "## errata\nPaste a traceback, an error line or a question about a Python error. "
            "Answers cite real error records from the knowledge base; when none matches, errata says so.",
            elem_classes="errata-header",
        )
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=320):
                chatbot = gr.Chatbot(
                    label="Chat",
                    show_label=False,
                    layout="panel",
                    autoscroll=False,  # SCROLL_JS keeps the newest answer's start in view instead
                    height="62vh",
                    min_height=320,
                    feedback_options=("Like", "Dislike"),
                    buttons=["copy"],
                    placeholder="Answers appear here, with their sources beside them.",
                    elem_id="errata-chat",
                )
                query = _refusing_other_json(
                    gr.Textbox(
                        lines=4,
                        max_lines=16,
                        show_label=False,
                        placeholder="Paste a traceback or ask a question… (Shift+Enter asks)",
                        elem_id="errata-query",
                    ),
                    "the paste as a JSON string",
                    lambda value: isinstance(value, str),
                )
                with gr.Row():
                    ask_button = gr.Button("Ask", variant="primary", elem_id="errata-ask", min_width=100)
                    clear_button = gr.Button("Clear chat", elem_id="errata-clear", min_width=100)
                gr.Examples(EXAMPLES, inputs=query, label="Examples (click one, then Ask)")
                feedback_note = gr.Markdown(elem_id="errata-feedback-note")
                with gr.Group(visible=False) as comment_box:
                    comment = gr.Textbox(
                        label="Comment (optional)",
                        placeholder="What was right or wrong about this answer?",
                        lines=2,
                        elem_id="errata-comment",
                    )
                    comment_button = gr.Button("Send comment", size="sm", elem_id="errata-send-comment")
                with gr.Accordion("Settings", open=False):
                    model = gr.Dropdown(
                        choices=chat.models,
                        value=settings.model,
                        label="Model",
                        visible=chat.model_choice_enabled,
                    )
                    top_k = _refusing_other_json(
                        gr.Slider(
                            1, MAX_SOURCES, value=min(settings.top_k, MAX_SOURCES), step=1, label="Number of sources"
                        ),
                        "the number of sources as a JSON number",
                        lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
                    )
                    gr.Markdown(
                        f"Drafting with **{settings.model}** unless another model (or offline) is picked above."
                        if settings.model
                        else "Drafting: **offline** (answers composed from the records; no model configured)."
                    )
            with gr.Column(scale=2, min_width=320):
                sources = gr.HTML(sources_html(None), elem_id="errata-sources")

        respond_args = {
            "fn": chat.respond,
            "inputs": [query, chatbot, state, top_k, model],
            "outputs": [query, chatbot, sources, state, comment_box],
            "concurrency_limit": 4,
        }
        ask_button.click(**respond_args, api_name="chat", api_visibility="undocumented")
        query.submit(**respond_args, api_visibility="private")
        chatbot.like(chat.vote, inputs=[state], outputs=[state, comment_box, feedback_note], api_visibility="private")
        comment_button.click(
            chat.comment,
            inputs=[state, comment],
            outputs=[state, comment, comment_box, feedback_note],
            api_visibility="private",
        )
        clear_outputs = [chatbot, state, sources, comment_box, comment, feedback_note]
        clear_button.click(chat.clear, outputs=clear_outputs, api_visibility="private")
        chatbot.clear(chat.clear, outputs=clear_outputs, api_visibility="private")
        gr.api(chat.ask, api_name="ask", concurrency_limit=4)
    return demo


def launch(demo: gr.Blocks, settings: Settings, *, block: bool = True, quiet: bool = False) -> str:
    """Serve the app on settings.host:port with nothing reaching the internet; returns the local URL."""
    try:
        _app, local_url, _share = demo.launch(
            server_name=settings.host,
            server_port=settings.port,
            share=False,
            inbrowser=False,
            prevent_thread_lock=not block,
            quiet=quiet,
            ssr_mode=False,
            mcp_server=False,
            enable_monitoring=False,
            footer_links=["api"],
            theme=THEME,
            css=CSS,
            head=HEAD,
            js=SCROLL_JS,
        )
    except OSError as exc:  # the port is taken or the host is not an address of this machine
        raise cannot_serve(settings.host, settings.port, exc) from exc
    return local_url
