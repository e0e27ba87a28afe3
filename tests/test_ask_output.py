"""What ``errata ask`` prints (plain text when piped, rich's rendering in a terminal) and the words for a
confidence below the bar, driven by the real Assistant's answers."""

from __future__ import annotations

import io
import re

from assistant.answering.answer import Answer
from assistant.frontends.ask_output import plain_text, print_answer
from assistant.frontends.confidence import confidence_words

AGENT_ERROR = "smolagents.utils.AgentError: Agent interrupted."


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_text_drops_the_markup_and_keeps_the_words():
    markdown = (
        "_Note: the paste was cut._\n\n"
        "**TypeError: bad \\*args\\_here** (encode/httpx) [1]\n\n"
        "## Fix ##\n"
        "1. Pass *bytes*, not `**kwargs` or `str` [1]\n"
        "- keep my_snake_case_name and 2 * 3\n\n"
        "````python\nx = {**kwargs}\n\nprint(x)\n````\n"
        "**Source:** [httpx/\\_multipart.py:88](https://github.com/encode/httpx/blob/v1/httpx/_multipart.py#L88) [1]"
    )
    assert plain_text(markdown) == (
        "Note: the paste was cut.\n\n"
        "TypeError: bad *args_here (encode/httpx) [1]\n\n"
        "Fix\n"
        "1. Pass bytes, not `**kwargs` or `str` [1]\n"  # code is shown as written
        "- keep my_snake_case_name and 2 * 3\n\n"
        "    x = {**kwargs}\n\n    print(x)\n"  # a code block indented, its fences gone
        "Source: httpx/_multipart.py:88 (https://github.com/encode/httpx/blob/v1/httpx/_multipart.py#L88) [1]"
    )


def test_a_piped_answer_is_plain_even_when_its_markup_is_split_between_chunks():
    final = Answer("**Bold** and *it*\n\ndone", confidence=0.5)
    out = io.StringIO()
    assert print_answer(["**Bo", "ld** and *i", "t*\n", "\ndone", final], 0.9, out) is final
    assert out.getvalue() == "Bold and it\n\ndone\n\nconfidence: 0.50\n"


def test_a_real_answer_piped_and_in_a_terminal(assistant, monkeypatch):
    threshold = assistant.settings.confidence_threshold
    piped = io.StringIO()
    answer = print_answer(assistant.ask_stream(AGENT_ERROR), threshold, piped)
    assert answer.grounded and answer.text.startswith("**AgentError: Agent interrupted.**")
    assert piped.getvalue().startswith("AgentError: Agent interrupted. (huggingface/smolagents) [1]\n\n")
    assert "**" not in piped.getvalue() and "\x1b" not in piped.getvalue()

    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    terminal = Terminal()
    print_answer(assistant.ask_stream(AGENT_ERROR), threshold, terminal)
    shown = terminal.getvalue()
    assert "\x1b[1mAgentError: Agent interrupted.\x1b[0m" in shown and "**" not in shown
    assert "\x1b[1mFix\x1b[0m (best first)" in shown
    assert re.search(r"\n *1 .*Catch AgentError", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown))


def test_a_confidence_below_the_bar_says_the_bar():
    assert confidence_words(0.83, 0.888) == "confidence 0.83, below the 0.89 errata needs to answer"
    # As many decimals as it takes for the two to differ on the screen.
    assert confidence_words(0.885, 0.888) == "confidence 0.885, below the 0.888 errata needs to answer"
    assert confidence_words(0.93, 0.888) == "confidence 0.93"  # not below: no bar to speak of
    assert confidence_words(0.5) == "confidence 0.50"


def test_the_cli_footer_of_an_abstention_names_the_assistants_own_threshold(assistant, embedder):
    from assistant import Assistant

    unsure = Assistant(assistant.settings, embedder=embedder, confidence_threshold=1.01)
    out = io.StringIO()
    answer = print_answer(unsure.ask_stream(AGENT_ERROR), unsure.settings.confidence_threshold, out)
    assert not answer.grounded and answer.hits
    assert out.getvalue().endswith(
        f"\nNo confident match: confidence {answer.confidence:.2f}, below the 1.01 errata needs to answer\n"
    )
