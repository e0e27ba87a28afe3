"""Embedding throughput and retrieval quality of the float model and its faster variants, side by side.

    nice python benchmarks/embed_speed.py                       # all bundled records, the whole dev set
    nice python benchmarks/embed_speed.py --fast bundled:all-MiniLM-L6-v2-int8 --records 200
    nice python benchmarks/embed_speed.py --fast bundled:all-MiniLM-L6-v2-onnx-int8 --fast bundled:all-MiniLM-L6-v2-onnx

All models encode the same records in alternating slices (``--slice`` records each, default 250: long
enough for OpenVINO's pipeline of side-by-side batches to fill, as in an index build's 2,048-record
chunks), so a machine shared with other work slows all alike and the ratios stay fair. Each model
first encodes every record once outside the clock (loading, and the kernels compiled per input shape),
as it would early in a long build. The 1-minute load average before and
after the run is printed: figures from a loaded machine are lower, ratios less so. Quality is Hit@1 and
Hit@5 of dense retrieval alone (exact search over each model's own record vectors) on the dev queries
that have a relevant record, each query searched as the Retriever does (its error line, or the whole
text for a question).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from assistant import load_records
from assistant.embedding.embedder import Embedder, record_text
from assistant.parse.query import parse_query
from assistant.settings import BUNDLED_EVAL_DIR, BUNDLED_KB_DIR, TORCH_EMBEDDER

DEV_SET = BUNDLED_EVAL_DIR / "dev.jsonl"  # copied from ../shared/kb/eval by errata refresh-kb


def search_text(text: str) -> str:
    query = parse_query(text)
    return query.error_line if query.kind != "question" and query.error_line else query.text


def hit_at(
    k: int, record_vectors: np.ndarray, query_vectors: np.ndarray, ids: list[str], relevant: list[set[str]]
) -> float:
    top = np.argsort(-(query_vectors @ record_vectors.T), axis=1, kind="stable")[:, :k]
    return float(np.mean([bool({ids[i] for i in row} & wanted) for row, wanted in zip(top, relevant, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--float", dest="float_model", default=TORCH_EMBEDDER)
    parser.add_argument(
        "--fast",
        action="append",
        help="a variant to compare (repeatable; default: the -openvino-int8 and -onnx-int8 ones)",
    )
    parser.add_argument("--records", type=int, default=0, help="time only this many records (0: all)")
    parser.add_argument("--slice", type=int, default=250)
    parser.add_argument("--batch-size", type=int, default=32, help="the Embedders' batch size")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    records = load_records(BUNDLED_KB_DIR)
    texts = [record_text(r) for r in records]
    timed = texts[: args.records] if args.records else texts
    fast = args.fast or [TORCH_EMBEDDER + "-openvino-int8", TORCH_EMBEDDER + "-onnx-int8"]
    batch = args.batch_size
    models = {"float": Embedder(args.float_model, batch_size=batch), **{n: Embedder(n, batch_size=batch) for n in fast}}
    load_before = os.getloadavg()[0]
    for embedder in models.values():
        embedder.encode(texts)  # load and warm up outside the clock
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
    result: dict = {"records_timed": len(timed), "dev_queries": len(dev), "batch_size": batch}
    result["load_1min_before"] = load_before
    for name, embedder in models.items():
        timed_count = min(len(texts), -(-len(timed) // args.slice) * args.slice)
        began = time.perf_counter()
        query_vectors = embedder.encode(queries)
        cosines = np.sum(matrices["float"] * matrices[name], axis=1)
        result[name] = {
            "runtime": f"{embedder.runtime} ({type(embedder.model).__name__})",
            "records_per_s": timed_count / seconds[name],
            "speedup": seconds["float"] / seconds[name],
            "queries_per_s": len(queries) / (time.perf_counter() - began),
            "hit_at_1": hit_at(1, matrices[name], query_vectors, ids, relevant),
            "hit_at_5": hit_at(5, matrices[name], query_vectors, ids, relevant),
            "record_vector_cosine_mean": float(cosines.mean()),
            "record_vector_cosine_min": float(cosines.min()),
        }
    for name in fast:
        for metric in ("hit_at_1", "hit_at_5"):
            result[name][metric + "_points_lost"] = 100 * (result["float"][metric] - result[name][metric])
    result["load_1min_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
