"""Retrieval latency on the dev set, split into the query embedding and everything else.

    python benchmarks/retrieval_latency.py [--index DIR] [--n 150]

Targets: p50 <= 30 ms on a 2-core machine, and within 1.5x of the query encoding alone (the ratio of
the two medians, printed last). The load average is printed because other processes on a shared
machine slow the embedding most. Each query is asked once, so first-use costs (a record parsed, a
pattern compiled) count as a fresh server would pay them. The CPU time of the whole process per query (every
thread: the encoder's too) is printed as well: on a shared machine it moves less with the load than the wall
clock does, so two runs side by side compare by it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assistant import Assistant, Settings  # noqa: E402
from assistant.embedding.threads import set_threads, thread_count  # noqa: E402
from assistant.settings import BUNDLED_EVAL_DIR  # noqa: E402

DEV = BUNDLED_EVAL_DIR / "dev.jsonl"  # copied from ../shared/kb/eval by errata refresh-kb


class TimedEmbedder:
    """The real embedder, with the seconds spent in ``encode`` recorded."""

    def __init__(self, embedder):
        self.embedder, self.seconds = embedder, []

    def encode(self, texts):
        start = time.perf_counter()
        out = self.embedder.encode(texts)
        self.seconds.append(time.perf_counter() - start)
        return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, help="index folder (default: settings)")
    parser.add_argument("--n", type=int, default=150, help="how many dev queries to time")
    parser.add_argument("--threads", type=int, help="embedding threads (1 is fastest on a busy machine)")
    args = parser.parse_args()
    if args.threads:
        set_threads(args.threads)
    assistant = Assistant(Settings.load(index_dir=args.index))
    timed = TimedEmbedder(assistant.embedder)
    assistant.retriever.embedder = timed
    rows = [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]
    rows = rows[:: max(1, len(rows) // args.n)][: args.n]
    assistant.search(rows[0]["query"])  # warm up
    timed.seconds.clear()
    total, cpu = [], []
    for row in rows:
        start, start_cpu = time.perf_counter(), time.process_time()
        assistant.retrieve(row["query"])
        total.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    total_ms, embed_ms = np.array(total) * 1000, np.array(timed.seconds) * 1000
    rest_ms = total_ms - embed_ms

    def pct(values):
        return f"p50 {np.percentile(values, 50):.1f} ms, p95 {np.percentile(values, 95):.1f} ms"

    load = os.getloadavg()[0]
    embedder = assistant.settings.embedder
    cores, threads = os.cpu_count(), thread_count()
    print(f"load average {load:.2f} on {cores} cores, {embedder}, {threads} threads, {len(rows)} queries")
    print(f"retrieval (parse + all signals): {pct(total_ms)}")
    print(f"  query embedding:               {pct(embed_ms)}")
    print(f"  everything else:               {pct(rest_ms)}")
    print(f"CPU time per query, all threads:  {pct(np.array(cpu) * 1000)}")
    print(f"ratio of medians, retrieval / embedding: {np.median(total_ms) / np.median(embed_ms):.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
