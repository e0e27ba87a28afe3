"""What the piece vectors (``assistant/index/pieces.py``) add: cross-validated Hit@1 and abstention with the
``dense_<piece>`` features as the Retriever computes them, and with each replaced by the whole record's
cosine (what a knowledge base past ``PIECE_LIMIT`` records gets).

    python benchmarks/fit_retrieval.py --extra benchmarks/data/realworld.jsonl --cache /tmp/fit.npz
    python benchmarks/piece_vectors.py --cache /tmp/fit.npz --extra benchmarks/data/realworld.jsonl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fit_retrieval as fit  # noqa: E402

from assistant.embedding.text import PIECE_NAMES  # noqa: E402
from assistant.retrieval.features import FEATURES  # noqa: E402


def without_pieces(features: list[np.ndarray]) -> list[np.ndarray]:
    """The saved features with every piece's cosine replaced by the whole record's."""
    dense = FEATURES.index("dense")
    out = []
    for x in features:
        x = x.copy()
        for name in PIECE_NAMES:
            x[:, FEATURES.index(f"dense_{name}")] = x[:, dense]
        out.append(x)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True, help="the features fit_retrieval.py --cache saved")
    parser.add_argument("--dev", type=Path, default=fit.DEV)
    parser.add_argument("--extra", type=Path, action="append", default=[])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--dev-repeat", type=int, default=3)
    args = parser.parse_args()
    rows = fit.load_rows(args.dev, args.extra)
    saved = np.load(args.cache, allow_pickle=True)
    features, models, relevant = list(saved["features"]), list(saved["models"]), list(saved["relevant"])
    if len(features) != len(rows) or features[0].shape[1] != len(FEATURES) + 1:
        raise SystemExit(f"{args.cache} was saved by another version or for other sets: refit with --cache")
    fit.DEV_REPEAT = args.dev_repeat
    for label, table_features in (("without pieces", without_pieces(features)), ("with pieces", features)):
        for fold_name, fold_of in fit.fold_assignments(rows, args.folds).items():
            table, abst, false_abst = fit.cross_validate(rows, table_features, models, relevant, fold_of, args.folds)
            hits = {style: round(t["hit@1"], 3) for style, t in sorted(table.items())}
            print(f"{label}, folds by {fold_name}: Hit@1 {hits} abstained {abst:.3f} false {false_abst:.3f}")


if __name__ == "__main__":
    main()
