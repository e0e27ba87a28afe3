"""Messages defined by exception classes (``assistant/ingest/class_messages.py``): botocore's ``fmt`` and
``MSG_TEMPLATE`` attributes, aiohttp's ``__str__`` and its default message in ``__init__``. Each package is
written here, read by the real ingester and the real release scan, and its classes are also run, so every
record's pattern is checked against the text Python really prints."""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

from assistant.ingest.class_messages import class_findings, package_classes
from assistant.ingest.extract import find_in_source
from assistant.ingest.messages import render_message
from assistant.ingest.raises import ingest
from assistant.releases.scan import scan_archive
from tests.releases_toys import build_wheel

# botocore's shape: the base formats ``self.fmt``; subclasses set only ``fmt``, one in another module.
BOTO_EXCEPTIONS = textwrap.dedent(
    '''
    class BotoCoreError(Exception):
        """The base exception class for BotoCore exceptions."""

        fmt = 'An unspecified error occurred'
        code = 'unspecified_error'

        def __init__(self, **kwargs):
            msg = self.fmt.format(**kwargs)
            Exception.__init__(self, msg)
            self.kwargs = kwargs


    class NoCredentialsError(BotoCoreError):
        """No credentials could be found."""

        fmt = 'Unable to locate credentials'


    class DataNotFoundError(BotoCoreError):
        fmt = 'Unable to load data for: {data_path}'


    class UnknownServiceError(DataNotFoundError):
        fmt = (
            "Unknown service: '{service_name}'. Valid service names are: "
            "{known_service_names}"
        )


    class AlsoNotFoundError(DataNotFoundError):
        pass


    class ParamValidationError(BotoCoreError):
        fmt = 'Parameter validation failed:\\n{report}'


    class ClientError(Exception):
        MSG_TEMPLATE = (
            'An error occurred ({error_code}) when calling the {operation_name} '
            'operation{retry_info}: {error_message}'
        )

        def __init__(self, error_response, operation_name):
            retry_info = self._get_retry_info(error_response)
            error = error_response.get('Error', {})
            msg = self.MSG_TEMPLATE.format(
                error_code=error.get('Code', 'Unknown'),
                error_message=error.get('Message', 'Unknown'),
                operation_name=operation_name,
                retry_info=retry_info,
            )
            super().__init__(msg)

        def _get_retry_info(self, response):
            attempts = response.get('ResponseMetadata', {}).get('RetryAttempts')
            return f" (reached max retries: {attempts})" if attempts else ''
    '''
)
BOTO_CREDENTIALS = textwrap.dedent(
    """
    from .exceptions import BotoCoreError


    class PartialCredentialsError(BotoCoreError):
        fmt = 'Partial credentials found in {provider}, missing: {cred_var}'
    """
)

# aiohttp's shapes: __str__ formatting ``self``, a default message in __init__, a subclass that only inherits.
AIOHTTP_EXCEPTIONS = textwrap.dedent(
    '''
    class ClientError(Exception):
        """Base class for client connection errors."""


    class ClientConnectorError(ClientError, OSError):
        def __init__(self, host, port, ssl, os_error):
            self.host, self.port, self.ssl = host, port, ssl
            super().__init__(os_error.errno, os_error.strerror)

        def __str__(self):
            return "Cannot connect to host {0.host}:{0.port} ssl:{1} [{2}]".format(
                self, "default" if self.ssl is True else self.ssl, self.strerror
            )


    class ClientConnectorDNSError(ClientConnectorError):
        """DNS resolution failed."""


    class ServerDisconnectedError(ClientError):
        def __init__(self, message=None):
            if message is None:
                message = "Server disconnected"
            self.args = (message,)
            self.message = message


    class APIConnectionError(ClientError):
        def __init__(self, *, message="Connection error.", request=None):
            super().__init__(message)


    class ServerTimeoutError(ClientError):
        def __init__(self, message=None):
            if message is None:
                message = "Timeout while contacting the server"
            super().__init__(message)


    class HTTPException(Exception):
        code = None
        description = None

        def __str__(self):
            return f"{self.code} Error: {self.description}"


    class NotFound(HTTPException):
        code = 404
        description = "The requested URL was not found on the server."
    '''
)

