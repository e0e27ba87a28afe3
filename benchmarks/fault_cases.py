"""Each fault case of issue 47 ("Trust, second pass") in a process of its own: its outcome, seconds and peak memory.

Why: the issue's target is that every case is answered (the right answer, or a clear refusal) in at most 2 s and
1 GB. The fault tests (``tests/test_faults_*.py``) check the outcomes; this measures them, one child process per
case so that each peak is its own (``os.wait4``'s ``ru_maxrss``: the child's whole life, its imports and set-up
included). The seconds are those of the case itself, timed in the child: what a user waits for (a start over the
damaged index and one answer, a load of the damaged knowledge base, an ingest, a call), not Python's imports nor
the set-up that makes the damage. A case in a fresh process has no warm caches: a start loads the embedder.

    python benchmarks/fault_cases.py               # every case; a markdown table on stdout (~5 min on 2 cores)
    python benchmarks/fault_cases.py -k manifest   # the cases whose name holds 'manifest'

It works in a temporary folder; the bundled index of the test runs (``$TMPDIR/errata-test-bundled-index-UID``), when
there, is copied as the starting index, else one is built (with the shipped vectors: seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["ERRATA_RELEASE_RECORDS"] = "false"  # the curated records, as the fault tests measure them
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

INTERRUPTED = "smolagents.utils.AgentError: Agent interrupted."
INTERRUPTED_ID = "c6aeeba10bb30da8"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/app/agent.py", line 12, in <module>\n'
    "    agent.run(task)\n"
    '  File "/usr/lib/python3.11/site-packages/smolagents/agents.py", line 540, in run\n'
    "    raise AgentError('Agent interrupted.', self.logger)\n"
    f"{INTERRUPTED}\n"
)
KB_FILES = ("huggingface__smolagents.jsonl", "ollama__ollama-python.jsonl")
CASES: dict[str, tuple[str, Callable[[Path], str]]] = {}


def case(name: str, description: str):
    def register(func: Callable[[Path], str]) -> Callable[[Path], str]:
        CASES[name] = (description, func)
        return func

    return register


class Clock:
    """The seconds of the case itself: ``with CLOCK:`` around what a user waits for."""

    seconds = 0.0

    def __enter__(self):
        self._started = time.perf_counter()

    def __exit__(self, *exc):
        self.seconds += time.perf_counter() - self._started


CLOCK = Clock()


# --- helpers: the index, the knowledge base, answers ---------------------------------------------------


def _index_copy(work: Path, name: str = "index") -> Path:
    target = work / name
    shutil.copytree(work.parent / "whole", target, ignore=shutil.ignore_patterns(".lock"))
    return target


def _start(index_dir: Path, kb: Path | None = None):
    from assistant import Assistant, Settings

    settings = Settings.load(env={}, release_records=False, index_dir=index_dir, **({"kb": [kb]} if kb else {}))
    return Assistant(settings)


def _answered(assistant, text: str = INTERRUPTED, record_id: str = INTERRUPTED_ID) -> str:
    answer = assistant.ask(text)
    top = answer.hits[0].record.id if answer.hits else None
    verdict = "right answer" if top == record_id and answer.confidence > 0.5 else f"WRONG ({top})"
    return f"{verdict} at {answer.confidence:.2f}"


def _small_kb(work: Path) -> Path:
    from assistant.settings import BUNDLED_KB_DIR

    kb = work / "kb"
    kb.mkdir()
    for name in KB_FILES:
        shutil.copy(BUNDLED_KB_DIR / name, kb / name)
    return kb


def _edit_record(kb: Path, field: str, value, row: int = 0, name: str = KB_FILES[1]) -> None:
    path = kb / name
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows[row]["record"][field] = value
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _kb_start(work: Path, edit: Callable[[Path], None]) -> str:
    """The small knowledge base indexed, then ``edit``ed: a start over it and one answer."""
    kb = _small_kb(work)
    _start(work / "index", kb)
    edit(kb)
    with CLOCK:
        assistant = _start(work / "index", kb)
        outcome = _answered(assistant)
    report = assistant.load_report
    if not report.skipped:
        return outcome
    return f"{outcome}; {report.skipped} line(s) refused: {report.problems[0][len(str(kb)) + 1 :][:90]}"


def _keep_time(path: Path, damage: Callable[[Path], None]) -> None:
    stat = path.stat()
    damage(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _index_start(work: Path, damage: Callable[[Path], None]) -> str:
    index_dir = _index_copy(work)
    damage(index_dir)
    with CLOCK:
        assistant = _start(index_dir)
        outcome = _answered(assistant)
    build = assistant.build_report
    return f"{outcome} ({'rebuilt, ' + str(build.embedded) + ' embedded' if build.rebuilt else build.reason})"


# --- the index: damaged files ------------------------------------------------------------------------------


@case("start (no damage)", "the bundled index as built: a start from its snapshot and one answer")
def _baseline(work: Path) -> str:
    return _index_start(work, lambda index_dir: None)


@case("1 manifest: one bit of an id", "a record id in index/manifest.json flipped by one bit, size and time kept")
def _flip(work: Path) -> str:
    def damage(index_dir: Path) -> None:
        def flip(path: Path) -> None:
            data = path.read_bytes()
            at = data.index(f'"id": "{INTERRUPTED_ID}"'.encode()) + len('"id": "')
            path.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])

        _keep_time(index_dir / "manifest.json", flip)

    return _index_start(work, damage)


@case("1 manifest: two ids swapped", "two record ids of index/manifest.json exchanged")
def _swap(work: Path) -> str:
    def damage(index_dir: Path) -> None:
        path = index_dir / "manifest.json"
        other = next(e["id"] for e in json.loads(path.read_text())["records"] if e["id"] != INTERRUPTED_ID)
        text = path.read_text().replace(INTERRUPTED_ID, "\0").replace(other, INTERRUPTED_ID).replace("\0", other)
        _keep_time(path, lambda p: p.write_text(text))

    return _index_start(work, damage)


@case("manifest: not JSON", "index/manifest.json cut to '{'")
def _not_json(work: Path) -> str:
    return _index_start(work, lambda index_dir: (index_dir / "manifest.json").write_text("{"))


@case("pieces.json: hashes swapped", "two records' piece hashes exchanged in index/pieces.json, size and time kept")
def _pieces(work: Path) -> str:
    def damage(index_dir: Path) -> None:
        path = index_dir / "pieces.json"
        text = path.read_text()
        keys = json.loads(text)["keys"]
        a, b = [i for i, row in enumerate(keys) if all(row)][:2]
        for first, second in zip(keys[a], keys[b], strict=True):
            text = text.replace(first, "\0").replace(second, first).replace("\0", second)
        _keep_time(path, lambda p: p.write_text(text))

    return _index_start(work, damage)


@case("2 encoder: 32 random blocks", "32 random 4 KB blocks written into the stored ONNX encoder, size kept")
def _encoder(work: Path) -> str:
    import random

    def damage(index_dir: Path) -> None:
        [path] = (index_dir / "encoder").glob("*.onnx")
        size = path.stat().st_size
        rng = random.Random(0)
        with open(path, "r+b") as handle:
            for _ in range(32):
                handle.seek(rng.randrange(0, size - 4096))
                handle.write(rng.randbytes(4096))

    return _index_start(work, damage)


# --- the knowledge base: hostile and damaged lines ---------------------------------------------------------


def _pattern_case(pattern: str) -> Callable[[Path], str]:
    return lambda work: _kb_start(work, lambda kb: _edit_record(kb, "messagePattern", pattern))


for _name, _pattern in [
    ("3 pattern (?:ab){4294967294}", "(?:ab){4294967294}"),
    ("3 pattern x{4000000}", "x{4000000}"),
    ("pattern behind a prefix", "Agent interrupted (a|aa)+$"),
    ("pattern (?:a|a)+$", "(?:a|a)+$"),
    ("pattern (?:[a-c]|[b-d])+$", "(?:[a-c]|[b-d])+$"),
]:
    case(_name, f"a record's messagePattern is {_pattern}; a start over the knowledge base and one answer")(
        _pattern_case(_pattern)
    )


@case("4 a 24 MB sourceCode line", "a knowledge-base line holding a 24 MB sourceCode field")
def _long_line(work: Path) -> str:
    return _kb_start(work, lambda kb: _edit_record(kb, "sourceCode", "#" * 24_000_000, row=1))


@case("8 a lone surrogate escape", 'a knowledge-base line holding the JSON escape "\\ud800"')
def _surrogate(work: Path) -> str:
    return _kb_start(work, lambda kb: _edit_record(kb, "errorMessage", "Model not found \ud800", row=4))


@case("a byte-order mark", "a knowledge-base file starting with a UTF-8 BOM")
def _bom(work: Path) -> str:
    def edit(kb: Path) -> None:
        path = kb / KB_FILES[0]
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())

    return _kb_start(work, edit)


# --- ingest: hostile archives and source folders --------------------------------------------------------

GOOD = 'def connect(url):\n    raise ConnectionError(f"Could not reach the server at {url}, check the address")\n'


def _raise(words: str) -> str:
    return f'def run(value):\n    raise ValueError("{words} for this value")\n'


@case("5 wheel members with hostile names", "a wheel whose members are named to inject a link or leave the package")
def _wheel(work: Path) -> str:
    from assistant.releases.scan import scan_archive
    from tests.releases_toys import build_wheel

    names = ["evilpkg/a)![x](http://127.0.0.1:9/ingest-pixel.png)(b.py", "evilpkg/<img src=x>.py", "../../tmp/e.py"]
    files = {"evilpkg/__init__.py": "", "evilpkg/client.py": GOOD}
    files.update({name: _raise(f"hostile member {i}") for i, name in enumerate(names)})
    wheel = build_wheel(work, "evilpkg", "0.2.0", files)
    with CLOCK:
        scan = scan_archive(wheel)
    kept = [e["record"]["filePath"] for e in scan["entries"]]
    return f"records of {kept}; {len(scan['report']['skipped_files'])} member(s) refused"


def _ingest(work: Path, folder: Path) -> str:
    import contextlib
    import io

    from assistant.frontends.cli import main

    out = io.StringIO()
    with CLOCK, contextlib.redirect_stdout(out):
        code = main(["ingest", str(folder), "-o", str(work / "out.jsonl"), "--no-compiled"])
    return f"exit {code}: {out.getvalue().strip()[:110]}"


@case("9 ingest: mod\\xff.py", "errata ingest DIR holding mod\\xff.py and markup-named files")
def _undecodable(work: Path) -> str:
    folder = work / "oddpkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "client.py").write_text(GOOD)
    with open(os.path.join(os.fsencode(folder), b"mod\xff.py"), "w") as handle:
        handle.write(_raise("undecodable name"))
    (folder / "a)![x](pixel.png)(b.py").write_text(_raise("markdown name"))
    return _ingest(work, folder)


@case("ingest: a 50 MB .py", "errata ingest DIR holding a 50 MB module (one comment line)")
def _huge_module(work: Path) -> str:
    folder = work / "bigpkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "client.py").write_text(GOOD)
    (folder / "huge.py").write_text(_raise("the huge module") + "#" * 50_000_000 + "\n")
    return _ingest(work, folder)


# --- pastes, replies and front ends ------------------------------------------------------------------------


def _paste_case(before: str) -> Callable[[Path], str]:
    def run(work: Path) -> str:
        assistant = _start(_index_copy(work))
        with CLOCK:
            return _answered(assistant, before + "\n" + TRACEBACK)

    return run


for _name, _before in [
    ("7 paste: 2,000 dashes first", "-" * 2000),
    ("7 paste: a 10 MB line first", "=" * 10_000_000),
    ("7 paste: 50k combining marks first", "\u0301" * 50_000),
]:
    case(_name, "a paste whose start holds fewer than two words before a real traceback (the start is warm)")(
        _paste_case(_before)
    )


@case("ask(bytearray)", "the API given the paste as a bytearray (the start is warm)")
def _bytearray(work: Path) -> str:
    assistant = _start(_index_copy(work))
    with CLOCK:
        return _answered(assistant, bytearray(INTERRUPTED.encode()))


@case("6 hostile LLM replies", "each reply that got past the sanitizer: streamed and sanitized whole, then rendered")
def _replies(work: Path) -> str:
    from tests.test_faults_render import _MD, GITHUB, REPLIES, fetched_and_linked, streamed

    live = 0
    with CLOCK:
        for pieces in REPLIES.values():
            images, links = fetched_and_linked(_MD.render(streamed(pieces, [GITHUB])))
            live += len(images) + len(links)
    return f"{len(REPLIES)} replies, {live} image(s) or foreign link(s) left"


def _served(work: Path):
    from assistant.frontends.feedback import FeedbackStore
    from assistant.frontends.web import build_app, launch
    from tests.web_server import free_port

    assistant = _start(_index_copy(work))
    demo = build_app(assistant, FeedbackStore(work / "fb.sqlite3"))
    url = launch(demo, assistant.settings.replace(host="127.0.0.1", port=free_port()), block=False, quiet=True)
    return demo, url


def _gradio_call(url: str, endpoint: str, data: list) -> str:
    import httpx

    started = httpx.post(f"{url}gradio_api/call/{endpoint}", json={"data": data}, timeout=30)
    stream = httpx.get(f"{url}gradio_api/call/{endpoint}/{started.json()['event_id']}", timeout=60).text
    last = [line for line in stream.splitlines() if line.startswith("data: ")][-1]
    return json.loads(last.removeprefix("data: ")).get("error") if "event: error" in stream else "answered"


@case("web /ask and /chat: 5, null, [], {}", "HTTP calls of /ask and /chat with a paste of each JSON type but string")
def _web(work: Path) -> str:
    demo, url = _served(work)
    try:
        with CLOCK:
            said = [_gradio_call(url, "ask", [v]) for v in (5, None, ["x"], {"t": "x"})]
            said += [_gradio_call(url, "chat", [v, [], 3, None]) for v in (5, None, ["x"], {"t": "x"})]
    finally:
        demo.close()
    clear = sum(1 for s in said if s and s.startswith(("/ask takes", "/chat takes")))
    return f"{clear} of {len(said)} refused with a message, e.g. {said[4]!r}"


@case("10 MCP: a lone surrogate", 'an MCP tools/call whose text holds "\\ud800": read, repaired, answered')
def _mcp(work: Path) -> str:
    from assistant.frontends.mcp_server import check_frame

    frame = (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"explain_error",'
        '"arguments":{"text":"\\ud800 smolagents.utils.AgentError: Agent interrupted."}}}'
    )
    assistant = _start(_index_copy(work))
    with CLOCK:
        repaired = check_frame(frame)
        text = json.loads(repaired)["params"]["arguments"]["text"]
        outcome = _answered(assistant, text)
    return f"frame repaired; {outcome}"


@case("10 MCP: bad frames", "not JSON, binary, 10,000 levels deep, no method: each a JSON-RPC error")
def _mcp_bad(work: Path) -> str:
    from assistant.frontends.mcp_server import Refusal, check_frame

    frames = ["{not json", "\x00\xff\xfe", "[" * 10_000 + "]" * 10_000, '{"jsonrpc":"2.0","id":3}']
    with CLOCK:
        refused = [check_frame(f) for f in frames]
    return f"{sum(isinstance(r, Refusal) for r in refused)} of {len(frames)} answered with a JSON-RPC error"


@case("Slack: a 400-digit timestamp", "a Slack request whose timestamp is 400 digits")
def _slack(work: Path) -> str:
    from assistant.frontends.slack_guard import guarded

    def app(environ, start_response):  # what the guard lets through would reach Bolt
        start_response("200 OK", [])
        return [b"bolt"]

    environ = {
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "application/json",
        "HTTP_X_SLACK_REQUEST_TIMESTAMP": "9" * 400,
        "CONTENT_LENGTH": "2",
        "wsgi.input": __import__("io").BytesIO(b"{}"),
    }
    statuses = []
    with CLOCK:
        guarded(app)(environ, lambda status, headers, *rest: statuses.append(status))
    return f"HTTP {statuses[0]}"


@case("CLI: --pip-arg --no-index", "errata kb build-ecosystem ... --pip-arg --no-index, parsed as a user types it")
def _pip_arg(work: Path) -> str:
    from assistant.frontends.cli import build_parser

    with CLOCK:
        args = build_parser().parse_args(["kb", "build-ecosystem", "-o", "out", "--pip-arg", "--no-index"])
    return f"pip_args = {args.pip_args}"


@case("feedback: garbage vote, deleted file", "a vote with an empty query; then the feedback file deleted")
def _feedback(work: Path) -> str:
    from assistant.frontends.feedback import FeedbackError, FeedbackStore

    store = FeedbackStore(work / "fb.sqlite3")
    with CLOCK:
        try:
            store.add(query="", answer="a", record_ids=["r"], helpful=True)
            garbage = "stored"
        except FeedbackError:
            garbage = "refused"
        (work / "fb.sqlite3").unlink()
        store.add(query="q", answer="a", record_ids=["r"], helpful=True)
    return f"garbage vote {garbage}; after deletion a vote is stored ({len(list(store.all()))} row)"


# --- running -------------------------------------------------------------------------------------------------


def _prepare(root: Path) -> None:
    """``root/whole``: the bundled index with its snapshot, copied from the test runs' when there."""
    whole = root / "whole"
    shared = Path(tempfile.gettempdir()) / f"errata-test-bundled-index-{os.getuid()}"
    whole.mkdir()
    if (shared / "manifest.json").exists():
        for name in ("manifest.json", "embeddings.npy", "vectors.faiss", "pieces.npy", "pieces.json"):
            shutil.copy(shared / name, whole / name)
        shutil.copytree(shared / "encoder", whole / "encoder")
    subprocess.run([sys.executable, __file__, "--prepare", str(whole)], check=True)


