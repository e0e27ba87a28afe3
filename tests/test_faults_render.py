"""Hostile text on its way to a page or to Slack: LLM replies, a user's paste and record fields (an archive
member's name becomes ``filePath`` and part of ``githubUrl``). Whatever it holds, what is shown fetches
nothing and links only to a record's own GitHub page.

The markdown is rendered by markdown-it (CommonMark, raw HTML on, tables on, as the chat's renderer does);
GitHub-flavoured autolinks (bare URLs, ``www.``, e-mail addresses) are looked for in the rendered text
outside code and links, where the chat's renderer would make them live.
"""

from __future__ import annotations

import json
import random
import re
import threading
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from assistant import Assistant, Settings
from assistant.answering.answer import Hit, Retrieval
from assistant.answering.draft import offline_answer
from assistant.answering.sanitize import ReplySanitizer, ShownMarkdown, sanitize_reply
from assistant.frontends.ask_output import plain_text
from assistant.frontends.slack_blocks import answer_blocks, to_mrkdwn
from assistant.frontends.web_render import MAX_CODE_CHARS, answer_markdown, sources_html, user_markdown
from assistant.knowledge.records import Record
from assistant.parse.query import parse_query

from . import SHUTDOWN_POLL_S

GITHUB = "https://github.com/evil/pkg/blob/v0.2.0/evilpkg/mod.py#L1-L9"
PIXEL = "http://127.0.0.1:9/pixel.png"
_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_AUTOLINK_RE = re.compile(r"(?:https?://|ftp://|www\.)[^\s<]+|[\w.+-]+@[\w-]+\.[\w-]+", re.IGNORECASE)

# Each reply comes in the pieces a model streamed it in.
REPLIES = {
    "an image whose URL is on the next line": ["Look: ![p](\n//127.0.0.1:9/x.png\n) [1]."],
    "a link whose URL is on the next line": ["See [the docs](\nhttp://127.0.0.1:9/d\n) [1]."],
    "a URL split between two pieces": ['Set src="h', 'ttp://127.0.0.1:9/y.png" ', "as shown [1]."],
    "an e-mail address": ["Write to ops@example.com about it [1]."],
    "escaped backticks around a tag": ["\\`<img src=//127.0.0.1:9/e.png>\\` [1]"],
    "a code span over two lines": ["`a\nb` <img src=//127.0.0.1:9/m.png> `c` [1]"],
    "a reference image defined in a quote": ["> [1]: //127.0.0.1:9/r.png\n\n", "![a][1]"],
    "a fence whose info string holds a backtick": ["``` `x`\n<img src=//127.0.0.1:9/f.png>\n```\n[1]"],
    "a tag whose angle bracket a dropped tag hid": ["<<b>img src=//127.0.0.1:9/h.png> [1]"],
    "a URL whose letters a dropped tag split": ["see ht<b>tp://127.0.0.1:9/s [1]"],
    "a lone carriage return before a fence": [
        "a\r```\r<img src=//127.0.0.1:9/cr.png>\n```\n<img src=//127.0.0.1:9/c2.png>"
    ],
}


class _Shown(HTMLParser):
    """What a browser would fetch or link from some HTML, and the text it shows outside code and links."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self._inside = 0  # depth inside <code>, <pre> or <a>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("img", "image", "video", "audio", "source", "iframe", "object", "embed", "link", "script"):
            self.images.append(f"<{tag} {values}>")
        for name in ("src", "srcset", "background", "poster", "data"):
            if values.get(name):
                self.images.append(f"{tag} {name}={values[name]}")
        if tag == "a":
            self.links.append(values.get("href") or "")
        if tag in ("code", "pre", "a"):
            self._inside += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre", "a") and self._inside:
            self._inside -= 1

    def handle_data(self, data: str) -> None:
        if not self._inside:
            self.text.append(data)


def fetched_and_linked(html: str) -> tuple[list[str], list[str]]:
    """What the HTML makes a browser fetch, and every link it holds other than to ``GITHUB``'s page."""
    shown = _Shown()
    shown.feed(html)
    autolinks = [m[0].rstrip("?!.,:*_~)") for m in _AUTOLINK_RE.finditer(" ".join(shown.text))]
    return shown.images, [h for h in shown.links + autolinks if h.split("#")[0] != GITHUB.split("#")[0]]


