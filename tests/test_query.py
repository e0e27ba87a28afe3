"""The parser on every shape people paste: tracebacks (chained, multi-line), log lines, fences, prose."""

import json

from assistant import parse_query

CHAINED = """Traceback (most recent call last):
  File "/srv/app/.venv/lib/python3.12/site-packages/widgetlib/io.py", line 40, in read_config
    return json.loads(raw)
  File "/usr/lib/python3.12/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/srv/app/main.py", line 12, in <module>
    cfg = widgetlib.load("settings.json")
  File "/srv/app/.venv/lib/python3.12/site-packages/widgetlib/config.py", line 88, in load
    raise ConfigError(f"cannot parse {path}") from exc
widgetlib.errors.ConfigError: cannot parse settings.json
"""

DURING_HANDLING = """Traceback (most recent call last):
  File "/home/kim/job.py", line 5, in run
    value = cache["token"]
KeyError: 'token'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/home/kim/job.py", line 9, in <module>
    run()
  File "/home/kim/job.py", line 7, in run
    raise RuntimeError("no token in the cache")
RuntimeError: no token in the cache
"""

MULTI_LINE = """Traceback (most recent call last):
  File "/opt/svc/models.py", line 30, in <module>
    Order(quantity="many")
  File "/opt/venv/lib/python3.11/dist-packages/pydantic/main.py", line 212, in __init__
    validated_self = self.__pydantic_validator__.validate_python(data, self_instance=self)
pydantic_core._pydantic_core.ValidationError: 1 validation error for Order
quantity
  Input should be a valid integer, unable to parse string as an integer [type=int_parsing]
"""


def test_chained_traceback_keeps_the_last_exception_and_the_cause():
    q = parse_query(CHAINED)
    assert q.kind == "traceback"
    assert q.exception_class == "ConfigError"
    assert q.exception_qualname == "widgetlib.errors.ConfigError"
    assert q.message == "cannot parse settings.json"
    assert q.error_line == "ConfigError: cannot parse settings.json"
    assert q.causes == ("JSONDecodeError: Expecting value: line 1 column 1 (char 0)",)
    assert [f.function for f in q.frames] == ["read_config", "loads", "<module>", "load"]
    assert q.frames[-1].line == 88
    assert q.libraries == ("widgetlib",)


def test_during_handling_chain_takes_the_final_error():
    q = parse_query(DURING_HANDLING)
    assert (q.kind, q.exception_class, q.message) == ("traceback", "RuntimeError", "no token in the cache")
    assert q.causes == ("KeyError: 'token'",)
    assert q.libraries == ()


def test_multi_line_message_is_joined_and_dist_packages_give_the_library():
    q = parse_query(MULTI_LINE)
    assert q.exception_class == "ValidationError"
    assert q.message.startswith("1 validation error for Order\nquantity\nInput should be a valid integer")
    assert q.libraries == ("pydantic", "pydantic_core")


def test_bare_error_line_and_dotted_class_without_error_suffix():
    q = parse_query("httpx.ConnectTimeout: timed out")
    assert (q.kind, q.exception_class, q.exception_qualname, q.message) == (
        "message",
        "ConnectTimeout",
        "httpx.ConnectTimeout",
        "timed out",
    )
    assert q.libraries == ("httpx",)
    q = parse_query("agentkit.exceptions.UnexpectedModelBehavior: the model replied with nothing")
    assert q.exception_class == "UnexpectedModelBehavior" and q.message == "the model replied with nothing"


def test_log_lines_with_timestamps_and_levels():
    q = parse_query("2025-03-02 10:14:07,512 - widgetlib.client - WARNING - Retrying request to /v1/items in 2s")
    assert (q.kind, q.level, q.message) == ("log", "WARNING", "Retrying request to /v1/items in 2s")
    q = parse_query("[2025-03-02T10:14:07Z] ERROR root: ValueError: port must be between 1 and 65535")
    assert (q.kind, q.exception_class, q.message) == ("log", "ValueError", "port must be between 1 and 65535")
    q = parse_query("ERROR:widgetlib.server.Handler:Failed to run a middleware (error: boom)")
    assert (q.kind, q.message) == ("log", "Failed to run a middleware (error: boom)")


def test_warnings_output_names_the_class_and_the_library():
    text = (
        "/home/dev/.venv/lib/python3.11/site-packages/widgetlib/api.py:77: FutureWarning: `size` is deprecated, "
        "use `length` instead\n  warnings.warn(\n"
    )
    q = parse_query(text)
    assert (q.kind, q.exception_class) == ("log", "FutureWarning")
    assert q.message == "`size` is deprecated, use `length` instead"
    assert q.libraries == ("widgetlib",)


