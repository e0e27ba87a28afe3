"""Carry the reading-judged ``ingested`` labels of the query sets from one release build's ids to another's.

    python benchmarks/remap_ingested_labels.py OLD_KB NEW_KB benchmarks/data/realworld.jsonl ...

An ingested record's id is the hash of its raise at the first release a build read, so a build over other
releases gives most raises other ids. A raise with the same repository, class and message template is the
same error by the sets' rule (benchmarks/data/README.md), so each labelled id of OLD_KB whose raise NEW_KB
holds gains NEW_KB's id(s) beside it; nothing is removed, and the other fields and lines stay as they are.
Prints, per file, the ids added and the labelled raises NEW_KB no longer has (to judge again by reading).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def raises(folder: Path) -> tuple[dict[str, tuple[str, str, str]], dict[tuple[str, str, str], list[str]]]:
    """Each record's (repo, class, message) by id, and the ids of each such raise."""
    by_id: dict[str, tuple[str, str, str]] = {}
    by_raise: dict[tuple[str, str, str], list[str]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            record = json.loads(line)["record"]
            key = (record["repo"], record["errorClass"], record["errorMessage"])
            by_id[record["id"]] = key
            by_raise.setdefault(key, []).append(record["id"])
    return by_id, by_raise


def remap(path: Path, old: dict[str, tuple[str, str, str]], new_ids: set[str], new: dict) -> tuple[int, int]:
    lines, added, lost = [], 0, 0
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        labelled = row.get("ingested") or []
        extra: list[str] = []
        for record_id in labelled:
            if record_id in new_ids or record_id not in old:
                continue
            found = new.get(old[record_id], [])
            lost += not found
            extra += [i for i in found if i not in labelled and i not in extra]
        if extra:
            row["ingested"] = labelled + extra
            added += len(extra)
            line = json.dumps(row, ensure_ascii=False)  # as the sets are written
        lines.append(line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return added, lost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, help="the build the labels name (a folder of <owner>__<repo>.jsonl)")
    parser.add_argument("new", type=Path, help="the build to label")
    parser.add_argument("sets", type=Path, nargs="+", help="query sets or {id, ingested} label files")
    args = parser.parse_args()
    old, _ = raises(args.old)
    new_by_id, new = raises(args.new)
    for path in args.sets:
        added, lost = remap(path, old, set(new_by_id), new)
        print(f"{path}: {added} id(s) added; {lost} labelled raise(s) not in the new build")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
