"""Downloading one release's wheel (or, failing that, its sdist) with pip into a cache folder.

A cached archive is reused without asking the index again, so an interrupted build resumes where it
stopped. pip writes into a private temporary folder first and the archive is moved into place whole,
so processes downloading side by side never see half a file.

An sdist is fetched as pip finds it but not prepared (:mod:`.sdist_fetch`): nothing of the release runs.
Every download has a time limit (:data:`DOWNLOAD_TIMEOUT_S`); past it pip and everything it started are
killed, and the release (or its compiled sources) is skipped with the reason in the build's report.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from ..errors import ConfigurationError

ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".zip")
SDIST_SUFFIXES = (".tar.gz", ".zip")
# Beside a binary wheel whose release has no sdist pip could fetch: why, so that it is not asked again.
NO_SDIST_SUFFIX = ".no-sdist"
# Seconds one download may take (pip's wheel download, or finding and fetching an sdist); a release that takes
# longer is skipped and said so. Read at each call, so a caller may change it.
DOWNLOAD_TIMEOUT_S = 180.0
_FETCH_SCRIPT = Path(__file__).with_name("sdist_fetch.py")
_NO_SDIST, _UNSUPPORTED_PIP = 2, 3  # sdist_fetch's exit statuses
_TIMED_OUT = "timed out: "


def default_cache() -> Path:
    """``~/.cache/errata/releases`` (or under ``$XDG_CACHE_HOME``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "errata" / "releases"


def archive_identity(filename: str) -> tuple[str, Version] | None:
    """(canonical name, version) of a wheel or sdist file name; None for anything else."""
    try:
        if filename.endswith(".whl"):
            name, version, _build, _tags = parse_wheel_filename(filename)
            return str(name), version
        if filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
            return str(name), version
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return None


def cached_archive(folder: Path, name: str, version: str) -> Path | None:
    """The archive of ``name==version`` already in ``folder``: a wheel when there is one, else an sdist."""
    if not folder.is_dir():
        return None
    wanted = (str(canonicalize_name(name)), Version(version))
    found = sorted(p for p in folder.iterdir() if p.is_file() and archive_identity(p.name) == wanted)
    wheels = [p for p in found if p.name.endswith(".whl")]
    return (wheels or found or [None])[0]


def download_release(
    name: str,
    version: str,
    cache: Path,
    pip_args: Sequence[str] = (),
    *,
    compiled_sources: bool = False,
    timeout: float | None = None,
) -> Path:
    """The path of ``name==version``'s wheel (or sdist) in ``cache``, downloaded with pip if not there yet.

    An sdist is fetched when no wheel exists, and, with ``compiled_sources``, beside a binary wheel for its
    compiled sources (:func:`download_sdist`). An sdist is fetched, never prepared or built. Each download
    may take ``timeout`` seconds (default :data:`DOWNLOAD_TIMEOUT_S`); a wheel and an sdist that both do not
    come in time raise :class:`ConfigurationError` saying so, and a late sdist of compiled sources is skipped.
    """
    folder = Path(cache).expanduser() / "archives" / str(canonicalize_name(name))
    found = cached_archive(folder, name, version)
    if found is None:
        found = _download(name, version, folder, pip_args, _limit(timeout))
    if compiled_sources and found.name.endswith(".whl") and not found.name.endswith("-any.whl"):
        download_sdist(found, pip_args, timeout=timeout)  # a binary wheel: its compiled sources are in the sdist
    return found


def run_bounded(command: Sequence[str], timeout: float) -> subprocess.CompletedProcess:
    """Run ``command`` with its output captured; past ``timeout`` seconds kill it and every process it started
    (pip's build backends, compilers) and raise :class:`subprocess.TimeoutExpired`."""
    with subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as process:
        try:
            out, err = process.communicate(timeout=max(timeout, 0.001))
        except subprocess.TimeoutExpired:
            _kill_group(process)
            with contextlib.suppress(subprocess.TimeoutExpired):  # a descendant that left the group holds the pipes
                process.communicate(timeout=10)
            raise
    return subprocess.CompletedProcess(list(command), process.returncode, out, err)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)  # its own session: the group is pip and what it started
        else:  # pragma: no cover - Windows
            process.kill()
    except (ProcessLookupError, PermissionError):
        process.kill()


def _limit(timeout: float | None) -> float:
    return DOWNLOAD_TIMEOUT_S if timeout is None else timeout


def sdist_beside(wheel: Path) -> Path | None:
    """The sdist of the same release in the wheel's folder, if one was downloaded."""
    wanted = archive_identity(wheel.name)
    found = [
        p for p in wheel.parent.iterdir() if p.name.endswith(SDIST_SUFFIXES) and archive_identity(p.name) == wanted
    ]
    return sorted(found)[0] if found else None


