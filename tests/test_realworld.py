"""Real-world pastes: Python's own errors in the user's code, whose error it is, and too-short queries."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assistant import parse_query
from assistant.knowledge.records import load_records
from assistant.settings import BUNDLED_KB_DIR

REALWORLD = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "realworld.jsonl"
PYTHON = "python/cpython"

KEYERROR_IN_MY_CODE = """Traceback (most recent call last):
  File "/home/me/proj/report.py", line 12, in total
    total += row["amount"]
KeyError: 'amount'
"""

NONE_IN_A_NOTEBOOK = """---------------------------------------------------------------------------
AttributeError                            Traceback (most recent call last)
Cell In[4], line 3
      1 user = find_user(42)
----> 3 print(user.name)

AttributeError: 'NoneType' object has no attribute 'name'
"""


def test_a_keyerror_in_ones_own_code_is_answered_from_pythons_record_at_the_users_line(assistant):
    answer = assistant.ask(KEYERROR_IN_MY_CODE)
    assert answer.hits[0].record.repo == PYTHON and answer.confidence >= assistant.settings.confidence_threshold
    assert "`row` has no key 'amount'" in answer.text
    assert "`proj/report.py`, line 12, in `total`" in answer.text
    assert {c.repo for c in answer.citations} == {PYTHON}


def test_a_jupyter_traceback_points_at_the_cell_line(assistant):
    query = parse_query(NONE_IN_A_NOTEBOOK)
    assert query.frames[-1].file == "Cell In[4]" and query.frames[-1].code == "print(user.name)"
    answer = assistant.ask(NONE_IN_A_NOTEBOOK)
    assert answer.hits[0].record.repo == PYTHON
    assert "`user` is `None` here, so it has no attribute `name`." in answer.text


@pytest.mark.parametrize(
    "paste",
    [
        "KeyError: 'amount'",
        "AttributeError: 'NoneType' object has no attribute 'name'",
        "NameError: name 'pd' is not defined",
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
    ],
)
def test_a_bare_python_error_line_is_not_answered_by_a_library_record_worded_like_it(assistant, paste):
    retrieval = assistant.retrieve(paste)[1]
    assert retrieval.hits[0].record.repo == PYTHON


def test_a_library_record_still_answers_where_its_library_is_in_the_frames(assistant):
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/app.py", line 3, in <module>\n'
        '    httpx.get("http://127.0.0.1:9")\n'
        '  File "/venv/lib/python3.11/site-packages/httpx/_transports/default.py", line 118, in map_exc\n'
        "    raise mapped_exc(message) from exc\n"
        "httpx.ConnectError: [Errno 111] Connection refused\n"
    )
    assert assistant.retrieve(paste)[1].hits[0].record.repo == "encode/httpx"


def test_a_compiled_extensions_own_message_raised_in_the_users_frame_keeps_its_record(assistant):
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/dev/nlp/count_tokens.py", line 15, in <module>\n'
        "    n = len(tok.encode(raw).ids)\n"
        "TypeError: TextInputSequence must be str\n"
    )
    assert assistant.retrieve(paste)[1].hits[0].record.repo == "huggingface/tokenizers"


@pytest.mark.parametrize("word", ["error", "Exception", "None", "KeyError", "  traceback  "])
def test_a_single_word_abstains(assistant, word):
    answer = assistant.ask(word)
    assert answer.confidence < assistant.settings.confidence_threshold
    assert "No record in the knowledge base matches" in answer.text


@pytest.mark.slow
@pytest.mark.parametrize("key", ["model", "content", "message"])
def test_a_python_error_inside_one_librarys_frames_never_cites_another_librarys_record(assistant, key):
    """``KeyError: 'model'`` raised by Python in langgraph's code: ollama-python's KeyError record (a
    ``raise KeyError(...)`` of its own) is not what happened, however its ``{key}`` template reads."""
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/app/run.py", line 12, in <module>\n'
        "    graph.invoke(inputs, config)\n"
        '  File "/usr/local/lib/python3.11/site-packages/langgraph/pregel/loop.py", line 377, in _put\n'
        f'    id=self.config["configurable"]["{key}"]\n'
        f"KeyError: '{key}'\n"
    )
    hits = assistant.retrieve(paste)[1].hits
    assert hits[0].record.repo == PYTHON
    assert {h.record.repo for h in hits} <= {PYTHON, "langchain-ai/langgraph"}


@pytest.mark.parametrize("key", ["__start__", "amount"])
def test_a_python_error_beside_a_named_library_never_cites_another_librarys_record(assistant, key):
    """No traceback, langgraph named: langgraph's records may answer, and Python's, but not ollama-python's
    KeyError, whose ``{key}`` template reads like Python's own message."""
    paste = f"My LangGraph agent stops and the app only shows\n\nKeyError: '{key}'\n"
    hits = assistant.retrieve(paste)[1].hits
    assert hits[0].record.repo == PYTHON
    assert "ollama/ollama-python" not in {h.record.repo for h in hits}


