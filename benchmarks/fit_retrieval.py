"""Fit the Retriever's fusion weights and confidence model on a dev set, with cross-validation.

    python benchmarks/fit_retrieval.py [--dev ../shared/kb/eval/dev.jsonl] [--index /tmp/idx]

Prints in-sample and cross-validated figures (folds grouped by the library a query is about, so a
fold's records and queries were never seen when its weights were fitted), then the weights to put in
``assistant/retrieve.py``. The fusion is a conditional logit: a softmax over all records of a query,
trained to put the relevant record first, one weight set for pasted errors and one for prose questions.
The confidence is a logistic regression on the top hit's features: answerable query or not. It is fitted
on both kinds of query at once: each kind has its own weights, except for the features in
``SHARED_CONFIDENCE``, whose one weight is learned from both (a quoted error message that the top record's
pattern does not match means the same in a question as in a paste, and pasted errors have far more examples).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assistant import Assistant, Settings  # noqa: E402
from assistant.embedding.text import PIECE_NAMES  # noqa: E402
from assistant.retrieval.confidence import CONFIDENCE_FEATURES, confidence_features  # noqa: E402
from assistant.retrieval.features import FEATURES, Scored  # noqa: E402
from assistant.retrieval.weights import FittedWeights, load_weights, save_weights  # noqa: E402
from assistant.settings import BUNDLED_EVAL_DIR  # noqa: E402

DEV = BUNDLED_EVAL_DIR / "dev.jsonl"  # copied from ../shared/kb/eval by errata refresh-kb
L2 = 1e-4
CONFIDENCE_L2 = 1e-3
TARGET_ABSTENTION = 0.95  # of the no-answer queries
MAX_FALSE_ABSTENTION = 0.03  # of the answerable ones
MODELS = ("error", "prose")
DEV_REPEAT = 1  # set by report()
SHARED_CONFIDENCE = ("message_unmatched",)
# Features the "error" model leaves at weight 0: a pasted error is embedded as its error line, which the whole
# record's vector meets at its start, so the pieces' cosines only restate it; fitted on errors they took
# weights of opposite signs that cancel (cross-validated Hit@1 by library 0.929 with them, 0.932 without).
PROSE_ONLY = tuple(f"dense_{name}" for name in PIECE_NAMES)


def fused(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The Retriever's fused scores: features (all columns but the last) times weights, less the penalty
    (the last column: records that cannot answer, see retrieval/ownership.py)."""
    return x[..., :-1] @ w - x[..., -1]


def fit_softmax(items: list[tuple[np.ndarray, int]], l2: float = L2, unused: Sequence[int] = ()) -> np.ndarray:
    """Weights maximizing the log-probability of each query's relevant record among all records; the
    features at ``unused`` keep weight 0."""
    items = [(x, p) for x, p in items if x[p, -1] == 0]  # a penalized record cannot be put first
    full = np.stack([x for x, _ in items])  # (queries, records, features + penalty)
    x, penalty = full[..., :-1], full[..., -1]
    pos = np.array([p for _, p in items])
    rows = np.arange(len(items))
    wanted = x[rows, pos]  # (queries, features)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = x @ w - penalty
        s = s - s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        total = -np.mean(np.log(p[rows, pos] + 1e-12)) + l2 * float(w @ w)
        grad = -(wanted - np.einsum("qr,qrf->qf", p, x)).mean(axis=0) + 2 * l2 * w
        return float(total), grad

    bounds = [(0.0, 0.0) if j in set(unused) else (None, None) for j in range(x.shape[2])]
    return minimize(loss, np.zeros(x.shape[2]), jac=True, method="L-BFGS-B", bounds=bounds).x


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float | None = None) -> np.ndarray:
    """Logistic regression (column 0 is the bias), fitted on standardized columns for a well-posed problem."""
    l2 = CONFIDENCE_L2 if l2 is None else l2
    mu, sd = x[:, 1:].mean(axis=0), x[:, 1:].std(axis=0)
    sd[sd == 0] = 1.0
    z_x = np.column_stack([x[:, 0], (x[:, 1:] - mu) / sd])

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = np.clip(z_x @ w, -60, 60)
        p = 1 / (1 + np.exp(-z))
        ll = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
        reg = l2 * float(w[1:] @ w[1:])
        g = z_x.T @ (p - y) / len(y)
        g[1:] += 2 * l2 * w[1:]
        return ll + reg, g

    w = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x
    out = np.concatenate([[w[0] - float(np.sum(w[1:] * mu / sd))], w[1:] / sd])
    return out