def assert_inert(markdown: str) -> None:
    images, links = fetched_and_linked(_MD.render(markdown))
    assert images == [] and links == [], (images, links, markdown)


def streamed(pieces: list[str], allowed: list[str]) -> str:
    sanitizer = ReplySanitizer(allowed)
    return "".join(sanitizer.feed(p) for p in pieces) + sanitizer.close()


@pytest.mark.parametrize("name", list(REPLIES))
def test_a_hostile_reply_renders_inert_whole_and_streamed(name):
    pieces = REPLIES[name]
    whole = sanitize_reply("".join(pieces), [GITHUB])
    assert_inert(whole)
    assert streamed(pieces, [GITHUB]) == whole  # the pieces join up to the whole text's result
    assert "[1]" in whole or "1" in whole


@pytest.mark.parametrize("name", list(REPLIES))
def test_the_page_sanitizes_the_whole_draft_so_far_at_every_piece(name):
    """The web chat redraws all it has drafted at each piece: every state of the page is inert, whether
    the pieces were sanitized before (an Assistant's) or not (a model's own stream)."""
    shown = ShownMarkdown([GITHUB])
    drafted = ""
    for piece in REPLIES[name]:
        for char in piece:  # the worst cut: one character at a time
            drafted += char
            page = shown.show(drafted)
            assert page == sanitize_reply(drafted, [GITHUB])
            assert_inert(page)


def test_code_spans_hold_nothing_a_lax_renderer_could_read_as_a_tag_or_a_link():
    """marked (the chat's renderer) lets ``*`` or ``_`` before a code span fenced by two backticks close
    inside it, and ``~~`` before any code span, then reads the rest of the span as prose: what such a span
    holds must be inert as prose too, and nothing may strike through."""
    lax = [
        "*x ``<img src=//127.0.0.1:9/em.png>*`` ~~y `![s](//127.0.0.1:9/s.png)~~` `<class 'int'>`",
        "_x ``http://127.0.0.1:9/u ops@example.com_`` ~~z `http://127.0.0.1:9/d~~`",
    ]
    for pieces in [*REPLIES.values(), *([p] for p in lax)]:
        shown = sanitize_reply("".join(pieces), [GITHUB])
        assert "<s>" not in _MD.render(shown)
        spans = [t for b in _MD.parse(shown) for t in b.children or [] if t.type == "code_inline"]
        for span in spans:
            assert not re.search(r"<[A-Za-z/!?]|\]\(", span.content), span.content
            assert len(span.markup) == 1 or not re.search(r"(?:https?|ftp)://|www\.|\w@", span.content)


def test_a_code_block_ends_where_a_lax_renderer_ends_it():
    """marked ends a code block at a fence line followed by backticks or tildes; CommonMark does not. The
    lines after it must be read as the text they are to marked."""
    shown = sanitize_reply("```\nx\n```~\n<img src=//127.0.0.1:9/close.png>\n```\n", [GITHUB])
    assert shown.split("\n")[:3] == ["```", "x", "```"] and "<img" not in shown


def test_the_users_own_paste_is_shown_but_not_fetched():
    for paste in ('<img src="http://127.0.0.1:9/paste.png">', f"![x]({PIXEL})", "mail ops@example.com"):
        shown = user_markdown(paste)
        assert_inert(shown)
        assert "127.0.0.1:9" in _MD.render(shown) or "ops@example.com" in shown  # shown, as text
    assert_inert(user_markdown('a\r```\r<img src="http://127.0.0.1:9/cr.png">'))