def test_a_python_message_retyped_without_its_quotes_is_answered_from_pythons_record(assistant):
    question = (
        'After upgrading, importing the app dies with "ImportError: cannot import name model_fields_schema from'
        ' pydantic_core". Which pydantic-core do I need?'
    )
    retrieval = assistant.retrieve(question)[1]
    top = retrieval.hits[0].record
    assert (top.repo, top.error_class) == (PYTHON, "ImportError") and top.error_message.startswith("cannot import")
    assert retrieval.confident


def test_a_bare_class_no_record_has_abstains_however_long_the_traceback(assistant):
    """``PanicException`` closing a Jupyter traceback: no message, a class no record knows, nothing to match."""
    paste = """---------------------------------------------------------------------------
PanicException                            Traceback (most recent call last)
<ipython-input-17-672efbeb11a2> in <module>
----> 4 tokenizer(s, max_length=1024, truncation=True)

c:\\env\\lib\\site-packages\\transformers\\tokenization_utils_base.py in __call__(self, text, text_pair)
-> 2368                 **kwargs,

PanicException"""
    retrieval = assistant.retrieve(paste)[1]
    assert not retrieval.confident and retrieval.confidence <= 0.05
    # A class the knowledge base knows, or the same class with its message, is still searched as usual.
    with_message = paste + ": called `Result::unwrap()` on an `Err` value: Internal"
    assert not assistant.retriever._bare_unknown_class(assistant.parse(with_message))
    assert not assistant.retriever._bare_unknown_class(assistant.parse(paste.replace("PanicException", "KeyError")))


def test_user_code_errors_never_cite_a_library_not_in_play(assistant):
    """On the real-world set's pastes of errors from one's own code (no library frame, no library named),
    a confident answer is always one of Python's own records."""
    rows = [json.loads(line) for line in REALWORLD.read_text().splitlines() if line.strip()]
    user_code = [r for r in rows if r["kind"] == "user-code"]
    assert len(user_code) >= 60
    cited = []
    for row in user_code:
        retrieval = assistant.retrieve(row["query"])[1]
        if retrieval.confident and retrieval.hits[0].record.repo != PYTHON:
            cited.append((row["id"], retrieval.hits[0].record.repo))
    assert not cited


def test_a_refused_user_sees_what_was_looked_for_and_folded_related_records(assistant):
    from assistant.frontends.web_render import answer_markdown, sources_html

    paste = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app.py", line 3, in <module>\n'
        "    go()\n"
        "FrobnicateError: the flux capacitor is unaligned"
    )
    answer = assistant.ask(paste)
    assert not answer.grounded
    assert "errata looked for the error `FrobnicateError: the flux capacitor is unaligned`" in answer.text
    assert "1 traceback frame(s)" in answer.text
    panel = sources_html(answer)
    assert "No confident match" in panel and 'class="errata-related"' in panel
    assert "<ol>" not in panel  # no fix steps of unrelated records to follow
    assert "beside the chat" not in answer_markdown(answer)  # on a phone the panel sits below


def test_source_cards_show_inline_code_as_code(assistant):
    from assistant.frontends.web_render import sources_html

    answer = assistant.ask("smolagents.utils.AgentError: Agent interrupted.")
    panel = sources_html(answer)
    steps = panel[panel.index("<ol>") : panel.index("</ol>")]
    assert "`" not in steps


def _ingested_generic_record(template: dict) -> dict:
    """An ``errata ingest`` record of a generic template (three literal words), raised in ollama."""
    record = dict(template)
    record.update(
        id="0123456789abcdef",
        slug="ingested-generic-attribute",
        errorClass="AttributeError",
        errorMessage="'{type}' object has no attribute '{name}'",
        messagePattern="'.+?' object has no attribute '.+?'",
        filePath="ollama/_types.py",
        lineNumber=40,
        documentation="Raised by __getattr__ of SubscriptableBaseModel.",
        tags=["ollama", "ingested"],
    )
    return record