def _child(name: str, work: Path) -> None:
    outcome = CASES[name][1](work)
    print(json.dumps({"outcome": outcome, "seconds": CLOCK.seconds}))


def _run(name: str, root: Path) -> dict:
    work = root / f"case-{len(list(root.glob('case-*')))}"
    work.mkdir()
    started = time.perf_counter()
    with open(root / "out.txt", "w+") as out, open(root / "err.txt", "w+") as err:
        command = [sys.executable, __file__, "--case", name, "--work", str(work)]
        child = subprocess.Popen(command, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(child.pid, 0)  # the child's own peak, which Popen.wait would not give
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        printed, said = out.read().strip(), err.read().strip()
    peak_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    try:
        result = json.loads(printed.splitlines()[-1])
    except (ValueError, IndexError):
        result = {"outcome": f"CRASHED ({child.returncode}): {said.splitlines()[-1] if said else ''}"[:200]}
    shutil.rmtree(work, ignore_errors=True)
    return {**result, "name": name, "peak_mb": peak_mb, "process_s": time.perf_counter() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", dest="keyword", help="only the cases whose name holds this")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare:
        _start(args.prepare)
        return 0
    if args.case:
        _child(args.case, args.work)
        return 0
    names = [n for n in CASES if not args.keyword or args.keyword in n]
    with tempfile.TemporaryDirectory(prefix="errata-fault-cases-") as folder:
        root = Path(folder)
        _prepare(root)
        rows = [_run(name, root) for name in names]
    print("| case | outcome | seconds | peak MB |")
    print("|---|---|---:|---:|")
    for row in rows:
        seconds = f"{row['seconds']:.2f}" if "seconds" in row else "-"
        peak = f"{row['peak_mb']:.0f}" if row["peak_mb"] else "-"
        outcome = row["outcome"].replace("|", "\\|").replace("\n", " ")
        print(f"| {row['name']} | {outcome} | {seconds} | {peak} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
