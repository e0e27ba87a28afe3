"""Which releases a ``--releases`` SPEC names: ``">=0.23"``, ``"0.27.2,0.28.0"``, ``"last:N"``, ``"minors:N"``
or ``"spread:N"``.

``minors:N`` is the newest release of each of the last N minor versions (``0.27.2``, ``0.28.1``): a few
releases reach years back, and consecutive ones differ where APIs are removed and messages reworded
(a minor release), not where a patch fixes a bug. ``spread:N`` is N releases evenly spaced over a
library's whole history, the newest kept: what finds the older wordings of a raise
(``benchmarks/data/wordings_packages.txt`` was written by it). Pinned lists need no listing; the others ask pip
(``pip index versions``) what the index offers, so the same index options (``--no-index --find-links
DIR``) that download a release also list them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..errors import ConfigurationError

_LAST_RE = re.compile(r"^last:(\d+)$")
_MINORS_RE = re.compile(r"^minors:(\d+)$")
_SPREAD_RE = re.compile(r"^spread:(\d+)$")


def pinned_versions(spec: str) -> list[str] | None:
    """The versions of a comma list of exact versions (``"0.27.2,0.28.0"``), oldest first; else None."""
    items = [item.strip().removeprefix("==") for item in spec.split(",") if item.strip()]
    try:
        versions = [Version(item) for item in items]
    except InvalidVersion:
        return None
    return [str(v) for v in sorted(set(versions))] if versions else None


def list_versions(name: str, pip_args: Sequence[str] = (), pre: bool = False) -> list[str]:
    """Every version the index offers for ``name``, oldest first (``pip index versions``)."""
    command = [sys.executable, "-m", "pip", "index", "versions", name, *pip_args, *(["--pre"] if pre else [])]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    found = re.search(r"^Available versions:\s*(.+)$", result.stdout, re.MULTILINE)
    if result.returncode != 0 or not found:
        why = (result.stderr or result.stdout).strip().splitlines()
        raise ConfigurationError(f"cannot list the releases of {name!r}: {why[-1] if why else 'pip found none'}")
    versions = []
    for item in found.group(1).split(","):
        try:
            versions.append(Version(item.strip()))
        except InvalidVersion:
            continue
    return [str(v) for v in sorted(versions)]


def select_versions(spec: str, available: Sequence[str]) -> list[str]:
    """The versions of ``available`` that ``spec`` names, oldest first (pre-releases only when asked for)."""
    versions = sorted(Version(v) for v in available)
    last = _LAST_RE.match(spec.strip())
    if last:
        final = [v for v in versions if not v.is_prerelease]
        return [str(v) for v in final[-int(last.group(1)) :]] if int(last.group(1)) else []
    minors = _MINORS_RE.match(spec.strip())
    if minors:
        newest: dict[tuple[int, int], Version] = {}
        for v in versions:
            if not v.is_prerelease:
                newest[(v.major, v.minor)] = v  # ascending: the last one seen is the newest
        count = int(minors.group(1))
        return [str(v) for v in sorted(newest.values())[-count:]] if count else []
    spread = _SPREAD_RE.match(spec.strip())
    if spread:
        return spread_versions([str(v) for v in versions if not v.is_prerelease], int(spread.group(1)))
    pinned = pinned_versions(spec)
    if pinned is not None:
        return pinned
    try:
        specifier = SpecifierSet(spec)
    except InvalidSpecifier:
        raise ConfigurationError(
            f"--releases {spec!r} is not a version specifier ('>=0.23'), a comma list ('0.27.2,0.28.0'), 'last:N',"
            " 'minors:N' or 'spread:N'"
        ) from None
    return [str(v) for v in specifier.filter(versions)]


def spread_versions(final: Sequence[str], count: int) -> list[str]:
    """At most ``count`` of ``final`` (oldest first), evenly spaced back from the newest, which is always
    kept: every Nth release, so a library of 470 releases and one of 36 both reach back to their first."""
    if count <= 0 or not final:
        return []
    step = -(-len(final) // count)  # ceiling: never more than count
    return list(final)[::-1][::step][::-1]


def resolve_versions(name: str, spec: str, pip_args: Sequence[str] = ()) -> list[str]:
    """The releases of ``name`` that ``spec`` names, oldest first; asks the index only when it must."""
    pinned = pinned_versions(spec)
    if pinned is not None:
        return pinned
    wants_pre = bool(re.search(r"\d(?:a|b|rc|dev)\d*", spec))
    chosen = select_versions(spec, list_versions(name, pip_args, pre=wants_pre))
    if not chosen:
        raise ConfigurationError(f"no release of {name!r} matches --releases {spec!r}")
    return chosen
