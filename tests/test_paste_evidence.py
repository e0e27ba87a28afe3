"""What a paste says besides ``Class: message``: a Rust panic, a C++ check's own line, a KeyError's repr, a
message copied from a web page, an HTTP status told by number, a class only one library raises, a short
message with a word of its own. Each is evidence the retriever used to miss."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from assistant import Assistant, Settings
from assistant.parse.query import parse_query
from assistant.retrieval.features import FEATURES
from assistant.retrieval.http_status import with_status_phrases
from assistant.retrieval.matching import PatternMatcher
from assistant.retrieval.mentions import ClassOwners
from assistant.retrieval.ownership import distinctive_templates, raising_package
from assistant.retrieval.partial_messages import head_share, matching_alone, pattern_messages
from assistant.settings import BUNDLED_KB_DIR
from assistant.storage.postings import Postings
from tests.conftest import ingested_line, write_lines


def test_a_rust_panic_is_read_as_the_panic_exception_pyo3_raises():
    old = parse_query(
        "thread '<unnamed>' panicked at 'called `Result::unwrap()` on an `Err` value: Internal', "
        "/__w/tokenizers/src/models/unigram/trainer.rs:203:53\nnote: run with `RUST_BACKTRACE=1` environment variable"
    )
    assert (old.exception_qualname, old.message) == (
        "pyo3_runtime.PanicException",
        "called `Result::unwrap()` on an `Err` value: Internal",
    )
    # Rust 1.73 and later: the location first, the message after it, here run onto the same line by the paste.
    new = parse_query(
        "thread '<unnamed>' panicked at /home/runner/src/tokenizer/added_vocabulary.rs:428:22: AddedVocabulary bad"
        " split note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
    )
    assert (new.exception_class, new.message) == ("PanicException", "AddedVocabulary bad split")
    on_next_line = parse_query(
        "thread 'main' panicked at src/lib.rs:5:9:\nindex out of bounds: the len is 3 but the index is 7\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
    )
    assert on_next_line.message == "index out of bounds: the len is 3 but the index is 7"


def test_a_native_checks_line_is_the_error_where_the_python_line_is_missing():
    query = parse_query(
        'Traceback (most recent call last):\n  File "/x/site-packages/faiss/__init__.py", line 144, in search\n'
        "    self.search_c(n, x)\n  ...\nIndexPQ.cpp:226: Error: 'is_trained' failed\n\nWhy is it not trained?"
    )
    assert query.message == "Error: 'is_trained' failed"
    assert query.raised_in == "IndexPQ.cpp"
    # A Python error line keeps its place; nothing is said to be raised in a C file.
    plain = parse_query('Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nValueError: bad')
    assert plain.raised_in is None


def test_pattern_messages_add_the_forms_a_message_was_printed_or_copied_in():
    key = parse_query("KeyError: \"None of [['2013-01-02']] are in the [index]\"")
    assert "None of [['2013-01-02']] are in the [index]" in pattern_messages(key)
    assert parse_query("KeyError: 'amount'").message in pattern_messages(parse_query("KeyError: 'amount'"))
    assert "amount" not in pattern_messages(parse_query("ValueError: 'amount'"))  # only a KeyError prints a repr
    assert "Input y contains NaN." in pattern_messages(parse_query("ValueError: Input y contains NaN"))
    copied = parse_query("RuntimeError: mat1 and mat2 shapes cannot be multiplied (2\u00d71568 and 1050\u00d710)")
    assert "mat1 and mat2 shapes cannot be multiplied (2x1568 and 1050x10)" in pattern_messages(copied)
    assert pattern_messages(parse_query("ValueError: done.")) == ("done.", "ValueError: done.")


def test_an_http_status_told_by_number_is_searched_by_its_phrase_too():
    assert with_status_phrases("fails with a 403 Client Error").endswith("\nForbidden")
    assert with_status_phrases("dies with an HTTP 429 error").endswith("\nToo Many Requests")
    assert with_status_phrases("status_code: 400, model_name: x").endswith("\nBad Request")
    assert with_status_phrases("I loaded 500 rows") == "I loaded 500 rows"
    assert with_status_phrases("HTTP 299 is not a status") == "HTTP 299 is not a status"


def test_a_class_only_one_library_raises_names_that_library():
    classes = Postings.build([["ArrowInvalid"], ["ArrowInvalid"], ["ValidationError"], ["ValidationError"], ["X"]])
    repos = Postings.build(
        [["apache/arrow"], ["apache/arrow"], ["pydantic/pydantic"], ["other/lib"], ["python/cpython"]]
    )
    owners = ClassOwners(classes, repos, "python/cpython")
    assert owners.owner("ArrowInvalid", "ArrowInvalid") == "apache/arrow"
    assert owners.owner("ArrowInvalid", "mymodule.ArrowInvalid") is None  # its module says whose it is
    assert owners.owner("ValidationError", None) is None  # two libraries raise it
    assert owners.owner("X", None) is None  # Python's own names no library
    assert owners.owner("Unknown", None) is None
    assert len(repos.groups_of(np.array([0, 1], dtype=np.int32))) == 1


@pytest.mark.slow
def test_short_messages_and_native_checks_find_their_raise(small_kb, tmp_path, embedder):
    """Two ingested raises a short template or a C++ check made unreachable: pyarrow's three-word ``Could not
    convert`` (a generic template, answered only where pyarrow is in play: its class says so), and FAISS's
    ``'is_trained' failed`` raised in a dozen files, of which the paste's C++ line names one."""
    write_lines(
        small_kb / "apache__arrow.jsonl",
        [
            ingested_line(
                "a0a0a0a0a0a0a0a0",
                "apache/arrow",
                "ArrowInvalid",
                "Could not convert {} with type {}: {}",
                r"Could not convert (.+?) with type (.+?): (.+)",
                "python/pyarrow/src/helpers.cc",
                40,
            )
        ],
    )
    # The words of pyarrow's template are common ones: other libraries' messages have them too.
    write_lines(
        small_kb / "other__lib.jsonl",
        [
            ingested_line(
                f"d{i}d{i}d{i}d{i}d{i}d{i}d{i}d{i}",
                "other/lib",
                "ValueError",
                f"Could not convert {{x}} to type {i}",
                f"Could not convert (.+?) to type {i}",
                "lib/convert.py",
                i,
            )
            for i in range(3)
        ],
    )
    faiss = [
        ingested_line(
            f"c{i}c{i}c{i}c{i}c{i}c{i}c{i}c{i}",
            "facebookresearch/faiss",
            "RuntimeError",
            "Error: 'is_trained' failed",
            "Error: 'is_trained' failed",
            f"faiss/{name}",
            20 + i,
        )
        for i, name in enumerate(("IndexIVF.cpp", "IndexPQ.cpp", "IndexLSH.cpp"))
    ]
    write_lines(small_kb / "facebookresearch__faiss.jsonl", faiss)
    assistant = Assistant(Settings.load(env={}, kb=(small_kb,), index_dir=tmp_path / "index"), embedder=embedder)

    def first(text: str) -> str:
        return assistant.search(text)[0].record.id

    assert first("ArrowInvalid: Could not convert TagMe with type str: converting to null type") == "a0a0a0a0a0a0a0a0"
    traceback = (
        'Traceback (most recent call last):\n  File "/x/site-packages/faiss/__init__.py", line 144, in search\n'
        "    self.search_c(n, x)\n{}:226: Error: 'is_trained' failed"
    )
    assert first(traceback.format("IndexPQ.cpp")) == faiss[1]["record"]["id"]
    assert first(traceback.format("IndexLSH.cpp")) == faiss[2]["record"]["id"]


