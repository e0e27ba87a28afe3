"""N concurrent asks through one ``Assistant``, through the web chat's API and through Slack events.

    python benchmarks/load.py [--concurrency 50] [--index DIR] [--only assistant,web,slack]

Each path gets ``--concurrency`` asks started at once (dev-set queries, offline drafting) and reports
p50 / p95 / max latency, errors and the process's resident memory after it. The web path is the real
Gradio app on a free local port, called through ``gradio_client`` (its ``ask`` endpoint runs 4 at a
time, so latency includes the queue); the Slack path is the real Bolt app in HTTP mode, signed events
posted to it, timed until the answer's ``chat.update`` reaches a local Slack Web API (tests/slack_server).
The default run (50 asks per path) takes well under a minute on two cores once the index is built.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assistant import Assistant, Settings  # noqa: E402
from assistant.api import configure_serving_threads  # noqa: E402
from assistant.settings import BUNDLED_EVAL_DIR  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def queries(n: int) -> list[str]:
    rows = [json.loads(line) for line in (BUNDLED_EVAL_DIR / "dev.jsonl").read_text().splitlines() if line.strip()]
    return [rows[i % len(rows)]["query"] for i in range(n)]


def summary(name: str, seconds: list[float], errors: list[str], wall: float) -> dict:
    ms = np.array(seconds) * 1000 if seconds else np.array([np.nan])
    out = {
        "path": name,
        "asks": len(seconds) + len(errors),
        "errors": len(errors),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "max_ms": round(float(ms.max()), 1),
        "wall_s": round(wall, 2),
        "rss_mb": round(rss_mb(), 0),
    }
    if errors:
        out["first_error"] = errors[0][:200]
    return out


def concurrently(texts: list[str], ask: Callable[[str], object]) -> tuple[list[float], list[str], float]:
    barrier = threading.Barrier(len(texts))
    seconds: list[float] = []
    errors: list[str] = []

    def one(text: str) -> None:
        barrier.wait()
        started = time.perf_counter()
        try:
            ask(text)
            seconds.append(time.perf_counter() - started)
        except Exception as exc:  # noqa: BLE001 - counted and reported
            errors.append(f"{type(exc).__name__}: {exc}")

    started = time.perf_counter()
    with ThreadPoolExecutor(len(texts)) as pool:
        list(pool.map(one, texts))
    return seconds, errors, time.perf_counter() - started


def through_assistant(assistant: Assistant, texts: list[str]) -> dict:
    return summary("Assistant.ask", *concurrently(texts, assistant.ask))


def through_web(assistant: Assistant, texts: list[str]) -> dict:
    from gradio_client import Client

    from assistant.frontends.web import build_app, launch

    demo = build_app(assistant)
    url = launch(demo, assistant.settings.replace(port=_free_port()), block=False, quiet=True)
    try:
        client = Client(url, analytics_enabled=False, verbose=False)
        result = summary("web /ask", *concurrently(texts, lambda t: client.submit(t, api_name="/ask").result()))
    finally:
        demo.close()
    return result


def through_slack(assistant: Assistant, texts: list[str], feedback_db: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    from assistant.frontends.slack import SlackBot
    from tests.slack_server import BOT_TOKEN, BOT_USER, FakeSlack

    secret = "load-test-signing-secret"
    fake = FakeSlack()
    settings = assistant.settings.replace(
        slack_api_url=fake.url, slack_bot_token=BOT_TOKEN, slack_signing_secret=secret, feedback_db=feedback_db
    )
    bot = SlackBot(assistant, settings, stream_interval=3600.0)
    server = bot.http_server("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    events_url = f"http://127.0.0.1:{server.server_address[1]}/slack/events"
    counter = iter(range(10**9))
    lock = threading.Lock()

    def ask(text: str) -> None:
        with lock:
            number = next(counter)
        channel = f"C{number:06d}"
        event = {"type": "app_mention", "user": "U2", "text": f"<@{BOT_USER}> {text}", "ts": "1.0", "channel": channel}
        body = json.dumps({"type": "event_callback", "event_id": f"Ev{number}", "team_id": "T1", "event": event})
        stamp = str(int(time.time()))
        digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
        request = urllib.request.Request(
            events_url,
            data=body.encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": f"v0={digest}",
            },
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}")
        fake.wait_for("chat.update", timeout=120, where=lambda args: args.get("channel") == channel)

    try:
        return summary("Slack event", *concurrently(texts, ask))
    finally:
        server.shutdown()
        server.server_close()
        fake.close()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--index", type=Path, help="index folder (default: the settings' index_dir)")
    parser.add_argument("--only", default="assistant,web,slack")
    args = parser.parse_args()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    settings = Settings.load(index_dir=args.index, model=None)
    started = time.perf_counter()
    assistant = Assistant(settings)
    configure_serving_threads(settings)
    print(f"loaded in {time.perf_counter() - started:.1f} s, {len(assistant.records)} records, RSS {rss_mb():.0f} MB")
    texts = queries(args.concurrency)
    assistant.ask(texts[0])  # warm
    paths = set(args.only.split(","))
    results = []
    if "assistant" in paths:
        results.append(through_assistant(assistant, texts))
    if "web" in paths:
        results.append(through_web(assistant, texts))
    if "slack" in paths:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            results.append(through_slack(assistant, texts, Path(tmp) / "feedback.sqlite3"))
    header = ("path", "asks", "errors", "p50 ms", "p95 ms", "max ms", "wall s", "RSS MB")
    print(f"{header[0]:14} " + " ".join(f"{h:>8}" for h in header[1:]))
    for r in results:
        values = (r["asks"], r["errors"], r["p50_ms"], r["p95_ms"], r["max_ms"], r["wall_s"], r["rss_mb"])
        print(f"{r['path']:14} " + " ".join(f"{v:>8}" for v in values))
        if "first_error" in r:
            print(f"  first error: {r['first_error']}")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
