"""A new user's first start and a later one, as the issue times them (issue 44: first start <= 30 s on two
cores, peak <= 800 MB, the serving process <= 400 MB once built).

    python benchmarks/first_start.py [--runs 1] [--kb DIR ...] [--release-records on|off|both] [--json]

Each run starts ``python app.py`` on a free port with an empty index folder and an empty export cache
(``XDG_CACHE_HOME``), so everything a fresh clone does happens: the ONNX export, the records, the vectors
(shipped ones where they match), the signals, gradio. It polls until the chat answers a paste (gradio's
REST API of the chat, as ``startup.py`` calls it: the starting page answers it once the knowledge base is
loaded), until a page a person can paste into is up (the starting page's own chat, ``early_chat.py``, from
that moment), until gradio's page answers (HTTP 200; the starting page answers 503), and samples every
process of the tree from /proc each 50 ms: the peak RSS of any one of them and of all together. Ten seconds
after the page answers it reads the serving process's RSS. Then a warm start in the same folders: the same
seconds and the serving RSS.
``--release-records both`` (the default) measures the curated records alone and with the shipped
release-built records (issue 45's budget), one after the other in each run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from startup import answers_paste, offers_a_chat  # benchmarks/startup.py

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def chat_answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as reply:
            return reply.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start(index: Path, cache: Path, kb: list[str], release_records: str, timeout: float = 600) -> dict[str, float]:
    port = free_port()
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    env["ERRATA_RELEASE_RECORDS"] = "true" if release_records == "on" else "false"
    command = [sys.executable, str(ROOT / "app.py"), "--port", str(port), "--index", str(index)]
    for folder in kb:
        command += ["--kb", folder]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        started = time.perf_counter()
        peak_one = peak_all = 0
        # The bundled records answer the benchmark's paste by name; another knowledge base, with any answer.
        paste = answers_paste(f"http://127.0.0.1:{port}/", expect="" if kb else "Agent interrupted")
        offers = offers_a_chat(f"http://127.0.0.1:{port}/")
        answered = chat_page = None
        try:
            while answered is None or not chat_answers(port):
                if answered is None and paste():
                    answered = time.perf_counter() - started
                    continue
                if answered is not None and chat_page is None and offers():
                    chat_page = time.perf_counter() - started  # a page a person can paste into
                    continue
                if process.poll() is not None:
                    log.seek(0)
                    raise SystemExit(f"app.py exited with {process.returncode}: {log.read().decode()[-2000:]}")
                if time.perf_counter() - started > timeout:
                    raise SystemExit(f"the chat did not answer within {timeout} s")
                sizes = [rss_kb(p) for p in tree(process.pid)]
                peak_one, peak_all = max(peak_one, *sizes), max(peak_all, sum(sizes))
                time.sleep(0.05)
            ready = time.perf_counter() - started
            time.sleep(10)
            serving = rss_kb(process.pid)
        finally:
            process.terminate()
            process.wait(timeout=30)
    mb = 1024
    peaks = {"peak_process_mb": peak_one / mb, "peak_tree_mb": peak_all / mb}
    chat_page = ready if chat_page is None else chat_page
    return {
        "seconds": answered,
        "chat_page_seconds": chat_page,
        "page_seconds": ready,
        **peaks,
        "serving_mb": serving / mb,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--kb", action="append", default=[], help="knowledge-base folder (default: the bundled)")
    parser.add_argument("--release-records", choices=("on", "off", "both"), default="both")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    variants = ("off", "on") if args.release_records == "both" else (args.release_records,)
    runs: dict[str, dict[str, list[dict[str, float]]]] = {v: {"first start": [], "warm start": []} for v in variants}
    for _ in range(args.runs):
        for variant in variants:
            with tempfile.TemporaryDirectory() as folder:
                index, cache = Path(folder) / "index", Path(folder) / "cache"
                runs[variant]["first start"].append(start(index, cache, args.kb, variant))
                runs[variant]["warm start"].append(start(index, cache, args.kb, variant))
    summary = {
        f"release records {variant}": {
            kind: {key: statistics.median(run[key] for run in measured) for key in measured[0]}
            for kind, measured in kinds.items()
        }
        for variant, kinds in runs.items()
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    head = f"{'':34} {'paste answered':>15} {'a chat page':>12} {'gradio page':>12} {'peak process':>13}"
    print(f"{head} {'peak tree':>10} {'serving':>8}")
    for variant, kinds in summary.items():
        for kind, row in kinds.items():
            print(
                f"{variant + ', ' + kind:34} {row['seconds']:>13.1f} s {row['chat_page_seconds']:>10.1f} s "
                f"{row['page_seconds']:>10.1f} s "
                f"{row['peak_process_mb']:>10.0f} MB "
                f"{row['peak_tree_mb']:>7.0f} MB {row['serving_mb']:>5.0f} MB"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