def test_a_log_line_telling_the_exception_above_it_is_not_the_error():
    query = parse_query(
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for Crew\nparent_flow\n"
        "  Input should be an instance of Flow [type=is_instance_of, input_value=<x>, input_type=Flow]\n"
        "2026-02-05 17:08:00,243 - deep_agent.flow - WARNING - Todo [1c7dcd6b] failed: 1 validation error for Crew"
    )
    assert query.exception_qualname == "pydantic_core._pydantic_core.ValidationError"
    assert query.message.startswith("1 validation error for Crew\nparent_flow")
    # A log line of its own, whatever came before it, stays the error.
    other = parse_query("ValueError: bad input\n2026-02-05 17:08:00,243 - app - ERROR - Database unreachable")
    assert (other.exception_class, other.message, other.level) == (None, "Database unreachable", "ERROR")


def test_a_template_of_a_messages_first_line_pins_a_message_whose_other_lines_list_data():
    """pydantic's ``1 validation error for X`` and its field errors under it: ``validation error for`` pins the
    first line, so an ingested record of it is not held back as a curated record's twin."""
    features = np.zeros((2, len(FEATURES)))
    features[:, FEATURES.index("pattern_message")] = 1.0
    features[:, FEATURES.index("pattern_specificity")] = [0.10, 0.10]
    curated = np.array([False, False])
    generic = np.array([False, True])
    query = parse_query(
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for PersonFilmRoles\nroles\n"
        "  Field required [type=missing, input_value={'id': 'sad', 'name': ['sad']}, input_type=dict]\n"
        "    For further information visit https://errors.pydantic.dev/2.7/v/missing"
    )
    share = head_share(query)
    assert share > 5
    assert matching_alone(features, curated, generic, lambda row: False, share).tolist() == [True, False]
    assert matching_alone(features, curated, generic, lambda row: False).tolist() == [False, False]
    assert head_share(parse_query("ValueError: one line")) == 1.0