def test_a_huge_paste_is_shown_by_its_start_and_end_only():
    paste = "x = 1  # " + "=" * 10_000_000 + "\nTraceback (most recent call last):"
    shown = user_markdown(paste)
    assert len(shown) < 25_000 and shown.startswith("```text\nx = 1") and "characters not shown" in shown
    assert shown.rstrip("`\n").endswith("Traceback (most recent call last):")


def test_only_a_records_own_github_link_stays_live():
    # A record's githubUrl that is not GitHub's, or that markdown would end early (the rest read as an
    # image), is no link at all; neither is another page on GitHub.
    tricky = "https://github.com/evil/pkg/blob/v1/a)![x](http://127.0.0.1:9/p.png)(b.py#L1"
    records = [GITHUB, "https://evil.example/docs", "http://github.com/evil/pkg", tricky]
    text = (
        f"[code]({GITHUB}) and {GITHUB} and [docs](https://evil.example/docs) [plain](http://github.com/evil/pkg) "
        f"[x](https://github.com/evil/other) https://github.com/evil/other and [a]({tricky})"
    )
    html = _MD.render(sanitize_reply(text, records))
    shown = _Shown()
    shown.feed(html)
    assert shown.links == [GITHUB] and shown.images == []
    assert "https://github.com/evil/other" in html  # shown, as code


@pytest.mark.parametrize("size", [1, 2, 3, 7, 11])
def test_sanitizing_is_the_same_in_any_pieces_and_changes_nothing_the_second_time(size):
    rng = random.Random(size)
    alphabet = ["`", "``", "[", "]", "(", ")", "<", ">", "!", "\\", "\n", " ", "a", "@", "|", "-", ":", "*", "\r"]
    words = ["http://127.0.0.1:9/z.png", "www.x.io", "ops@example.com", "[1]", "<img src=x>", "```", GITHUB]
    for _ in range(150):
        text = "".join(rng.choice(alphabet + words) for _ in range(rng.randint(1, 60)))
        whole = sanitize_reply(text, [GITHUB])
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        assert streamed(pieces, [GITHUB]) == whole, text
        assert sanitize_reply(whole, [GITHUB]) == whole, text
        assert_inert(whole)


# --- record fields ---

EVIL_PATH = f"evilpkg/a)![x]({PIXEL})(b.py"


def hostile_record(**fields) -> Record:
    """A record as an archive made to attack could give it: the member's name in filePath and githubUrl."""
    values = {
        "id": "0123456789abcdef",
        "repo": "evil/pkg",
        "slug": "evil",
        "error_message": "Agent interrupted.",
        "message_pattern": "Agent interrupted\\.",
        "error_type": "exception",
        "error_class": "AgentError",
        "file_path": EVIL_PATH,
        "line_number": 3,
        "documentation": f"Raised in {EVIL_PATH} <img src={PIXEL}> by ops@example.com, see http://127.0.0.1:9/doc.",
        "solutions": (f"Read [the fix]({PIXEL}) ![i]({PIXEL})", f"<a href='{PIXEL}'>click</a>"),
        "trigger_scenarios": f"When [1]: {PIXEL} is set\n\n![t][1]",
        "source_code": f"raise AgentError('x')  # <img src={PIXEL}>",
        "github_url": f"https://github.com/evil/pkg/blob/v0.2.0/{EVIL_PATH}#L1-L5",
    }
    return Record(**{**values, **fields})


def answer_for(*records: Record, confident: bool = True):
    query = parse_query("evilpkg.AgentError: Agent interrupted.")
    hits = [Hit(r, 5.0 - i) for i, r in enumerate(records)]
    return offline_answer(query, Retrieval(hits, 0.9 if confident else 0.1, confident))


