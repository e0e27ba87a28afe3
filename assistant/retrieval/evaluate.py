"""Measuring retrieval on a query set: Hit@1, Hit@5 and MRR@10 per style, abstention, outcomes and latency.

A query set is JSONL, one ``{"id", "query", "style", "relevant"}`` per line (``relevant`` lists the
record ids that answer the query and is empty when none does; an optional ``kind`` groups the outcomes,
as in the real-world set; an optional ``ingested`` lists records of an ecosystem build, ``errata kb
build-ecosystem``, that answer it too). ``errata eval FILE`` prints the report.

A query's answers are its ``relevant`` records and those of its ``ingested`` records the knowledge base
being measured holds: a paste only an ingested record answers is uncovered on the bundled records and
covered with the ecosystem's, so both are measured on what they could answer.

Outcomes are what a user sees: *right* (confident, and the first record answers), *abstained* ("no
confident match"), *wrong* (confident with a first record that does not answer; for a query no record
answers, any confident answer), counted for covered and uncovered queries apart.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ErrataError

STYLE_ORDER = ("traceback", "message", "log", "question")


class EvalSetError(ErrataError):
    """The query set cannot be read (the message names the file and line), or the outcomes cannot be written."""


@dataclass(frozen=True)
class EvalQuery:
    id: str
    query: str
    style: str
    relevant: tuple[str, ...]
    kind: str | None = None
    ingested: tuple[str, ...] = ()  # ingested records that answer it, where the knowledge base holds them
    # records whose explanation is true for it but is not its own cause (Python's record of a TypeError a
    # library's API change raised): a right answer, counted apart as generic
    generic: tuple[str, ...] = ()

    def answers(self, held: frozenset[str]) -> tuple[str, ...]:
        """The records that answer this query in a knowledge base holding the ids ``held``."""
        specific = self.relevant + tuple(i for i in self.ingested if i in held and i not in self.relevant)
        return specific + tuple(i for i in self.generic if i not in specific)


OUTCOMES = ("right", "abstained", "wrong")


@dataclass
class EvalReport:
    """The figures ``errata eval`` prints; ``to_dict`` is the ``--json`` shape."""

    styles: dict[str, dict[str, float]]
    negatives: int
    abstained: float
    false_abstention: float
    latency_ms: dict[str, float]
    missed: list[dict[str, Any]] = field(default_factory=list)
    # {"covered"|"uncovered"|"all"|"kind:<kind>"|"curated-missed:<kind>": {"n", "right", "abstained", "wrong",
    # "generic"}} (shares of n; "generic": the right answers given by a ``generic`` record); "curated-missed" are
    # the queries no ``relevant`` (curated) record answers
    outcomes: dict[str, dict[str, float]] = field(default_factory=dict)
    # one row per query: {"id", "kind", "outcome", "rank" (of the first answer, None), "top" (record id)}
    queries: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcomes": self.outcomes,
            "styles": self.styles,
            "abstention": {
                "negatives": self.negatives,
                "abstained": self.abstained,
                "false_abstention": self.false_abstention,
            },
            "latency_ms": self.latency_ms,
        }

    def table(self) -> str:
        """A readable table of the same figures."""
        lines = [f"{'style':<10} {'n':>5} {'Hit@1':>7} {'Hit@5':>7} {'MRR@10':>7}"]
        for style, row in self.styles.items():
            lines.append(f"{style:<10} {row['n']:>5} {row['hit@1']:>7.3f} {row['hit@5']:>7.3f} {row['mrr@10']:>7.3f}")
        lines.append("")
        lines.append(f"no-answer queries: {self.negatives}, abstained on {self.abstained:.1%}")
        lines.append(f"answerable queries wrongly abstained on: {self.false_abstention:.1%}")
        lines.append(f"retrieval latency: p50 {self.latency_ms['p50']:.1f} ms, p95 {self.latency_ms['p95']:.1f} ms")
        lines.append("")
        lines.append(f"{'outcome':<32} {'n':>5} {'right':>7} {'abstain':>7} {'wrong':>7} {'generic':>7}")
        for group, row in self.outcomes.items():
            shares = " ".join(f"{row[o]:>7.1%}" for o in (*OUTCOMES, "generic"))
            lines.append(f"{group:<32} {row['n']:>5} {shares}")
        lines.append("(generic: right answers given by a record whose explanation is true but general)")
        return "\n".join(lines)


def load_eval_set(path: str | Path, labels: str | Path | None = None) -> list[EvalQuery]:
    """Read a query set, with an error naming the line when one is malformed. ``labels``: a JSONL of
    ``{id, ingested}`` adding ingested answers to the set's queries by id (a set copied from elsewhere, such
    as dev, stays as it came)."""
    path = Path(path)
    text = _read(path, "query set")
    queries = _parse_queries(path, text)
    if labels is None:
        return queries
    extra = _load_labels(Path(labels))
    unknown = sorted(set(extra) - {q.id for q in queries})
    if unknown:
        raise EvalSetError(f"{labels}: {len(unknown)} id(s) not in {path}, first {unknown[0]!r}")
    return [
        replace(q, ingested=tuple(dict.fromkeys([*q.ingested, *extra[q.id]]))) if q.id in extra else q for q in queries
    ]


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvalSetError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc


def _load_labels(path: Path) -> dict[str, list[str]]:
    labels: dict[str, list[str]] = {}
    for number, line in enumerate(_read(path, "labels file").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            ingested = row["ingested"]
            if not isinstance(ingested, list) or not all(isinstance(i, str) for i in ingested):
                raise TypeError("ingested must be a list of record ids")
            labels.setdefault(str(row["id"]), []).extend(ingested)
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            expected = "expected a JSON object with 'id' and 'ingested' (list)"
            raise EvalSetError(f"{path}:{number}: {expected} ({exc})") from exc
    return labels


def _parse_queries(path: Path, text: str) -> list[EvalQuery]:
    queries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            relevant = row.get("relevant") or []
            ingested = row.get("ingested") or []
            generic = row.get("generic") or []
            if not isinstance(row["query"], str) or not all(isinstance(x, list) for x in (relevant, ingested, generic)):
                raise TypeError("query must be a string, relevant, ingested and generic lists")
            queries.append(
                EvalQuery(
                    str(row.get("id", number)),
                    row["query"],
                    str(row.get("style", "question")),
                    tuple(map(str, relevant)),
                    str(row["kind"]) if row.get("kind") else None,
                    tuple(map(str, ingested)),
                    tuple(map(str, generic)),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise EvalSetError(
                f"{path}:{number}: expected a JSON object with 'query' (string) and 'relevant' (list) ({exc})"
            ) from exc
    if not queries:
        raise EvalSetError(f"{path} holds no queries; write one JSON object per line")
    return queries


def evaluate(assistant, queries: Sequence[EvalQuery], *, depth: int = 10) -> EvalReport:
    """Run every query through ``assistant``'s parser and retriever and score the rankings."""
    ranks: dict[str, list[int | None]] = {}
    latencies: list[float] = []
    negatives = abstained = answerable = wrongly_abstained = 0
    missed: list[dict[str, Any]] = []
    outcomes: dict[str, list[str]] = {}
    rows: list[dict[str, Any]] = []
    held = _ids_held(assistant) if any(q.ingested for q in queries) else frozenset()
    for q in queries:
        relevant = q.answers(held)
        start = time.perf_counter()
        query = assistant.parse(q.query)
        retrieval = assistant.retriever.retrieve(query, depth)
        latencies.append((time.perf_counter() - start) * 1000)
        top = retrieval.hits[0].record.id if retrieval.hits else None
        outcome = "abstained" if not retrieval.confident else ("right" if top in relevant else "wrong")
        generic = outcome == "right" and top in q.generic and top not in q.relevant
        groups = ["all", "covered" if relevant else "uncovered"] + ([f"kind:{q.kind}"] if q.kind else [])
        if q.kind and not q.relevant:
            groups.append(f"curated-missed:{q.kind}")
        for group in groups:
            outcomes.setdefault(group, []).append("generic" if generic else outcome)
        ids = [hit.record.id for hit in retrieval.hits]
        rank = next((i for i, rid in enumerate(ids) if rid in relevant), None)
        rows.append({"id": q.id, "kind": q.kind, "outcome": outcome, "rank": rank, "top": top, "generic": generic})
        if not relevant:
            negatives += 1
            abstained += not retrieval.confident
            continue
        answerable += 1
        wrongly_abstained += not retrieval.confident
        if rank != 0:
            missed.append({"id": q.id, "style": q.style, "rank": rank, "top": ids[:1]})
        for style in (q.style, "all"):
            ranks.setdefault(style, []).append(rank)
    styles = {s: _metrics(ranks[s]) for s in (*STYLE_ORDER, *sorted(ranks)) if s in ranks and s != "all"}
    if "all" in ranks:
        styles["all"] = _metrics(ranks["all"])
    return EvalReport(
        styles=styles,
        negatives=negatives,
        abstained=abstained / negatives if negatives else 0.0,
        false_abstention=wrongly_abstained / answerable if answerable else 0.0,
        latency_ms={
            "p50": float(np.percentile(latencies, 50)) if latencies else 0.0,
            "p95": float(np.percentile(latencies, 95)) if latencies else 0.0,
        },
        missed=missed,
        outcomes={group: _shares(found) for group, found in outcomes.items()},
        queries=rows,
    )


def write_outcomes(path: str | Path, report: EvalReport) -> None:
    """Each query's outcome as a JSON line, for reading which queries moved between two runs."""
    text = "".join(json.dumps(row) + "\n" for row in report.queries)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EvalSetError(f"cannot write the outcomes to {path}: {exc.strerror or exc}") from None


def _ids_held(assistant) -> frozenset[str]:
    """The record ids of the assistant's knowledge base (a shelf lists them without parsing a record)."""
    records = assistant.records
    ids = records.ids() if hasattr(records, "ids") else [r.id for r in records]
    return frozenset(ids)


def _shares(found: list[str]) -> dict[str, float]:
    """Shares of n; a generic answer ("generic" in ``found``) counts as right, and apart as generic."""
    n = len(found)
    shares = {"n": n, **{o: found.count(o) / n for o in OUTCOMES}, "generic": found.count("generic") / n}
    shares["right"] += shares["generic"]
    return shares


def _metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "n": n,
        "hit@1": sum(r is not None and r < 1 for r in ranks) / n,
        "hit@5": sum(r is not None and r < 5 for r in ranks) / n,
        "mrr@10": sum(1 / (r + 1) for r in ranks if r is not None and r < 10) / n,
    }