@pytest.mark.slow
def test_another_librarys_generic_record_of_another_class_does_not_answer_a_librarys_exception(
    small_kb, tmp_path, embedder
):
    """Jinja's ``UndefinedError: 'list object' has no attribute 'iteritems'`` (Jinja in play: only it raises
    that class) is not pytest's ``AttributeError`` worded ``{target!r} has no attribute {name!r}``."""
    pytests = ingested_line(
        "e5e5e5e5e5e5e5e5",
        "pytest-dev/pytest",
        "AttributeError",
        "{target!r} has no attribute {name!r}",
        r"(.+?) has no attribute (.+?)",
        "src/_pytest/monkeypatch.py",
        90,
    )
    pytests["record"]["tags"] = ["pytest", "monkeypatch"]  # curated: not release-built
    shutil.copy(BUNDLED_KB_DIR / "python__cpython.jsonl", small_kb / "python__cpython.jsonl")
    write_lines(small_kb / "pytest-dev__pytest.jsonl", [pytests])
    write_lines(
        small_kb / "pallets__jinja.jsonl",
        [
            ingested_line(
                "f6f6f6f6f6f6f6f6",
                "pallets/jinja",
                "UndefinedError",
                "{self._undefined_message}",
                r"(.+)",
                "src/jinja2/runtime.py",
                852,
            )
        ],
    )
    assistant = Assistant(Settings.load(env={}, kb=(small_kb,), index_dir=tmp_path / "index"), embedder=embedder)
    hits = assistant.search("UndefinedError: 'list object' has no attribute 'iteritems'")
    assert hits[0].record.id != "e5e5e5e5e5e5e5e5"


class _Words:
    def __init__(self, counts: dict[str, int]):
        self.counts = counts

    def count(self, word: str) -> int:
        return self.counts.get(word, 0)


class _Signals:
    """What distinctive_templates reads of a SignalIndex: its size and how many messages hold each word."""

    def __init__(self, size: int, counts: dict[str, int]):
        self.size = size
        self.message_words = _Words(counts)

    def __len__(self) -> int:
        return self.size


class _Record:
    def __init__(self, message: str):
        self.error_message = message


def test_a_short_template_with_a_word_few_messages_have_is_its_librarys_own():
    """Pillow's ``bad transparency mask`` (``transparency``: 13 of 99,000 messages) is not a generic template;
    pyarrow's ``Could not convert {} with type {}: {}`` is; a knowledge base too small to tell keeps both."""
    records = [_Record("bad transparency mask"), _Record("Could not convert {} with type {}: {}")]
    counts = {"bad": 181, "transparency": 13, "mask": 281, "could": 1422, "convert": 427, "type": 4380}
    positions = np.array([0, 1], dtype=np.int64)
    assert distinctive_templates(records, _Signals(99_000, counts), positions).tolist() == [0]
    assert distinctive_templates(records, _Signals(60, counts), positions).tolist() == []