# Strings that are not messages: attributes no method uses as the message, and a class that is no exception.
NOT_MESSAGES = textwrap.dedent(
    """
    class RateLimitError(Exception):
        code = "rate_limited"
        docs_url = "https://example.com/docs/errors/{code}"
        help_text = "Wait a minute before calling the service again"

        def __init__(self, retry_after):
            self.url = self.docs_url.format(code=self.code)
            super().__init__(f"Rate limited, retry after {retry_after} seconds")


    class Formatter:
        fmt = "Unable to format the record for output"
        message = "Formatting is not configured for this handler"

        def __init__(self):
            self.text = self.fmt.format()


    class APIException(Exception):
        pass


    def _(text):
        return text


    class PermissionDenied(APIException):
        default_detail = _("You do not have permission to perform this action.")
        default_code = "permission_denied"
    """
)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def _load(root: Path, module: str):
    """The package's module really imported, so its classes print their messages."""
    sys.path.insert(0, str(root.parent))
    try:
        for name in [n for n in sys.modules if n == "pkg" or n.startswith("pkg.")]:
            del sys.modules[name]
        return __import__(f"pkg.{module}", fromlist=["_"])
    finally:
        sys.path.remove(str(root.parent))


def _by_class(records) -> dict[str, list]:
    out: dict[str, list] = {}
    for record in records:
        out.setdefault(record.error_class, []).append(record)
    return out


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_fmt_attributes_a_base_formats_give_each_subclass_its_record(tmp_path):
    root = _package(tmp_path, {"exceptions.py": BOTO_EXCEPTIONS, "credentials.py": BOTO_CREDENTIALS})
    records, _report = ingest(root, repo="boto/botocore", sha="1.44.18")
    found = _by_class(records)
    module = _load(root, "exceptions")
    credentials = _load(root, "credentials")
    printed = {
        "NoCredentialsError": str(module.NoCredentialsError()),
        "DataNotFoundError": str(module.DataNotFoundError(data_path="endpoints")),
        "UnknownServiceError": str(module.UnknownServiceError(service_name="s4", known_service_names="s3, sqs")),
        "ParamValidationError": str(module.ParamValidationError(report="Invalid type for parameter Bucket")),
        "PartialCredentialsError": str(credentials.PartialCredentialsError(provider="env", cred_var="secret_key")),
        "BotoCoreError": str(module.BotoCoreError()),
    }
    assert printed["NoCredentialsError"] == "Unable to locate credentials"
    for name, text in printed.items():
        (record,) = found[name]
        assert re.search(record.message_pattern, text), (name, record.message_pattern, text)
        assert record.error_type == "exception" and record.repo == "boto/botocore"
        assert "ingested" in record.tags and "extracted" in record.tags
    nocreds = found["NoCredentialsError"][0]
    assert nocreds.error_message == "Unable to locate credentials"
    assert nocreds.file_path == "pkg/exceptions.py"
    assert nocreds.line_number == _line(BOTO_EXCEPTIONS, "'Unable to locate credentials'")
    assert nocreds.github_url.startswith("https://github.com/boto/botocore/blob/1.44.18/pkg/exceptions.py#L")
    assert "No credentials could be found." in nocreds.documentation  # the class's docstring
    assert found["UnknownServiceError"][0].error_message == (
        "Unknown service: '{service_name}'. Valid service names are: {known_service_names}"
    )
    # The base in another module is followed; a subclass without its own fmt prints its base's text: no record.
    assert found["PartialCredentialsError"][0].file_path == "pkg/credentials.py"
    assert "AlsoNotFoundError" not in found
    # ``code`` is a string attribute too, but nothing uses it as the message.
    assert not any("unspecified_error" in r.error_message for r in records)


def test_msg_template_matches_the_message_with_and_without_its_optional_suffix(tmp_path):
    root = _package(tmp_path, {"exceptions.py": BOTO_EXCEPTIONS})
    records, _report = ingest(root, repo="boto/botocore")
    (record,) = [r for r in records if r.error_class == "ClientError"]
    assert record.error_message.startswith("An error occurred ({error_code}) when calling the {operation_name}")
    assert record.line_number == _line(BOTO_EXCEPTIONS, "MSG_TEMPLATE = (")
    module = _load(root, "exceptions")
    plain = module.ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "PutObject")
    retried = module.ClientError(
        {"Error": {"Code": "SlowDown", "Message": "Reduce your rate"}, "ResponseMetadata": {"RetryAttempts": 4}},
        "PutObject",
    )
    assert str(plain) == "An error occurred (AccessDenied) when calling the PutObject operation: Access Denied"
    assert re.search(record.message_pattern, str(plain))
    assert re.search(record.message_pattern, str(retried))
    assert not re.search(record.message_pattern, "An error occurred while reading from the stream: closed")