@pytest.mark.parametrize("confident", [True, False])
def test_hostile_record_fields_are_inert_in_the_offline_answer_and_the_web_chat(confident):
    answer = answer_for(hostile_record(), hostile_record(id="fedcba9876543210"), confident=confident)
    assert_inert(answer.text)
    assert_inert(answer_markdown(answer))
    assert "Agent interrupted" in answer.text and "Raised in" in answer.text


def test_only_a_records_checked_github_url_is_a_link_in_the_offline_answer():
    good = hostile_record(github_url=GITHUB, file_path="evilpkg/<img src=x>.py")
    html = _MD.render(answer_for(good).text)
    shown = _Shown()
    shown.feed(html)
    assert shown.links == [GITHUB] and shown.images == []
    traversal = "https://github.com/evil/pkg/blob/v0.2.0/../../../../tmp/x.py#L1"
    assert "tmp/x.py" not in answer_for(hostile_record(github_url=traversal)).text


def test_hostile_record_fields_are_inert_in_the_source_cards():
    answer = answer_for(hostile_record(), hostile_record(id="fedcba9876543210", github_url=GITHUB))
    for html in (sources_html(answer), sources_html(answer_for(hostile_record(), confident=False))):
        shown = _Shown()  # HTML, not markdown: its text is shown as text, whatever it says
        shown.feed(html)
        assert shown.images == [] and set(shown.links) <= {GITHUB}, (shown.images, shown.links)
    assert GITHUB in sources_html(answer)


def test_a_huge_source_code_field_is_cut_in_the_card():
    code = "x = 1  # padding\n" * 1_200_000  # 20 MB
    answer = answer_for(hostile_record(source_code=code, github_url=GITHUB))
    html = sources_html(answer)
    assert len(html) < MAX_CODE_CHARS + 20_000, len(html)
    assert "more characters: see the code on GitHub" in html


def test_hostile_record_fields_are_inert_in_slack():
    answer = answer_for(hostile_record(), hostile_record(id="fedcba9876543210", github_url=GITHUB))
    blocks = answer_blocks(answer, "evilpkg.AgentError: Agent interrupted.")
    texts = [b["text"] for b in blocks if b["type"] == "section"]
    texts += [e for b in blocks if b["type"] == "context" for e in b["elements"]]
    shown = " ".join(t["text"] for t in texts)
    assert all(t.get("verbatim") for t in texts)  # Slack parses no bare URL or mention of its own
    slack_links = re.findall(r"<([^>|]+)[|>]", shown)
    assert set(slack_links) <= {GITHUB}, slack_links


def test_slack_and_the_terminal_show_escapes_as_their_characters():
    safe = sanitize_reply("Use list[int], not <class 'int'> or `x<y>` [1]", [GITHUB])
    assert to_mrkdwn(safe) == "Use list[int], not &lt;class 'int'&gt; or `x&lt;y&gt;` [1]"
    assert plain_text(safe) == "Use list[int], not <class 'int'> or `x<y>` [1]"


# --- in a real browser ---

CHROMIUM = Path("/usr/bin/chromium")


