"""Refit the confidence model and threshold on the knowledge base as it ships, the fusion weights kept.

    python benchmarks/fit_confidence.py --index DIR --cache F.npz [--write general|all]

Why a script apart from ``fit_retrieval.py``: that one scores every record of a small knowledge base itself
and fits the confidence to say "this query has an answer". The default knowledge base now holds 88,000
release-built records, scored as candidates with rules (offsets, API changes, rewordings) that only the
Retriever applies, and most wrong answers are queries that have an answer but whose first record is not it
(a release-built template, another library's record). So this script asks the Retriever itself for each
query's first record and fits the confidence to say "the first record is a right answer" (a specific
record, a reading-judged release-built one, or a true general one).

Fitted on dev (each query three times, with the release-built labels of ``--labels``) and the real-world
set; qa_pages is never fitted on and reports the held-out figures. Cross-validated by library too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assistant import Assistant, Settings  # noqa: E402
from assistant.retrieval.candidates import best  # noqa: E402
from assistant.retrieval.confidence import CONFIDENCE_FEATURES, confidence_features  # noqa: E402
from assistant.retrieval.evaluate import load_eval_set  # noqa: E402
from assistant.retrieval.features import FEATURES  # noqa: E402
from assistant.retrieval.ownership import unrecorded_owner  # noqa: E402
from assistant.retrieval.weights import FittedWeights, load_weights, save_weights  # noqa: E402
from assistant.settings import BUNDLED_EVAL_DIR  # noqa: E402
from benchmarks.fit_retrieval import MODELS, fit_logistic  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
SETS = {
    "dev": (BUNDLED_EVAL_DIR / "dev.jsonl", DATA / "dev_release_records.jsonl"),
    "realworld": (DATA / "realworld.jsonl", None),
    "qa_pages": (DATA / "qa_pages.jsonl", None),
}
FITTED_ON = {"dev": 3, "realworld": 1}  # how many times each query counts; qa_pages is held out
TARGET_ABSTENTION = 0.95  # of the no-answer queries of dev
MAX_FALSE_ABSTENTION = 0.03  # of dev's answerable queries whose first record is right


def collect(index: Path) -> dict[str, np.ndarray]:
    """Each query's confidence features, model, outcome facts and set, from the Retriever itself."""
    assistant = Assistant(Settings.load(env={}, index_dir=index))
    retriever = assistant.retriever
    held = frozenset(assistant.records.ids() if hasattr(assistant.records, "ids") else ())
    names = ("x", "model", "right", "answerable", "general", "capped", "set", "group", "seen", "any_seen", "ingested")
    out: dict[str, list] = {k: [] for k in names}
    seen_column = FEATURES.index("library_seen")
    ingested = set(retriever.signals.ingested.tolist())
    out["id"] = []
    for name, (path, labels) in SETS.items():
        queries = load_eval_set(path, labels)
        for number, q in enumerate(queries, start=1):
            query = assistant.parse(q.query)
            answers = set(q.answers(held))
            if query.kind == "empty":
                continue
            scored = retriever.score(query)
            order = best(scored.scores, 10)
            top = retriever.records[scored.position(int(order[0]))]
            out["x"].append(confidence_features(scored, order))
            out["model"].append(scored.model)
            out["right"].append(top.id in answers)
            out["answerable"].append(bool(answers))
            out["general"].append(unrecorded_owner(query, top) is not None)
            out["capped"].append(retriever.cannot_tell(query))
            out["seen"].append(scored.features[int(order[0]), seen_column] > 0)
            out["any_seen"].append(bool(scored.features[:, seen_column].max() > 0))
            out["ingested"].append(scored.position(int(order[0])) in ingested)
            out["set"].append(name)
            out["group"].append(q.id.rsplit("-", 1)[0])
            out["id"].append(q.id)
            if number % 100 == 0:
                print(f"{name}: {number}/{len(queries)}", file=sys.stderr, flush=True)
    return {k: np.array(v) for k, v in out.items()}


def fit(data: dict[str, np.ndarray], rows: np.ndarray) -> tuple[dict[str, np.ndarray], float]:
    """Confidence weights per model (target: the first record is right) and the threshold, on ``rows``."""
    weights = {}
    for model in MODELS:
        picked = rows[data["model"][rows] == model]
        weights[model] = fit_logistic(data["x"][picked], data["right"][picked].astype(float))
    conf = confidences(data, weights)
    dev = rows[data["set"][rows] == "dev"]
    return weights, threshold(conf[dev], data["answerable"][dev], data["right"][dev])