def choose_threshold(conf: np.ndarray, answerable: np.ndarray) -> float:
    """The threshold at which ``TARGET_ABSTENTION`` of the no-answer queries abstain, lowered as far as
    needed to keep false abstention on answerable queries within ``MAX_FALSE_ABSTENTION``: abstaining is
    the goal on what no record answers, and refusing what one does answer is capped."""
    pos, neg = np.sort(conf[answerable]), np.sort(conf[~answerable])
    if not len(pos):
        return 0.5
    for_negatives = float(neg[min(len(neg) - 1, int(np.ceil(TARGET_ABSTENTION * len(neg))))]) if len(neg) else 0.0
    cap = float(pos[int(np.floor(MAX_FALSE_ABSTENTION * len(pos)))])
    return min(for_negatives, cap)


def evaluate(rows, features, models, relevant, w_by_model, cw, threshold):
    out: dict[str, list] = {}
    abstained_neg, abstained_pos = [], []
    for row, x, model, rel in zip(rows, features, models, relevant, strict=True):
        scores = fused(x, w_by_model[model])
        order = np.argsort(-scores, kind="stable")
        c = 1 / (1 + np.exp(-(confidence_features(Scored(x[:, :-1], scores, model), order) @ cw[model])))
        if rel is None:
            abstained_neg.append(c < threshold)
            continue
        abstained_pos.append(c < threshold)
        rank = int(np.where(order == rel)[0][0])
        for style in (row["style"], "all"):
            out.setdefault(style, []).append(rank)
    table = {
        style: {
            "n": len(r),
            "hit@1": float(np.mean([x < 1 for x in r])),
            "hit@5": float(np.mean([x < 5 for x in r])),
            "mrr@10": float(np.mean([1 / (x + 1) if x < 10 else 0 for x in r])),
        }
        for style, r in out.items()
    }
    share = lambda xs: float(np.mean(xs)) if xs else 0.0  # noqa: E731
    return table, share(abstained_neg), share(abstained_pos)


def fit_all(rows, features, models, relevant, train):
    w = {}
    for model in ("error", "prose"):
        items = [(features[i], relevant[i]) for i in train if models[i] == model and relevant[i] is not None]
        w[model] = fit_softmax(items, unused=[FEATURES.index(f) for f in PROSE_ONLY] if model == "error" else [])
    shared = [CONFIDENCE_FEATURES.index(f) for f in SHARED_CONFIDENCE]
    own = [j for j in range(len(CONFIDENCE_FEATURES)) if j not in shared]
    # One row per query: its model's own features in that model's block, zeros in the other's, then the shared.
    cx, cy, blocks = [], [], []
    for i in train:
        scores = fused(features[i], w[models[i]])
        order = np.argsort(-scores, kind="stable")
        c = confidence_features(Scored(features[i][:, :-1], scores, models[i]), order)
        row = np.zeros(len(MODELS) * len(own) + len(shared))
        block = MODELS.index(models[i]) * len(own)
        row[block : block + len(own)] = c[own]
        row[len(MODELS) * len(own) :] = c[shared]
        cx.append(row)
        cy.append(1.0 if relevant[i] is not None else 0.0)
        blocks.append(block)
    cx, cy = np.array(cx), np.array(cy)
    joint = fit_logistic_blocks(cx, cy, blocks)
    cw = {}
    for m, model in enumerate(MODELS):
        v = np.zeros(len(CONFIDENCE_FEATURES))
        v[own] = joint[m * len(own) : (m + 1) * len(own)]
        v[shared] = joint[len(MODELS) * len(own) :]
        cw[model] = v
    confs = 1 / (1 + np.exp(-np.clip(cx @ joint, -60, 60)))
    return w, cw, choose_threshold(confs, cy.astype(bool))


