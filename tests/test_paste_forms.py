"""Forms of pastes from Q&A pages the parse and ranking used to miss: Django's error pages, a message set apart
under "Why does model.fit say", a warning named again in its source line, a log line going on under its colon,
an address hidden as ``XXX.XXX.XXX.XXX``, a library's generic record beside its own specific raise, and a
library running on another (Keras on TensorFlow)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from assistant import Assistant, Settings
from assistant.parse.query import parse_query
from assistant.retrieval.features import FEATURES
from assistant.retrieval.mentions import LibraryMentions, library_companions
from assistant.retrieval.partial_messages import head_share, outmatch_generic
from assistant.retrieval.query_words import QUERY_WORD_REPEATS, repeats_capped
from assistant.settings import BUNDLED_KB_DIR
from tests.conftest import ingested_line, write_lines

_COPY_AND_PASTE_VIEW = """Environment:

Request Method: GET
Request URL: http://127.0.0.1:8000/

Django Version: 4.2.1
Python Version: 3.11.2

Traceback (most recent call last):
  File "/home/u/venv/lib/python3.11/site-packages/django/core/handlers/exception.py", line 55, in inner
    response = get_response(request)
  File "/home/u/venv/lib/python3.11/site-packages/django/template/loader.py", line 19, in get_template
    raise TemplateDoesNotExist(template_name, chain=chain)