def test_an_ingested_generic_template_answers_only_where_its_library_is_in_play(small_kb, tmp_path, embedder):
    from assistant import Assistant, Settings

    path = small_kb / "ollama__ollama-python.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    generic = _ingested_generic_record(lines[0]["record"])
    lines.append({"record": generic, "datasetVersion": lines[0].get("datasetVersion")})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    settings = Settings.load(env={}, kb=[small_kb], index_dir=tmp_path / "index")
    assistant = Assistant(settings, embedder=embedder)
    assert generic["id"] in {r.id for r in assistant.records}

    bare = assistant.search("AttributeError: 'Config' object has no attribute 'tokenizer'", k=3)
    assert generic["id"] not in [hit.record.id for hit in bare]  # no library in play: not an answer
    in_ollama = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/chat.py", line 4, in <module>\n'
        "    print(reply.messages)\n"
        '  File "/usr/lib/python3.12/site-packages/ollama/_types.py", line 40, in __getattr__\n'
        "    raise AttributeError(...)\n"
        "AttributeError: 'ChatResponse' object has no attribute 'messages'\n"
    )
    assert assistant.search(in_ollama, k=1)[0].record.id == generic["id"]


def test_a_builtin_class_a_package_raises_itself_is_not_answered_by_pythons_record(assistant):
    """``raise KeyError("...")`` on the innermost line, in site-packages: the package's error, not Python's."""
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/app.py", line 9, in <module>\n'
        '    result = client.predict("hi", api_name="/chat")\n'
        '  File "/usr/lib/python3.11/site-packages/gradio_client/compatibility.py", line 122, in _predict\n'
        "    raise KeyError(\n"
        "KeyError: \"Could not find 'data' key in response. Response received: {'detail': 'Not Found'}\"\n"
    )
    hits = assistant.search(paste, k=5)
    assert all(hit.record.repo != PYTHON for hit in hits)
    # The same class from a lookup inside the package (no constructed raise) may still be Python's.
    lookup = paste.replace("    raise KeyError(\n", "    return payload['data']\n")
    assert any(hit.record.repo == PYTHON for hit in assistant.search(lookup, k=5))


@pytest.mark.parametrize(
    "os_frame",
    [
        '  File "/usr/lib/python3.12/os.py", line 714, in __getitem__\n',
        '  File "C:\\\\Python311\\\\Lib\\\\os.py", line 679, in __getitem__\n',
        '  File "/home/me/.venv/lib/python3.11/os.py", line 679, in __getitem__\n',
    ],
)
def test_a_frame_in_pythons_own_module_finds_the_record_of_that_module(assistant, os_frame):
    """Installed, ``.../python3.12/os.py``; in CPython's repository, ``Lib/os.py``: the same file."""
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/settings.py", line 3, in <module>\n'
        '    API_KEY = os.environ["PAYMENTS_API_KEY"]\n'
        f"{os_frame}"
        "    raise KeyError(key) from None\n"
        "KeyError: 'PAYMENTS_API_KEY'\n"
    )
    top = assistant.search(paste, k=1)[0].record
    assert top.repo == PYTHON and top.file_path == "Lib/os.py"


def test_ingested_records_rank_by_the_offset_and_are_judged_on_their_own_evidence(small_kb, tmp_path, embedder):
    """weights.ingested_offset lowers every ingested record's score for ranking; the first record's
    confidence reads its score without it. (Python's curated record matches the message too, so the offset
    holds: see partial_messages.matching_alone.)"""
    import shutil

    import numpy as np

    from assistant import Assistant, Settings
    from assistant.retrieval.candidates import among
    from assistant.retrieval.confidence import confidence_features

    path = small_kb / "ollama__ollama-python.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    generic = _ingested_generic_record(lines[0]["record"])
    lines.append({"record": generic, "datasetVersion": lines[0].get("datasetVersion")})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    shutil.copy(BUNDLED_KB_DIR / "python__cpython.jsonl", small_kb / "python__cpython.jsonl")
    assistant = Assistant(Settings.load(env={}, kb=[small_kb], index_dir=tmp_path / "index"), embedder=embedder)
    retriever = assistant.retriever
    query = assistant.parse(
        'File "/usr/lib/python3.12/site-packages/ollama/_types.py", line 40, in __getattr__\n'
        "AttributeError: 'ChatResponse' object has no attribute 'messages'"
    )
    retriever.ingested_offset = 0.0
    plain = retriever.score(query)
    retriever.ingested_offset = 3.0
    offset = retriever.score(query)
    mask = np.zeros(len(plain.scores))
    mask[among(retriever.signals.ingested, plain.positions)[0]] = 1.0
    assert mask.sum() == 1 and np.allclose(offset.scores, plain.scores - 3.0 * mask)
    top = int(np.argmax(plain.scores))
    assert mask[top] == 1  # the ingested record: its library is in the frames
    assert int(np.argmax(offset.scores)) == top  # still first (its evidence is strong): judged without the offset
    order = np.argsort(-offset.scores, kind="stable")
    assert np.allclose(confidence_features(offset, order), confidence_features(plain, np.argsort(-plain.scores)))


