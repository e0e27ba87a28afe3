"""The pytest plugin (entry point ``pytest11``): ``pytest --errata`` adds errata's answer to each failure.

Off unless ``--errata`` is given. Each failing test's report gets an ``errata`` section: the answer for
its exception, or one line when no record matches. An error seen before (same class and message) is
not looked up again. Nothing errata does can fail the run: a failure of errata's own is a one-line note
in the section, and the Assistant, made on the first failure, is not retried after it failed to load.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import pytest

SECTION = "errata"
# Characters of the exception's message that tell one error from another.
_KEY_CHARS = 500
_RUNNER_MODULES = ("_pytest", "pluggy", "pytest")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("errata", "errata: answers for Python errors")
    group.addoption(
        "--errata",
        action="store_true",
        default=False,
        help="explain each failing test's exception from errata's knowledge base (offline by default)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("errata", default=False):
        config.pluginmanager.register(ErrataReporter(), "errata-reporter")


class ErrataReporter:
    """Adds the section to failing reports; remembers answers by error so each is computed once."""

    def __init__(self) -> None:
        self.sections: dict[tuple[str, str], str] = {}
        self.failures = 0
        self.broken: str | None = None  # why errata could not load, once it failed

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]):
        report = yield
        excinfo = call.excinfo
        if report.failed and excinfo is not None and isinstance(excinfo.value, Exception):
            self.failures += 1
            report.sections.append((SECTION, self.section_for(excinfo.value, excinfo.tb)))
        return report

    def section_for(self, exc: BaseException, tb: TracebackType | None) -> str:
        key = (f"{type(exc).__module__}.{type(exc).__qualname__}", str(exc)[:_KEY_CHARS])
        if key not in self.sections:
            self.sections[key] = self._explain(exc, tb)
        return self.sections[key]

    def _explain(self, exc: BaseException, tb: TracebackType | None) -> str:
        if self.broken:
            return f"errata could not explain this failure ({self.broken})"
        try:
            from .explain import explain_exception, shared_assistant

            try:
                assistant = shared_assistant()
            except Exception as failure:
                self.broken = f"{type(failure).__name__}: {failure}"
                raise
            from .local_context import without_leading

            # From the test's own frames: pytest's and pluggy's that called it are not part of the error.
            explanation = explain_exception(exc, assistant, without_leading(tb, _RUNNER_MODULES))
        except Exception as failure:  # noqa: BLE001 - errata must never fail the test run
            return f"errata could not explain this failure ({type(failure).__name__}: {failure})"
        return explanation.render(code=False) if explanation.matched else explanation.one_line()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.failures:
            terminalreporter.write_line(
                f"errata: explained {self.failures} failure(s), {len(self.sections)} distinct error(s)"
            )
