"""An answer that is only Python's general explanation of an error a library raised says so first."""

from __future__ import annotations

import shutil

import pytest

from assistant import Assistant, Settings
from assistant.answering.draft import build_messages
from assistant.parse.query import parse_query
from assistant.retrieval.ownership import PYTHON_REPO, unrecorded_owner
from assistant.retrieval.weights import load_weights
from assistant.settings import BUNDLED_KB_DIR
from tests.conftest import write_lines

INSIDE_A_LIBRARY = """Traceback (most recent call last):
  File "/home/me/agent/run.py", line 12, in <module>
    row = table.get(doc_id=3)
  File "/usr/lib/python3.11/site-packages/tinydb/table.py", line 400, in get
    checkpoint_id = config["configurable"]["checkpoint_id"]
KeyError: 'checkpoint_id'"""

IN_MY_CODE = """Traceback (most recent call last):
  File "/home/me/agent/run.py", line 12, in <module>
    checkpoint_id = config["configurable"]["checkpoint_id"]
KeyError: 'checkpoint_id'"""


def test_pythons_record_of_an_error_raised_in_a_library_is_a_general_answer(assistant):
    answer = assistant.ask(INSIDE_A_LIBRARY)
    assert answer.hits[0].record.repo == PYTHON_REPO and answer.confidence >= assistant.settings.confidence_threshold
    assert answer.general_for == "tinydb" and answer.to_dict()["generalFor"] == "tinydb"
    # Its confidence is that of a general answer (the fitted share of such answers found right), never the
    # near-certainty of the cause's own record: the same record answering the user's own code is surer.
    general = load_weights().general_confidence
    assert answer.confidence <= general < 0.95
    assert assistant.ask(IN_MY_CODE).confidence > general
    first_line = answer.text.split("\n\n")[0]
    assert first_line.startswith("_Python's general explanation of this KeyError")
    assert "no record of tinydb's own cause" in first_line
    query, retrieval = assistant.retrieve(INSIDE_A_LIBRARY)
    prompt = build_messages(query, retrieval)[1]["content"]
    assert "errata has no record of tinydb's own cause. Say so in your first sentence" in prompt


def test_the_same_error_in_the_users_own_code_is_answered_by_pythons_record_plainly(assistant):
    answer = assistant.ask(IN_MY_CODE)
    assert answer.hits[0].record.repo == PYTHON_REPO and answer.general_for is None
    assert "general explanation" not in answer.text and answer.to_dict()["generalFor"] is None
    query, retrieval = assistant.retrieve(IN_MY_CODE)
    assert "Say so in your first sentence" not in build_messages(query, retrieval)[1]["content"]


def test_a_librarys_exception_class_names_the_library(assistant):
    python_record = next(r for r in assistant.records if r.repo == PYTHON_REPO and r.error_class == "ImportError")
    library_record = next(r for r in assistant.records if r.repo != PYTHON_REPO)
    query = parse_query("jinja2.exceptions.TemplateNotFound: home.html")
    assert unrecorded_owner(query, python_record) == "jinja2"
    assert unrecorded_owner(query, library_record) is None  # a library's own record is no general answer
    assert unrecorded_owner(parse_query("json.decoder.JSONDecodeError: Expecting value"), python_record) is None


RAISED_IN_A_PACKAGE = """Traceback (most recent call last):
  File "/home/me/app.py", line 5, in <module>
    result = client.predict("hi", api_name="/chat")
  File "/usr/lib/python3.11/site-packages/gradio_client/compatibility.py", line 120, in _predict
    raise KeyError(f"Could not find 'data' key in response. Response received: {result}")
KeyError: "Could not find 'data' key in response. Response received: {'detail': 'Not Found'}\""""


def test_a_package_raising_a_builtin_class_is_not_answered_by_another_librarys_record_worded_as_pythons(assistant):
    """pandas' ``KeyError: '{key}'`` reads like Python's own KeyError; gradio_client's raise is not pandas'."""
    (twin,) = [r for r in assistant.records if r.repo == "pandas-dev/pandas" and r.error_message == "{key}"]
    ids = [h.record.id for h in assistant.search(RAISED_IN_A_PACKAGE)]
    assert twin.id not in ids
    # Where pandas is in play, its record still answers a bare KeyError.
    in_pandas = RAISED_IN_A_PACKAGE.replace("gradio_client/compatibility.py", "pandas/core/indexes/base.py")
    assert twin.id in [h.record.id for h in assistant.search(in_pandas)]


