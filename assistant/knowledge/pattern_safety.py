"""Whether a record's ``messagePattern`` runs in bounded time: checked once, when the record is loaded.

Why: a pattern such as ``(\\w+\\s?)+$`` backtracks exponentially on a text that almost matches; at query
time it cost 0.27 s before it was dropped, and the warning did not say which record to fix. Nested
unbounded quantifiers (and three or more unbounded repeats in a row, polynomial) are found statically;
only such patterns are then tried on texts made to almost match them (runs of the pattern's own
characters, as long as a query's text can be), each with a CPU budget. A pattern that exceeds it is
rejected as a malformed record, naming the file and line like any other problem. The bundled 832
patterns have no nested quantifier, so loading them costs one parse each.
"""

from __future__ import annotations

import functools
import itertools
import time

import regex

try:  # Python 3.11+
    from re import _constants as sre_constants
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

# CPU seconds a trial search may use: five times a query's budget, so a pattern that is merely quadratic
# on 4,000 repeated characters (fastapi's validation-error pattern takes ~0.05 s) is never rejected by the
# luck of a busy machine, while an exponential one (which runs for hours) always is.
TRIAL_CPU_S = 0.25
TRIAL_CHARS = 4_000  # as long as the text a query's patterns search (retrieval.matching.PATTERN_TEXT_CHARS)
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)}
_FILLERS = "a .0-/_:"


def _risky(items, inside_repeat: bool = False) -> tuple[bool, int]:
    """(whether an unbounded repeat sits inside another repeat, how many unbounded repeats there are)."""
    nested, count = False, 0
    for op, arg in items:
        children: list = []
        repeat = False
        if op in _REPEATS:
            low, high, body = arg
            repeat = high > 1
            count += int(high == sre_constants.MAXREPEAT)
            nested |= repeat and inside_repeat
            children = [body]
        elif op is sre_constants.SUBPATTERN:
            children = [arg[-1]]
        elif op is sre_constants.BRANCH:
            children = list(arg[1])
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            children = [arg[1]]
        for child in children:
            child_nested, child_count = _risky(child, inside_repeat or repeat)
            nested |= child_nested
            count += child_count
    return nested, count


def _literals(items, out: set[str]) -> None:
    for op, arg in items:
        if op is sre_constants.LITERAL:
            out.add(chr(arg))
        elif op in _REPEATS:
            _literals(arg[2], out)
        elif op is sre_constants.SUBPATTERN:
            _literals(arg[-1], out)
        elif op is sre_constants.BRANCH:
            for branch in arg[1]:
                _literals(branch, out)


def _trial_texts(items) -> list[str]:
    """Runs of one or two characters the pattern uses, ending in a character that breaks the match."""
    found: set[str] = set()
    _literals(items, found)
    chars = sorted(found)[:8] + list(_FILLERS)
    texts = [c * TRIAL_CHARS + "\x00" for c in chars]
    texts += [(a + b) * (TRIAL_CHARS // 2) + "\x00" for a, b in itertools.permutations(chars, 2)]
    return texts


def _over_budget(compiled, text: str) -> bool:
    wall = TRIAL_CPU_S
    while True:
        started = time.thread_time()
        try:
            compiled.search(text, timeout=wall)
            return time.thread_time() - started >= TRIAL_CPU_S  # finished, but only just
        except TimeoutError:
            if time.thread_time() - started >= TRIAL_CPU_S:
                return True
            if wall >= 2.0:  # a machine too busy to tell: give the pattern the benefit of the doubt
                return False
            wall *= 4


@functools.lru_cache(maxsize=4096)
def unbounded_reason(pattern: str) -> str | None:
    """Why ``pattern`` cannot be searched in bounded time, or ``None`` when it can (or cannot be told)."""
    try:
        items = sre_parse.parse(pattern)
    except (Exception, RecursionError):  # noqa: BLE001 - a syntax only the regex module knows: not checked
        return None
    nested, count = _risky(items)
    if not nested and count < 3:
        return None
    try:
        compiled = regex.compile(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError):
        return None  # reported by the compile check
    for text in _trial_texts(items):
        if _over_budget(compiled, text):
            sample = text[:2] if text[:1] != text[1:2] else text[:1]
            return (
                f"backtracks for over {TRIAL_CPU_S:g} s of CPU on a text of {sample!r} repeated (nested or"
                " repeated quantifiers); rewrite it so each character can be matched one way only"
            )
    return None
