"""The pattern prefilter: each pattern filed under a word its matches must contain, and never a miss."""

from __future__ import annotations

import json

import pytest
import regex

from assistant import parse_query
from assistant.knowledge.records import load_records
from assistant.retrieval.patterns import PatternIndex, required_words, text_words
from assistant.settings import BUNDLED_KB_DIR

from .conftest import DEV_SET


def _candidates(index: PatternIndex, texts: list[str]):
    """The patterns that may match one of ``texts``, as the Retriever asks for them."""
    return index.filed_under(text_words(texts))


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"^Agent interrupted\.$", {"agent", "interrupted"}),
        (r"(.+?) is not a valid (.+?)", {"is", "not", "a", "valid"}),
        (r"Sprocket size must be positive, got -?\d+", {"size", "must", "be", "positive", "got"}),
        (r"(?i)Error: (?:bad|good) thing\.", {"thing"}),  # "Error" may follow a word character in the text
        (r"\bTimeout\b", {"timeout"}),
        (r"Agent interrupted", set()),  # unanchored at both ends: "xAgent interruptedy" matches too
        (r"(a|b) foo", set()),
        (r"x(?: opt)? y", set()),  # an optional group: what stands beside "x" and "y" is unknown
        (r".*", set()),
        (r"\p{Lu}+ failed", set()),  # the regex module's syntax: not parsed here, so always run
        # The words every alternative holds whole: a raise's wordings joined in one pattern.
        (r"(?:Could not start the app, (.+?) failed|Couldn't start the app: (.+?) failed)", {"start", "the", "app"}),
        (r"(?:x gadget y|z gadget)", set()),  # "gadget" ends the second alternative: not proven whole
    ],
)
def test_required_words(pattern, words):
    assert required_words(pattern) == words


def test_a_pattern_is_a_candidate_only_where_its_word_is():
    index = PatternIndex.build([r"^Agent interrupted\.$", r"Widget .+? has no frobnicator configured", r".*"])
    assert _candidates(index, ["AgentError: Agent interrupted."]).tolist() == [0, 2]
    assert _candidates(index, ["Widget w1 has no Frobnicator configured"]).tolist() == [1, 2]
    assert _candidates(index, ["nothing related"]).tolist() == [2]  # ".*" pins no word: always run


@pytest.mark.slow
def test_no_pattern_that_matches_a_dev_query_is_filtered_out():
    """Exactness on real data: every bundled pattern that matches any dev query's text or message is
    among that query's candidates (the Retriever searches exactly these texts)."""
    records = load_records(BUNDLED_KB_DIR)
    compiled = [regex.compile(r.message_pattern) for r in records]
    index = PatternIndex.build([r.message_pattern for r in records])
    assert len(index.always) < 0.05 * len(records)  # the prefilter leaves out almost every pattern
    queries = [json.loads(line)["query"] for line in DEV_SET.read_text().splitlines() if line.strip()]
    matched = considered = 0
    for text in queries:
        query = parse_query(text)
        texts = [t for t in (query.text[-4000:], query.message, query.error_line, *query.causes) if t]
        candidates = set(_candidates(index, texts).tolist())
        considered += len(candidates)
        for i, pattern in enumerate(compiled):
            if any(pattern.search(t, timeout=0.05) for t in texts):
                matched += 1
                assert i in candidates, (records[i].message_pattern, text[:200])
    assert matched > len(queries) / 2  # the check had real matches to lose
    assert considered < 0.1 * len(records) * len(queries)