QUESTION_ABOUT_GRADIO = (
    "After upgrading gradio my Blocks app fails with KeyError: 'data' when the page loads. "
    "Which component argument was renamed?"
)


def test_a_question_naming_one_library_is_not_answered_by_another_librarys_record_worded_as_pythons(assistant):
    """A question quoting Python's wording of a built-in class: pandas' ``KeyError: '{key}'`` record answers
    only where the question names pandas."""
    (twin,) = [r for r in assistant.records if r.repo == "pandas-dev/pandas" and r.error_message == "{key}"]
    assert twin.id not in [h.record.id for h in assistant.search(QUESTION_ABOUT_GRADIO)]
    about_pandas = QUESTION_ABOUT_GRADIO.replace("gradio my Blocks app", "pandas my DataFrame code")
    assert twin.id in [h.record.id for h in assistant.search(about_pandas)]


def test_saying_python_names_no_library(assistant):
    """"python manage.py" or "Python 3.12" is in nearly every paste: it does not put Python's records in play
    as a named library would (it made Python's circular-import record outrank Django's AppRegistryNotReady)."""
    mentions = assistant.retriever.mentions
    assert PYTHON_REPO not in mentions.named("python manage.py runserver stops on Python 3.12")
    assert "pandas-dev/pandas" in mentions.named("pandas read_csv on Python 3.12")


IN_MY_LOOP = """Traceback (most recent call last):
  File "/home/me/proj/grid.py", line 5, in <module>
    for i in range(n / 2):
TypeError: 'float' object cannot be interpreted as an integer"""

POLYFILL = {
    "id": "7b2dfef13bcf6f51",
    "repo": "pytorch/pytorch",
    "slug": "object-cannot-be-interpreted-as-an-integer",
    "errorMessage": "{type(start).__name__!r} object cannot be interpreted as an integer",
    "messagePattern": "(.+?) object cannot be interpreted as an integer",
    "errorClass": "TypeError",
    "errorType": "exception",
    "filePath": "torch/_dynamo/polyfills/builtins.py",
    "lineNumber": 120,
    "documentation": "torch.compile's polyfill of range() raises Python's own message for a non-integer start.",
    "solutions": ["Pass integers to range()."],
    "tags": ["ingested", "extracted"],
}


@pytest.mark.slow
def test_a_packages_python_raise_does_not_answer_an_error_raised_on_the_users_own_line(small_kb, tmp_path, embedder):
    """A release-built record of a ``raise`` in a package's Python code (torch's polyfill of ``range``) cannot be
    what raised an error whose innermost frame is the user's own line, which raises nothing itself: that
    package's frame would be innermost. With torch's frame innermost, the record answers."""
    shutil.copy(BUNDLED_KB_DIR / "python__cpython.jsonl", small_kb / "python__cpython.jsonl")
    write_lines(small_kb / "pytorch__pytorch.jsonl", [{"record": POLYFILL}])
    assistant = Assistant(Settings.load(env={}, kb=(small_kb,), index_dir=tmp_path / "index"), embedder=embedder)
    assert POLYFILL["id"] not in [h.record.id for h in assistant.search(IN_MY_LOOP)]
    in_torch = IN_MY_LOOP.replace(
        "    for i in range(n / 2):\n",
        '    for i in range(n / 2):\n  File "/usr/lib/python3.11/site-packages/torch/_dynamo/polyfills/builtins.py",'
        ' line 120, in range\n    raise TypeError(msg)\n',
    )
    assert assistant.search(in_torch)[0].record.id == POLYFILL["id"]
    # Another package's line innermost, raising nothing itself (a compiled call raised there): not torch's raise.
    in_other = IN_MY_LOOP.replace(
        "    for i in range(n / 2):\n",
        '    for i in range(n / 2):\n  File "/usr/lib/python3.11/site-packages/gridlib/cells.py", line 8, in cells\n'
        "    return list(range(count))\n",
    )
    assert POLYFILL["id"] not in [h.record.id for h in assistant.search(in_other)]
