"""Hostile LLM replies from a real local server speaking the OpenAI protocol: raw HTML, images, foreign
links, fake citations, Slack broadcasts, a reply that trickles a word a second, one that floods a
megabyte. ``Answer.text`` itself must be safe, since every front end shows it."""

from __future__ import annotations

import re
import time

import pytest

from assistant import Assistant
from assistant.answering.sanitize import ReplySanitizer, sanitize_reply

from .openai_server import OpenAIServer, use_dummy_key
from .openai_server import llm_assistant as llm_assistant_for

KEY = "sk-test-0123456789abcdef0123456789abcdef"
MODEL = "openai/gpt-test"
PASTE = "smolagents.utils.AgentError: Agent interrupted."
EVIL = "https://evil.example"
HOSTILE = [
    "Your agent was interrupted [1]. ",
    f'<img src="{EVIL}/pixel.png?leak=1"> ',
    f"See [the docs]({EVIL}/docs) or the fix [1]({EVIL}/cite). ",
    f'<a href="{EVIL}/a">click</a> ',
    f"![tracker]({EVIL}/t.gif)\n",
    f"Also {EVIL}/bare and <{EVIL}/auto>. <!channel> <!here> <@U0123ABCD> @everyone\n",
    f"[1]: {EVIL}/ref\n",
    "```python\nagent.run(task)  # <b>kept as code</b>\n```\n",
    "Catch `AgentError` around `agent.run` [1].",
]


@pytest.fixture(autouse=True)
def dummy_key(monkeypatch):
    use_dummy_key(monkeypatch, KEY)


def _llm(assistant, server, **settings) -> Assistant:
    return llm_assistant_for(assistant, server, MODEL, **settings)


def _links(text: str) -> list[str]:
    """Every URL a markdown renderer could make live: links, images, autolinks, bare URLs outside code."""
    outside_code = re.sub(r"```.*?```|`[^`]*`", "", text, flags=re.DOTALL)
    return re.findall(r"https?://[^\s)>\]]*[^\s)>\].,;:]", outside_code)


@pytest.mark.slow
def test_a_hostile_reply_is_shown_without_html_images_foreign_links_or_mentions(assistant):
    with OpenAIServer(HOSTILE) as server:
        pieces = list(_llm(assistant, server).ask_stream(PASTE))
    answer = pieces[-1]
    text = answer.text
    assert "".join(pieces[:-1]) == text
    assert "<img" not in text and "<a " not in text and "</a>" not in text and "![" not in text
    assert "<!channel>" not in text and "<!here>" not in text and "<@U0123ABCD>" not in text
    assert "`@channel`" in text and "`@U0123ABCD`" in text and "`@everyone`" in text
    assert _links(text) == [], _links(text)  # evil URLs only as inline code, not clickable
    assert f"`{EVIL}/bare`" in text
    assert "the docs" in text and "click" in text and "tracker" in text  # the words stay, the links go
    assert "the fix [1]." in text  # a fake citation link is a plain citation again
    assert "# <b>kept as code</b>" in text  # code is shown as written
    assert answer.grounded and [c.number for c in answer.citations] == [1]


@pytest.mark.slow
def test_links_to_the_retrieved_records_are_kept(assistant):
    hit = assistant.search(PASTE)[0]
    url = hit.record.github_url
    reply = f"The agent was interrupted [1]; see [the raising code]({url}) and {url}."
    with OpenAIServer(reply) as server:
        answer = _llm(assistant, server).ask(PASTE)
    assert f"[the raising code]({url})" in answer.text and _links(answer.text) == [url, url]


@pytest.mark.slow
def test_the_slack_blocks_of_a_hostile_reply_hold_no_mention_or_foreign_link(assistant):
    from assistant.frontends.slack_blocks import answer_blocks, fallback_text

    with OpenAIServer(HOSTILE) as server:
        answer = _llm(assistant, server).ask(PASTE)
    blocks = answer_blocks(answer, PASTE)
    shown = repr(blocks) + fallback_text(blocks)
    assert "<!channel>" not in shown and "<!here>" not in shown and "<@U" not in shown and "<!everyone>" not in shown
    assert not re.search(r"<https?://evil", shown)


@pytest.mark.slow
def test_a_trickling_reply_stops_at_the_deadline_and_is_marked_cut(assistant):
    words = [f"word{i} " for i in range(60)]
    with OpenAIServer(["Interrupted [1]. ", *words], piece_delay=0.5) as server:
        chat = _llm(assistant, server, llm_timeout=3, llm_deadline=3)
        started = time.monotonic()
        answer = chat.ask(PASTE)
        took = time.monotonic() - started
    assert took < 3 + 3 + 2, took  # the deadline, at most one wait for a piece, and retrieval
    assert "word0" in answer.text and "word59" not in answer.text
    assert "_The reply was cut short: it was still arriving after the 3 s deadline._" in answer.text
    assert any("cut short" in n for n in answer.notes)


@pytest.mark.slow
def test_a_reply_that_starts_after_the_deadline_gives_the_offline_answer(assistant):
    with OpenAIServer("Interrupted [1].", delay=6) as server:
        chat = _llm(assistant, server, llm_timeout=2, llm_deadline=2, llm_retries=3)
        started = time.monotonic()
        answer = chat.ask(PASTE)
        took = time.monotonic() - started
    assert took < 2 + 2 + 3, took  # retries do not each get the whole deadline
    assert answer.model is None and "composed from the records" in answer.text
    assert answer.hits[0].record.id == "c6aeeba10bb30da8"


def test_a_flood_is_cut_at_the_length_cap(assistant):
    flood = ["The agent was interrupted [1]. "] + ["spam " * 2000] * 100  # about 1 MB
    with OpenAIServer(flood) as server:
        answer = _llm(assistant, server, llm_max_chars=5_000).ask(PASTE)
    assert len(answer.text) < 5_500
    assert "longer than 5,000 characters" in answer.text and answer.grounded


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13])
def test_the_sanitizer_gives_the_same_text_whatever_the_pieces(size):
    whole = "".join(HOSTILE)
    expected = sanitize_reply(whole, [f"{EVIL}/never"])
    sanitizer = ReplySanitizer([f"{EVIL}/never"])
    pieces = [sanitizer.feed(whole[i : i + size]) for i in range(0, len(whole), size)]
    assert "".join(pieces) + sanitizer.close() == expected


def test_only_https_links_to_the_exact_record_urls_are_allowed():
    allowed = ["https://github.com/o/r/blob/abc/f.py#L1-L9"]
    same = "[x](https://github.com/o/r/blob/abc/f.py)"
    assert sanitize_reply(same, allowed) == same
    assert sanitize_reply("[x](https://github.com/o/r/blob/abc/other.py)", allowed) == "x"
    assert sanitize_reply("[x](javascript:alert(1))", allowed) == "x"
    assert sanitize_reply("<script>alert(1)</script>", allowed) == "alert(1)"