class Recorder:
    """An HTTP server on 127.0.0.1 that answers every request with a 1-pixel PNG and remembers its path."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                recorder.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(PNG)))
                self.end_headers()
                self.wfile.write(PNG)

            do_POST = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)


def hostile_payloads(port: int) -> tuple[list[str], str]:
    """A streamed reply and a paste holding every payload above, all aimed at the recorder."""
    here = f"127.0.0.1:{port}"
    reply = [
        "Your agent was interrupted [1].\n\n",
        f"Look: ![p](\n//{here}/next-line.png\n) and [docs](\nhttp://{here}/next-line-link\n).\n\n",
        '<img src="h',
        f'ttp://{here}/split.png"> and src="h',
        f'ttp://{here}/split-bare.png" [1].\n\n',
        f"Write to ops@{here.split(':')[0]}.example or \\`<img src=//{here}/escaped.png>\\`.\n\n",
        f"`a\nb` <img src=//{here}/two-lines.png> `c`\n\n",
        f"> [1]: //{here}/ref.png\n\n![a][1]\n\n",
        f"*x ``<img src=//{here}/emphasis.png>*``\n\n~~x `<img src=//{here}/strike.png>~~`\n\n",
        f"_x ``![u](//{here}/under.png)_`` *y ``http://{here}/em-link*`` ~~z `http://{here}/strike-link~~`\n\n",
        f"| `a | <img src=//{here}/table.png> | b` |\n|---|---|---|\n\n",
        f"``` `x`\n<img src=//{here}/fence.png>\n```\n\n```\nx\n```~\n<img src=//{here}/close.png>\n```\n\n",
        f"$$\\includegraphics{{//{here}/katex.png}}$$ and &lt;img src=//{here}/entity.png&gt;\n\n",
        "Catch `AgentError` around `agent.run` [1].",
    ]
    paste = f'evilpkg.AgentError: Agent interrupted. <img src="http://{here}/paste.png"> ![x](//{here}/paste-md.png)'
    return reply, paste


def hostile_kb(kb: Path, port: int) -> None:
    """One record as a hostile archive would make it, all its links aimed at the recorder."""
    pixel = f"http://127.0.0.1:{port}/record.png"
    path = f"evilpkg/a)![x]({pixel})(b.py"
    record = hostile_record(
        file_path=path,
        github_url=f"https://github.com/evil/pkg/blob/v0.2.0/{path}#L1-L5",
        documentation=f"Raised in {path} <img src={pixel}?doc> when the agent is interrupted.",
        solutions=(f"Read ![i]({pixel}?solution) first", f"<img src='{pixel}?solution2'>"),
        trigger_scenarios=f"![t](//127.0.0.1:{port}/trigger.png)",
        source_code=f"raise AgentError('Agent interrupted.')  # <img src={pixel}?code>",
    )
    kb.mkdir()
    (kb / "evil.jsonl").write_text(json.dumps({"record": record.to_dict()}) + "\n")


@pytest.mark.slow  # a real browser, a built index and a streamed reply
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (apt-get install chromium)")
def test_no_hostile_record_reply_or_paste_makes_the_browser_fetch_anything(embedder, tmp_path, monkeypatch):
    sync_api = pytest.importorskip("playwright.sync_api")
    from .openai_server import OpenAIServer, llm_assistant, use_dummy_key
    from .test_browser import CHROMIUM_ARGS
    from .web_server import served

    use_dummy_key(monkeypatch, "sk-test-render-0123456789")
    recorder = Recorder()
    try:
        hostile_kb(tmp_path / "kb", recorder.port)
        settings = Settings.load(env={}, kb=tmp_path / "kb", index_dir=tmp_path / "index")
        offline = Assistant(settings, embedder=embedder)
        reply, paste = hostile_payloads(recorder.port)
        with (
            OpenAIServer(reply, piece_delay=0.05) as llm,
            sync_api.sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            for assistant in (offline, llm_assistant(offline, llm, "openai/test-model")):
                with served(assistant, tmp_path / "feedback.sqlite3") as running:
                    page = browser.new_page()
                    page.goto(running.url)
                    page.fill("#errata-query textarea", paste)
                    page.click("#errata-ask")
                    page.wait_for_selector("#errata-sources .errata-banner", timeout=60_000)
                    page.locator("#errata-sources details summary").first.click()  # the code excerpt, open
                    page.wait_for_timeout(1_500)  # images and math render after the last update
                    assert "interrupted" in page.locator("#errata-chat [data-testid='bot']").last.inner_text()
                    links = page.locator("#errata-chat").evaluate("c => [...c.querySelectorAll('a')].map(a => a.href)")
                    assert all(link.startswith("https://github.com/") for link in links), links
                    page.close()
            browser.close()
        assert len(llm.requests) == 1  # the reply above was drafted and shown
    finally:
        recorder.close()
    assert recorder.paths == []