def test_markdown_and_slack_fences_are_removed():
    md = (
        "```python\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\nZeroDivisionError: division by zero\n```'
    )
    q = parse_query(md)
    assert (q.kind, q.exception_class, q.message) == ("traceback", "ZeroDivisionError", "division by zero")
    assert "```" not in q.text
    slack = "```TypeError: unsupported operand type(s) for +: 'int' and 'str'```"
    q = parse_query(slack)
    assert (q.kind, q.exception_class) == ("message", "TypeError")
    assert q.message == "unsupported operand type(s) for +: 'int' and 'str'"


def test_prose_question_is_a_question_and_keeps_a_quoted_error():
    q = parse_query("How do I make my uploads retry when the server hangs up?")
    assert q.kind == "question" and q.exception_class is None and q.message is None
    q = parse_query("why does widgetlib raise ValueError: bad mode 'x' when I pass mode='x' to connect()?")
    assert q.kind == "question"
    assert q.exception_class == "ValueError"
    assert q.message.startswith("bad mode 'x'")


def test_mixed_text_with_a_traceback_in_the_middle():
    text = (
        "hey all, our nightly job broke after the upgrade:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/ci/.venv/lib/python3.10/site-packages/widgetlib/sync.py", line 14, in push\n'
        "    raise PermissionError(f'token lacks scope {scope}')\n"
        "PermissionError: token lacks scope write\n\n"
        "any idea what changed? we did not touch the token"
    )
    q = parse_query(text)
    assert (q.kind, q.exception_class, q.message) == ("traceback", "PermissionError", "token lacks scope write")
    assert q.libraries == ("widgetlib",)


def test_empty_and_truncated_pastes():
    assert parse_query("  \n ").kind == "empty"
    q = parse_query("line\n" * 10_000 + "KeyError: 'x'", max_chars=1_000)
    assert q.truncated and q.exception_class == "KeyError"
    assert any("longer than" in note for note in q.notes)


def test_prose_with_a_colon_is_not_an_exception():
    q = parse_query("Note: the retry loop never stops")
    assert q.exception_class is None


def test_an_error_quoted_in_a_question_ends_at_its_closing_quote_or_before_the_question():
    q = parse_query('our job fails with "WidgetError: Widget w1 has no frobnicator". is there a default one?')
    assert (q.kind, q.exception_class, q.message) == ("question", "WidgetError", "Widget w1 has no frobnicator")
    # Quotes inside the message do not end it; the one that closes the error does.
    q = parse_query("Saving raises 'ValueError: mode 'x' is not one of 'r', 'w'' on every run. Which modes exist?")
    assert q.message == "mode 'x' is not one of 'r', 'w'"
    q = parse_query("Deploys stop with 'WidgetError: Widget w1 can't start' since Monday, and I don't know why?")
    assert q.message == "Widget w1 can't start"
    # Unquoted: the message keeps its own sentences and stops where the asking starts.
    q = parse_query(
        "Connecting raises ValueError: Gadget mode turbo is unknown. Valid modes are fast and slow. "
        "Is turbo gone in 2.0, or do I need a plugin?"
    )
    assert q.message == "Gadget mode turbo is unknown. Valid modes are fast and slow."
    # A dash between clauses ends it too, where a question follows; a hyphen in the message does not.
    q = parse_query("My run aborts with gadgets.GadgetError: Error while warming up \u2014 what does it mean?")
    assert q.message == "Error while warming up"
    q = parse_query("My run aborts with gadgets.GadgetError: Error in pre-warm - check the heater")
    assert q.message == "Error in pre-warm - check the heater"


def test_a_jupyter_traceback_cut_before_its_last_line_takes_the_class_from_its_header():
    paste = """model = get_peft_model(model, config)

---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[1], line 7
----> 7 model = get_peft_model(model, config)

File ~/miniconda3/lib/python3.8/site-packages/peft/mapping.py:116, in get_peft_model(model, peft_config)
...
"""
    q = parse_query(paste)
    assert (q.kind, q.exception_class, q.message) == ("traceback", "ValueError", None)
    assert q.libraries == ("peft",) and q.frames[0].code == "model = get_peft_model(model, config)"
    # With its last line, the last line decides (a chained header names the first exception).
    q = parse_query(paste.replace("...\n", "ValueError: Target modules {'q'} not found in the base model.\n"))
    assert q.exception_class == "ValueError" and q.message == "Target modules {'q'} not found in the base model."