def test_a_paragraph_a_colon_introduces_is_the_message_quoted():
    question = parse_query(
        "Trying disk_offload(model=model, offload_dir='alpha') on a CPU laptop. I get:\n\n"
        "You are trying to offload the whole model to the disk. Please use the `disk_offload` function instead.\n\n"
        "But I am calling disk_offload already?"
    )
    assert question.kind == "question"
    assert question.message == (
        "You are trying to offload the whole model to the disk. Please use the `disk_offload` function instead."
    )
    # Without the colon the paragraph is the asker's own words, and a question after a colon stays one.
    told = parse_query(
        "I tried disk offload on a laptop.\n\nIt crashed after a while and then nothing happened at all."
    )
    assert told.message is None
    asked = parse_query("My setup:\n\nWhy does disk offload need a folder when the model fits in memory?")
    assert asked.message is None


def test_a_compilers_fatal_error_set_apart_in_a_question_is_its_message():
    query = parse_query(
        "pip install of a package with a C extension inside a slim Docker image stops at\n\n"
        "fatal error: Python.h: No such file or directory\n\nWhat do I need to install?"
    )
    assert query.message == "fatal error: Python.h: No such file or directory"


def test_a_packages_line_raising_nothing_names_where_the_error_came_from():
    """transformers' ``seq_length = input_ids.size(1)`` innermost: torch's C++ raised there, so no other
    package's Python ``raise`` (torch's ``_refs`` reimplementation worded alike) can be the cause."""
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/embed.py", line 3, in <module>\n'
        "    model.encode(sentences)\n"
        '  File "/usr/lib/python3.11/site-packages/transformers/modeling_distilbert.py", line 108, in forward\n'
        "    seq_length = input_ids.size(1)\n"
        "IndexError: Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    )
    assert raising_package(parse_query(paste)) == "transformers"
    raising = paste.replace("    seq_length = input_ids.size(1)\n", "    raise IndexError(msg)\n")
    assert raising_package(parse_query(raising)) is None  # the package raised it itself
    users_line = paste.replace("/usr/lib/python3.11/site-packages/transformers", "/home/me")
    assert raising_package(parse_query(users_line)) is None  # the user's line: raised_on_the_users_line's case
    elided = paste.replace("    seq_length = input_ids.size(1)\n", "    seq_length = input_ids.size(1)\n    ...\n")
    assert raising_package(parse_query(elided)) is None  # frames left out: the innermost shown may not be it


def test_a_celery_log_line_is_read_past_its_process_name():
    query = parse_query(
        "[2024-04-15 10:00:00,123: ERROR/MainProcess] consumer: Cannot connect to redis://localhost:6379/0: "
        "Error while reading from socket: (104, 'Connection reset by peer')."
    )
    assert query.level == "ERROR"
    assert query.message.startswith("Cannot connect to redis://localhost:6379/0: Error while reading")
    worker = parse_query(
        "[2024-04-15 10:00:00,123: ERROR/ForkPoolWorker-1] Task add raised unexpected: ValueError('boom')"
    )
    assert (worker.exception_class, worker.message) == ("ValueError", "boom")


def test_a_messages_first_line_with_a_quoted_value_begins_its_template():
    """Celery's ``Received unregistered task of type 'mytasks.add'``, pasted without the lines after it: the
    quoted task name fills the template's slot, so its words do not count against the template's."""
    matcher = PatternMatcher()
    pattern = r"Received unregistered task of type (.+?)\.\s+The message has been ignored and discarded\."
    assert matcher.begins(pattern, ["Received unregistered task of type 'mytasks.add'"])
    assert not matcher.begins(pattern, ["Received unregistered message of kind 'mytasks.add'"])
    assert "Received unregistered task of type 'x'." in pattern_messages(
        parse_query("ValueError: Received unregistered task of type 'x'")
    )
