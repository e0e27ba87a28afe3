"""How long the web chat takes, in a real browser, from clicking Ask to the first streamed text and to the
complete answer (with its source cards), in the offline mode (no LLM).

    python benchmarks/web_latency.py [--index DIR] [--rounds 3]

Serves the chat in this process on a free port, drives Debian's chromium (headless) with Playwright, and
times each query inside the page with a MutationObserver, so polling does not blur the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from assistant import Assistant, Settings
from assistant.frontends.feedback import FeedbackStore
from assistant.frontends.web import EXAMPLES, build_app, launch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402 - the same browser set-up as the tests

QUERIES = [
    *EXAMPLES,
    "httpx.ConnectTimeout: timed out",
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for User\nname\n  Field required",
]

# Clicks Ask and resolves with [ms to first answer text, ms to the finished answer with its sources].
TIME_ONE_QUERY = """
() => new Promise((resolve) => {
  const bots = () => document.querySelectorAll('#errata-chat [data-testid="bot"]');
  const before = bots().length;
  const times = {};
  const start = performance.now();
  const check = () => {
    const all = bots();
    if (times.first === undefined && all.length > before && all[all.length - 1].innerText.trim()) {
      times.first = performance.now() - start;
    }
    if (times.done === undefined && document.querySelector('#errata-sources .errata-banner')) {
      times.done = performance.now() - start;
    }
    if (times.first !== undefined && times.done !== undefined) {
      observer.disconnect();
      resolve([times.first, times.done]);
    }
  };
  const observer = new MutationObserver(check);
  observer.observe(document.body, {subtree: true, childList: true, characterData: true});
  document.querySelector('#errata-ask').click();
})
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, help="index folder (default: settings)")
    parser.add_argument("--rounds", type=int, default=3, help="times each query is asked (default 3)")
    parser.add_argument("--chromium", default=str(CHROMIUM))
    args = parser.parse_args(argv)

    settings = Settings.load(index_dir=args.index)
    settings = dataclasses.replace(settings, model=None, host="127.0.0.1", port=free_port())  # offline
    started = time.perf_counter()
    assistant = Assistant(settings, show_progress=True)
    print(f"assistant ready in {time.perf_counter() - started:.1f}s ({assistant.build_report.summary()})")
    demo = build_app(assistant, FeedbackStore(Path(tempfile.mkdtemp()) / "feedback.sqlite3"))
    url = launch(demo, settings, block=False, quiet=True)

    first: list[float] = []
    done: list[float] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(url)
            page.wait_for_selector("#errata-query textarea")
            page.fill("#errata-query textarea", "warm-up: KeyError: 'x'")  # first query pays one-off costs
            page.evaluate(TIME_ONE_QUERY)
            for _round in range(args.rounds):
                for query in QUERIES:
                    page.click("#errata-clear")
                    page.wait_for_selector("#errata-sources :text('Sources for the answer appear here')")
                    page.fill("#errata-query textarea", query)
                    to_first, to_done = page.evaluate(TIME_ONE_QUERY)
                    first.append(to_first)
                    done.append(to_done)
            browser.close()
    finally:
        demo.close()

    print(f"{len(first)} queries ({len(QUERIES)} distinct x {args.rounds}), offline mode, desktop viewport")
    for name, values in (("submit -> first streamed text", first), ("submit -> complete answer", done)):
        print(
            f"{name:32s} median {statistics.median(values):6.0f} ms   p90 {percentile(values, 0.9):6.0f} ms"
            f"   max {max(values):6.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
