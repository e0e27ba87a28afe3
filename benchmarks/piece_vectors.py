"""Would a vector per record piece rank better than the one vector per record? Measured, not yet built.

    python benchmarks/fit_retrieval.py --extra benchmarks/data/realworld.jsonl --cache /tmp/fit.npz
    python benchmarks/piece_vectors.py --cache /tmp/fit.npz --extra benchmarks/data/realworld.jsonl

A record is embedded as one text (class and message, common situations, trigger scenarios,
documentation) cut at 256 tokens. A question often describes one situation a record lists; its cosine
with that piece alone may say more than its cosine with the whole. This embeds each piece apart with the
Retriever's own embedder, adds the query's cosine with each as a fusion feature to the features
``fit_retrieval.py`` saved, refits, and prints cross-validated Hit@1 (folds by library and by query) and
abstention without and with them. A record without a piece gets its whole-record cosine there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fit_retrieval as fit  # noqa: E402

from assistant import Assistant, Settings  # noqa: E402
from assistant.records import Record  # noqa: E402
from assistant.retrieval.features import FEATURES  # noqa: E402
from assistant.retrieval.retriever import embedded_text  # noqa: E402

PIECES = {
    "message": lambda r: f"{r.error_class}: {r.error_message}",
    "situations": lambda r: r.common_situations or "",
    "triggers": lambda r: r.trigger_scenarios or "",
    "documentation": lambda r: r.documentation or "",
}


def piece_cosines(assistant: Assistant, queries: np.ndarray, piece) -> np.ndarray:
    """(queries, records): each query's cosine with each record's ``piece``; NaN where a record has none.
    ``queries``: the unit vectors of what the Retriever embeds of each query."""
    records: list[Record] = list(assistant.records)
    texts = [piece(r).strip() for r in records]
    held = [i for i, t in enumerate(texts) if t]
    vectors = _unit(assistant.embedder.encode([texts[i] for i in held]))
    out = np.full((len(queries), len(records)), np.nan, dtype=np.float32)
    out[:, held] = queries @ vectors.T
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True, help="the features fit_retrieval.py --cache saved")
    parser.add_argument("--dev", type=Path, default=fit.DEV)
    parser.add_argument("--extra", type=Path, action="append", default=[])
    parser.add_argument("--index", type=Path, default=Path("/tmp/errata-fit-index"))
    parser.add_argument("--pieces", default="message,situations,triggers", help=f"of {', '.join(PIECES)}")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--dev-repeat", type=int, default=3)
    args = parser.parse_args()
    rows = fit.load_rows(args.dev, args.extra)
    saved = np.load(args.cache, allow_pickle=True)
    features, models, relevant = list(saved["features"]), list(saved["models"]), list(saved["relevant"])
    if len(features) != len(rows):
        raise SystemExit(f"{args.cache} holds {len(features)} queries, the sets {len(rows)}: refit with the same sets")
    assistant = Assistant(Settings.load(env={}, index_dir=args.index))
    dense = FEATURES.index("dense")
    texts = [embedded_text(assistant.parse(row["query"])) for row in rows]
    queries = _unit(assistant.embedder.encode(texts))  # once, for every piece
    columns = []
    for name in args.pieces.split(","):
        cosines = piece_cosines(assistant, queries, PIECES[name])
        columns.append(cosines)
        print(f"{name}: {int(np.isfinite(cosines[0]).sum())} of {cosines.shape[1]} records hold it", flush=True)
    with_pieces = []
    for i, x in enumerate(features):
        extra = [np.where(np.isfinite(c[i]), c[i], x[:, dense]) for c in columns]
        with_pieces.append(np.column_stack([x[:, :-1], *extra, x[:, -1:]]))  # the penalty stays last
    fit.DEV_REPEAT = args.dev_repeat
    for label, table_features in (("without", features), (f"with {args.pieces}", with_pieces)):
        for fold_name, fold_of in fit.fold_assignments(rows, args.folds).items():
            table, abst, false_abst = fit.cross_validate(rows, table_features, models, relevant, fold_of, args.folds)
            hits = {style: round(t["hit@1"], 3) for style, t in sorted(table.items())}
            print(f"{label}, folds by {fold_name}: Hit@1 {hits} abstained {abst:.3f} false {false_abst:.3f}")


if __name__ == "__main__":
    main()
