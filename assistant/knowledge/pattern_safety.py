"""Whether a record's ``messagePattern`` runs in bounded time: checked once, when the record is loaded.

Why: a pattern such as ``(\\w+\\s?)+$`` backtracks exponentially on a text that almost matches; at query
time it cost 0.27 s before it was dropped, and the warning did not say which record to fix. Nested
unbounded quantifiers (and three or more unbounded repeats in a row, polynomial) are found statically;
only such patterns are then tried on texts made to almost match them (runs of the pattern's own
characters, as long as a query's text can be), each with a CPU budget. A pattern that exceeds it is
rejected as a malformed record, naming the file and line like any other problem. The bundled 832
patterns have no nested quantifier, so loading them costs one parse each. The trial texts start with what
the pattern itself begins with (``Agent interrupted (a|aa)+$`` backtracks only behind its literal prefix),
and an alternation inside a repeat counts as nested (``(a|aa)+``: one text, many ways to match it).

An alternation under a repeat whose branches match the same text (``(?:a|a)+$``, ``(?:[a-c]|[b-d])+$``) is
refused without a trial: a run of such characters splits into exponentially many ways. Python's parser hides
some of these (it folds single-character branches into one class, which matches one way), while the ``regex``
module the matcher runs tries each branch; so the branches are read as written (:func:`_unfolded`).

What a pattern costs to compile is bounded too: the ``regex`` module writes a counted repeat out in full,
so ``(?:ab){4294967294}`` took 12.7 GB and ``x{4000000}`` 1 GB. Repeat counts over :data:`MAX_REPEAT` and
patterns whose written-out size is over :data:`MAX_PATTERN_SIZE` are rejected before anything compiles them.
"""

from __future__ import annotations

import functools
import itertools
import re
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
# A counted repeat (``{n}``, ``{m,n}``) may say at most this many: the bundled patterns say at most 8.
MAX_REPEAT = 1_000
# Parts a pattern may have once its counted repeats are written out (``(?:ab){100}`` has 200): about 5 MB
# once compiled. The longest of 68,000 release-built patterns has ~3,300.
MAX_PATTERN_SIZE = 20_000
# Characters tried where a pattern wants one from a set, in this order (see _sample).
_SAMPLES = "a0 -_x.:/A"


def _risky(items, inside_repeat: bool = False) -> tuple[bool, int]:
    """(whether an unbounded repeat or an alternation sits inside a repeat, how many unbounded repeats there
    are)."""
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
        else:
            children = _children(op, arg)
            nested |= inside_repeat and op is sre_constants.BRANCH  # (a|aa)+: a run of a's splits many ways
        for child in children:
            child_nested, child_count = _risky(child, inside_repeat or repeat)
            nested |= child_nested
            count += child_count
    return nested, count


# A counted repeat over this many is a run as long as an unbounded one, for an alternation's ways to split it.
_MANY = 20
# Characters an overlap of two one-character branches is looked for in, besides those next to what they name.
_PROBES = [chr(c) for c in range(128)] + list("\u00a0\u00e9\u0130\u0660\u2028\u212a\uff10")