def test_a_message_told_beside_a_class_named_without_one():
    # Quoted right before the class, quoted right after it, or told in a clause that quotes a name.
    q = parse_query('Since 3.0 both calls fail with "got an unexpected keyword argument" TypeErrors. What now?')
    assert (q.exception_class, q.message) == ("TypeError", "got an unexpected keyword argument")
    q = parse_query('Saving a gadget raises a WidgetError saying "gadget g7 is locked" every time. Why?')
    assert (q.exception_class, q.message) == ("WidgetError", "gadget g7 is locked")
    q = parse_query("Calling it gives an AttributeError that the widget has no attribute 'spin'. Which version has it?")
    assert (q.exception_class, q.message) == ("AttributeError", "the widget has no attribute 'spin'")
    # A clause without a quoted name is prose, not a message.
    q = parse_query("Calling it gives an AttributeError that I cannot explain. Any idea why this happens?")
    assert (q.exception_class, q.message) == ("AttributeError", None)
    # A Jupyter traceback cut before its last line, the message told after it.
    paste = """---------------------------------------------------------------------------
KeyError                                  Traceback (most recent call last)
Cell In[4], line 2
----> 2 widgets.load(path)
...

and it ends with the "no widget registered under 'w9'" KeyError."""
    q = parse_query(paste)
    assert (q.kind, q.exception_class, q.message) == ("traceback", "KeyError", "no widget registered under 'w9'")


def test_a_message_pasted_as_a_paragraph_of_its_own_in_a_question():
    paste = "No module named 'gadgets.contrib'\n\nstarted after I upgraded gadgets to 2.x; importing Spinner worked."
    q = parse_query(paste)
    assert (q.kind, q.exception_class, q.message) == ("question", None, "No module named 'gadgets.contrib'")
    # A title line quotes no name: it is not a message.
    q = parse_query("Gadget queue broken after upgrade\n\nWhen I submit a job the page hangs forever. Why?")
    assert q.message is None
    # A sentence that names a class, set apart, is a message too; a title that names one is not a sentence.
    paste = "On some queries, rarely:\n\nAdapter GadgetAdapter failed to read the reply.\n\nThe reply was cut. Why?"
    assert parse_query(paste).message == "Adapter GadgetAdapter failed to read the reply."
    assert parse_query("GadgetAdapter broken on long replies\n\nIt hangs forever. Why?").message is None


def test_a_class_or_message_told_after_a_verb_of_raising():
    # A class not ending in Error, named after "raises".
    q = parse_query("Asking about a gadget named a/b, the client raises UnexpectedReply. What should I catch?")
    assert (q.kind, q.exception_class, q.message) == ("question", "UnexpectedReply", None)
    # Of two errors told of, the one said to be raised, wherever the other is named; one error named twice
    # keeps the message its error line gives.
    q = parse_query(
        "Offline, fetch_gadget raises GadgetOfflineError at once instead of using the cache. And online, with "
        "the hub down, I get CacheMissError although the file is there. How do I make it use the cache?"
    )
    assert q.exception_class == "GadgetOfflineError"
    q = parse_query("Saving raises GadgetError. The log shows GadgetError: gadget g7 is locked. Why?")
    assert (q.exception_class, q.message) == ("GadgetError", "gadget g7 is locked.")
    # A message quoted after a verb of failing, with no class named; with its class when the quote has one.
    q = parse_query("Opening /docs fails because the schema step raises `Object of kind 'x' is not storable`. Why?")
    assert (q.exception_class, q.message) == (None, "Object of kind 'x' is not storable")
    q = parse_query('On the server it shows "widgets.errors.Error: Data incompatible with the frame format". Why?')
    assert (q.exception_qualname, q.message) == ("widgets.errors.Error", "Data incompatible with the frame format")
    # In single quotes too, an apostrophe inside it kept ("can't").
    q = parse_query("Behind the proxy our worker logs say 'Gadget can't reach its hub (pid:27)'. Raise a timeout?")
    assert q.message == "Gadget can't reach its hub (pid:27)"
    # After a bare "with": a message in double quotes; code in backticks is not one.
    q = parse_query('Since 2.1 the server crashes at startup with "Invalid args for gadget field!". Why?')
    assert q.message == "Invalid args for gadget field!"
    q = parse_query("The route is a POST /detect with `data: dict = {}` and a File(None) param. Why is it slow?")
    assert q.message is None
    # A line set apart that reads "... Error: ..." is the message of a question around it.
    q = parse_query("The demo fails with\n\n504 Server Error: Gateway Timeout for url: https://x.io/v1\n\nA fix?")
    assert q.message == "504 Server Error: Gateway Timeout for url: https://x.io/v1"