Exception Type: TemplateDoesNotExist at /
Exception Value: home.html
"""

_DEBUG_PAGE = """DisallowedHost at /
Invalid HTTP_HOST header: '1.2.3.4:8000'. You may need to add '1.2.3.4' to ALLOWED_HOSTS.
Request Method:\tGET
Request URL:\thttp://1.2.3.4:8000/
Django Version:\t2.0
Exception Type:\tDisallowedHost
Exception Value:\t
Invalid HTTP_HOST header: '1.2.3.4:8000'. You may need to add '1.2.3.4' to ALLOWED_HOSTS.
Exception Location:\t/usr/lib/python3/dist-packages/django/http/request.py in get_host, line 113
"""


def test_djangos_copy_and_paste_view_names_its_error_in_its_last_rows():
    query = parse_query(_COPY_AND_PASTE_VIEW)
    assert (query.kind, query.exception_class, query.message) == ("traceback", "TemplateDoesNotExist", "home.html")
    assert query.libraries == ("django",)


def test_djangos_debug_page_names_its_error_in_its_heading_and_table():
    query = parse_query(_DEBUG_PAGE)
    assert (query.kind, query.exception_class) == ("message", "DisallowedHost")
    assert query.message == "Invalid HTTP_HOST header: '1.2.3.4:8000'. You may need to add '1.2.3.4' to ALLOWED_HOSTS."
    # The heading alone, as a question quotes the top of the page.
    heading = parse_query(
        "Followed a tutorial and opened the server in a browser:\n\nNoReverseMatch at /accounts/login/\n"
        "Reverse for 'home' not found. 'home' is not a valid view function or pattern name."
    )
    assert (heading.exception_class, heading.message) == (
        "NoReverseMatch",
        "Reverse for 'home' not found. 'home' is not a valid view function or pattern name.",
    )
    # A word and a path are not a page's heading: nothing is read as an error.
    assert parse_query("Python at /usr/bin/python3\nthen it stops").exception_class is None


def test_a_message_set_apart_under_a_verb_of_saying_is_the_message():
    query = parse_query(
        "Keras model ends in Dense(1, activation='sigmoid') with binary_crossentropy, my y has shape (100, 2). "
        "Why does model.fit say\n\nShapes (None, 1) and (None, 2) are incompatible"
    )
    assert query.message == "Shapes (None, 1) and (None, 2) are incompatible"
    # A paragraph after a line that introduces nothing stays the question's.
    other = parse_query("My training loop is slow on a GPU box.\n\nEpochs take ten minutes and the data is small")
    assert other.message is None


def test_a_class_named_again_without_its_message_keeps_the_message_it_was_printed_with():
    query = parse_query(
        "Fitting an exponential through two points:\n\npython-3.4.4\\lib\\site-packages\\scipy\\optimize\\"
        "minpack.py:715:\nOptimizeWarning: Covariance of the parameters could not be estimated\n"
        "  category=OptimizeWarning)\n\nThe parameters come out fine, so why the warning?"
    )
    assert (query.exception_class, query.message) == (
        "OptimizeWarning",
        "Covariance of the parameters could not be estimated",
    )


def test_a_log_line_ending_in_a_colon_goes_on_under_it():
    query = parse_query(
        "uvicorn refuses to start:\n\nERROR:    [Errno 48] error while attempting to bind on address "
        "('0.0.0.0', 8000):\naddress already in use"
    )
    assert query.level == "ERROR"
    assert (
        query.message
        == "[Errno 48] error while attempting to bind on address ('0.0.0.0', 8000):\naddress already in use"
    )
    # A log line that ends otherwise is one line; the next is not its message.
    other = parse_query("ERROR: worker 3 died\nrestarting it")
    assert other.message == "worker 3 died"


def test_a_servers_status_line_in_a_question_is_its_message():
    query = parse_query(
        "My account was granted access, but the CLI still refuses:\n\nhuggingface-cli download org/model config.json\n"
        "403 Forbidden: Please enable access to public gated repositories in your fine-grained token settings."
    )
    assert query.message.startswith("403 Forbidden: Please enable access to public gated repositories")
    # A number and a word in prose are no status line.
    assert parse_query("We have 200 Users: how do I page through them all with the client?").message is None


def test_a_word_repeated_in_a_paste_counts_a_few_times():
    words = ["invalid", "xxx", "xxx", "xxx", "xxx", "header", "xxx"]
    assert repeats_capped(words) == ["invalid", *["xxx"] * QUERY_WORD_REPEATS, "header"]
    assert repeats_capped(["a", "b"]) == ["a", "b"]


def test_values_a_message_quotes_are_what_the_templates_placeholders_hold():
    keys = parse_query("KeyError: \"None of [['20130102', '20130103']] are in the [index]\"")
    assert head_share(keys) > 1.4  # two quoted dates of the fifty-odd characters
    assert head_share(parse_query("ValueError: Input y contains NaN")) == 1.0
    # A message that is a value alone says nothing else: no share is taken from it.
    assert head_share(parse_query("KeyError: 'amount'")) == 1.0


def test_a_librarys_generic_record_stops_matching_beside_its_own_specific_raise():
    features = np.zeros((3, len(FEATURES)))
    features[:, FEATURES.index("pattern_message")] = 1.0
    curated = np.array([True, False, True])
    alone = np.array([False, True, False])
    repos = ["pandas-dev/pandas", "pandas-dev/pandas", "python/cpython"]
    outmatch_generic(features, curated, alone, lambda row: row != 1, repos.__getitem__)
    # pandas' curated ``{key}`` gives way; Python's own ``{key}``, of another repository, keeps its match.
    assert features[:, FEATURES.index("pattern_message")].tolist() == [0.0, 1.0, 1.0]
    unchanged = np.ones((2, len(FEATURES)))
    outmatch_generic(unchanged, np.array([True, True]), np.array([True, False]), lambda row: True, repos.__getitem__)
    assert unchanged.min() == 1.0  # a curated record matching alone is no library's own raise beside it


def test_a_library_named_puts_the_library_it_runs_on_in_play():
    names = {"keras-team/keras": frozenset({"keras"}), "tensorflow/tensorflow": frozenset({"tensorflow"})}
    runs_on = {"keras-team/keras": ("tensorflow/tensorflow", "absent/backend")}
    mentions = LibraryMentions(names, {"tensorflow/tensorflow": ("tf",)}, runs_on)
    assert mentions.named("my Keras model fails") == {"keras-team/keras", "tensorflow/tensorflow"}
    assert mentions.named("tf.function retraces") == {"tensorflow/tensorflow"}  # not the other way round
    assert mentions.named("nothing here") == set()
    assert LibraryMentions(names, {}).named("my Keras model") == {"keras-team/keras"}
    assert library_companions()["keras-team/keras"] == ("tensorflow/tensorflow",)


@pytest.mark.slow
def test_pastes_of_these_forms_find_their_raise(small_kb, tmp_path, embedder):
    """pandas' ``None of [...] are in the [index]`` over its generic ``KeyError: '{key}'``, and Django's
    ``DisallowedHost`` page whose address the user hid as ``XXX`` over records that say ``xxx``."""
    shutil.copy(BUNDLED_KB_DIR / "pandas-dev__pandas.jsonl", small_kb / "pandas-dev__pandas.jsonl")
    write_lines(
        small_kb / "pandas-dev__pandas__built.jsonl",
        [
            ingested_line(
                "a1a1a1a1a1a1a1a1",
                "pandas-dev/pandas",
                "KeyError",
                "None of [{key}] are in the [{axis_name}]",
                r"None of \[(.+?)\] are in the \[(.+?)\]",
                "pandas/core/indexes/base.py",
                6100,
            )
        ],
    )
    write_lines(
        small_kb / "django__django.jsonl",
        [
            ingested_line(
                "b2b2b2b2b2b2b2b2",
                "django/django",
                "DisallowedHost",
                "Invalid HTTP_HOST header: {host!r}.",
                r"Invalid HTTP_HOST header: (.+?)\.",
                "django/http/request.py",
                150,
            )
        ],
    )
    write_lines(
        small_kb / "other__xxx.jsonl",
        [
            ingested_line(
                f"c{i}c{i}c{i}c{i}c{i}c{i}c{i}c{i}",
                "other/xxx",
                "ValueError",
                f"XXX option {i} xxx is not allowed here",
                f"XXX option {i} xxx is not allowed here",
                "xxx/options.py",
                i,
            )
            for i in range(3)
        ],
    )
    assistant = Assistant(Settings.load(env={}, kb=(small_kb,), index_dir=tmp_path / "index"), embedder=embedder)
    keys = assistant.search(
        "df = pd.DataFrame(np.identity(4), index=pd.date_range('20130101', periods=4))\n"
        "df.loc[['20130102', '20130103'],:]\n\nKeyError: \"None of [['20130102', '20130103']] are in the [index]\""
    )
    assert keys[0].record.id == "a1a1a1a1a1a1a1a1"
    page = assistant.search(
        "Opened the server in a browser:\n\nDisallowedHost at /\nInvalid HTTP_HOST header: 'XXX.XXX.XXX.XXX:8000'. "
        "You may need to add u'XXX.XXX.XXX.XXX' to ALLOWED_HOSTS."
    )
    assert page[0].record.id == "b2b2b2b2b2b2b2b2"
