"""Foundation benchmark: index build, no-change rebuild, cold start to first answer, warm ask latency, RSS.

Run: python benchmarks/foundation.py [--json]. Targets on a 2-core machine: warm retrieval p50 <= 30 ms,
bundled build from nothing <= 30 s, no-change rebuild <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV_SET = ROOT / "assistant" / "data" / "eval" / "dev.jsonl"  # copied from ../shared/kb/eval by errata refresh-kb

COLD_START = """
import time, sys
t0 = float(sys.argv[1])
from assistant import Assistant
from assistant.settings import BUNDLED_EVAL_DIR
a = Assistant(index_dir=sys.argv[2])
a.ask("my agent stops with Agent interrupted")
print(time.time() - t0)
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dev", type=Path, default=DEV_SET)
    args = parser.parse_args()

    from assistant import Assistant, Settings
    from assistant.embedding.embedder import Embedder
    from assistant.index import open_index
    from assistant.knowledge.records import load_records

    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        index_dir = Path(tmp) / "index"
        settings = Settings.load(env={}, index_dir=index_dir)
        records = load_records(settings.kb)
        embedder = Embedder()
        started = time.perf_counter()
        _ = embedder.dimension  # loads the model
        results["model_load_s"] = time.perf_counter() - started
        started = time.perf_counter()
        _, report = open_index(records, embedder, index_dir, show_progress=False)
        build = time.perf_counter() - started
        results["records"] = len(records)
        results["build_s"] = build
        results["build_records_per_s"] = len(records) / build
        results["build_from_nothing_s"] = build + results["model_load_s"]
        started = time.perf_counter()
        _, report = open_index(records, embedder, index_dir)
        assert not report.rebuilt
        results["no_change_rebuild_s"] = time.perf_counter() - started

        out = subprocess.run(
            [sys.executable, "-c", COLD_START, str(time.time()), str(index_dir)],
            capture_output=True,
            text=True,
            check=True,
        )
        results["process_start_to_first_answer_s"] = float(out.stdout.strip().splitlines()[-1])

        assistant = Assistant(settings, embedder=embedder)
        queries = [json.loads(line)["query"] for line in args.dev.read_text().splitlines() if line.strip()]
        for q in queries[:20]:  # warm-up
            assistant.ask(q)
        retrieval_ms, ask_ms = [], []
        for q in queries:
            t = time.perf_counter()
            assistant.search(q)
            retrieval_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            assistant.ask(q)
            ask_ms.append((time.perf_counter() - t) * 1000)
        results["warm_retrieval_p50_ms"] = statistics.median(retrieval_ms)
        results["warm_retrieval_p95_ms"] = percentile(retrieval_ms, 95)
        results["warm_ask_p50_ms"] = statistics.median(ask_ms)
        results["warm_ask_p95_ms"] = percentile(ask_ms, 95)
        results["queries"] = len(queries)
    results["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    if args.json:
        print(json.dumps({k: round(v, 3) for k, v in results.items()}))
        return
    for key, value in results.items():
        print(f"{key:36} {value:10.3f}")


if __name__ == "__main__":
    main()