def test_words_only_ingested_records_hold_stay_unknown_to_the_confidence(small_kb, tmp_path, embedder):
    """The confidence was fitted with the curated records' vocabulary: thousands of ingested records that
    know every word of a question about something undocumented must not make it look familiar."""
    from assistant import Assistant, Settings
    from assistant.retrieval.features import FEATURES

    question = "why does my zyxwvut frobulator quaggle the snorkblat when I call ollama.chat?"
    column = FEATURES.index("unknown_words")
    index_dir = tmp_path / "index"

    def unknown_share() -> float:
        assistant = Assistant(Settings.load(env={}, kb=[small_kb], index_dir=index_dir), embedder=embedder)
        return float(assistant.retriever.score(assistant.parse(question)).features[0, column])

    before = unknown_share()
    path = small_kb / "ollama__ollama-python.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ingested = dict(_ingested_generic_record(lines[0]["record"]), documentation="zyxwvut frobulator quaggle snorkblat")
    lines.append({"record": ingested, "datasetVersion": lines[0].get("datasetVersion")})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    after = unknown_share()
    assert before > 0.3 and after == pytest.approx(before)
    # A curated record holding the words makes them known.
    curated = dict(lines[0]["record"], id="fedcba9876543210", documentation="zyxwvut frobulator quaggle snorkblat")
    lines.append({"record": curated, "datasetVersion": lines[0].get("datasetVersion")})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert unknown_share() < before - 0.3


@pytest.mark.slow
def test_ingested_records_leave_curated_records_ranks_as_they_were(small_kb, tmp_path, float_embedder):
    """The rank and gap features the weights were fitted on are read among curated records: an ingested
    record nearer the query does not push the curated ones down. (The float embedder: int8 vectors depend
    on the batch they were embedded in, and the two builds batch differently.)"""
    embedder = float_embedder
    import numpy as np

    from assistant import Assistant, Settings
    from assistant.retrieval.features import FEATURES

    question = "my gadget agent keeps failing with a GadgetOverheated error when the reactor runs hot, why?"
    curated = Assistant(Settings.load(env={}, kb=[small_kb], index_dir=tmp_path / "curated"), embedder=embedder)
    before = curated.retriever.score(curated.parse(question))
    path = small_kb / "ollama__ollama-python.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    near = {
        **lines[0]["record"],
        "id": "00000000feedbeef",
        "slug": "gadget-overheated",
        "errorClass": "GadgetOverheated",
        "errorMessage": "The gadget agent overheated: the reactor runs hot",
        "messagePattern": "The gadget agent overheated",
        "filePath": "ollama/_gadget.py",
        "documentation": "Raised when the gadget agent's reactor runs hot.",
        "tags": ["ollama", "ingested"],
    }
    lines.append({"record": near, "datasetVersion": lines[0].get("datasetVersion")})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    mixed = Assistant(Settings.load(env={}, kb=[small_kb], index_dir=tmp_path / "mixed"), embedder=embedder)
    after = mixed.retriever.score(mixed.parse(question))
    dense = FEATURES.index("dense")
    new = next(j for j in range(len(after.scores)) if mixed.records[after.position(j)].id == near["id"])
    assert after.features[new, dense] == after.features[:, dense].max()  # the ingested record is nearest
    row_of = {mixed.records[after.position(j)].id: j for j in range(len(after.scores))}
    for name in ("dense_rank", "dense_gap"):
        column = FEATURES.index(name)
        was = {curated.records[before.position(j)].id: before.features[j, column] for j in range(len(before.scores))}
        assert np.allclose([after.features[row_of[i], column] for i in was], list(was.values()), atol=1e-6), name