def test_str_templates_and_default_messages_in_init_become_records(tmp_path):
    root = _package(tmp_path, {"client_exceptions.py": AIOHTTP_EXCEPTIONS})
    records, _report = ingest(root, repo="aio-libs/aiohttp")
    found = _by_class(records)
    module = _load(root, "client_exceptions")
    refused = OSError(111, "Connect call failed ('93.184.216.34', 443)")
    printed = {
        "ClientConnectorError": str(module.ClientConnectorError("api.example.com", 443, True, refused)),
        "ServerDisconnectedError": str(module.ServerDisconnectedError()),
        "APIConnectionError": str(module.APIConnectionError()),
        "ServerTimeoutError": str(module.ServerTimeoutError()),
        "NotFound": str(module.NotFound()),
    }
    assert printed["ClientConnectorError"] == (
        "Cannot connect to host api.example.com:443 ssl:default [Connect call failed ('93.184.216.34', 443)]"
    )
    for name, text in printed.items():
        (record,) = found[name]
        assert re.search(record.message_pattern, text), (name, record.message_pattern, text)
    connector = found["ClientConnectorError"][0]
    assert connector.line_number == _line(AIOHTTP_EXCEPTIONS, 'return "Cannot connect to host')
    assert connector.error_message.startswith("Cannot connect to host {self.host}:{self.port} ssl:")
    disconnected = found["ServerDisconnectedError"][0]
    assert disconnected.error_message == "Server disconnected"
    assert disconnected.line_number == _line(AIOHTTP_EXCEPTIONS, 'message = "Server disconnected"')
    assert "message is None" in disconnected.trigger_scenarios
    assert found["APIConnectionError"][0].line_number == _line(AIOHTTP_EXCEPTIONS, 'message="Connection error."')
    # Already found where __init__ passes it on: one record, not two.
    assert len(found["ServerTimeoutError"]) == 1
    # The subclass's own description fills its base's __str__; the base's own (None, None) prints no words.
    assert found["NotFound"][0].error_message == "404 Error: The requested URL was not found on the server."
    assert found["NotFound"][0].line_number == _line(AIOHTTP_EXCEPTIONS, "code = 404")
    # A subclass that only inherits __str__ prints its base's text: the base's record answers it.
    assert "ClientConnectorDNSError" not in found


def test_strings_that_are_not_messages_make_no_record(tmp_path):
    root = _package(tmp_path, {"errors.py": NOT_MESSAGES})
    records, _report = ingest(root, repo="acme/lib")
    messages = {r.error_class: r.error_message for r in records}
    # The raise's own f-string and DRF's default_detail (a well-known name; the base formats it elsewhere).
    assert messages == {
        "RateLimitError": "Rate limited, retry after {retry_after} seconds",
        "PermissionDenied": "You do not have permission to perform this action.",
    }
    tree = ast.parse(NOT_MESSAGES)
    assert all(f.error_class != "Formatter" for f in class_findings(tree))


def test_a_base_named_in_two_modules_is_taken_from_the_naming_module():
    """pydantic ships v1's errors beside v2's: each ``PydanticErrorMixin`` serves its own module's classes."""
    v1 = ast.parse(
        textwrap.dedent(
            """
            class PydanticErrorMixin:
                code = None
                msg_template = None

                def __str__(self):
                    return self.msg_template.format(**self.__dict__)


            class IntegerError(PydanticErrorMixin, TypeError):
                code = 'int.max'
                msg_template = 'value is not a valid integer'
            """
        )
    )
    v2 = ast.parse(
        textwrap.dedent(
            """
            class PydanticErrorMixin:
                def __str__(self):
                    return f'{self.message}\\n\\nFor further information visit https://errors.pydantic.dev/{self.code}'
            """
        )
    )
    table = package_classes([v2, v1])
    found = class_findings(v1, table, find_in_source(v1)[0])
    assert [(f.error_class, render_message(f.parts)) for f in found] == [
        ("IntegerError", "value is not a valid integer")
    ]