def _unfolded(pattern: str) -> str:
    """``pattern`` with an empty lookahead ``(?=)`` opening each branch but the first of every alternation:
    the parser then keeps the branches apart (it folds ``(?:[a-c]|[b-d])`` into the one class ``[a-d]``, and
    ``(?:a|a)`` into ``a(?:|)``). The same text is matched; only :func:`_ambiguous_reason` reads it."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        char = pattern[i]
        step = 1
        if char == "\\":
            step = 2
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            step += pattern.startswith("^", i + step)
            step += pattern.startswith("]", i + step)  # a ']' first in a class is one of its characters
        elif pattern.startswith("(?#", i):
            step = (pattern.find(")", i) + 1 or len(pattern) + 1) - i
        elif char == "|":
            out.append("|(?=)")
            i += 1
            continue
        out.append(pattern[i : i + step])
        i += step
    return "".join(out)


def _shape(items) -> tuple:
    """A parsed pattern as nested tuples, comparable with ``==``: without the lookaheads :func:`_unfolded`
    added, nor group numbers (``(a)|(a)`` has two branches alike)."""
    out = []
    for op, arg in items:
        if op is sre_constants.ASSERT and not arg[1]:
            continue
        if op is sre_constants.SUBPATTERN:
            out.append((op, arg[1], arg[2], _shape(arg[3])))
        elif op in _REPEATS:
            out.append((op, arg[0], arg[1], _shape(arg[2])))
        elif op is sre_constants.BRANCH:
            out.append((op, tuple(_shape(branch) for branch in arg[1])))
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            out.append((op, arg[0], _shape(arg[1])))
        else:
            out.append((op, _frozen(arg)))
    return tuple(out)


def _frozen(value):
    if isinstance(value, sre_parse.SubPattern):
        value = value.data
    return tuple(_frozen(v) for v in value) if isinstance(value, (list, tuple)) else value


def _one_character(shape: tuple):
    """What a branch matches when it is one character (a test of it), else ``None``."""
    if len(shape) != 1:
        return None
    op, arg = shape[0]
    if op is sre_constants.LITERAL:
        return lambda c: ord(c) == arg
    if op is sre_constants.NOT_LITERAL:
        return lambda c: ord(c) != arg
    if op is sre_constants.ANY:
        return lambda c: c != "\n"
    if op is sre_constants.IN:
        return lambda c: _in_set(c, arg)
    return None


def _near(shape: tuple) -> set[str]:
    """The characters a one-character branch names, and their neighbours (``[a-c]`` and ``[^ac]`` share ``b``)."""
    values: list[int] = []
    for op, arg in _frozen(shape[0][1]) if shape[0][0] is sre_constants.IN else [shape[0]]:
        if op in (sre_constants.LITERAL, sre_constants.NOT_LITERAL):
            values.append(arg)
        elif op is sre_constants.RANGE:
            values += list(arg)
    return {chr(v + d) for v in values for d in (-1, 0, 1) if 0 <= v + d < 0x110000}


def _literal(shape: tuple) -> str | None:
    """The text a branch of only literal characters matches, else ``None``."""
    if not shape or any(op is not sre_constants.LITERAL for op, _arg in shape):
        return None
    return "".join(chr(arg) for _op, arg in shape)


def _alike(first: tuple, second: tuple) -> str | None:
    """A text both branches match, when the two are alike or one-character tests that overlap; or a text two
    runs of them match, when both are literals that commute (``a`` and ``aa``: ``a`` + ``aa`` is ``aa`` + ``a``,
    so a run of ``a`` splits as many ways as ``(a|a)+`` splits it)."""
    if first == second:
        return "both match the same text"
    words = _literal(first), _literal(second)
    if None not in words and words[0] + words[1] == words[1] + words[0]:
        x, y = words
        return f"match {x + y!r} two ways ({x!r} + {y!r}, {y!r} + {x!r})"
    tests = _one_character(first), _one_character(second)
    if None in tests:
        return None
    for char in sorted(set(_PROBES) | _near(first) | _near(second)):
        if tests[0](char) and tests[1](char):
            return f"both match {char!r}"
    return None


def _ambiguous_reason(items, repeated: bool = False) -> str | None:
    """Why an alternation inside a repeat of many (``items`` parsed from :func:`_unfolded`) splits a run
    exponentially many ways: two of its branches match the same text; ``None`` when none does."""
    for op, arg in items:
        if op in _REPEATS:
            inner = repeated or arg[1] > _MANY
            found = _ambiguous_reason(arg[2], inner)
            if found:
                return found
            continue
        if op is sre_constants.BRANCH and repeated:
            shapes = [_shape(branch) for branch in arg[1]]
            for first, second in itertools.combinations(shapes, 2):
                both = _alike(first, second)
                if both:
                    return (
                        f"repeats an alternation two of whose branches {both}, so a run of such text"
                        " splits exponentially many ways; merge them (one character class) or make them exclusive"
                    )
        for child in _children(op, arg):
            found = _ambiguous_reason(child, repeated)
            if found:
                return found
    return None


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


def _trial_texts(items, nested: bool) -> list[tuple[str, str]]:
    """Runs of one or two characters the pattern uses, ending in a character that breaks the match; for a
    ``nested`` pattern (the exponential kind) the runs of one character again behind what the pattern
    matches before its first nested repeat. Each with its words.

    Only nested patterns get the prefixed runs: behind its prefix a merely polynomial pattern (three ``(.+?)``)
    runs for real on every run, which doubled the time 68,000 release-built patterns take to check."""
    found: set[str] = set()
    _literals(items, found)
    chars = sorted(found)[:8] + list(_FILLERS)
    texts = [(c * TRIAL_CHARS + "\x00", f"{c!r} repeated") for c in chars]
    texts += [
        ((a + b) * (TRIAL_CHARS // 2) + "\x00", f"{a + b!r} repeated") for a, b in itertools.permutations(chars, 2)
    ]
    first = next((i for i, item in enumerate(items) if _risky([item])[0]), 0)
    prefix = _sample(items[:first])
    if prefix and nested:
        texts += [(prefix + c * TRIAL_CHARS + "\x00", f"{prefix!r} then {c!r} repeated") for c in chars]
    return texts


def _sample(items) -> str:
    """A short text the parsed pattern ``items`` matches, as far as can be told without running it."""
    out = []
    for op, arg in items:
        if op is sre_constants.LITERAL:
            out.append(chr(arg))
        elif op is sre_constants.NOT_LITERAL:
            out.append("a" if arg != ord("a") else "b")
        elif op is sre_constants.ANY:
            out.append("a")
        elif op is sre_constants.IN:
            out.append(next((c for c in _SAMPLES if _in_set(c, arg)), "a"))
        elif op in _REPEATS:
            out.append(_sample(arg[2]) * min(arg[0], 50))
        elif op is sre_constants.SUBPATTERN:
            out.append(_sample(arg[-1]))
        elif op is sre_constants.BRANCH:
            out.append(_sample(arg[1][0]))
    return "".join(out)[:400]


_CATEGORIES = {
    sre_constants.CATEGORY_DIGIT: str.isdigit,
    sre_constants.CATEGORY_SPACE: str.isspace,
    sre_constants.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
}


def _in_set(char: str, members) -> bool:
    """Whether ``char`` is in a parsed character set (``[^a-z\\d]``)."""
    negate = bool(members) and members[0][0] is sre_constants.NEGATE
    found = False
    for op, arg in members:
        if op is sre_constants.LITERAL:
            found |= ord(char) == arg
        elif op is sre_constants.RANGE:
            found |= arg[0] <= ord(char) <= arg[1]
        elif op is sre_constants.CATEGORY:
            name = str(arg)
            test = _CATEGORIES.get(getattr(sre_constants, name.replace("NOT_", ""), None))
            found |= test is not None and test(char) != ("NOT_" in name)
    return found != negate


def _children(op, arg) -> list:
    if op is sre_constants.SUBPATTERN:
        return [arg[-1]]
    if op is sre_constants.BRANCH:
        return list(arg[1])
    if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        return [arg[1]]
    return []


def _size_and_repeat(items) -> tuple[int, int]:
    """(the parts ``items`` have with counted repeats written out, the largest count a repeat says)."""
    size = largest = 0
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            said = low if high == sre_constants.MAXREPEAT else high
            body_size, body_largest = _size_and_repeat(body)
            size += max(said, 1) * body_size
            largest = max(largest, said, body_largest)
            continue
        size += 1
        for child in _children(op, arg):
            child_size, child_largest = _size_and_repeat(child)
            size += child_size
            largest = max(largest, child_largest)
    return size, largest


def too_large_reason(items) -> str | None:
    """Why a parsed pattern would take too much memory to compile (its counted repeats written out)."""
    size, largest = _size_and_repeat(items)
    if largest > MAX_REPEAT:
        return f"repeats a part {largest} times, over the limit of {MAX_REPEAT}; use + or * for a run of any length"
    if size > MAX_PATTERN_SIZE:
        return f"too large once its repeats are written out ({size} parts, over the limit of {MAX_PATTERN_SIZE})"
    return None


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
    """Why ``pattern`` cannot be compiled and searched in bounded time and memory, or ``None`` when it can (or
    cannot be told)."""
    try:
        items = sre_parse.parse(pattern)
    except (Exception, RecursionError):  # noqa: BLE001 - a syntax only the regex module knows: not checked
        return None
    large = too_large_reason(items)
    if large:
        return large
    if "|" in pattern:
        try:
            ambiguous = _ambiguous_reason(sre_parse.parse(_unfolded(pattern)))
        except (Exception, RecursionError):  # noqa: BLE001 - unfolding broke a syntax it does not know: not checked
            ambiguous = None
        if ambiguous:
            return ambiguous
    nested, count = _risky(items)
    if not nested and count < 3:
        return None
    try:
        compiled = regex.compile(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError):
        return None  # reported by the compile check
    for text, words in _trial_texts(items, nested):
        if _over_budget(compiled, text):
            return (
                f"backtracks for over {TRIAL_CPU_S:g} s of CPU on a text of {words} (nested or"
                " repeated quantifiers); rewrite it so each character can be matched one way only"
            )
    return None


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is no usable ``messagePattern``: it does not compile, or cannot be searched in bounded
    time and memory (:func:`unbounded_reason`); None when it is."""
    reason = unbounded_reason(pattern)  # first: the memory bound holds before anything compiles it whole
    if reason:
        return reason
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:  # a{99999999999}: OverflowError
        return f"does not compile as a Python regex ({exc})"
    return None