def test_a_message_worded_as_an_older_release_worded_it_is_answered_from_the_curated_record(assistant):
    """pydantic-ai said ``Exceeded maximum retries (1) for result validation`` before its curated record's
    ``Exceeded maximum output retries (1)``; the bundled wordings (assistant/data/kb/wordings/) carry the
    older wording into the curated record's pattern."""
    curated = next(r for r in assistant.records if r.id == "884ca992d333e8ca")
    old = "pydantic_ai.exceptions.UnexpectedModelBehavior: Exceeded maximum retries (1) for result validation"
    as_written = next(r for r in load_records(BUNDLED_KB_DIR / "pydantic__pydantic-ai.jsonl") if r.id == curated.id)
    assert not re.search(as_written.message_pattern, old) and re.search(curated.message_pattern, old)
    _query, retrieval = assistant.retrieve(old + "\n\nMy agent runs against a local model. Why does it stop?")
    assert retrieval.hits[0].record.id == curated.id and retrieval.confident


def test_a_message_reworded_from_an_ingested_records_is_a_near_miss_not_another_release(small_kb, tmp_path, embedder):
    """A curated record is written from one release: a quoted message sharing most of its words is likely
    another release's wording. An ingested record merged across releases matches every wording it had in
    them, so the same message is a near miss, and the confidence reads it as one."""
    import numpy as np

    from assistant import Assistant, Settings
    from assistant.retrieval.confidence import CONFIDENCE_FEATURES, confidence_features

    path = small_kb / "ollama__ollama-python.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    record = dict(
        lines[0]["record"],
        id="0123456789abcdef",
        errorClass="FrobnicatorError",
        filePath="ollama/_frobnicator.py",  # not the curated record's file and line: it would give way to it
        lineNumber=7,
        errorMessage="The gadget frobnicator failed to start on port {port} after warming up",
        messagePattern="The gadget frobnicator failed to start on port (.+?) after warming up",
        tags=["ollama", "ingested", "release-first:0.1.0", "release-last:0.4.0"],
    )
    paste = "FrobnicatorError: The gadget frobnicator failed to boot on port 8000 after warming up"
    unmatched = CONFIDENCE_FEATURES.index("message_unmatched")

    def unmatched_share(tags: list[str], index: str) -> float:
        rows = [*lines, {"record": dict(record, tags=tags), "datasetVersion": None}]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        assistant = Assistant(Settings.load(env={}, kb=[small_kb], index_dir=tmp_path / index), embedder=embedder)
        scored = assistant.retriever.score(assistant.parse(paste))
        order = np.argsort(-scored.scores, kind="stable")
        ours = next(j for j in order if assistant.records[scored.position(int(j))].id == record["id"])
        order = np.array([ours, *(j for j in order if j != ours)])  # read as if it ranked first
        return float(confidence_features(scored, order)[unmatched])

    assert unmatched_share(record["tags"], "ingested") > 0.5
    assert unmatched_share(["ollama"], "curated") < 0.2  # the unshared words only


def _with_ingested(small_kb: Path, message: str, pattern: str, tags: tuple[str, ...] = ()) -> None:
    """Adds an ingested ollama record ``0123456789abcdef`` of ``FrobnicatorError`` to ``small_kb``."""
    path = small_kb / "ollama__ollama-python.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    record = dict(
        lines[0]["record"],
        id="0123456789abcdef",
        errorClass="FrobnicatorError",
        filePath="ollama/_frobnicator.py",
        lineNumber=7,
        errorMessage=message,
        messagePattern=pattern,
        tags=["ollama", "ingested", *tags],
    )
    row = {"record": record, "datasetVersion": lines[0].get("datasetVersion")}
    path.write_text("".join(json.dumps(line) + "\n" for line in [*lines, row]))


