"""How fast errata starts, each figure a whole fresh process (issue 17: fast start, light install).

    python benchmarks/startup.py [--pairs 5] [--eval ../shared/kb/eval/dev.jsonl]

Side by side in one run, medians over alternating pairs (the machine is shared: compare within a run):

- a cold ``errata ask`` against a built index, and ``python -c "import sentence_transformers"`` (what each
  ask cost when queries were encoded by torch): wall seconds, their ratio, the ask's peak RSS;
- ``python app.py`` until its port answers HTTP (the starting page, 503), until the chat answers a paste
  (:func:`answers_paste`: gradio's REST API of the chat, ``/gradio_api/call/chat``, as a script or curl
  calls it; the starting page answers it once the knowledge base is loaded, gradio once it is up) and until
  the chat's page itself answers (200), and ``errata slack --http`` until it listens (a local
  stand-in for Slack's Web API answers the bot's ``auth.test``), both with the index built;
- the first build of the bundled knowledge base from nothing (empty index folder and an empty export
  cache, so the ONNX export is made too), then a rebuild with nothing changed;
- with ``--eval``: ``errata eval`` on that set (Hit@1, abstention, warm retrieval p50/p95).

``--index DIR`` measures against an index already built there (no first build); ``--web-only`` measures
the web chat's warm start alone; ``--baseline DIR`` measures another checkout's ``app.py`` too, alternately
with this one, each with its own index (built first), for a before/after in one run:

    python benchmarks/startup.py --web-only --pairs 7 --baseline /tmp/errata-before

Not a timed test: figures go to stdout as a table, and as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measured import run_measured  # noqa: E402  (benchmarks/measured.py)

from tests.slack_server import BOT_TOKEN, FakeSlack  # noqa: E402

PASTE = "smolagents.utils.AgentError: Agent interrupted."


def env(**extra: str) -> dict[str, str]:
    """This checkout first on the path (an editable install of another checkout may be installed)."""
    out = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(":")}
    out.update(extra)
    return out


def run(command: list[str], **extra: str) -> tuple[float, int]:
    """Wall seconds and peak resident kilobytes of one process run to the end."""
    seconds, rss, _out = run_measured(command, env=env(**extra))
    return seconds, rss


def until_ready(command: list[str], ready, timeout: float = 300, **extra: str) -> float:
    """Seconds from starting ``command`` until ``ready()`` holds; then the process is stopped."""
    return milestones(command, [ready], timeout, **extra)[0]


def milestones(command: list[str], checks: list, timeout: float = 300, **extra: str) -> list[float]:
    """Seconds from starting ``command`` until each of ``checks`` first holds (in turn); then it is stopped."""
    errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below, after the process
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env(**extra), stdout=subprocess.DEVNULL, stderr=errors)
    reached: list[float] = []
    try:
        while len(reached) < len(checks):
            if checks[len(reached)]():
                reached.append(time.perf_counter() - started)
                continue
            if process.poll() is not None:
                errors.seek(0)
                raise SystemExit(f"{command} exited: {errors.read().decode()[-2000:]}")
            if time.perf_counter() - started > timeout:
                raise SystemExit(f"{command} not ready after {timeout} s")
            time.sleep(0.02)
        return reached
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        errors.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers_http(url: str, *, any_status: bool = False):
    """Whether ``url`` answers 200 (the chat itself), or, with ``any_status``, answers at all (the
    starting page's 503 too)."""

    def check() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                return response.status == 200
        except urllib.error.HTTPError:
            return any_status
        except OSError:
            return False

    return check


def answers_paste(url: str, paste: str = PASTE, expect: str = "Agent interrupted"):
    """Whether the chat answers ``paste`` in full: gradio's REST protocol for the chat's ``/chat`` endpoint
    (POST the inputs, then read the event stream until ``complete``), the answer naming ``expect``."""

    def check() -> bool:
        body = json.dumps({"data": [paste, [], 3, None]}).encode()
        post = urllib.request.Request(f"{url}gradio_api/call/chat", body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(post, timeout=2) as response:
                event_id = json.loads(response.read())["event_id"]
            with urllib.request.urlopen(f"{url}gradio_api/call/chat/{event_id}", timeout=60) as response:
                last = response.read().decode().strip().rsplit("\n\n", 1)[-1]
        except (OSError, ValueError, KeyError):  # refused, 503 from the starting page, ...
            return False
        event, _, data = last.partition("\n")
        if event != "event: complete":
            return False
        chat = json.loads(data.removeprefix("data: "))[1]
        return chat[-1]["role"] == "assistant" and expect in chat[-1]["content"][0]["text"]

    return check


def offers_a_chat(url: str):
    """Whether the page at ``url`` is a chat a person can paste into: the starting page's own
    (``early_chat.py``, while gradio loads) or gradio's (200)."""

    def check() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                return response.status == 200
        except urllib.error.HTTPError as error:
            return b"errata-early-query" in error.read()
        except OSError:
            return False

    return check


def web_start(root: Path, index: Path) -> list[float]:
    """Seconds until ``root``'s ``python app.py`` answers HTTP, answers a paste, shows a chat page, serves
    gradio's chat page."""
    port = free_port()
    app = [sys.executable, str(root / "app.py"), "--index", str(index), "--port", str(port)]
    url = f"http://127.0.0.1:{port}/"
    checks = [answers_http(url, any_status=True), answers_paste(url), offers_a_chat(url), answers_http(url)]
    return milestones(app, checks, PYTHONPATH=str(root))


def web_only(args: argparse.Namespace, work: Path) -> dict[str, float]:
    """The web chat's warm start, alternately with ``--baseline``'s where given (each its own index)."""
    roots = {"": ROOT, **({"baseline_": args.baseline.resolve()} if args.baseline else {})}
    indexes = {}
    for prefix, root in roots.items():
        indexes[prefix] = args.index if args.index and not prefix else work / f"{prefix}index"
        if not (args.index and not prefix):
            build = errata("build", "--index", str(indexes[prefix]))
            subprocess.run(
                build, env=env(PYTHONPATH=str(root)), cwd=root, check=True, capture_output=True
            )  # root's own
    runs: dict[str, list[list[float]]] = {prefix: [] for prefix in roots}
    for _ in range(args.pairs):
        for prefix, root in roots.items():
            runs[prefix].append(web_start(root, indexes[prefix]))
    results = {}
    for prefix, measured in runs.items():
        for i, name in enumerate(("web_answers_s", "web_paste_s", "web_chat_page_s", "web_ready_s")):
            results[prefix + name] = statistics.median(run[i] for run in measured)
    return results


def listens(port: int):
    def check() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    return check


def errata(*args: str) -> list[str]:
    return [sys.executable, "-m", "assistant", *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=5, help="alternating pairs per comparison (default 5)")
    parser.add_argument("--eval", type=Path, help="also run errata eval on this query set")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--index", type=Path, help="an index built already: no first build is measured")
    parser.add_argument("--web-only", action="store_true", help="only the web chat's warm start")
    parser.add_argument("--baseline", type=Path, help="another checkout whose web chat is measured alternately")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="errata-startup-"))
    index = args.index or work / "index"
    cache = work / "cache"  # XDG_CACHE_HOME: the ONNX export cache starts empty
    results: dict[str, float] = {}
    if args.web_only:
        try:
            results = web_only(args, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(results, indent=1))
        return
    try:
        # 1. First build from nothing, then a rebuild with nothing changed.
        if args.index:
            results["first_build_s"] = results["first_build_rss_mb"] = results["no_change_build_s"] = float("nan")
        else:
            results["first_build_s"], results["first_build_rss_mb"] = run(
                errata("build", "--index", str(index)), XDG_CACHE_HOME=str(cache)
            )
            results["first_build_rss_mb"] /= 1024
            results["no_change_build_s"], _ = run(errata("build", "--index", str(index)), XDG_CACHE_HOME=str(cache))

        # 2. Cold ask against torch's import, alternating.
        asks, imports, rss = [], [], []
        for _ in range(args.pairs):
            seconds, peak = run(errata("ask", "--index", str(index), PASTE))
            asks.append(seconds)
            rss.append(peak / 1024)
            imports.append(run([sys.executable, "-c", "import sentence_transformers"])[0])
        results["ask_s"] = statistics.median(asks)
        results["import_sentence_transformers_s"] = statistics.median(imports)
        results["ask_ratio"] = results["ask_s"] / results["import_sentence_transformers_s"]
        results["ask_rss_mb"] = max(rss)

        # 3. Web chat and Slack bot until they serve, alternating.
        web, slack = [], []
        fake = FakeSlack()
        try:
            slack_env = {
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_SIGNING_SECRET": "benchmark-secret",
                "SLACK_APP_TOKEN": "",
                "ERRATA_SLACK_API_URL": fake.url,
                "ERRATA_FEEDBACK_DB": str(work / "feedback.sqlite3"),
            }
            for _ in range(args.pairs):
                web.append(web_start(ROOT, index))
                port = free_port()
                bot = errata("slack", "--http", "--port", str(port), "--index", str(index))
                slack.append(until_ready(bot, listens(port), **slack_env))
        finally:
            fake.close()
        results["web_answers_s"] = statistics.median(run[0] for run in web)
        results["web_paste_s"] = statistics.median(run[1] for run in web)
        results["web_chat_page_s"] = statistics.median(run[2] for run in web)
        results["web_ready_s"] = statistics.median(run[3] for run in web)
        results["slack_ready_s"] = statistics.median(slack)

        # 4. Retrieval quality and warm latency.
        if args.eval:
            out = subprocess.run(
                errata("eval", str(args.eval), "--index", str(index), "--json"),
                env=env(),
                capture_output=True,
                text=True,
                check=True,
            )
            report = json.loads(out.stdout)
            results["eval"] = report
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=1))
        return
    rows = [
        ("cold errata ask (index built)", f"{results['ask_s']:.2f} s", "≤ 1.0 s"),
        ('python -c "import sentence_transformers"', f"{results['import_sentence_transformers_s']:.2f} s", ""),
        ("ratio ask / import", f"{results['ask_ratio']:.2f}", "≤ 0.20"),
        ("errata ask peak RSS", f"{results['ask_rss_mb']:.0f} MB", "≤ 250 MB"),
        ("python app.py until it answers HTTP", f"{results['web_answers_s']:.2f} s", "≤ 3 s"),
        ("python app.py until the chat answers a paste", f"{results['web_paste_s']:.2f} s", "≤ 2 s"),
        ("python app.py until a page a person can paste into", f"{results['web_chat_page_s']:.2f} s", "≤ 2 s"),
        ("python app.py until gradio's chat page", f"{results['web_ready_s']:.2f} s", ""),
        ("errata slack --http until it listens", f"{results['slack_ready_s']:.2f} s", "≤ 3 s"),
        ("first build from nothing (export included)", f"{results['first_build_s']:.1f} s", "≤ 30 s"),
        ("first build peak RSS", f"{results['first_build_rss_mb']:.0f} MB", ""),
        ("rebuild, nothing changed", f"{results['no_change_build_s']:.2f} s", ""),
    ]
    print(f"medians of {args.pairs} alternating runs, {os.cpu_count()} cores")
    for name, value, target in rows:
        print(f"{name:46} {value:>10}  {target}")
    if "eval" in results:
        print(json.dumps(results["eval"]))


if __name__ == "__main__":
    main()