def fit_logistic_blocks(x: np.ndarray, y: np.ndarray, bias_columns: list[int]) -> np.ndarray:
    """``fit_logistic`` over rows whose bias sits in a column of their own block (``bias_columns``).

    A common, unregularized bias goes in front (``fit_logistic`` wants one in column 0) and is folded back
    into each block's bias column.
    """
    w = fit_logistic(np.column_stack([np.ones(len(x)), x]), y)
    out = w[1:].copy()
    for b in set(bias_columns):
        out[b] += w[0]
    return out


class MemoEmbedder:
    """The real embedder, remembering query vectors on disk (refitting then skips the model)."""

    def __init__(self, embedder, path: Path):
        self.embedder, self.path = embedder, path
        self.memo = dict(np.load(path, allow_pickle=True)["memo"].item()) if path.exists() else {}

    def encode(self, texts):
        missing = [t for t in texts if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.embedder.encode(missing), strict=True))
        return np.stack([self.memo[t] for t in texts])

    def save(self) -> None:
        np.savez(self.path, memo=np.array(self.memo, dtype=object))


def group_of(row) -> str:
    return row["id"].rsplit("-", 1)[0]


def load_rows(dev: Path, extras: list[Path]) -> list[dict]:
    """The dev queries, then each extra set's, whose styles are prefixed with the file's name (reported apart)."""
    rows = [json.loads(line) for line in dev.read_text().splitlines() if line.strip()]
    for path in extras:
        extra = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        rows += [{**row, "style": f"{path.stem}:{row.get('style', 'question')}"} for row in extra]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dev", type=Path, default=DEV)
    parser.add_argument(
        "--extra",
        type=Path,
        action="append",
        default=[],
        help="another query set fitted on with the dev set (e.g. benchmarks/data/realworld.jsonl)",
    )
    parser.add_argument("--index", type=Path, default=Path("/tmp/errata-fit-index"))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--dev-repeat",
        type=int,
        default=3,
        help="with --extra: each dev query counts this many times in the fit (the extra sets are smaller and "
        "noisier; dev keeps what it teaches, such as abstaining on near misses)",
    )
    parser.add_argument("--write", action="store_true", help="save the in-sample fit as retrieval/weights.json")
    parser.add_argument("--cache", type=Path, help="save features here, or reuse them if the file exists")
    parser.add_argument("--query-vectors", type=Path, help="a file caching the query embeddings between runs")
    args = parser.parse_args()
    rows = load_rows(args.dev, args.extra)
    if args.cache and args.cache.exists():
        saved = np.load(args.cache, allow_pickle=True)
        report(
            rows, list(saved["features"]), list(saved["models"]), list(saved["relevant"]), args.folds, args.write,
            dev_repeat=args.dev_repeat,
        )  # fmt: skip
        return
    assistant = Assistant(Settings.load(env={}, index_dir=args.index, release_records=False))
    if args.query_vectors:
        assistant.retriever.embedder = MemoEmbedder(assistant.embedder, args.query_vectors)
    position = {r.id: i for i, r in enumerate(assistant.records)}
    features, models, relevant = [], [], []
    for row in rows:
        scored = assistant.retriever.score(assistant.parse(row["query"]))
        penalty = scored.penalty if scored.penalty is not None else np.zeros(len(scored.scores))
        features.append(np.column_stack([scored.features, penalty]))
        models.append(scored.model)
        relevant.append(position[row["relevant"][0]] if row["relevant"] else None)
    if args.query_vectors:
        assistant.retriever.embedder.save()
    if args.cache:
        np.savez(args.cache, features=np.array(features), models=np.array(models), relevant=np.array(relevant, object))
    report(rows, features, models, relevant, args.folds, args.write, dev_repeat=args.dev_repeat)


