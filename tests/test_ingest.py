"""`errata ingest`: records from Python source, checked against a package written here and real ones."""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from assistant import Settings
from assistant.errors import LLMError
from assistant.ingest import ingest_to_file
from assistant.ingest.output import EXTRACTED_TAG, read_records
from assistant.ingest.raises import ingest
from assistant.knowledge.records import INGESTED_TAG, LoadReport, load_records, record_from_dict
from assistant.settings import BUNDLED_KB_DIR
from tests.openai_server import OpenAIServer

SOURCE = textwrap.dedent(
    '''
    import logging
    import warnings

    logger = logging.getLogger(__name__)


    class ConfigError(Exception):
        pass


    def connect(url, retries):
        """Open a connection to the server.

        More text that is not part of the summary.
        """
        if not url:
            raise ValueError("A server URL is required. Set MYPKG_URL or pass url=...")
        if retries < 0:
            raise ConfigError(f"retries must be >= 0, got {retries!r} (check the config)")
        return url


    class Client:
        def __init__(self, timeout):
            if timeout is None:
                raise TypeError("timeout of %s must be a number, not %r" % (type(self).__name__, timeout))
            self.timeout = timeout
            self.cache = {}
            self.name = "main"

        def fetch(self, key):
            try:
                return self.cache[key]
            except KeyError:
                msg = "Key {!r} is not cached for client {name}".format(key, name=self.name)
                raise LookupError(msg) from None


    def old_api():
        warnings.warn("old_api() is deprecated; use new_api() instead", DeprecationWarning, stacklevel=2)


    def report(job, error):
        logger.error("Job %s failed after %d attempts", job.name, job.attempts)
        logger.warning(f"Retrying job {job.name} in the background")
        logger.error(error)
        if job.strict:
            raise RuntimeError(f"failed: {error}")
        raise RuntimeError


    class HTTPException(Exception):
        def __init__(self, status_code, detail):
            super().__init__(detail)


    def route(path):
        raise HTTPException(status_code=404, detail=f"No route matches {path!r} on this server")
    '''
)