def no_sdist_reason(wheel: Path) -> str:
    """Why no sdist lies beside ``wheel``: what pip said when asked for it, or that it was not asked."""
    marker = wheel.with_name(wheel.name + NO_SDIST_SUFFIX)
    return marker.read_text(encoding="utf-8").strip() if marker.exists() else "no sdist downloaded"


def download_sdist(wheel: Path, pip_args: Sequence[str] = (), *, timeout: float | None = None) -> Path | None:
    """The sdist of a binary wheel's release, downloaded beside it once; None where the release has wheels
    only, pip could not fetch it or it did not come in ``timeout`` seconds. The reason is kept beside the
    wheel; pip is not asked again, except after a time-out (a slow index is no answer about the release)."""
    found = sdist_beside(wheel)
    marker = wheel.with_name(wheel.name + NO_SDIST_SUFFIX)
    identity = archive_identity(wheel.name)
    if found is None and marker.exists() and marker.read_text(encoding="utf-8").startswith(_TIMED_OUT):
        marker.unlink()
    if found is not None or marker.exists() or identity is None:
        return found
    name, version = identity
    limit = _limit(timeout)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=wheel.parent) as tmp:
        try:
            sdist, reason = fetch_sdist(str(name), str(version), Path(tmp), pip_args, limit)
        except subprocess.TimeoutExpired:
            sdist, reason = None, f"{_TIMED_OUT}the sdist did not come in {limit:g} s (a later run tries again)"
        if sdist is not None:
            target = wheel.parent / sdist.name
            shutil.move(str(sdist), target)
            return target
    marker.write_text(reason + "\n", encoding="utf-8")
    return None


def fetch_sdist(
    name: str, version: str, folder: Path, pip_args: Sequence[str], timeout: float
) -> tuple[Path | None, str]:
    """The sdist of ``name==version`` fetched into ``folder`` as pip finds it, without preparing it
    (:mod:`.sdist_fetch`; ``pip download`` where this pip's internals differ), or None and why not.

    Raises :class:`subprocess.TimeoutExpired` past ``timeout`` seconds, everything it started killed."""
    started = time.monotonic()
    result = run_bounded([sys.executable, str(_FETCH_SCRIPT), name, version, str(folder), *pip_args], timeout)
    if result.returncode == _UNSUPPORTED_PIP:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary=:all:", f"{name}=={version}"]
        result = run_bounded([*command, "-d", str(folder), *pip_args], timeout - (time.monotonic() - started))
    sdists = [p for p in folder.iterdir() if p.name.endswith(SDIST_SUFFIXES)]
    if result.returncode == 0 and sdists:
        return sdists[0], ""
    lines = (result.stderr or result.stdout).strip().splitlines()
    reason = lines[-1] if lines else f"pip exited with {result.returncode}"
    wheels_only = result.returncode == _NO_SDIST or "no matching distribution" in reason.lower()
    return None, ("wheels only: " if wheels_only else "") + reason


def _download(name: str, version: str, folder: Path, pip_args: Sequence[str], timeout: float) -> Path:
    """A wheel of ``name==version`` from pip, else its sdist (fetched, not prepared), into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    errors = []
    with tempfile.TemporaryDirectory(prefix=".download-", dir=folder) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", f"{name}=={version}"]
        try:
            result = run_bounded([*command, "-d", tmp, *pip_args], timeout)
            archives = [p for p in Path(tmp).iterdir() if p.name.endswith(ARCHIVE_SUFFIXES)]
            if result.returncode == 0 and archives:
                target = folder / archives[0].name
                shutil.move(str(archives[0]), target)
                return target
            lines = (result.stderr or result.stdout).strip().splitlines()
            errors.append(lines[-1] if lines else f"pip exited with {result.returncode}")
        except subprocess.TimeoutExpired:
            errors.append(f"{_TIMED_OUT}pip did not fetch a wheel in {timeout:g} s")
    with tempfile.TemporaryDirectory(prefix=".download-", dir=folder) as tmp:
        try:
            sdist, reason = fetch_sdist(name, version, Path(tmp), pip_args, timeout)
        except subprocess.TimeoutExpired:
            sdist, reason = None, f"{_TIMED_OUT}the sdist did not come in {timeout:g} s"
        if sdist is not None:
            target = folder / sdist.name
            shutil.move(str(sdist), target)
            return target
        errors.append(reason)
    raise ConfigurationError(f"cannot download {name}=={version}: {'; '.join(errors)} (skipped)")
