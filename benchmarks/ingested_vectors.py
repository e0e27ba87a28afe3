"""Do release-built records need dense vectors? (issue 45: measure before shipping vectors for them.)

    python benchmarks/ingested_vectors.py --kb ECOSYSTEM_KB [--work DIR] [--json]

Builds the index of the bundled records plus ECOSYSTEM_KB (``errata kb build-ecosystem``) twice, side by
side: with every record embedded, and with the release-built records' vectors (and their pieces') left at
zero, so only curated records are found by meaning and release-built ones by their patterns, classes and
words. Then runs dev (with the labels ``benchmarks/label_ingested.py`` writes for this build, when given
``--dev-labels``), the real-world set and the Q&A set through each, and prints build time, index size and
the outcomes of each set for both.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from assistant import Assistant, Settings  # noqa: E402
from assistant.embedding.text import piece_texts  # noqa: E402
from assistant.index.bundled_vectors import read_bundled_vectors  # noqa: E402
from assistant.index.cache import import_embeddings  # noqa: E402
from assistant.index.pieces import seed_piece_vectors  # noqa: E402
from assistant.index.store import embedding_key, text_key  # noqa: E402
from assistant.knowledge.records import INGESTED_TAG, kb_files  # noqa: E402
from assistant.retrieval.evaluate import evaluate, load_eval_set  # noqa: E402
from assistant.settings import BUNDLED_EVAL_DIR, BUNDLED_KB_DIR, DEFAULT_EMBEDDER  # noqa: E402
from assistant.storage.shelf import RecordShelf  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SETS = {
    "dev": BUNDLED_EVAL_DIR / "dev.jsonl",
    "realworld": ROOT / "benchmarks" / "data" / "realworld.jsonl",
    "qa_pages": ROOT / "benchmarks" / "data" / "qa_pages.jsonl",
}


def zero_ingested(kb: list[Path], index_dir: Path) -> int:
    """Give the release-built records zero vectors (and zero piece vectors) before the build embeds them; the
    curated ones get their shipped vectors, as a first start gives them."""
    records = list(RecordShelf.load(kb_files(kb)))
    ingested = [r for r in records if INGESTED_TAG in r.tags]
    shipped = read_bundled_vectors()
    keys = sorted({embedding_key(r) for r in ingested})
    import_embeddings(index_dir, DEFAULT_EMBEDDER, shipped.record_keys, shipped.records.astype(np.float32))
    import_embeddings(index_dir, DEFAULT_EMBEDDER, keys, np.zeros((len(keys), 384), dtype=np.float32))
    piece_keys = [[text_key(t) if t else "" for t in piece_texts(r)] for r in ingested]
    zeros = np.zeros((len(ingested), *shipped.pieces.shape[1:]), dtype=np.float32)
    seed_piece_vectors(
        index_dir,
        np.concatenate([shipped.pieces.astype(np.float32), zeros]),
        [*shipped.ids, *(r.id for r in ingested)],
        [*shipped.piece_keys, *piece_keys],
        DEFAULT_EMBEDDER,
    )
    return len(ingested)


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def measure(kb: list[Path], index_dir: Path, labels: Path | None) -> dict:
    started = time.perf_counter()
    assistant = Assistant(Settings.load(), kb=kb, index_dir=index_dir)
    out = {"build_s": round(time.perf_counter() - started, 1), "index_mb": round(size_mb(index_dir), 1)}
    out["records"] = len(assistant.records)
    for name, path in SETS.items():
        queries = load_eval_set(path, labels if name == "dev" else None)
        report = evaluate(assistant, queries)
        out[name] = {
            "all": report.outcomes["all"],
            "covered": report.outcomes.get("covered"),
            "hit@1": report.styles.get("all", {}).get("hit@1"),
            "p50_ms": round(report.latency_ms["p50"], 1),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", type=Path, required=True, help="the release-built records (a folder)")
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "errata" / "ingested-vectors")
    parser.add_argument("--dev-labels", type=Path, help="label_ingested.py's output for this build")
    parser.add_argument("--only", choices=("with", "without"), help="build and measure one of the two")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    kb = [BUNDLED_KB_DIR, args.kb]
    results = {}
    if args.only != "with":
        zeroed = args.work / "without-ingested-vectors"
        if not (zeroed / "manifest.json").exists():
            print(f"zero vectors for {zero_ingested(kb, zeroed)} release-built records", file=sys.stderr)
        results["without"] = measure(kb, zeroed, args.dev_labels)
        print(json.dumps({"without": results["without"]}), file=sys.stderr)
    if args.only != "without":
        results["with"] = measure(kb, args.work / "with-ingested-vectors", args.dev_labels)
    if args.json:
        print(json.dumps(results))
        return 0
    for name, row in results.items():
        print(f"{name} ingested vectors: {row['records']} records, build {row['build_s']} s, {row['index_mb']} MB")
        for set_name in SETS:
            figures = row[set_name]
            shares = {k: round(v * 100, 1) for k, v in figures["all"].items() if k != "n"}
            print(f"  {set_name}: n={figures['all']['n']} {shares} hit@1={figures['hit@1']} p50={figures['p50_ms']} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
