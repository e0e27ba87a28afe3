"""Retrieval latency on the dev set, split into the query embedding and everything else.

    python benchmarks/retrieval_latency.py [--index DIR] [--n 150]

Target: p50 <= 30 ms on a 2-core machine. The load average is printed because other processes on a
shared machine slow the embedding most.
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
    parser.add_argument("--torch-threads", type=int, help="torch intra-op threads (1 is fastest on a busy machine)")
    args = parser.parse_args()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    assistant = Assistant(Settings.load(index_dir=args.index))
    timed = TimedEmbedder(assistant.embedder)
    assistant.retriever.embedder = timed
    rows = [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]
    rows = rows[:: max(1, len(rows) // args.n)][: args.n]
    assistant.search(rows[0]["query"])  # warm up
    timed.seconds.clear()
    total = []
    for row in rows:
        start = time.perf_counter()
        assistant.retrieve(row["query"])
        total.append(time.perf_counter() - start)
    total_ms, embed_ms = np.array(total) * 1000, np.array(timed.seconds) * 1000
    rest_ms = total_ms - embed_ms

    def pct(values):
        return f"p50 {np.percentile(values, 50):.1f} ms, p95 {np.percentile(values, 95):.1f} ms"

    import torch

    threads = torch.get_num_threads()
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores, torch threads {threads}, {len(rows)} queries")
    print(f"retrieval (parse + all signals): {pct(total_ms)}")
    print(f"  query embedding:               {pct(embed_ms)}")
    print(f"  everything else:               {pct(rest_ms)}")


if __name__ == "__main__":
    main()
