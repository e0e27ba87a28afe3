"""Warnings and log calls made under other names (``assistant/ingest/call_forms.py``): celery's module-level
aliases of a logger's methods, aiohttp's ``warnings`` module kept as a ``__del__`` parameter, transformers'
``logger.warning_once``. Each package is written here, ingested, and also run, so that every record's pattern
is checked against the message Python really logs or warns; the negatives are calls of the same shape that
neither log nor warn."""

from __future__ import annotations

import ast
import logging
import re
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from assistant.ingest.call_forms import call_forms, log_level
from assistant.ingest.extract import find_in_source
from assistant.ingest.raises import ingest

# celery/worker/consumer/consumer.py's shape: the aliases unpacked from a tuple, templates kept in constants.
CONSUMER = textwrap.dedent(
    '''
    import logging

    logger = logging.getLogger(__name__)
    debug, info, warn, error, crit = (logger.debug, logger.info, logger.warning,
                                      logger.error, logger.critical)
    exception = logger.exception

    CONNECTION_ERROR = """\\
    consumer: Cannot connect to %s: %s.
    %s
    """

    UNKNOWN_TASK_ERROR = """\\
    Received unregistered task of type %s.
    The message has been ignored and discarded.

    Did you remember to import the module containing this task?
    """


    def on_connection_error(uri, exc):
        error(CONNECTION_ERROR, uri, exc, "Trying again in 2.00 seconds...")


    def on_unknown_task(name):
        error(UNKNOWN_TASK_ERROR, name, exc_info=False)


    def on_too_many_files():
        crit("Too many open files. Aborting...")


    def on_lost_ack(request):
        warn("Task %s cannot be acknowledged after a connection loss", request)


    def on_decode_failure(exc):
        exception("Cannot decode the message body: %r", exc)


    def on_start():
        info("Connected to the broker and ready to consume")
        debug("Starting the consumer blueprint now")


    def the_same_with_the_logger(uri, exc):
        logger.error(CONNECTION_ERROR, uri, exc, "Trying again in 2.00 seconds...")
    '''
)

# aiohttp/client.py's ``__del__``: the ``warnings`` module kept as a parameter, and the other ways to name it.
CLIENT = textwrap.dedent(
    """
    import warnings
    import warnings as _w
    from warnings import warn as _warn


    class ClientSession:
        def __del__(self, _warnings=warnings):
            _warnings.warn(f"Unclosed client session {self!r}", ResourceWarning, source=self)

        def __repr__(self):
            return "<ClientSession at 0x7f00>"


    class Connector:
        def __del__(self, _warn=warnings.warn):
            _warn("Unclosed connector left behind", ResourceWarning)


    def old_api():
        _w.warn("old_api() is deprecated; use new_api() instead", DeprecationWarning, stacklevel=2)


    def old_timeout():
        _warn("read_timeout is deprecated, use timeout instead")


    def local_import():
        from warnings import warn as deprecated
        deprecated("local_import() will be removed in the next release", FutureWarning)
    """
)

# transformers/utils/logging.py adds level-named methods to ``logging.Logger``; its modules call them.
TRANSFORMERS_LOGGING = textwrap.dedent(
    """
    import functools
    import logging


    def warning_advice(self, *args, **kwargs):
        self.warning(*args, **kwargs)


    @functools.lru_cache(None)
    def warning_once(self, *args, **kwargs):
        self.warning(*args, **kwargs)


    logging.Logger.warning_advice = warning_advice
    logging.Logger.warning_once = warning_once
    """
)
TRANSFORMERS_INIT = textwrap.dedent(
    """
    import logging

    from . import tlogging  # noqa: F401

    logger = logging.getLogger(__name__)


    def check_backends():
        logger.warning_advice(
            "None of PyTorch, TensorFlow >= 2.0, or Flax have been found. Models won't be available and only "
            "tokenizers, configuration and file/data utilities can be used."
        )


    def check_cache(use_cache):
        if use_cache:
            logger.warning_once("`use_cache=True` is incompatible with gradient checkpointing. Setting it off.")
    """
)