def test_an_error_in_prose_ends_before_the_story_told_after_it():
    q = parse_query(
        "In my notebook `w.spin()` fails with AttributeError: module 'widgets' has no attribute 'spin'. Same thing"
        " later when importing it from widgets.extra. What's missing?"
    )
    assert q.message == "module 'widgets' has no attribute 'spin'."
    q = parse_query("Starting raises ValueError: Gadget mode turbo is unknown. It happens when I deploy. Why?")
    assert q.message == "Gadget mode turbo is unknown."


def test_an_error_line_whose_class_is_camel_case_words_without_an_error_suffix():
    paste = "Session fixture needs a function one:\n\nScopeMismatch: You tried to access the 'function' fixture 'f'\n"
    q = parse_query(paste)
    assert (q.kind, q.exception_class) == ("message", "ScopeMismatch")
    assert q.message == "You tried to access the 'function' fixture 'f'"
    # pytest prints the fixtures' source lines under it: where the message ends.
    q = parse_query(paste.rstrip() + ", involved factories\ntest_x.py:12:  def sess(f)\n")
    assert q.message == "You tried to access the 'function' fixture 'f', involved factories"
    # An environment line in a bug report is no error line.
    q = parse_query("Versions:\n\nPyTorch: 2.1.0\nGitHub: https://github.com/x/y\n\nThe app hangs at start.")
    assert q.exception_class is None


def test_an_error_line_as_apps_log_it_and_one_ending_the_paste():
    q = parse_query("Running the graph shows\n\nKeyError encountered: '__start__'\n\nWhat is that key?")
    assert (q.kind, q.exception_class, q.message) == ("message", "KeyError", "'__start__'")
    q = parse_query("ValueError occurred: widget size must be positive")
    assert (q.exception_class, q.message) == ("ValueError", "widget size must be positive")
    # A paste that ends with its error line is that error, even when the code above it asks a question.
    paste = """The README example fails:

ask(prompt='Why is the sky blue?')
    raise GadgetError(text, status)
gadgets.errors.GadgetError: model 'g1' not found"""
    q = parse_query(paste)
    assert (q.kind, q.exception_class, q.message) == ("message", "GadgetError", "model 'g1' not found")


def test_vs_codes_exception_has_occurred_names_the_class_and_message():
    one_line = "Exception has occurred: ConnectionError HTTPSConnectionPool(host='a.b', port=443): Max retries exceeded"
    q = parse_query(one_line)
    assert q.exception_class == "ConnectionError" and q.message.startswith("HTTPSConnectionPool(host='a.b'")
    popup = """Exception has occurred: KeyError
'amount'
  File "/home/me/report.py", line 3, in <module>
    total += row["amount"]"""
    q = parse_query(popup)
    assert (q.kind, q.exception_class, q.message) == ("traceback", "KeyError", "'amount'")
    assert q.frames[0].code == 'total += row["amount"]'
    assert parse_query("Exception has occurred in the worker, see the log").exception_class is None


def test_ipython_7_frames_name_the_file_and_take_the_line_from_the_arrow():
    paste = """HTTPError                                 Traceback (most recent call last)
/usr/local/lib/python3.7/dist-packages/huggingface_hub/utils/_errors.py in hf_raise_for_status(response, endpoint_name)
    212     try:
--> 213         response.raise_for_status()
    214     except HTTPError as e:

<ipython-input-3-8a9f91e648da> in <module>
----> 1 card = ModelCard.load("user/repo")

HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/user/repo/resolve/main/README.md"""
    q = parse_query(paste)
    assert q.kind == "traceback" and q.libraries == ("huggingface_hub",)
    assert [(f.line, f.function, f.code) for f in q.frames] == [
        (213, "hf_raise_for_status", "response.raise_for_status()"),
        (1, "<module>", 'card = ModelCard.load("user/repo")'),
    ]
    # Prose that reads like one, with no arrow under it, is no frame.
    assert parse_query("See /tmp/app.py in main(x) for the call.\nKeyError: 'x'").frames == ()


