"""Fit how far an ingested record must outscore a curated one to rank above it (``ingested_offset``).

    python benchmarks/fit_ingested_offset.py --kb /tmp/eco/kb --index /tmp/eco/index [--write]

``--kb`` is a folder of ingested records (``errata kb build-ecosystem`` output); it is searched together
with the bundled curated records, as a user who adds it would. Each query of the dev set and of the
real-world set is scored once; then, for each candidate offset, ingested records' scores are lowered by it
and the rank of the relevant (curated) record read again. The offset chosen is the smallest whose
Hit@1 over both sets is within one query of the best: far enough that an ingested twin of a curated
record does not outrank it, no further (so ingested records still answer where no curated record has
evidence). Confidence is not affected (it reads the scores without the offset), so only ranks are fitted.
With ``--write`` the offset goes into ``assistant/retrieval/weights.json``, the other weights untouched.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assistant import Assistant, Settings  # noqa: E402
from assistant.retrieval.candidates import among  # noqa: E402
from assistant.retrieval.evaluate import load_eval_set  # noqa: E402
from assistant.retrieval.weights import load_weights, save_weights  # noqa: E402
from assistant.settings import BUNDLED_EVAL_DIR, BUNDLED_KB_DIR  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# Each set with the labels of the ecosystem records that answer its queries (dev's are beside it).
SETS = (
    (BUNDLED_EVAL_DIR / "dev.jsonl", ROOT / "benchmarks" / "data" / "dev_ingested.jsonl"),
    (ROOT / "benchmarks" / "data" / "realworld.jsonl", None),
)
OFFSETS = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0, 12.0, 15.0, 20.0)


def ranks_by_offset(assistant: Assistant, path: Path, labels: Path | None) -> dict[float, list[bool]]:
    """For each offset, whether each answerable query's answer (curated, or ingested where the knowledge
    base holds it) ranks first."""
    retriever = assistant.retriever
    retriever.ingested_offset = 0.0  # score once, without it; each offset is applied below
    ingested = retriever.signals.ingested
    out: dict[float, list[bool]] = {offset: [] for offset in OFFSETS}
    position_of = {record.id: i for i, record in enumerate(retriever.records)}
    held = frozenset(position_of)
    for q in load_eval_set(path, labels):
        answers = q.answers(held)
        if not answers:
            continue
        scored = retriever.score(assistant.parse(q.query))
        mask = np.zeros(len(scored.scores))
        where, _picked = among(ingested, scored.positions)
        mask[where] = 1.0
        wanted = np.array(sorted(position_of[r] for r in answers if r in position_of), dtype=np.int64)
        relevant = set(among(wanted, scored.positions)[0].tolist())
        for offset in OFFSETS:
            top = int(np.argmax(scored.scores - offset * mask))
            out[offset].append(top in relevant)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", type=Path, required=True, help="folder of ingested records")
    parser.add_argument("--index", type=Path, required=True, help="index folder for the bundled + ingested records")
    parser.add_argument("--write", action="store_true", help="save the chosen offset in weights.json")
    args = parser.parse_args()
    settings = Settings.load(kb=[BUNDLED_KB_DIR, args.kb], index_dir=args.index)
    assistant = Assistant(settings)
    totals = {offset: 0 for offset in OFFSETS}
    count = 0
    for path, labels in SETS:
        found = ranks_by_offset(assistant, path, labels)
        count += len(found[0.0])
        line = "  ".join(f"{offset:g}: {np.mean(hits):.3f}" for offset, hits in found.items())
        print(f"{path.name:16} Hit@1 by offset  {line}")
        for offset, hits in found.items():
            totals[offset] += sum(hits)
    best = max(totals.values())
    chosen = min(offset for offset, total in totals.items() if total >= best - 1)
    print(f"chosen offset {chosen:g} (Hit@1 over both sets {totals[chosen] / count:.3f}; best {best / count:.3f})")
    if args.write:
        save_weights(dataclasses.replace(load_weights(), ingested_offset=chosen))
        print("written to assistant/retrieval/weights.json")


if __name__ == "__main__":
    main()
