"""How fast `errata ingest` reads source, and how many curated raises it finds on its own.

    python benchmarks/ingest.py                 # gradio (the issue's target), best of 3 runs
    python benchmarks/ingest.py slack_bolt gradio --repeat 5

Prints files/s and records/s (AST walk, message helpers, record building and validation; no writing),
and, for packages the bundled knowledge base covers, how many curated records have an ingested record
at the same file and line, or with the same message.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import statistics
import time

from assistant.ingest.raises import ingest, python_files, resolve_package
from assistant.knowledge.records import load_records
from assistant.settings import BUNDLED_KB_DIR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("packages", nargs="*", default=["gradio"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    curated = load_records(BUNDLED_KB_DIR)
    for package in args.packages:
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            records, report = ingest(package=package)
            times.append(time.perf_counter() - started)
        best, median = min(times), statistics.median(times)
        parse_times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            for path, _rel in python_files(resolve_package(package)):
                with contextlib.suppress(SyntaxError, UnicodeDecodeError, ValueError):
                    ast.parse(path.read_text(encoding="utf-8"))
            parse_times.append(time.perf_counter() - started)
        print(f"{package}: {report.summary()}")
        print(
            f"  {report.files} files, {len(records)} records in {best:.2f} s best / {median:.2f} s median "
            f"-> {report.files / best:.0f} files/s, {len(records) / best:.0f} records/s "
            f"(reading and ast.parse alone: {min(parse_times):.2f} s)"
        )
        repo = records[0].repo if records else ""
        theirs = [r for r in curated if r.repo == repo]
        if theirs:
            places = {(r.file_path.removeprefix("src/"), r.line_number) for r in records}
            messages = {r.error_message for r in records}
            same_place = sum((r.file_path.removeprefix("src/"), r.line_number) in places for r in theirs)
            same_message = sum(r.error_message in messages for r in theirs)
            either = sum(
                (r.file_path.removeprefix("src/"), r.line_number) in places or r.error_message in messages
                for r in theirs
            )
            print(
                f"  curated {repo} records: {len(theirs)}; an ingested record at the same file:line for "
                f"{same_place}, with the same message for {same_message}, either for {either}"
            )


if __name__ == "__main__":
    main()