def test_pytest_failures_read_as_tracebacks_with_their_frames_and_e_lines():
    own = """    def test_total():
>       assert report.total(rows)["amount"] == 3
E       KeyError: 'amount'

tests/test_report.py:12: KeyError"""
    q = parse_query(own)
    assert (q.kind, q.exception_class, q.message) == ("traceback", "KeyError", "'amount'")
    assert q.libraries == () and (q.frames[-1].file, q.frames[-1].line) == ("tests/test_report.py", 12)
    assert q.frames[-1].code == 'assert report.total(rows)["amount"] == 3'
    inside = """tests/test_fetch.py:8: in test_fetch
    r = httpx.get("http://localhost:9")
.venv/lib/python3.11/site-packages/httpx/_api.py:195: in get
    return request(
E   httpx.ConnectError: [Errno 111] Connection refused"""
    q = parse_query(inside)
    assert (q.exception_class, q.message, q.libraries) == ("ConnectError", "[Errno 111] Connection refused", ("httpx",))
    assert [(f.file.rsplit("/", 1)[-1], f.line, f.function) for f in q.frames] == [
        ("test_fetch.py", 8, "test_fetch"),
        ("_api.py", 195, "get"),
    ]
    # Without pytest's E lines, a quoted "> " line is still a Slack / markdown quote.
    assert parse_query("> KeyError: 'amount'").exception_class == "KeyError"


def test_a_rich_traceback_box_is_read_as_frames():
    paste = """╭───────────────────── Traceback (most recent call last) ─────────────────────╮
│ /home/me/.venv/lib/python3.11/site-packages/crewai/crew.py:512 in kickoff    │
│                                                                              │
│ ❱ 512 │   │   result = self._run_sequential_process()                        │
╰──────────────────────────────────────────────────────────────────────────────╯
ValueError: Invalid Task: Task description must be provided"""
    q = parse_query(paste)
    assert (q.kind, q.exception_class, q.libraries) == ("traceback", "ValueError", ("crewai",))
    assert (q.frames[0].line, q.frames[0].function) == (512, "kickoff")
    assert q.frames[0].code == "result = self._run_sequential_process()"


# One traceback, pasted behind each kind of prefix a log viewer or CI puts before every line.
GADGETS_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/app/main.py", line 3, in <module>',
    "    import gadgets",
    "ModuleNotFoundError: No module named 'gadgets'",
]


def _behind(prefix: str) -> str:
    return "\n".join(prefix + line for line in GADGETS_TRACEBACK)


def _assert_gadgets_traceback(q) -> None:
    assert (q.kind, q.exception_class, q.message) == ("traceback", "ModuleNotFoundError", "No module named 'gadgets'")
    assert [(f.file, f.line, f.code) for f in q.frames] == [("/app/main.py", 3, "import gadgets")]


def test_a_log_viewers_columns_come_off_before_the_error_is_read():
    # docker compose puts the service before each line; the traceback under it is read as one.
    _assert_gadgets_traceback(parse_query(_behind("web-1  | ")))
    # A notebook's log (time and cell line before each line) goes on after the error with a library's
    # warnings line: the error is the paste's, not the warning.
    q = parse_query(
        "The scheduled run fails:\n"
        "168.5s | 231 | ValueError: Can't find 'gadget.json' at 'ver_1'\n"
        "168.5s | 232 |  \n"
        "170.4s | 233 | /usr/lib/python3/site-packages/widgets/core.py:29: FutureWarning: --Widget.old is deprecated."
    )
    assert (q.exception_class, q.message) == ("ValueError", "Can't find 'gadget.json' at 'ver_1'")
    # A warnings line alone is still the paste's error; a pipe in prose is no column.
    q = parse_query("/usr/lib/python3/site-packages/widgets/core.py:29: FutureWarning: --Widget.old is deprecated.")
    assert q.exception_class == "FutureWarning"
    q = parse_query("I use a | b for unions.\nWhy does x | y fail with TypeError: unsupported operand?")
    assert q.exception_class == "TypeError" and "a | b" in q.text