def confidences(data: dict[str, np.ndarray], weights: dict[str, np.ndarray]) -> np.ndarray:
    z = np.array([x @ weights[m] for x, m in zip(data["x"], data["model"], strict=True)])
    conf = 1 / (1 + np.exp(-np.clip(z, -60, 60)))
    return np.where(data["capped"], np.minimum(conf, 0.05), conf)


def threshold(conf: np.ndarray, answerable: np.ndarray, right: np.ndarray) -> float:
    """Where ``TARGET_ABSTENTION`` of dev's no-answer queries abstain, lowered as far as needed to keep the
    refusals of dev's rightly answered queries within ``MAX_FALSE_ABSTENTION``."""
    neg, pos = np.sort(conf[~answerable]), np.sort(conf[right])
    for_negatives = float(neg[min(len(neg) - 1, int(np.ceil(TARGET_ABSTENTION * len(neg))))]) if len(neg) else 0.0
    return min(for_negatives, float(pos[int(np.floor(MAX_FALSE_ABSTENTION * len(pos)))]))


def outcomes(data: dict[str, np.ndarray], conf: np.ndarray, cut: float) -> dict[str, dict[str, float]]:
    """Right / refused / wrong per set, as ``errata eval`` counts them, and dev's abstention figures."""
    table = {}
    for name in SETS:
        at = data["set"] == name
        confident = conf[at] >= cut
        right = confident & data["right"][at]
        table[name] = {
            "right": round(float(right.mean()), 3),
            "refused": round(float((~confident).mean()), 3),
            "wrong": round(float((confident & ~data["right"][at]).mean()), 3),
        }
        if name == "dev":
            answerable = data["answerable"][at]
            table[name]["abstention"] = round(float((~confident[~answerable]).mean()), 3)
            table[name]["false_abstention"] = round(float((~confident[answerable]).mean()), 3)
    return table


def general_confidence(data: dict[str, np.ndarray], conf: np.ndarray, cut: float) -> float:
    """The share of the fitted sets' confident general answers (Python's record of a library's error) that
    are right, with one right and one wrong added (few are seen): what such an answer's confidence says."""
    fitted = np.isin(data["set"], list(FITTED_ON))
    general = fitted & data["general"] & (conf >= cut)
    return float((int((general & data["right"]).sum()) + 1) / (int(general.sum()) + 2))


def fitted_rows(data: dict[str, np.ndarray], keep: np.ndarray) -> np.ndarray:
    return np.array([i for i in np.flatnonzero(keep) for _ in range(FITTED_ON.get(str(data["set"][i]), 0))])


def cross_validated(data: dict[str, np.ndarray], folds: int = 5) -> np.ndarray:
    """Each query's confidence from weights fitted on the other folds (folds by library)."""
    groups = sorted(set(data["group"]))
    np.random.default_rng(0).shuffle(groups)
    fold_of = {g: i % folds for i, g in enumerate(groups)}
    fold = np.array([fold_of[g] for g in data["group"]])
    conf = np.zeros(len(fold))
    for f in range(folds):
        weights, cut = fit(data, fitted_rows(data, fold != f))
        # each fold's own threshold: compare confidences as distances above it
        conf[fold == f] = confidences(data, weights)[fold == f] - cut + 0.5
    return conf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True, help="features saved here, or reused if it exists")
    parser.add_argument(
        "--write",
        choices=("general", "all"),
        help="save into weights.json the general answers' confidence, or that and the refit confidence model",
    )
    args = parser.parse_args()
    if args.cache.exists():
        data = dict(np.load(args.cache, allow_pickle=False))
    else:
        data = collect(args.index)
        np.savez(args.cache, **data)
    current = load_weights()
    now = confidences(data, current.confidence)
    print("current:", json.dumps(outcomes(data, now, current.confidence_threshold)))
    weights, cut = fit(data, fitted_rows(data, np.ones(len(data["set"]), dtype=bool)))
    print(f"refit, in-sample (threshold {cut:.3f}):", json.dumps(outcomes(data, confidences(data, weights), cut)))
    print("refit, cross-validated by library:", json.dumps(outcomes(data, cross_validated(data), 0.5)))
    general_cap = general_confidence(data, now, current.confidence_threshold)
    print(f"general answers' confidence: {general_cap:.3f}")
    for model in MODELS:
        print(model, {n: round(float(v), 3) for n, v in zip(CONFIDENCE_FEATURES, weights[model], strict=True)})
    if args.write:
        model, cut = (weights, cut) if args.write == "all" else (current.confidence, current.confidence_threshold)
        save_weights(FittedWeights(current.fusion, model, cut, current.ingested_offset, general_cap))
        print(f"wrote assistant/retrieval/weights.json ({args.write})")


if __name__ == "__main__":
    main()