# Calls of the same shapes that neither log nor warn.
NEGATIVES = textwrap.dedent(
    """
    import logging
    from mypkg.reporting import error, warn
    from mypkg import warnings_compat as warnings2

    logger = logging.getLogger(__name__)
    report = object()
    fail = report.error
    critical = logger.critical


    def critical(message):
        return message


    def run(ui, _warnings=None):
        error("The import of this module went badly wrong")
        warn("This helper warns through another module's warn")
        fail("A report's error method is not a logger's")
        critical("A function defined after the alias replaces it")
        warnings2.warn("A module named like warnings is not the warnings module")
        _warnings.warn("A parameter without the warnings module as default")
        ui.warn("Some object's warn method is not warnings.warn")
        logger.warning_count("A tally kept on the logger is no way to log")
        logger.error_messages("A store kept on the logger is no way to log")
        logger.info_once("Info is below the levels that become records")
        report.warning_once("Only loggers' level methods count, not any object's")
    """
)


def _package(tmp_path: Path, name: str, modules: dict[str, str]) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text(modules.pop("__init__.py", ""))
    for module, source in modules.items():
        (root / module).write_text(source)
    return root


def _load(root: Path, module: str):
    sys.path.insert(0, str(root.parent))
    try:
        return __import__(f"{root.name}.{module}" if module else root.name, fromlist=["_"])
    finally:
        sys.path.remove(str(root.parent))
        for name in [n for n in sys.modules if n == root.name or n.startswith(root.name + ".")]:
            del sys.modules[name]


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def _at(records, source: str, text: str):
    (record,) = [r for r in records if r.line_number == _line(source, text)]
    return record


def test_module_level_aliases_of_a_logger_s_methods_are_read_as_its_calls(tmp_path, caplog):
    root = _package(tmp_path, "celeryish", {"consumer.py": CONSUMER})
    records, _report = ingest(root, repo="celery/celery")
    module = _load(root, "consumer")
    with caplog.at_level(logging.DEBUG, logger="celeryish.consumer"):
        module.on_connection_error("redis://localhost:6379/0", OSError("Error while reading from socket"))
        module.on_unknown_task("'mytasks.add'")
        module.on_too_many_files()
        module.on_lost_ack("a1b2")
        module.on_decode_failure(ValueError("bad json"))
    logged = caplog.records
    assert [r.levelname for r in logged] == ["ERROR", "ERROR", "CRITICAL", "WARNING", "ERROR"]
    calls = ["error(CONNECTION_ERROR", "error(UNKNOWN_TASK_ERROR", 'crit("Too many', 'warn("Task %s', "exception("]
    for call, entry in zip(calls, logged, strict=True):
        record = _at(records, CONSUMER, call)
        assert record.error_type == "log" and record.error_class == f"logging.{entry.levelname}", call
        assert record.severity == ("warning" if entry.levelname == "WARNING" else entry.levelname.lower())
        assert re.search(record.message_pattern, entry.getMessage()), (record.message_pattern, entry.getMessage())
    # The template's %s are filled by logging, so the pasted lines match (the first line alone: a head).
    connect = _at(records, CONSUMER, "error(CONNECTION_ERROR")
    assert connect.error_message.startswith("consumer: Cannot connect to {uri}: {exc}.")
    pasted = "consumer: Cannot connect to redis://localhost:6379/0: Error while reading from socket: (104, 'x')."
    assert re.search(connect.message_pattern, pasted)
    unknown = _at(records, CONSUMER, "error(UNKNOWN_TASK_ERROR")
    assert unknown.error_message.startswith("Received unregistered task of type {name}.\nThe message has been")
    # info and debug aliases are below the levels that become records.
    assert not [r for r in records if "Connected to the broker" in r.error_message or "blueprint" in r.error_message]


def test_an_alias_makes_the_record_the_logger_call_makes(tmp_path):
    root = _package(tmp_path, "celeryish", {"consumer.py": CONSUMER})
    records, _report = ingest(root, repo="celery/celery")
    alias = _at(records, CONSUMER, "    error(CONNECTION_ERROR")
    direct = _at(records, CONSUMER, "logger.error(CONNECTION_ERROR")
    same = ("error_type", "error_class", "severity", "error_message", "message_pattern", "tags", "solutions")
    assert {f: getattr(alias, f) for f in same} == {f: getattr(direct, f) for f in same}
    assert alias.id != direct.id


