"""What keeps a query fast in a large knowledge base, each checked to change no result: the set operations
by sorting, the patterns ruled out before they are compiled, the twins and API changes saved with the signals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assistant import parse_query
from assistant.knowledge.records import API_CHANGE_TAG
from assistant.retrieval import sorted_sets
from assistant.retrieval.matching import PATTERN_TEXT_CHARS, PatternMatcher
from assistant.retrieval.ownership import PythonOwnership, wording_twins
from assistant.retrieval.partial_messages import pattern_messages
from assistant.retrieval.pattern_hits import pattern_hits
from assistant.retrieval.patterns import literal_pieces, required_words, text_words

from .conftest import DEV_SET


@pytest.mark.parametrize("seed", range(5))
def test_the_sorted_set_operations_are_numpys_value_for_value_and_dtype_for_dtype(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        first = rng.integers(0, rng.integers(1, 5_000), rng.integers(0, 400)).astype(rng.choice([np.int32, np.int64]))
        second = rng.integers(0, 5_000, rng.integers(0, 400)).astype(rng.choice([np.int32, np.int64]))
        pairs = [
            (sorted_sets.distinct(first), np.unique(first)),
            (sorted_sets.union(first, second), np.union1d(first, second)),
            (sorted_sets.difference(first, second), np.setdiff1d(first, second)),
            (sorted_sets.intersection(first, second), np.intersect1d(first, second)),
            (sorted_sets.contains(np.unique(second), first), np.isin(first, second)),
            *zip(sorted_sets.distinct_counted(first), np.unique(first, return_counts=True), strict=True),
            *zip(sorted_sets.distinct_inverse(first), np.unique(first, return_inverse=True), strict=True),
        ]
        for ours, numpys in pairs:
            assert ours.dtype == numpys.dtype and np.array_equal(ours, np.ravel(numpys))


@pytest.mark.parametrize(
    ("pattern", "pieces"),
    [
        ("Invalid URL", ("Invalid URL",)),  # filed under no word (unbounded at both ends), yet a literal
        ("cannot import name '(.+?)' from '(.+?)'", ("cannot import name ", " from ")),  # quotes may be left out
        (r"Max retries exceeded with url: (.+?)", ("Max retries exceeded with url", " ")),  # so may the colon
        (r"^Agent interrupted\.$", ("Agent interrupted.",)),
        (r"(.+?)", ()),
        (r"(?i)bad thing", ()),  # not plain (a flag): nothing is known, it runs
        (r"(?:a|b) thing", ()),
    ],
)
def test_a_plain_patterns_pieces_are_what_every_match_holds_also_retyped(pattern, pieces):
    assert literal_pieces(pattern) == pieces


def _reference_hits(query, signals, source_of):
    """pattern_hits as it was before its shortcuts: every pattern filed under the paste's words, or none,
    checked for its required words one by one and run."""
    matcher = PatternMatcher()
    messages = pattern_messages(query)
    text = query.text[-PATTERN_TEXT_CHARS:]
    index = signals.pattern_index
    message_words, words_of_text = text_words(messages), text_words([text])
    in_messages = set(index.filed_under(message_words).tolist()) if messages else set()
    on_message, on_text, missed = [], [], []
    for p in index.filed_under(words_of_text | message_words).tolist():
        source = source_of(p)
        required = required_words(source)
        tried = messages if p in in_messages and required <= message_words else []
        matched_message = matched_text = False
        if tried or required <= words_of_text:
            matched_message, matched_text = matcher.match(source, tried, text)
        if p in in_messages and not matched_message:
            missed.append(p)
        (on_message if matched_message else on_text if matched_text else []).append(p)
    return on_message, on_text, tuple(missed) if messages and not on_message else ()


def _positions(signals, patterns):
    groups = [signals.pattern_records.numbered(p) for p in patterns]
    return np.sort(np.concatenate(groups)).tolist() if groups else []


def test_the_patterns_ruled_out_before_running_change_no_hit_on_the_dev_set(assistant):
    retriever = assistant.retriever
    signals = retriever.signals
    rows = [json.loads(line) for line in DEV_SET.read_text().splitlines() if line.strip()]
    for row in rows[::4]:
        query = parse_query(row["query"])
        on_message, _specificity, on_text, heads = pattern_hits(
            query, signals, retriever.matcher, retriever._pattern_source
        )
        expected_message, expected_text, missed = _reference_hits(query, signals, retriever._pattern_source)
        assert on_message.tolist() == _positions(signals, expected_message), row["id"]
        assert on_text.tolist() == _positions(signals, expected_text), row["id"]
        assert (heads.missed if heads else ()) == missed, row["id"]


def test_the_wording_twins_saved_with_the_signals_are_those_a_query_would_find(assistant):
    retriever = assistant.retriever
    saved = retriever.signals.wording_twins
    assert saved is not None  # the build of the test index saved them
    found = PythonOwnership(retriever.records, retriever.signals, PatternMatcher())
    classes = sorted(found._patterns)
    assert classes
    for cls in classes:
        assert np.asarray(saved.get(cls)).tolist() == found._find_twins(cls).tolist(), cls
    assert saved.keys == wording_twins(retriever.records, retriever.signals).keys


def test_the_api_changes_saved_with_the_signals_are_the_records_tagged_so(assistant):
    records = assistant.retriever.records
    tagged = [p for p in range(len(records)) if API_CHANGE_TAG in records[p].tags]
    assert assistant.retriever.signals.api_changes.tolist() == tagged
