"""``errata eval``: figures per style, abstention and latency, as a table or one JSON object."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from assistant.retrieval.evaluate import EvalSetError, evaluate, load_eval_set, write_outcomes

PEFT_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/work/tune.py", line 31, in <module>\n'
    "    model = get_peft_model(base, cfg)\n"
    '  File "/work/.venv/lib/python3.11/site-packages/peft/tuners/tuners_utils.py", line 1046, in inject_adapter\n'
    "    raise NoMatchingPeftModuleError(error_msg)\n"
    "peft.utils.other.NoMatchingPeftModuleError: Target modules ['c_fc'] not found in the base model. "
    "Please check the target modules and try again.\n"
)


@pytest.fixture
def small_set(tmp_path, assistant):
    """Three answerable queries written for this test, and two that no record answers."""
    by_slug = {r.slug: r.id for r in assistant.records}
    rows = [
        {"id": "t1", "query": PEFT_TRACEBACK, "style": "traceback", "relevant": [by_slug["target-modules-not-found"]]},
        {"id": "m1", "query": "smolagents.utils.AgentError: Agent interrupted.", "style": "message",
         "relevant": ["c6aeeba10bb30da8"]},
        {"id": "q1", "query": "my LoRA config names modules the model does not have, what should target_modules be?",
         "style": "question", "relevant": [by_slug["target-modules-not-found"]]},
        {"id": "n1", "query": 'Exception in thread "main" java.lang.NullPointerException\n\tat Main.main(Main.java:3)',
         "style": "traceback", "relevant": []},
        {"id": "n2", "query": "How do I center a div with CSS grid in Safari?", "style": "question", "relevant": []},
    ]  # fmt: skip
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_evaluate_scores_a_small_set(assistant, small_set):
    report = evaluate(assistant, load_eval_set(small_set))
    assert list(report.styles) == ["traceback", "message", "question", "all"]
    assert report.styles["all"]["n"] == 3
    assert report.styles["traceback"]["hit@1"] == 1.0 and report.styles["message"]["hit@1"] == 1.0
    assert report.styles["question"]["hit@5"] == 1.0
    assert report.negatives == 2 and report.abstained == 1.0
    assert report.false_abstention <= 1 / 3
    assert 0 < report.latency_ms["p50"] <= report.latency_ms["p95"]
    assert "Hit@1" in report.table() and "abstained on 100.0%" in report.table()


@pytest.mark.slow
def test_cli_eval_prints_the_documented_json_shape(assistant, small_set, bundled_index_dir):
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "eval", str(small_set), "--json", "--index", str(bundled_index_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out) == {"styles", "abstention", "outcomes", "latency_ms"}
    assert set(out["styles"]["all"]) == {"n", "hit@1", "hit@5", "mrr@10"}
    assert set(out["abstention"]) == {"negatives", "abstained", "false_abstention"}
    assert out["abstention"]["negatives"] == 2
    assert set(out["latency_ms"]) == {"p50", "p95"}
    assert set(out["outcomes"]) == {"all", "covered", "uncovered"}
    assert set(out["outcomes"]["covered"]) == {"n", "right", "abstained", "wrong", "generic"}
    assert out["outcomes"]["uncovered"]["n"] == 2 and out["outcomes"]["uncovered"]["wrong"] == 0.0


def test_outcomes_count_right_abstained_and_wrong_per_kind(assistant, tmp_path):
    rows = [
        {"query": "smolagents.utils.AgentError: Agent interrupted.", "relevant": ["c6aeeba10bb30da8"], "kind": "a"},
        {"query": "smolagents.utils.AgentError: Agent interrupted.", "relevant": ["0000000000000000"], "kind": "a"},
        {"query": "How do I center a div with CSS grid in Safari?", "relevant": [], "kind": "b"},
    ]
    path = tmp_path / "kinds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = evaluate(assistant, load_eval_set(path))
    assert report.outcomes["kind:a"] == {"n": 2, "right": 0.5, "abstained": 0.0, "wrong": 0.5, "generic": 0.0}
    assert report.outcomes["kind:b"]["abstained"] == 1.0
    assert report.outcomes["all"]["n"] == 3 and "kind:a" in report.table()
    # The queries no curated record answers, by kind; and each query's outcome, as --outcomes writes it.
    assert report.outcomes["curated-missed:b"]["n"] == 1 and "curated-missed:a" not in report.outcomes
    write_outcomes(tmp_path / "outcomes.jsonl", report)
    rows = [json.loads(line) for line in (tmp_path / "outcomes.jsonl").read_text().splitlines()]
    expected = [("a", "right", 0), ("a", "wrong", None), ("b", "abstained", None)]
    assert [(r["kind"], r["outcome"], r["rank"]) for r in rows] == expected
    assert rows[0]["top"] == "c6aeeba10bb30da8"
    with pytest.raises(EvalSetError, match="cannot write the outcomes"):
        write_outcomes(tmp_path / "missing" / "outcomes.jsonl", report)


def test_ingested_answers_count_only_where_the_knowledge_base_holds_them(assistant, tmp_path):
    """A paste only an ecosystem record answers is uncovered on the bundled records (none holds that id)."""
    held = "c6aeeba10bb30da8"  # a bundled record: as if an ecosystem build held it
    rows = [
        {"query": "smolagents.utils.AgentError: Agent interrupted.", "relevant": [], "ingested": [held]},
        {"query": "smolagents.utils.AgentError: Agent interrupted.", "relevant": [], "ingested": ["f" * 16]},
    ]
    path = tmp_path / "ingested.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    queries = load_eval_set(path)
    assert queries[0].ingested == (held,) and queries[0].answers(frozenset({held})) == (held,)
    report = evaluate(assistant, queries)
    assert report.outcomes["covered"] == {"n": 1, "right": 1.0, "abstained": 0.0, "wrong": 0.0, "generic": 0.0}
    assert report.outcomes["uncovered"]["n"] == 1 and report.negatives == 1
    path.write_text(json.dumps({"query": "x", "relevant": [], "ingested": "f" * 16}) + "\n")
    with pytest.raises(EvalSetError, match="ingested.jsonl:1"):
        load_eval_set(path)


def test_a_generic_record_is_a_right_answer_counted_apart(assistant, tmp_path):
    """A record whose explanation is true but general (``generic``) answers right, and is counted as generic;
    the same record is wrong for a query that does not list it."""
    paste = "smolagents.utils.AgentError: Agent interrupted."
    rows = [
        {"query": paste, "relevant": [], "generic": ["c6aeeba10bb30da8"], "kind": "g"},
        {"query": paste, "relevant": ["0000000000000000"], "generic": [], "kind": "g"},
    ]
    path = tmp_path / "generic.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = evaluate(assistant, load_eval_set(path))
    assert report.outcomes["kind:g"] == {"n": 2, "right": 0.5, "abstained": 0.0, "wrong": 0.5, "generic": 0.5}
    assert report.outcomes["covered"]["n"] == 2 and report.negatives == 0
    assert [q["generic"] for q in report.queries] == [True, False]
    assert "generic" in report.table()
    path.write_text(json.dumps({"query": paste, "relevant": [], "generic": "c6aeeba10bb30da8"}) + "\n")
    with pytest.raises(EvalSetError, match="generic.jsonl:1"):
        load_eval_set(path)


def test_a_labels_file_adds_ingested_answers_to_a_set_by_id(assistant, tmp_path):
    """dev.jsonl is copied from ../shared as it is: the ecosystem's answers to it are labelled beside it."""
    held = "c6aeeba10bb30da8"
    queries = tmp_path / "set.jsonl"
    queries.write_text(
        json.dumps({"id": "q1", "query": "smolagents.utils.AgentError: Agent interrupted.", "relevant": []}) + "\n"
        + json.dumps({"id": "q2", "query": "KeyError: 'amount'", "relevant": []}) + "\n"
    )  # fmt: skip
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"id": "q1", "ingested": [held]}) + "\n")
    loaded = load_eval_set(queries, labels)
    assert [q.ingested for q in loaded] == [(held,), ()]
    assert evaluate(assistant, loaded).outcomes["covered"]["n"] == 1
    assert load_eval_set(queries)[0].ingested == ()  # the set itself is unchanged
    labels.write_text(json.dumps({"id": "q9", "ingested": [held]}) + "\n")
    with pytest.raises(EvalSetError, match="not in"):
        load_eval_set(queries, labels)
    labels.write_text(json.dumps({"id": "q1", "ingested": held}) + "\n")
    with pytest.raises(EvalSetError, match="labels.jsonl:1"):
        load_eval_set(queries, labels)


@pytest.mark.slow
def test_cli_eval_says_which_line_is_malformed(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x", "relevant": []}\nnot json\n')
    with pytest.raises(EvalSetError, match=r"bad.jsonl:2"):
        load_eval_set(bad)
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "eval", str(bad)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2 and "bad.jsonl:2" in result.stderr and "Traceback" not in result.stderr