def test_the_warnings_module_and_its_warn_under_other_names(tmp_path):
    root = _package(tmp_path, "aiohttpish", {"client.py": CLIENT})
    records, _report = ingest(root, repo="aio-libs/aiohttp")
    module = _load(root, "client")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module.ClientSession()  # dropped at once: CPython runs __del__ here
        module.Connector()
        module.old_api()
        module.old_timeout()
        module.local_import()
    calls = ["_warnings.warn(", '_warn("Unclosed', "_w.warn(", '_warn("read_timeout', 'deprecated("local']
    for call, warning in zip(calls, caught, strict=True):
        record = _at(records, CLIENT, call)
        assert record.error_type == "warning" and record.severity == "warning"
        assert record.error_class == warning.category.__name__, call
        assert re.search(record.message_pattern, str(warning.message)), (record.message_pattern, warning.message)
    session = _at(records, CLIENT, "_warnings.warn(")
    assert session.error_message == "Unclosed client session {self!r}"
    assert re.search(session.message_pattern, "Unclosed client session")


def test_level_named_logger_methods_log_at_their_level(tmp_path, caplog):
    modules = {"__init__.py": TRANSFORMERS_INIT, "tlogging.py": TRANSFORMERS_LOGGING}
    root = _package(tmp_path, "transformersish", modules)
    records, _report = ingest(root, repo="huggingface/transformers")
    module = _load(root, "")
    try:
        with caplog.at_level(logging.WARNING, logger="transformersish"):
            module.check_backends()
            module.check_cache(True)
            module.check_cache(True)  # warning_once: logged once
    finally:  # the package patches logging.Logger, as transformers does: undo it
        del logging.Logger.warning_advice, logging.Logger.warning_once
    assert len(caplog.records) == 2
    for call, entry in zip(["logger.warning_advice(", "logger.warning_once("], caplog.records, strict=True):
        record = _at(records, TRANSFORMERS_INIT, call)
        assert (record.error_type, record.error_class, record.severity) == ("log", "logging.WARNING", "warning")
        assert re.search(record.message_pattern, entry.getMessage())
    advice = _at(records, TRANSFORMERS_INIT, "logger.warning_advice(")
    pasted = (
        "None of PyTorch, TensorFlow >= 2.0, or Flax have been found. Models won't be available and only tokenizers, "
        "configuration and file/data utilities can be used."
    )
    assert re.search(advice.message_pattern, pasted)
    # The helpers' own ``self.warning(*args)`` passes no message: nothing to record there.
    assert not [r for r in records if r.file_path.endswith("tlogging.py")]


def test_calls_of_the_same_shape_that_neither_log_nor_warn_make_no_record():
    findings, _skipped = find_in_source(NEGATIVES)
    assert findings == []
    forms = call_forms(ast.parse(NEGATIVES))
    assert forms.log_functions == {}  # ``critical`` rebound by the def, ``fail`` aliases no logger
    assert forms.warn_functions == set() and forms.warnings_modules == {"warnings"}


@pytest.mark.parametrize(
    ("method", "level"),
    [
        ("error", "error"),
        ("exception", "error"),
        ("warn", "warning"),
        ("warning_once", "warning"),
        ("warning_advice", "warning"),
        ("error_once", "error"),
        ("critical_rank_zero", "critical"),
        ("warning_count", None),
        ("error_call_count", None),
        ("warnings", None),
        ("info_once", None),
        ("errors", None),
        ("error_", None),
    ],
)
def test_log_level_of_a_method_name(method, level):
    assert log_level(method) == level


def test_later_bindings_win_and_warn_names_are_scoped_to_what_was_imported():
    source = textwrap.dedent(
        """
        import logging
        from warnings import warn
        log = logging.getLogger(__name__)
        error = log.error
        from mypkg.ui import warn
        error = log.warning
        [oops, (fatal, _)] = [log.exception, (log.critical, None)]

        def f():
            warn("A warn imported from another module last")
            error("An alias bound again at a lower level")
            oops("A list target is unpacked like a tuple")
            fatal("Nested targets are unpacked too, level critical")
        """
    )
    findings, _skipped = find_in_source(source)
    assert [(f.kind, f.error_class, f.severity) for f in findings] == [
        ("log", "logging.WARNING", "warning"),
        ("log", "logging.ERROR", "error"),
        ("log", "logging.CRITICAL", "critical"),
    ]