def weighted(indices, rows, dev_repeat: int) -> list[int]:
    """``indices`` with each dev query (a style without a set's ``name:`` prefix) repeated ``dev_repeat`` times."""
    return [i for i in indices for _ in range(dev_repeat if ":" not in rows[i]["style"] else 1)]


def report(rows, features, models, relevant, folds, write: bool = False, dev_repeat: int = 1) -> None:
    global DEV_REPEAT
    DEV_REPEAT = dev_repeat
    everything = weighted(range(len(rows)), rows, dev_repeat)
    w, cw, threshold = fit_all(rows, features, models, relevant, everything)
    table, abst, false_abst = evaluate(rows, features, models, relevant, w, cw, threshold)
    print("in-sample:", _compact(table), f"abstained {abst:.3f} false {false_abst:.3f} threshold {threshold:.3f}")
    for name, fold_of in fold_assignments(rows, folds).items():
        table, abst, false_abst = cross_validate(rows, features, models, relevant, fold_of, folds)
        print(f"cross-validated, folds by {name}:", _compact(table), f"abstained {abst:.3f} false {false_abst:.3f}")
    print_weights(w, cw, threshold, write)


def fold_assignments(rows, folds: int) -> dict[str, list[int]]:
    """Each query's fold, by library (a fold's records and queries unseen in its fit) and by query."""
    groups = sorted({group_of(r) for r in rows})
    np.random.default_rng(0).shuffle(groups)
    by_library = {g: i % folds for i, g in enumerate(groups)}
    return {
        "library": [by_library[group_of(r)] for r in rows],
        "query": list(np.random.default_rng(0).permutation(len(rows)) % folds),
    }


def _compact(table) -> str:
    return json.dumps({k: {m: round(v, 3) for m, v in t.items()} for k, t in sorted(table.items())})


def cross_validate(rows, features, models, relevant, fold_of, folds):
    """Each query scored by weights fitted on the other folds only."""
    ranks: dict[str, list] = {}
    neg, pos = [], []
    for fold in range(folds):
        train = weighted([i for i in range(len(rows)) if fold_of[i] != fold], rows, DEV_REPEAT)
        wf, cwf, tf = fit_all(rows, features, models, relevant, train)
        for i in (i for i in range(len(rows)) if fold_of[i] == fold):
            t, a, fa = evaluate([rows[i]], [features[i]], [models[i]], [relevant[i]], wf, cwf, tf)
            if relevant[i] is None:
                neg.append(a)
                continue
            pos.append(fa)
            for style, v in t.items():
                ranks.setdefault(style, []).append(v)
    table = {
        style: {"n": len(vs)} | {m: float(np.mean([v[m] for v in vs])) for m in ("hit@1", "hit@5", "mrr@10")}
        for style, vs in ranks.items()
    }
    return table, float(np.mean(neg)), float(np.mean(pos))


def print_weights(w, cw, threshold, write: bool) -> None:
    """Print the in-sample fit; with ``--write`` save it as ``assistant/retrieval/weights.json``, which the
    Retriever loads (and ``Settings.confidence_threshold`` defaults to)."""
    fitted = FittedWeights(
        {m: np.asarray(w[m]) for m in ("error", "prose")},
        {m: np.asarray(cw[m]) for m in ("error", "prose")},
        float(threshold),
        load_weights().ingested_offset,  # fitted apart (fit_ingested_offset.py): kept as it is
    )
    print(json.dumps(fitted.to_dict(), indent=1))
    if write:
        save_weights(fitted)
        print("wrote assistant/retrieval/weights.json")


if __name__ == "__main__":
    main()
