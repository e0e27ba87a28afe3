"""The web chat in a real browser: Debian's chromium, headless, driven by Playwright.

Screenshots land in test-artifacts/ (ignored by git) for a person to look at.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import urlparse

import pytest

from assistant import Assistant
from assistant.frontends.web import EXAMPLES

from .web_server import served

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
TRACEBACK = EXAMPLES[0]
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}

pytestmark = [
    pytest.mark.slow,  # a real browser
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium is not installed (apt-get install chromium; .ci/run does)"
    ),
]


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def app(assistant, tmp_path_factory):
    with served(assistant, tmp_path_factory.mktemp("browser") / "feedback.sqlite3") as running:
        yield running


@pytest.fixture
def open_page(browser):
    """A fresh page at a given size that remembers every request leaving for another host."""
    contexts = []

    def open_at(url: str, viewport: dict):
        context = browser.new_context(viewport=viewport)
        contexts.append(context)
        page = context.new_page()
        page.outside_requests = []
        here = urlparse(url).netloc
        page.on(
            "request",
            lambda r: None if urlparse(r.url).netloc in (here, "") else page.outside_requests.append(r.url),
        )
        page.goto(url)
        page.wait_for_selector("#errata-query textarea")
        return page

    yield open_at
    for context in contexts:
        context.close()


def ask_in_page(page, text: str) -> None:
    page.fill("#errata-query textarea", text)
    page.click("#errata-ask")


def feedback_rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT query, helpful, comment, record_ids FROM feedback ORDER BY id").fetchall()


def test_paste_a_traceback_read_the_answer_and_its_source_then_vote(app, open_page, assistant):
    page = open_page(app.url, DESKTOP)
    ask_in_page(page, TRACEBACK)

    link = page.wait_for_selector("#errata-sources a.code-link", timeout=60_000)
    assert link.get_attribute("href").startswith("https://github.com/encode/httpx/")
    assert link.get_attribute("target") == "_blank"
    bot = page.locator("#errata-chat [data-testid='bot']").last
    assert "Multipart file uploads require" in bot.inner_text()
    user_code = page.locator("#errata-chat [data-testid='user'] pre").first
    assert "Traceback (most recent call last):" in user_code.inner_text()  # the paste kept its layout
    assert page.locator("#errata-sources details:has(summary:text('Code excerpt')) pre").first.is_hidden()

    page.locator("#errata-chat button[aria-label='Like']").last.click()
    page.wait_for_selector("#errata-feedback-note :text('marked helpful')")
    rows = feedback_rows(app.feedback.path)
    assert len(rows) == 1
    query, helpful, comment, record_ids = rows[0]
    expected = assistant.ask(TRACEBACK)
    assert query == TRACEBACK and helpful == 1 and comment == ""
    assert json.loads(record_ids) == [c.record_id for c in expected.citations]

    page.fill("#errata-comment textarea", "the BytesIO fix worked")
    page.click("#errata-send-comment")
    page.wait_for_selector("#errata-feedback-note :text('comment is saved')")
    assert feedback_rows(app.feedback.path)[0][2] == "the BytesIO fix worked"

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "web-desktop.png"), full_page=True)
    page.locator("#errata-chat [role='log']").evaluate("log => log.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "web-desktop-question.png"), full_page=True)
    assert page.outside_requests == []

    page.click("#errata-clear")
    page.wait_for_selector("#errata-sources :text('Sources for the answer appear here')")
    assert page.locator("#errata-chat [data-testid='bot']").count() == 0


def test_phone_width_example_query_fits_the_screen(app, open_page):
    page = open_page(app.url, PHONE)
    page.get_by_text("my agent stops with Agent interrupted", exact=True).first.click()
    page.wait_for_function(
        "document.querySelector('#errata-query textarea').value === 'my agent stops with Agent interrupted'"
    )
    page.press("#errata-query textarea", "Shift+Enter")  # asks, as the placeholder says
    page.wait_for_selector("#errata-sources .errata-banner", timeout=60_000)
    page.wait_for_selector("#errata-sources .errata-card")

    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page scrolls sideways at phone width ({width}px)"
    chat_box = page.locator("#errata-chat").bounding_box()
    sources_box = page.locator("#errata-sources").bounding_box()
    assert sources_box["y"] >= chat_box["y"] + chat_box["height"] - 1  # stacked, sources under the chat

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "web-phone.png"), full_page=True)
    assert page.outside_requests == []


def test_no_confident_match_is_shown_with_the_possibly_related_records(assistant, embedder, tmp_path, open_page):
    unsure = Assistant(assistant.settings, embedder=embedder, confidence_threshold=1.01)
    with served(unsure, tmp_path / "feedback.sqlite3") as running:
        page = open_page(running.url, DESKTOP)
        ask_in_page(page, "how do I bake sourdough bread")
        banner = page.wait_for_selector("#errata-sources .errata-banner.unsure", timeout=60_000)
        assert "No confident match" in banner.inner_text()
        assert "below the 1.01 errata needs to answer" in banner.inner_text()  # the bar of the Assistant used
        assert page.locator("#errata-sources .errata-related").count() >= 1  # folded, one title line each
        assert page.locator("#errata-sources .errata-card").count() == 0
        assert "No confident match" in page.locator("#errata-chat [data-testid='bot']").last.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "web-no-match.png"), full_page=True)


def in_chat_view(page, locator) -> bool:
    """Whether ``locator``'s box lies within the chat's visible (scrolled) area."""
    chat = page.locator("#errata-chat [role='log']").bounding_box()
    box = locator.bounding_box()
    return box["y"] >= chat["y"] - 1 and box["y"] + box["height"] <= chat["y"] + chat["height"] + 1


def test_a_long_answer_is_shown_from_its_first_line(app, open_page):
    page = open_page(app.url, DESKTOP)
    ask_in_page(page, TRACEBACK)
    page.wait_for_selector("#errata-sources a.code-link", timeout=60_000)  # the answer is complete
    page.wait_for_timeout(800)  # the chat's own rendering after the last update (code blocks, buttons)

    bot = page.locator("#errata-chat [data-testid='bot']").last
    chat = page.locator("#errata-chat [role='log']").bounding_box()
    assert bot.bounding_box()["height"] > chat["height"]  # long: its end cannot be in view with its start
    first_line = bot.locator("p").first
    assert "Multipart file uploads require" in first_line.inner_text()
    assert in_chat_view(page, first_line), "the answer's first line is scrolled out of the chat"
    assert abs(bot.bounding_box()["y"] - chat["y"]) < 40  # the answer starts at the top of the chat
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "web-long-answer.png"), full_page=True)

    # The reader scrolls to the end; asking again follows the new answer's start, not the end.
    page.locator("#errata-chat [role='log']").hover()
    page.mouse.wheel(0, 5000)
    page.wait_for_timeout(300)
    assert not in_chat_view(page, first_line)
    ask_in_page(page, "smolagents.utils.AgentError: Agent interrupted.")
    page.wait_for_function("document.querySelectorAll(\"#errata-chat [data-testid='bot']\").length === 2")
    page.wait_for_selector("#errata-sources .errata-card h4:text('AgentError')", timeout=60_000)
    page.wait_for_timeout(800)
    second = page.locator("#errata-chat [data-testid='bot']").last.locator("p").first
    assert "AgentError: Agent interrupted." in second.inner_text() and in_chat_view(page, second)


def test_a_streamed_answer_keeps_its_start_in_view_while_it_grows(assistant, tmp_path, open_page, monkeypatch):
    from .openai_server import OpenAIServer, llm_assistant, use_dummy_key

    use_dummy_key(monkeypatch, "sk-test-browser-0123456789")
    steps = [f"Step {n}: a long line of advice [1].\n\n" for n in range(60)]
    lines = ["**Agent interrupted on purpose** [1]\n\n", *steps]
    with (
        OpenAIServer(lines, piece_delay=0.15) as server,  # 7 s of stream left after Step 10: room on a busy machine
        served(llm_assistant(assistant, server, "openai/test-model"), tmp_path / "feedback.sqlite3") as running,
    ):
        page = open_page(running.url, DESKTOP)
        ask_in_page(page, "smolagents.utils.AgentError: Agent interrupted.")
        page.wait_for_selector("#errata-chat [data-testid='bot'] :text('Step 10:')", timeout=60_000)
        first_line = page.locator("#errata-chat [data-testid='bot']").last.locator("p").first
        assert "Agent interrupted on purpose" in first_line.inner_text()
        assert in_chat_view(page, first_line), "mid-stream, the answer's first line left the chat"
        assert len(server.requests) == 1 and "Step 59:" not in page.locator("#errata-chat").inner_text()
        page.wait_for_selector("#errata-sources .errata-banner", timeout=60_000)
        page.wait_for_timeout(800)
        assert in_chat_view(page, first_line)


def test_the_starting_page_is_a_chat_until_gradios_page_takes_the_port(assistant, browser, tmp_path):
    """A warm start: the knowledge base is loaded, gradio's page is not yet. The starting page's own chat
    answers a paste as the chat would; when gradio takes the port, a tab left idle reloads into it and a tab
    with an answer on it says the chat is ready without wiping the answer."""
    from assistant.frontends.feedback import FeedbackStore
    from assistant.frontends.starting_page import StartingPage
    from assistant.frontends.web import build_app, launch
    from assistant.frontends.web_early import EarlyApi

    from .web_server import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    starting = StartingPage("127.0.0.1", port)
    early = EarlyApi(assistant)
    starting.api = early
    context = browser.new_context(viewport=DESKTOP)
    demo = None
    try:
        asked, idle = context.new_page(), context.new_page()
        for tab in (asked, idle):
            tab.goto(url)
            tab.wait_for_selector("#errata-early-query")
        asked.fill("#errata-early-query", TRACEBACK)
        asked.click("#errata-early-ask")
        asked.wait_for_selector("#errata-early-answer .text")
        answer = assistant.ask(TRACEBACK)
        shown = "#errata-early-answer .text"
        assert asked.get_attribute(shown, "data-markdown") == answer.text
        assert "**" not in asked.text_content(shown) and asked.locator(f"{shown} strong").count() >= 2
        assert asked.locator(f"{shown} pre code").count() == answer.text.count("```") // 2
        assert asked.get_attribute("#errata-early-answer ol a", "href") == answer.citations[0].github_url
        assert early.drain(10)
        starting.close()
        demo = build_app(assistant, FeedbackStore(tmp_path / "feedback.sqlite3"))
        launch(demo, assistant.settings.replace(host="127.0.0.1", port=port), block=False, quiet=True)
        idle.wait_for_selector("#errata-query textarea", timeout=60_000)  # gradio's chat, reloaded by itself
        asked.wait_for_selector("#errata-early-open", timeout=30_000)
        assert asked.get_attribute(shown, "data-markdown") == answer.text  # still there
        asked.screenshot(path=str(ARTIFACTS / "early-chat.png"))
    finally:
        context.close()
        starting.close()
        if demo is not None:
            demo.close()
