"""How the vector index scales: 10k, 100k and 1M records made from the bundled ones.

    nice python benchmarks/scale.py                      # 10k, 100k, 1M (the 1M build takes minutes)
    nice python benchmarks/scale.py --sizes 10000,100000 --out /tmp/scale.json
    nice python benchmarks/scale.py --sizes 10000,100000 --assistant-limit 100000   # also the whole Assistant

How the knowledge bases are made: record variant ``j`` of each of the 500 bundled records gets another
repository (``owner-j/name``), another file and line, and another error message: its ``{placeholders}``
filled with words taken from other records' slugs (or, without placeholders, such a word appended as
context), so every variant has its own id, content hash and embedded text.

Which numbers are real: up to ``--real`` records (default 10k) every record is embedded by the real
model, and the embedding rate is measured. Beyond, embedding a million records on two cores would take
hours, so each record's vector is made from the real vector of variant ``j mod (real/500)`` of its
record, perturbed by Gaussian noise and renormalized; the noise is set so that a made vector is as
far from its source as a real variant is from its original record (measured on the real ones). Those
vectors go into the build cache (``import_embeddings``) and the real ``open_index`` builds from there,
so the build time is the real index build without embedding; the embedding time is projected from the
measured rate.

With ``--assistant-limit N``, knowledge bases up to N records are also served whole: first a process
does what ``errata build`` does after the vector index (the signal index and start-up snapshot, timed as
"signals build"), then a fresh process starts an ``Assistant`` (records, patterns, BM25, vectors, as the
web chat and the Slack bot hold them) as a replica would: load time, the first query's latency, then,
after as many other dev queries (a replica that has served a while: the postings and index lists its
queries read are in the page cache), resident memory and retrieval latency over ``--assistant-queries``
dev queries of every style.
The made records are near-copies of the bundled ones (same documentation, class and pattern), so they
measure cost, not answer quality.

Serving the vector index alone is measured in a fresh process, as a replica would run: load the embedder and the index
(memory-mapped, no records), then encode and search each dev query one at a time (latency includes
query encoding). RSS is that process's resident memory after the queries (anonymous + file-backed);
recall@10 compares its top 10 with exact search over the same vectors. The serving process runs with
``OMP_NUM_THREADS=1`` by default: on two cores shared with other work, two threads per query spin on
each other and the p95 grows tenfold (measured: single-query encoding p50 24 ms with one thread, 56 ms
with two; p95 92 ms against 936 ms).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from assistant import load_records
from assistant.embedding.embedder import Embedder
from assistant.index import embedding_key, load_index, open_index
from assistant.index.ann import EXACT_LIMIT, exact_top_k, recall_at_k
from assistant.index.cache import EMBEDDINGS_NAME, import_embeddings
from assistant.knowledge.records import Record
from assistant.settings import BUNDLED_EVAL_DIR, BUNDLED_KB_DIR, DEFAULT_EMBEDDER

DEV_SET = BUNDLED_EVAL_DIR / "dev.jsonl"  # copied from ../shared/kb/eval by errata refresh-kb
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def make_records(base: list[Record], count: int) -> list[Record]:
    """``count`` records: the bundled ones first, then variants 1, 2, ... of each (see the module doc)."""
    words = sorted({w for r in base for w in r.slug.split("-") if len(w) > 3})
    out: list[Record] = []
    variant = 0
    while len(out) < count:
        for n, record in enumerate(base[: count - len(out)]):
            out.append(record if variant == 0 else _variant(record, variant, n, words))
        variant += 1
    return out


def _variant(record: Record, j: int, n: int, words: list[str]) -> Record:
    word = words[(j * 7919 + n * 104729) % len(words)]
    message = (
        _PLACEHOLDER.sub(lambda m: f"'{word}'", record.error_message)
        if _PLACEHOLDER.search(record.error_message)
        else f"{record.error_message} (while handling '{word}')"
    )
    owner, _, name = record.repo.partition("/")
    line = (record.line_number * 31 + j * 17) % 5000 + 1
    path = record.file_path.replace("/", f"/v{j % 9}/", 1) if "/" in record.file_path else record.file_path
    return dataclasses.replace(
        record,
        id=hashlib.sha256(f"{record.id}:{j}".encode()).hexdigest()[:16],
        repo=f"{owner}-{j}/{name}",
        slug=f"{record.slug}-{j}",
        error_message=message,
        file_path=path,
        line_number=line,
        github_url=f"https://github.com/{owner}-{j}/{name}/blob/main/{path}#L{line}",
    )


class TimedEmbedder:
    """The real embedder, timing how long encoding records takes."""

    def __init__(self, real: Embedder):
        self.real = real
        self.model_id = real.model_id
        self.seconds = 0.0
        self.encoded = 0

    @property
    def dimension(self) -> int:
        return self.real.dimension

    def encode_records(self, records, show_progress=False):
        started = time.perf_counter()
        vectors = self.real.encode_records(records, show_progress=show_progress)
        self.seconds += time.perf_counter() - started
        self.encoded += len(records)
        return vectors


def synthesize(records: list[Record], real: np.ndarray, per_base: int, noise: float, index_dir: Path, model_id: str):
    """Put made vectors for ``records`` into the build cache (see the module doc)."""
    rng = np.random.default_rng(0)
    step = 65_536
    bases = len(real) // per_base  # the bundled records, in the order make_records uses
    for start in range(0, len(records), step):
        rows = np.arange(start, min(start + step, len(records)))
        base, variant = rows % bases, rows // bases
        source = real[(variant % per_base) * bases + base]
        made = source + rng.normal(scale=noise / np.sqrt(real.shape[1]), size=source.shape).astype(np.float32)
        made /= np.linalg.norm(made, axis=1, keepdims=True)
        keys = [embedding_key(records[i]) for i in rows]
        import_embeddings(index_dir, model_id, keys, made)


def serve(index_dir: Path, model: str, out: Path, limit: int) -> None:
    """The replica side: load, then encode and search each dev query (run in a fresh process)."""
    queries = [json.loads(line)["query"] for line in DEV_SET.read_text().splitlines() if line.strip()][:limit]
    embedder = Embedder(model)
    embedder.encode(["warm up"])
    started = time.perf_counter()
    index = load_index(index_dir, embedder.model_id)
    load_seconds = time.perf_counter() - started
    index.search(embedder.encode(["warm up"]), 10)
    latencies, search_latencies, cpu_times, rows, vectors = [], [], [], [], []
    for text in queries:
        started, cpu_started = time.perf_counter(), time.process_time()
        vector = embedder.encode([text])
        encoded = time.perf_counter()
        _scores, found = index.search(vector, 10)
        latencies.append(time.perf_counter() - started)
        search_latencies.append(time.perf_counter() - encoded)
        cpu_times.append(time.process_time() - cpu_started)  # CPU used: what the query costs without contention
        rows.append(found[0])
        vectors.append(vector[0])
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    mb = {key: int(status[key].split()[0]) / 1024 for key in ("VmRSS", "RssAnon", "RssFile", "VmHWM")}
    np.save(out / "rows.npy", np.array(rows))
    np.save(out / "queries.npy", np.array(vectors))
    result = {
        "load_s": load_seconds,
        "p50_ms": 1000 * float(np.percentile(latencies, 50)),
        "p95_ms": 1000 * float(np.percentile(latencies, 95)),
        "cpu_p50_ms": 1000 * float(np.percentile(cpu_times, 50)),
        "cpu_p95_ms": 1000 * float(np.percentile(cpu_times, 95)),
        "search_p50_ms": 1000 * float(np.percentile(search_latencies, 50)),
        "search_p95_ms": 1000 * float(np.percentile(search_latencies, 95)),
        "rss_mb": mb["VmRSS"],
        "rss_anon_mb": mb["RssAnon"],
        "rss_file_mb": mb["RssFile"],
        "peak_rss_mb": mb["VmHWM"],
        "queries": len(queries),
        "index_type": index.index_type,
    }
    (out / "serve.json").write_text(json.dumps(result))


def prepare_assistant(index_dir: Path, kb: Path, model: str, out: Path) -> None:
    """What ``errata build`` does after the vector index: the signal index and start-up snapshot."""
    from assistant.knowledge.knowledge_base import open_knowledge_base
    from assistant.settings import Settings

    started = time.perf_counter()
    opened = open_knowledge_base(Settings.load().replace(kb=[kb], index_dir=index_dir), Embedder(model))
    assert opened.build_report.embedded == 0, "the build re-embedded records the benchmark had embedded"
    prepared = {"assistant_prepare_s": time.perf_counter() - started}
    (out / "prepare.json").write_text(json.dumps(prepared))


def serve_assistant(index_dir: Path, kb: Path, model: str, out: Path, limit: int) -> None:
    """The whole Retriever (records, patterns, BM25, vectors) in a fresh process: what a replica holds."""
    from assistant import Assistant
    from assistant.retrieval.evaluate import load_eval_set

    every = load_eval_set(DEV_SET)
    step = max(1, len(every) // limit)
    queries = every[::step][:limit]  # every style, evenly
    warm_up = every[step // 2 :: step][:limit]  # as many others: a replica that has served a while
    started = time.perf_counter()
    assistant = Assistant(kb=kb, index_dir=index_dir, embedder=Embedder(model))
    load_seconds = time.perf_counter() - started
    assert assistant.build_report.embedded == 0, "the Assistant re-embedded records the build had embedded"
    first_started = time.perf_counter()
    assistant.retrieve(warm_up[0].query)
    first_ms = 1000 * (time.perf_counter() - first_started)
    for query in warm_up[1:]:
        assistant.retrieve(query.query)
    latencies = []
    for query in queries:
        started = time.perf_counter()
        assistant.retrieve(query.query)
        latencies.append(time.perf_counter() - started)
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    result = {
        "assistant_load_s": load_seconds,
        "assistant_first_query_ms": first_ms,
        "assistant_p50_ms": 1000 * float(np.percentile(latencies, 50)),
        "assistant_p95_ms": 1000 * float(np.percentile(latencies, 95)),
        "assistant_rss_mb": int(status["VmRSS"].split()[0]) / 1024,
        "assistant_peak_rss_mb": int(status["VmHWM"].split()[0]) / 1024,
        "assistant_queries": len(queries),
    }
    (out / "assistant.json").write_text(json.dumps(result))


def run_size(count: int, args: argparse.Namespace, base: list[Record], state: dict) -> dict:
    index_dir = args.work / f"n{count}"
    if count > args.real:
        shutil.rmtree(index_dir, ignore_errors=True)
    records = make_records(base, count)
    real_embedder = Embedder(args.embedder)
    row: dict = {"records": count}
    if count <= args.real:
        timed = TimedEmbedder(real_embedder)
        started = time.perf_counter()
        _index, report = open_index(records, timed, index_dir, show_progress=True, exact_limit=args.exact_limit)
        row["build_s"] = time.perf_counter() - started
        row["embedded"] = "real"
        rate_file = args.work / f"embed_rate_{count}.json"
        if timed.encoded:
            rate_file.write_text(json.dumps({"rate": timed.encoded / timed.seconds, "build_s": row["build_s"]}))
        else:  # embedded by an earlier run with the same records: its measurements stand
            row["embedded"] = "real (earlier run)"
            row["build_s"] = json.loads(rate_file.read_text())["build_s"]
        row["embed_rate"] = json.loads(rate_file.read_text())["rate"]
        state["rate"] = row["embed_rate"]
        real = np.load(index_dir / EMBEDDINGS_NAME)
        state["real"], state["per_base"] = real, count // len(base)
        originals = real[: len(base)]
        spread = [
            float(np.mean(np.sum(real[v * len(base) : (v + 1) * len(base)] * originals, axis=1)))
            for v in range(1, count // len(base))
        ]
        cosine = float(np.mean(spread)) if spread else 0.95
        state["noise"] = float(np.sqrt(1 / cosine**2 - 1))
        row["variant_cosine"] = cosine
    else:
        started = time.perf_counter()
        synthesize(records, state["real"], state["per_base"], state["noise"], index_dir, real_embedder.model_id)
        synth_s = time.perf_counter() - started
        started = time.perf_counter()
        _index, report = open_index(
            records, TimedEmbedder(real_embedder), index_dir, show_progress=True, exact_limit=args.exact_limit
        )
        row["build_s"] = time.perf_counter() - started
        assert report.embedded == 0, "the made vectors were not used"
        row["embedded"] = f"synthesized ({synth_s:.0f}s to make)"
    if "rate" in state:
        row["projected_embed_s"] = count / state["rate"]
    del records, _index
    row["disk_mb"] = sum(f.stat().st_size for f in index_dir.iterdir() if f.is_file()) / 2**20
    with (index_dir / "manifest.json").open() as handle:
        manifest = json.load(handle)
    row["index_type"], row["index_params"] = manifest["index_type"], manifest["index_params"]
    del manifest
    out = args.work / f"serve{count}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    settle()
    subprocess.run(
        [
            sys.executable,
            __file__,
            "--serve",
            str(index_dir),
            "--embedder",
            args.embedder,
            "--serve-out",
            str(out),
            "--queries",
            str(args.queries),
        ],
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": str(args.threads)},
    )
    row.update(json.loads((out / "serve.json").read_text()))
    if count <= args.assistant_limit:
        kb = args.work / f"kb{count}.jsonl"
        with kb.open("w") as handle:
            handle.writelines(r.to_json_line() + "\n" for r in make_records(base, count))
        command = [sys.executable, __file__, "--serve-assistant", str(index_dir), "--kb", str(kb)]
        command += ["--embedder", args.embedder, "--serve-out", str(out), "--queries", str(args.assistant_queries)]
        environment = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
        subprocess.run([*command, "--prepare"], check=True, env=environment)  # what `errata build` does
        settle()
        subprocess.run(command, check=True, env=environment)  # then a replica starts
        row.update(json.loads((out / "prepare.json").read_text()))
        row.update(json.loads((out / "assistant.json").read_text()))
    vectors = np.load(index_dir / EMBEDDINGS_NAME, mmap_mode="r")
    row["recall_at_10"] = recall_at_k(np.load(out / "rows.npy"), exact_top_k(vectors, np.load(out / "queries.npy"), 10))
    return row


def settle() -> None:
    """Wait for written files to reach the disk before a serving process is timed: the gigabytes a build
    has just written are flushed meanwhile otherwise (measured: p50 doubled at 1M records), and a replica
    starts after the build, not during it."""
    os.sync()
    time.sleep(5)


def table(rows: list[dict]) -> str:
    lines = [
        "| records | vectors | index | build s | projected embed h | disk MB | serving RSS MB (anon+file) "
        "| p50 ms | p95 ms | search only p50/p95 ms | recall@10 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        params = ", ".join(f"{k}={v}" for k, v in r["index_params"].items() if k in ("nlist", "nprobe", "refine"))
        lines.append(
            f"| {r['records']:,} | {r['embedded']} | {r['index_type']} {params} | {r['build_s']:.0f} "
            f"| {r.get('projected_embed_s', 0) / 3600:.2f} | {r['disk_mb']:.0f} "
            f"| {r['rss_mb']:.0f} ({r['rss_anon_mb']:.0f}+{r['rss_file_mb']:.0f}) | {r['p50_ms']:.1f} "
            f"| {r['p95_ms']:.1f} | {r['search_p50_ms']:.1f}/{r['search_p95_ms']:.1f} | {r['recall_at_10']:.3f} |"
        )
    whole = [r for r in rows if "assistant_p50_ms" in r]
    if whole:
        header = "| records | signals build s | Assistant load s | first query ms | RSS MB | retrieve p50 / p95 ms |"
        lines += ["", header]
        lines.append("|---|---|---|---|---|---|")
        lines += [
            f"| {r['records']:,} | {r['assistant_prepare_s']:.0f} | {r['assistant_load_s']:.1f} "
            f"| {r['assistant_first_query_ms']:.0f} | {r['assistant_rss_mb']:.0f} "
            f"| {r['assistant_p50_ms']:.1f} / {r['assistant_p95_ms']:.1f} |"
            for r in whole
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--real", type=int, default=10_000, help="embed up to this many records for real")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    parser.add_argument("--exact-limit", type=int, default=EXACT_LIMIT, help="largest size searched exactly")
    parser.add_argument("--work", type=Path, default=Path("/tmp/errata-scale"))
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    parser.add_argument("--queries", type=int, default=200, help="how many dev queries to time")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of the serving process (see the doc)")
    parser.add_argument(
        "--assistant-limit", type=int, default=0, help="also serve the whole Assistant up to this many records"
    )
    parser.add_argument("--assistant-queries", type=int, default=60, help="dev queries the Assistant answers")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve-assistant", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kb", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.embedder, args.serve_out, args.queries)
        return
    if args.serve_assistant and args.prepare:
        prepare_assistant(args.serve_assistant, args.kb, args.embedder, args.serve_out)
        return
    if args.serve_assistant:
        serve_assistant(args.serve_assistant, args.kb, args.embedder, args.serve_out, args.assistant_queries)
        return
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    base = load_records(BUNDLED_KB_DIR)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if sizes[0] > args.real:
        raise SystemExit(f"the smallest size must be embedded for real: include a size <= --real ({args.real})")
    rows, state = [], {}
    for count in sizes:
        rows.append(run_size(count, args, base, state))
        print(json.dumps(rows[-1], default=str), flush=True)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1, default=str))
    print(table(rows))


if __name__ == "__main__":
    main()