@pytest.fixture
def mypkg(tmp_path, monkeypatch) -> Path:
    """A small package written here: one raise, warning or log call of each message shape."""
    package = tmp_path / "src" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text(SOURCE)
    (package / "broken.py").write_text("def oops(:\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    return package


def line_of(text: str, source: str = SOURCE) -> int:
    return next(i for i, line in enumerate(source.splitlines(), start=1) if text in line)


EXPECTED = [
    # errorType, errorClass, severity, errorMessage, messagePattern, line marker, slug, solutions
    (
        "exception",
        "ValueError",
        "error",
        "A server URL is required. Set MYPKG_URL or pass url=...",
        r"A server URL is required\. Set MYPKG_URL or pass url=\.\.\.",
        'raise ValueError("A server URL',
        "server-url-required-set-mypkg-url",
        ["Set MYPKG_URL or pass url=..."],
    ),
    (
        "exception",
        "ConfigError",
        "error",
        "retries must be >= 0, got {retries!r} (check the config)",
        r"retries must be >= 0, got (.+?) \(check the config\)",
        "raise ConfigError(",
        "retries-must-got-check-config",
        [],
    ),
    (
        "exception",
        "TypeError",
        "error",
        "timeout of {type(self).__name__} must be a number, not {timeout!r}",
        r"timeout of (.+?) must be a number, not",
        "raise TypeError(",
        "timeout-must-number-not",
        [],
    ),
    (
        "exception",
        "LookupError",
        "error",
        "Key {key!r} is not cached for client {self.name}",
        r"Key (.+?) is not cached for client",
        "raise LookupError(msg)",
        "key-not-cached-client",
        [],
    ),
    (
        "warning",
        "DeprecationWarning",
        "warning",
        "old_api() is deprecated; use new_api() instead",
        r"old_api\(\) is deprecated; use new_api\(\) instead",
        "warnings.warn(",
        "old-api-deprecated-use-new-api",
        ["Use new_api() instead"],
    ),
    (
        "log",
        "logging.ERROR",
        "error",
        "Job {job.name} failed after {job.attempts} attempts",
        r"Job (.+?) failed after (.+?) attempts",
        'logger.error("Job',
        "job-failed-after-attempts",
        [],
    ),
    (
        "log",
        "logging.WARNING",
        "warning",
        "Retrying job {job.name} in the background",
        r"Retrying job (.+?) in the background",
        "logger.warning(",
        "retrying-job-background",
        [],
    ),
    (
        "http",
        "HTTPException",
        "error",
        "No route matches {path!r} on this server",
        r"No route matches (.+?) on this server",
        "raise HTTPException(",
        "no-route-matches-this-server",
        [],
    ),
]


def test_each_message_shape_becomes_the_expected_record(mypkg):
    records, report = ingest(mypkg, repo="acme/mypkg", sha="0123abc", analyzed_at="2026-01-01T00:00:00.000Z")

    got = [
        (
            r.error_type,
            r.error_class,
            r.severity,
            r.error_message,
            r.message_pattern,
            r.line_number,
            r.slug,
            list(r.solutions),
        )
        for r in records
    ]
    want = [(t, c, s, m, p, line_of(marker), slug, sol) for t, c, s, m, p, marker, slug, sol in EXPECTED]
    assert got == want
    # Skipped, with reasons: the bare variable, the message with no words of its own, the bare class.
    assert dict(report.skipped) == {"not a literal message": 1, "too generic": 1, "without a message": 1}
    assert report.files == 3 and report.records == 8 and report.unparsable_files == ["mypkg/broken.py"]
    assert "skipped 3 message(s)" in report.summary()

    first = records[0].to_dict()
    line = line_of('raise ValueError("A server URL')
    lines = SOURCE.splitlines()
    assert first == {
        "id": hashlib.sha256(f"acme/mypkg\nmypkg/core.py\n{line}\n{first['errorMessage']}".encode()).hexdigest()[:16],
        "repo": "acme/mypkg",
        "slug": "server-url-required-set-mypkg-url",
        "errorCode": None,
        "errorMessage": "A server URL is required. Set MYPKG_URL or pass url=...",
        "messagePattern": r"A server URL is required\. Set MYPKG_URL or pass url=\.\.\.",
        "errorType": "exception",
        "errorClass": "ValueError",
        "httpStatus": None,
        "severity": "error",
        "filePath": "mypkg/core.py",
        "lineNumber": line,
        "sourceCode": "\n".join(lines[line - 9 : line + 8]),
        "sourceCodeStart": line - 8,
        "sourceCodeEnd": line + 8,
        "githubUrl": f"https://github.com/acme/mypkg/blob/0123abc/mypkg/core.py#L{line - 8}-L{line + 8}",
        "documentation": "`connect` in mypkg/core.py raises ValueError when `not url`. "
        "`connect`: Open a connection to the server. (Extracted from the source code; not reviewed.)",
        "triggerScenarios": "Calling `connect(...)` when `not url`.",
        "commonSituations": None,
        "solutions": ["Set MYPKG_URL or pass url=..."],
        "exampleFix": None,
        "handlingStrategy": None,
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": [],
        "tags": ["mypkg", "value-error", INGESTED_TAG, EXTRACTED_TAG],
        "backgroundTag": None,
        "analyzedSha": "0123abc",
        "analyzedAt": "2026-01-01T00:00:00.000Z",
        "schemaVersion": 2,
    }
    by_class = {r.error_class: r for r in records}
    assert (by_class["HTTPException"].http_status, by_class["ValueError"].http_status) == (404, None)
    assert by_class["TypeError"].trigger_scenarios == "Creating `Client(...)` when `timeout is None`."
    assert by_class["LookupError"].documentation.startswith(
        "`Client.fetch` in mypkg/core.py raises LookupError while handling an exception (`except KeyError`)."
    )
    assert by_class["ConfigError"].trigger_scenarios == "Calling `connect(...)` when `retries < 0`."


def test_ids_are_stable_and_patterns_match_what_the_code_really_raises(mypkg, caplog):
    records, _ = ingest(mypkg, repo="acme/mypkg")
    again, _ = ingest(mypkg, repo="acme/mypkg")
    assert [r.id for r in records] == [r.id for r in again]
    assert len({r.id for r in records}) == len(records)
    assert all(r.github_url is None for r in records)  # no sha, no link

    core = importlib.import_module("mypkg.core")
    real: dict[str, str] = {}
    for call, cls in [
        (lambda: core.connect("", 1), "ValueError"),
        (lambda: core.connect("db://x", -3), "ConfigError"),
        (lambda: core.Client(None), "TypeError"),
        (lambda: core.Client(1.0).fetch("token"), "LookupError"),
        (lambda: core.route("/admin"), "HTTPException"),
    ]:
        with pytest.raises(Exception) as info:
            call()
        real[cls] = str(info.value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        core.old_api()
    real["DeprecationWarning"] = str(caught[0].message)

    class Job:
        name, attempts, strict = "nightly-export", 3, True

    with caplog.at_level(logging.WARNING, logger="mypkg.core"), pytest.raises(RuntimeError):
        core.report(Job(), "disk full")
    real["logging.ERROR"] = caplog.records[0].getMessage()
    real["logging.WARNING"] = caplog.records[1].getMessage()

    assert real["ConfigError"] == "retries must be >= 0, got -3 (check the config)"
    for record in records:
        assert re.search(record.message_pattern, real[record.error_class]), (record.message_pattern, record.error_class)
    # And no pattern claims another record's message.
    for record in records:
        others = [cls for cls, text in real.items() if re.search(record.message_pattern, text)]
        assert others == [record.error_class]


MORE_SHAPES = textwrap.dedent(
    '''
    from _pytest.outcomes import fail

    REMOVED = """You tried to access shapes.{symbol}, but this is no longer supported in shapes>=2.0"""


    class ShapesError(Exception):
        pass


    class RemovedInV2(ShapesError):
        def __init__(self, *, symbol):
            super().__init__(REMOVED.format(symbol=symbol))


    class ParseFailure(ShapesError):
        def __init__(self, adapter_name, response, message=None):
            message = f"{message}; " if message else ""
            message = f"{message}Adapter {adapter_name} failed to parse the response: {response!r}"
            super().__init__(message)


    class Passthrough(ShapesError):
        def __init__(self, detail):
            super().__init__(detail)


    class CustomError(Exception):
        def __init__(self, code, template, context):
            super().__init__(template)


    def removed(name):
        raise RemovedInV2(symbol=name)


    def parse(response):
        raise ParseFailure("ChatAdapter", response)


    def deny(value):
        if value:
            raise CustomError("may_not_set_field", "This field is not to be set by the user.", {})


    def add(vectors, d):
        assert len(vectors[0]) == d, f"vectors of dimension {len(vectors[0])} do not fit an index of {d}"


    def scope(requested, current):
        fail(f"ScopeMismatch: You tried to access the {requested} scoped fixture from a {current} request")


    class ErrorData:
        def __init__(self, code, message):
            self.code, self.message = code, message


    class SessionError(Exception):
        def __init__(self, error):
            super().__init__(error.message)


    def wait(request, timeout):
        raise SessionError(
            ErrorData(code=408, message=f"Timed out while waiting for response to {request}. Waited {timeout} seconds.")
        )
    '''
)


def test_messages_built_in_exception_classes_asserts_and_fail_calls_become_records(tmp_path):
    """Shapes ``raise`` alone misses: the exception class's ``__init__`` builds the message (dspy, openai),
    an error code before the message, an ``assert`` message, pytest's ``fail`` and a message passed inside
    a data object (the MCP SDK's ``McpError(ErrorData(message=...))``); each pattern matches the message the
    code really raises."""
    package = tmp_path / "src" / "shapes"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text(MORE_SHAPES)
    records, report = ingest(package, repo="acme/shapes")
    by_class = {r.error_class: r for r in records}
    assert set(by_class) == {"RemovedInV2", "ParseFailure", "CustomError", "AssertionError", "Failed", "SessionError"}
    assert by_class["CustomError"].error_message == "This field is not to be set by the user."
    assert "`len(vectors[0]) != d`" in by_class["AssertionError"].documentation  # the guard that raises it
    assert by_class["ParseFailure"].line_number == line_of("super().__init__(message)", MORE_SHAPES)

    sys.path.insert(0, str(tmp_path / "src"))
    try:
        core = importlib.import_module("shapes.core")
    finally:
        sys.path.remove(str(tmp_path / "src"))
    for call, cls in [
        (lambda: core.removed("ChatCompletion"), "RemovedInV2"),
        (lambda: core.parse("[[ ## answer ## ]]"), "ParseFailure"),
        (lambda: core.deny(True), "CustomError"),
        (lambda: core.add([[1.0, 2.0]], 3), "AssertionError"),
        (lambda: core.scope("function", "session"), "Failed"),
        (lambda: core.wait("ClientRequest", "0:00:05"), "SessionError"),  # the message inside a data object
    ]:
        with pytest.raises(BaseException) as info:
            call()
        assert type(info.value).__name__ == cls
        assert re.search(by_class[cls].message_pattern, str(info.value)), (cls, str(info.value))


def _render(error_message: str, value: str) -> str:
    """The message with every ``{expression}`` placeholder replaced by ``value``."""

    def replace(m: re.Match[str]) -> str:
        expr = re.split(r"![rsa]$|:(?![^\[]*\])", m.group(1))[0]
        try:
            ast.parse(expr, mode="eval")
        except SyntaxError:
            return m.group(0)
        return value

    return re.sub(r"\{([^{}]+)\}", replace, error_message)


def test_an_installed_package_gives_valid_records_whose_patterns_match():
    records, report = ingest(package="slack_bolt")
    assert report.files > 100 and len(records) > 100
    assert records[0].repo == "slackapi/bolt-python"  # from the package's metadata
    assert all(r.file_path.startswith("slack_bolt/") for r in records)
    assert len({r.id for r in records}) == len(records)
    assert len({r.slug for r in records}) == len(records)
    placeholders = 0
    for record in records:
        again = record_from_dict(json.loads(record.to_json_line())["record"])
        assert again.to_dict() == record.to_dict()
        assert {"exception": "error", "warning": "warning"}.get(record.error_type, record.severity) == record.severity
        assert record.source_code_start <= record.line_number <= record.source_code_end
        for value in ("x", "Some value (with) [regex] *chars*", "42"):
            rendered = _render(record.error_message, value)
            assert re.search(record.message_pattern, rendered), (record.error_message, record.message_pattern)
        placeholders += rendered != record.error_message
    assert placeholders > 20  # the check above really substituted values
    messages = {r.error_message for r in records}
    # Messages built by helper functions (slack_bolt.logger.messages) are followed into the helper.
    assert "Either an env variable `SLACK_BOT_TOKEN` or `token` argument in the constructor is required." in messages
    assert "{listener_name} didn't call ack()" in messages
    # A subpackage keeps its full path, so its records name the same files.
    sub, _ = ingest(package="slack_bolt.app")
    assert sub and {r.file_path for r in sub} <= {
        r.file_path for r in records if r.file_path.startswith("slack_bolt/app/")
    }


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "assistant", *map(str, args)], capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_cli_ingest_writes_a_loadable_knowledge_base(mypkg, tmp_path):
    out = tmp_path / "out" / "mypkg.jsonl"
    result = run_cli("ingest", mypkg, "--repo", "acme/mypkg", "-o", out, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["records"] == 8 and report["skipped"] == 3 and report["files"] == 3
    records = load_records(out, strict=True)
    assert [r.error_class for r in records][:2] == ["ValueError", "ConfigError"]
    # Written whole through a private temporary file, the result has the permissions of any new file.
    umask = os.umask(0o022)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask

    result = run_cli("ingest", "--package", "mypkg_does_not_exist", "-o", out)
    assert result.returncode == 2
    assert "errata: error: package 'mypkg_does_not_exist' is not installed" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli("ingest", mypkg, "--enrich", "-o", out)
    assert result.returncode == 2 and "--enrich needs an LLM" in result.stderr


@pytest.mark.slow
def test_a_curated_record_in_a_monorepo_path_wins_over_the_wheels_twin(tmp_path):
    """langgraph's repository keeps the package in ``libs/langgraph/``; its wheel has ``langgraph/...``."""
    base = json.loads((BUNDLED_KB_DIR / "langchain-ai__langgraph.jsonl").read_text().splitlines()[0])["record"]
    curated = dict(base, filePath="libs/langgraph/langgraph/pregel/_loop.py", lineNumber=906)
    twin = dict(base, id="0123456789abcdef", filePath="langgraph/pregel/_loop.py", lineNumber=1033, tags=["ingested"])
    other = dict(twin, id="fedcba9876543210", errorMessage="Another message entirely {x}", messagePattern="Another")
    kb = tmp_path / "kb.jsonl"
    kb.write_text("".join(json.dumps({"record": r}) + "\n" for r in (curated, twin, other)))
    report = LoadReport()
    assert [r.id for r in load_records(kb, report=report)] == [curated["id"], other["id"]]
    assert report.superseded == 1


@pytest.mark.slow
def test_curated_records_win_over_ingested_ones_for_the_same_raise(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    curated_file = kb / "slackapi__bolt-python.jsonl"
    curated_file.write_text((BUNDLED_KB_DIR / "slackapi__bolt-python.jsonl").read_text())
    curated = load_records(curated_file)
    out = tmp_path / "bolt.jsonl"
    report = ingest_to_file(out, package="slack_bolt")
    ingested = read_records(out)
    assert len(ingested) == report.records

    def key(r):
        return r.repo, r.file_path, r.line_number

    overlap = {key(r) for r in curated} & {key(r) for r in ingested}
    assert ("slackapi/bolt-python", "slack_bolt/app/app.py", 440) in overlap  # the token-required BoltError

    # The same raise at another line (the curated record's commit is older than the installed wheel) is
    # found by its identity: repo, file, class and message template; the same message in another file by
    # its message identity: repo, class and template.
    from assistant.releases.identity import message_identity, raise_identity

    same_raise = {raise_identity(r) for r in curated} | {message_identity(r) for r in curated}
    moved = [
        r
        for r in ingested
        if key(r) not in overlap and (raise_identity(r) in same_raise or message_identity(r) in same_raise)
    ]
    load = LoadReport()
    merged = load_records([kb, out], report=load)
    assert load.superseded == sum(key(r) in overlap for r in ingested) + len(moved)
    assert all(r.id not in {m.id for m in merged} for r in moved)
    assert len(merged) == len(curated) + len(ingested) - load.superseded
    by_key = {}
    for r in merged:
        by_key.setdefault(key(r), []).append(r)
    for k in overlap:
        assert all(INGESTED_TAG not in r.tags for r in by_key[k])  # only the curated record(s) remain
    assert {r.id for r in curated} <= {r.id for r in merged}
    # Order does not matter: the ingested file first still gives way.
    assert {r.id for r in load_records([out, kb])} == {r.id for r in merged}

    # The build command indexes the same merged set.
    result = run_cli("build", "--kb", kb, "--kb", out, "--index", tmp_path / "index", "--json")
    assert result.returncode == 0, result.stderr
    build = json.loads(result.stdout)
    assert (build["total"], build["superseded_records"]) == (len(merged), load.superseded)

    # An error only the ingested records know is answered from them.
    client_check = next(r for r in ingested if r.error_message == "`client` must be a slack_sdk.web.WebClient")
    error = "slack_bolt.error.BoltError: `client` must be a slack_sdk.web.WebClient"
    result = run_cli("ask", error, "--kb", kb, "--kb", out, "--index", tmp_path / "index", "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["hits"][0]["recordId"] == client_check.id
    assert answer["citations"][0]["recordId"] == client_check.id


# --------------------------------------------------------------------------- enrichment through a local server


def _asked(body: dict) -> list[dict]:
    """The records a chat-completions request asks about (the JSON list after "Records:")."""
    text = body["messages"][-1]["content"].split("Records:\n", 1)[1]
    return json.loads(text.split("\n\nYour previous reply", 1)[0])


def _answer(record: dict, server_name: str, **changes) -> dict:
    return {
        "id": record["id"],
        "documentation": f"{record['errorClass']} means the call was wrong ({server_name}).",
        "triggerScenarios": f"Calling the code in {record['filePath']} with bad input.",
        "commonSituations": "Copying an example without reading it.",
        "solutions": [f"Fix the input that makes it say: {record['errorMessage']}"],
        "exampleFix": "# before\nconnect('')\n# after\nconnect('db://host')",
        "preventionTips": ["Validate input early"],
        "handlingStrategy": "validation",
        "backgroundTag": "invalid-argument",
        **changes,
    }


@pytest.fixture
def llm_env(monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")


def test_enrichment_validates_replies_and_retries_once(mypkg, tmp_path, llm_env):

    def reply(body):
        n = len(server.requests)
        asked = _asked(body)
        if n == 1:
            return "Sure! Here is the documentation you asked for."  # not JSON: retried
        answers = [_answer(r, "model-1") for r in asked]
        if n in (3, 4):
            answers[-1]["handlingStrategy"] = "pray"  # invalid twice: the record stays extracted
        return json.dumps({"records": answers})

    out = tmp_path / "mypkg.jsonl"
    with OpenAIServer(reply) as server:
        settings = Settings.load(env={}, model="openai/test", api_base=server.base_url, llm_timeout=20)
        report = ingest_to_file(out, mypkg, repo="acme/mypkg", enrich=True, settings=settings, batch_size=3)

    asked = [[r["id"] for r in _asked(body)] for body in server.requests]
    ids = [r.id for r in read_records(out)]
    assert asked == [ids[0:3], ids[0:3], ids[3:6], ids[5:6], ids[6:8]]
    assert "not valid JSON" in server.requests[1]["messages"][-1]["content"]
    assert "handlingStrategy: expected one of" in server.requests[3]["messages"][-1]["content"]
    assert all(body["response_format"] == {"type": "json_object"} for body in server.requests)
    assert all(body["model"] == "test" and not body.get("stream") for body in server.requests)
    assert (report.enriched, report.enrich_failed, report.kept_enriched) == (7, 1, 0)

    records = load_records(out, strict=True)
    enriched = [r for r in records if "enriched" in r.tags]
    assert [r.id for r in enriched] == ids[0:5] + ids[6:8]
    first = enriched[0]
    assert first.documentation == "ValueError means the call was wrong (model-1)."
    assert first.solutions == (
        "Fix the input that makes it say: A server URL is required. Set MYPKG_URL or pass url=...",
    )
    assert (first.handling_strategy, first.background_tag) == ("validation", "invalid-argument")
    assert first.tags == ("mypkg", "value-error", INGESTED_TAG, "enriched")
    # What the extractor found is kept: message, pattern, location.
    assert first.message_pattern == r"A server URL is required\. Set MYPKG_URL or pass url=\.\.\."
    failed = records[5]
    assert EXTRACTED_TAG in failed.tags and failed.handling_strategy is None


@pytest.mark.slow
def test_enrichment_resumes_where_an_interrupted_run_stopped(mypkg, tmp_path, llm_env):

    def first_reply(body):
        first.status = 401  # the key is revoked after the first batch
        return json.dumps({"records": [_answer(r, "model-1") for r in _asked(body)]})

    out = tmp_path / "mypkg.jsonl"
    with OpenAIServer(first_reply) as first:
        settings = Settings.load(env={}, model="openai/test", api_base=first.base_url, llm_timeout=20)
        with pytest.raises(LLMError, match="API key.*run the same command again"):
            ingest_to_file(out, mypkg, repo="acme/mypkg", enrich=True, settings=settings, batch_size=3)
    assert len(first.requests) == 2
    assert sum("enriched" in r.tags for r in read_records(out)) == 3  # the first batch was written

    # Run again through the CLI: only the five records left are sent; the three done are kept as they were.
    with OpenAIServer(lambda body: json.dumps({"records": [_answer(r, "model-2") for r in _asked(body)]})) as second:
        result = run_cli(
            "ingest", mypkg, "--repo", "acme/mypkg", "--enrich", "--model", "openai/test",
            "--api-base", second.base_url, "--batch-size", "3", "-o", out, "--json",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["kept_enriched"], report["enriched"], report["enrich_failed"]) == (3, 5, 0)
    records = read_records(out)
    assert [len(_asked(body)) for body in second.requests] == [3, 2]
    assert {r["id"] for body in second.requests for r in _asked(body)} == {r.id for r in records[3:]}
    assert ["model-1" in r.documentation for r in records] == [True] * 3 + [False] * 5
    assert all("enriched" in r.tags and "model-" in r.documentation for r in records)