def test_colour_codes_ci_timestamps_and_exception_group_bars_come_off():
    # A terminal's colours, with their escape character and without it (a notebook's traceback in an issue).
    for esc in ("\x1b", ""):
        q = parse_query(
            f"{esc}[0;31mTraceback (most recent call last):{esc}[0m\n"
            f'  File "/app/x.py", line 3, in <module>\n    start()\n'
            f"{esc}[1;31mGadgetError{esc}[0m: gadget g7 is locked"
        )
        assert (q.kind, q.exception_class, q.message) == ("traceback", "GadgetError", "gadget g7 is locked")
        assert len(q.frames) == 1
    assert parse_query("Why is a[1m] not b[31m? TypeError: bad").text.startswith("Why is a[1m] not b[31m?")
    # GitHub Actions' timestamps before each line.
    _assert_gadgets_traceback(parse_query(_behind("2024-05-01T10:00:00.1234567Z ")))
    # An exception group (Python 3.11+): the sub-exception is the error, the group a cause, every frame read.
    q = parse_query(
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/app/server.py", line 12, in main\n'
        "  |     async with anyio.create_task_group() as tg:\n"
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | Traceback (most recent call last):\n"
        '    |   File "/usr/lib/python3.12/site-packages/gadgets/client.py", line 94, in connect\n'
        "    |     raise GadgetConnectError(message)\n"
        "    | gadgets.GadgetConnectError: All connection attempts failed\n"
        "    +------------------------------------"
    )
    assert (q.kind, q.exception_qualname, q.message) == (
        "traceback",
        "gadgets.GadgetConnectError",
        "All connection attempts failed",
    )
    assert [f.line for f in q.frames] == [12, 94] and q.causes == (
        "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
    )
    # A table drawn in prose is no exception group.
    assert "| x |" in parse_query("Use a | b here\n+---+\n| x |\nWhy TypeError: bad?").text


def test_an_exception_told_as_its_repr_and_a_structured_logs_traceback_are_read():
    # Celery logs the repr of what a task raised; a message may end with one after a colon.
    q = parse_query(
        "[2024-05-01 10:00:00,123: ERROR/ForkPoolWorker-2] Task app.tasks.sync[1b2c] raised unexpected: "
        'GadgetError("gadget g7 is locked")'
    )
    assert (q.kind, q.exception_class, q.message, q.level) == ("log", "GadgetError", "gadget g7 is locked", "ERROR")
    q = parse_query(
        "Task exception was never retrieved\nfuture: <Task finished name='Task-1' coro=<main() done, defined at "
        "/app/x.py:3> exception=GadgetError('gadget g7 is locked')>"
    )
    assert (q.exception_class, q.message) == ("GadgetError", "gadget g7 is locked")  # asyncio's exception=
    q = parse_query("Error during request: GadgetConnectError('All connection attempts failed')")
    assert (q.exception_class, q.message) == ("GadgetConnectError", "All connection attempts failed")
    # A line of code is no error line: the traceback's own last line is.
    q = parse_query(
        'Traceback (most recent call last):\n  File "/app/x.py", line 3, in f\n'
        '    raise GadgetError("locked")\nGadgetError: gadget g7 is locked'
    )
    assert (q.message, q.causes) == ("gadget g7 is locked", ())
    # A cloud log's JSON record keeps the traceback in a string, its new lines escaped.
    record = {
        "level": "ERROR",
        "message": "request failed",
        "exc_info": 'Traceback (most recent call last):\n  File "/app/main.py", line 3, in handler\n'
        "    client.get(url)\ngadgets.GadgetConnectError: All connection attempts failed",
    }
    q = parse_query(json.dumps(record))
    assert (q.kind, q.exception_qualname, q.message) == (
        "traceback",
        "gadgets.GadgetConnectError",
        "All connection attempts failed",
    )
    assert [(f.file, f.line) for f in q.frames] == [("/app/main.py", 3)]
    # JSON that tells of no error (a request body) stays as it was pasted.
    assert parse_query('{"a": 1}\nKeyError: \'x\'').text == '{"a": 1}\nKeyError: \'x\''


def test_pytests_short_summary_and_an_error_told_inside_a_log_message():
    q = parse_query("FAILED tests/test_orders.py::test_total - KeyError: 'amount'\n===== 1 failed, 3 passed =====")
    assert (q.kind, q.exception_class, q.message) == ("message", "KeyError", "'amount'")
    # Python's logging.basicConfig format: LEVEL:logger:message, the error at the message's end.
    q = parse_query("ERROR:root:Gadget sync failed: ConnectionRefusedError: [Errno 111] Connection refused")
    assert (q.kind, q.exception_class, q.message) == ("log", "ConnectionRefusedError", "[Errno 111] Connection refused")
    q = parse_query("2024-05-01 10:00:00 ERROR app: request failed after 3 tries")
    assert (q.exception_class, q.message) == (None, "request failed after 3 tries")