def test_a_release_scan_holds_the_class_messages(tmp_path):
    wheel = build_wheel(tmp_path, "botocore", "1.44.18", {"botocore/exceptions.py": BOTO_EXCEPTIONS})
    scan = scan_archive(wheel, tag_format="{version}")
    by_class = {e["record"]["errorClass"]: e for e in scan["entries"]}
    entry = by_class["NoCredentialsError"]
    assert entry["record"]["messagePattern"] == "Unable to locate credentials"
    assert entry["record"]["githubUrl"].startswith("https://github.com/acme/botocore/blob/1.44.18/")
    assert entry["qualname"] == "NoCredentialsError"
    text = "An error occurred (NoSuchKey) when calling the GetObject operation: The specified key does not exist."
    assert re.search(by_class["ClientError"]["record"]["messagePattern"], text)


# Jinja's shape: the class raised is what ``__init__`` sets an attribute to (a parameter's default), the
# message one of a property's returns.
JINJA_RUNTIME = textwrap.dedent(
    '''
    missing = object()


    def object_type_repr(obj):
        return "no such element" if obj is missing else f"{type(obj).__name__} object"


    class UndefinedError(Exception):
        """Raised if a template tries to operate on Undefined."""


    class Undefined:
        def __init__(self, hint=None, obj=missing, name=None, exc=UndefinedError):
            self._undefined_hint, self._undefined_obj, self._undefined_name = hint, obj, name
            self._undefined_exception = exc

        @property
        def _undefined_message(self) -> str:
            """Build a message about the undefined value based on how it was accessed."""
            if self._undefined_hint:
                return self._undefined_hint
            if self._undefined_obj is missing:
                return f"{self._undefined_name!r} is undefined"
            if not isinstance(self._undefined_name, str):
                return f"{object_type_repr(self._undefined_obj)} has no element {self._undefined_name!r}"
            return f"{object_type_repr(self._undefined_obj)!r} has no attribute {self._undefined_name!r}"

        def _fail_with_undefined_error(self, *args, **kwargs):
            raise self._undefined_exception(self._undefined_message)
    '''
)


def test_a_raise_reading_its_class_and_message_from_its_own_class(tmp_path):
    """``raise self._undefined_exception(self._undefined_message)``: a record per message the property
    returns, of the class the attribute names; each pattern matches what Python prints."""
    findings, _skipped = find_in_source(JINJA_RUNTIME)
    raised = [f for f in findings if f.qualname.endswith("_fail_with_undefined_error")]
    assert {f.error_class for f in raised} == {"UndefinedError"}
    messages = sorted(render_message(f.parts) for f in raised)
    assert messages == [
        "{object_type_repr(self._undefined_obj)!r} has no attribute {self._undefined_name!r}",
        "{object_type_repr(self._undefined_obj)} has no element {self._undefined_name!r}",
        "{self._undefined_name!r} is undefined",
    ]
    package = tmp_path / "jinjaish"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "runtime.py").write_text(JINJA_RUNTIME)
    records, _report = ingest(package, repo="pallets/jinja")
    namespace: dict = {}
    exec(compile(JINJA_RUNTIME, "runtime.py", "exec"), namespace)  # noqa: S102 - the package written above
    printed = []
    for hint, obj, name in ((None, {}, "iteritems"), (None, namespace["missing"], "user"), (None, [], 3)):
        try:
            namespace["Undefined"](hint, obj, name)._fail_with_undefined_error()
        except namespace["UndefinedError"] as exc:
            printed.append(str(exc))
    assert printed[0] == "'dict object' has no attribute 'iteritems'"
    patterns = [r.message_pattern for r in records if r.error_class == "UndefinedError"]
    for text in printed:
        assert any(re.search(p, text) for p in patterns), text
    # A class-level attribute names the class too.
    level, _ = find_in_source(
        "class E(Exception): pass\nclass A:\n    kind = E\n    def f(self):\n        raise self.kind('bad value here')"
    )
    assert [f.error_class for f in level] == ["E"]
    # A self attribute that is no property nor names a class keeps the raise as it was read.
    plain, _ = find_in_source("class A:\n    def f(self):\n        raise self.kind(f'bad {self.x} value here now')\n")
    assert [(f.error_class, render_message(f.parts)) for f in plain] == [("kind", "bad {self.x} value here now")]
