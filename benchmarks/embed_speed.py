"""Embedding throughput and retrieval quality of the float model and its int8 version, side by side.

    nice python benchmarks/embed_speed.py                       # all bundled records, the whole dev set
    nice python benchmarks/embed_speed.py --fast bundled:all-MiniLM-L6-v2-int8 --records 200

Both models encode the same records in alternating slices (``--slice`` records each), so a machine
shared with other work slows both alike and the ratio stays fair. Quality is Hit@5 of dense retrieval
alone (exact search over each model's own record vectors) on the dev queries that have a relevant record,
each query searched as the Retriever does (its error line, or the whole text for a question).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from assistant import load_records
from assistant.embed import Embedder, record_text
from assistant.query import parse_query
from assistant.settings import BUNDLED_KB_DIR, DEFAULT_EMBEDDER

DEV_SET = Path(__file__).resolve().parents[2] / "shared" / "kb" / "eval" / "dev.jsonl"


def search_text(text: str) -> str:
    query = parse_query(text)
    return query.error_line if query.kind != "question" and query.error_line else query.text


def hit_at_5(record_vectors: np.ndarray, query_vectors: np.ndarray, ids: list[str], relevant: list[set[str]]) -> float:
    top = np.argsort(-(query_vectors @ record_vectors.T), axis=1)[:, :5]
    return float(np.mean([bool({ids[i] for i in row} & wanted) for row, wanted in zip(top, relevant, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--float", dest="float_model", default=DEFAULT_EMBEDDER)
    parser.add_argument("--fast", default=DEFAULT_EMBEDDER + "-int8")
    parser.add_argument("--records", type=int, default=0, help="time only this many records (0: all)")
    parser.add_argument("--slice", type=int, default=64)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    records = load_records(BUNDLED_KB_DIR)
    texts = [record_text(r) for r in records]
    timed = texts[: args.records] if args.records else texts
    models = {"float": Embedder(args.float_model), "fast": Embedder(args.fast)}
    for embedder in models.values():
        embedder.encode(texts[:8])  # load and warm up outside the clock
    seconds = dict.fromkeys(models, 0.0)
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in models}
    for start in range(0, len(texts), args.slice):
        chunk = texts[start : start + args.slice]
        for name, embedder in models.items():
            began = time.perf_counter()
            vectors[name].append(embedder.encode(chunk))
            if start < len(timed):
                seconds[name] += time.perf_counter() - began
    matrices = {name: np.concatenate(parts) for name, parts in vectors.items()}

    dev = [json.loads(line) for line in DEV_SET.read_text().splitlines() if line.strip()]
    dev = [row for row in dev if row["relevant"]]
    queries = [search_text(row["query"]) for row in dev]
    relevant = [set(row["relevant"]) for row in dev]
    ids = [r.id for r in records]
    result = {"records_timed": len(timed), "dev_queries": len(dev)}
    for name, embedder in models.items():
        timed_count = min(len(texts), -(-len(timed) // args.slice) * args.slice)
        began = time.perf_counter()
        query_vectors = embedder.encode(queries)
        result[name] = {
            "model": embedder.model_id,
            "records_per_s": timed_count / seconds[name],
            "queries_per_s": len(queries) / (time.perf_counter() - began),
            "hit_at_5": hit_at_5(matrices[name], query_vectors, ids, relevant),
        }
    result["speedup"] = result["fast"]["records_per_s"] / result["float"]["records_per_s"]
    result["hit_at_5_points_lost"] = 100 * (result["float"]["hit_at_5"] - result["fast"]["hit_at_5"])
    result["record_vector_cosine"] = float(np.mean(np.sum(matrices["float"] * matrices["fast"], axis=1)))
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