def test_the_first_line_of_a_message_told_over_several_finds_the_one_ingested_record_it_begins(
    small_kb, tmp_path, embedder
):
    """A paste often shows only the first line of a message that goes on; where no pattern matches it whole,
    the ingested record whose pattern it begins answers it, its offset waived (no curated record matches)."""
    from assistant import Assistant, Settings

    _with_ingested(
        small_kb,
        "Gadget {name} failed to frobnicate the heater coil.\n\nCoil state: {state}\n\nWanted: {w}",
        r"Gadget (.+?) failed to frobnicate the heater coil\.\s+Coil state: (.+?)\s+Wanted: (.+?)",
    )
    assistant = Assistant(Settings.load(env={}, kb=[small_kb], index_dir=tmp_path / "index"), embedder=embedder)
    paste = "ollama.FrobnicatorError: Gadget g7 failed to frobnicate the heater coil.\n\nWhat does the coil state mean?"
    _query, retrieval = assistant.retrieve(paste, 3)
    assert retrieval.hits[0].record.id == "0123456789abcdef" and "pattern" in retrieval.hits[0].why
    # "..." marks a cut, not text a placeholder takes in: the dots leave a message the pattern only begins.
    cut_off = "ollama.FrobnicatorError: Gadget g7 failed to frobnicate the heater coil. Coil state: ..."
    _query, cut = assistant.retrieve(cut_off, 3)
    assert cut.hits[0].record.id == "0123456789abcdef" and "pattern" in cut.hits[0].why


def test_an_error_told_inside_a_message_does_not_make_its_template_look_unspecific(small_kb, tmp_path, embedder):
    """A message that ends with another error's text (datasets' ``... on the Hugging Face Hub either:
    FileNotFoundError: ...``): the template pins every word of its own, so the one ingested record whose
    pattern matches it ranks without the offset, however long the inner error is."""
    from assistant import Assistant, Settings
    from assistant.retrieval.partial_messages import own_length

    _with_ingested(
        small_kb,
        "Couldn't reach the gadget frobnicator at {url} or at its mirror either: {type(e).__name__}: {e}",
        r"Couldn't reach the gadget frobnicator at (.+?) or at its mirror either: (.+?):",
    )
    assistant = Assistant(Settings.load(env={}, kb=[small_kb], index_dir=tmp_path / "index"), embedder=embedder)
    inner = (
        "ConnectionError: HTTPConnectionPool(host='mirror.local', port=80): Max retries exceeded with url: /frob "
        "(Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3>: Failed to establish "
        "a new connection: [Errno 111] Connection refused'))"
    )
    message = f"Couldn't reach the gadget frobnicator at http://frob.local or at its mirror either: {inner}"
    assert own_length(message) == len(message) - len(inner)
    assert own_length("Invalid value: expected a number") == len("Invalid value: expected a number")
    scored = assistant.retriever.score(assistant.parse(f"ollama.FrobnicatorError: {message}"))
    (row,) = [j for j in range(len(scored.scores)) if assistant.records[scored.position(j)].id == "0123456789abcdef"]
    assert not scored.is_offset(row)
    _query, retrieval = assistant.retrieve(f"ollama.FrobnicatorError: {message}", 3)
    assert retrieval.hits[0].record.id == "0123456789abcdef"


def test_a_message_whose_last_words_an_older_release_worded_otherwise_keeps_the_rewording_allowance(
    small_kb, tmp_path, embedder
):
    """The near-miss rule reads a message an ingested record's pattern misses as another error; one that
    parts from the pattern only in its last words is the same error from a release older than those read."""
    import numpy as np

    from assistant import Assistant, Settings
    from assistant.retrieval.confidence import CONFIDENCE_FEATURES, confidence_features

    _with_ingested(
        small_kb,
        "The gadget frobnicator failed to start on port {port} after warming up. See the journal",
        r"The gadget frobnicator failed to start on port (.+?) after warming up\. See the journal",
        ("release-first:0.1.0", "release-last:0.4.0"),
    )
    assistant = Assistant(Settings.load(env={}, kb=[small_kb], index_dir=tmp_path / "index"), embedder=embedder)
    unmatched = CONFIDENCE_FEATURES.index("message_unmatched")

    def unmatched_share(paste: str) -> float:
        scored = assistant.retriever.score(assistant.parse(paste))
        order = np.argsort(-scored.scores, kind="stable")
        assert assistant.records[scored.position(int(order[0]))].id == "0123456789abcdef"
        return float(confidence_features(scored, order)[unmatched])

    start = "FrobnicatorError: The gadget frobnicator failed to start on port 8000"
    assert unmatched_share(f"{start} after warming up, check syslog") < 0.2  # its end worded otherwise
    middle = "FrobnicatorError: The gadget frobnicator failed to boot on port 8000 after warming up. See the journal"
    assert unmatched_share(middle) > 0.5  # a word in its middle: another error
