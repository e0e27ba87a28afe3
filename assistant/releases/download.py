"""Downloading one release's wheel (or, failing that, its sdist) with pip into a cache folder.

A cached archive is reused without asking the index again, so an interrupted build resumes where it
stopped. pip writes into a private temporary folder first and the archive is moved into place whole,
so processes downloading side by side never see half a file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
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
SDIST_TIMEOUT_S = 300  # pip prepares an sdist's metadata, which may build it: a release that takes longer is skipped


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
    name: str, version: str, cache: Path, pip_args: Sequence[str] = (), *, compiled_sources: bool = False
) -> Path:
    """The path of ``name==version``'s wheel (or sdist) in ``cache``, downloaded with pip if not there yet.

    An sdist is fetched when no wheel exists, and, with ``compiled_sources``, beside a binary wheel for its
    compiled sources (:func:`download_sdist`; off by default: pip may take minutes to prepare one). Note that
    pip prepares an sdist's metadata, which runs its build backend in an isolated environment; errata itself
    never imports or runs the release.
    """
    folder = Path(cache).expanduser() / "archives" / str(canonicalize_name(name))
    found = cached_archive(folder, name, version)
    if found is None:
        found = _download(name, version, folder, pip_args)
    if compiled_sources and found.name.endswith(".whl") and not found.name.endswith("-any.whl"):
        download_sdist(found, pip_args)  # a binary wheel: its compiled sources are in the sdist
    return found


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


def download_sdist(wheel: Path, pip_args: Sequence[str] = ()) -> Path | None:
    """The sdist of a binary wheel's release, downloaded beside it once; None where the release has wheels
    only or pip could not fetch it (the reason is kept beside the wheel, and pip is not asked again)."""
    found = sdist_beside(wheel)
    marker = wheel.with_name(wheel.name + NO_SDIST_SUFFIX)
    identity = archive_identity(wheel.name)
    if found is not None or marker.exists() or identity is None:
        return found
    name, version = identity
    with tempfile.TemporaryDirectory(prefix=".download-", dir=wheel.parent) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary=:all:", f"{name}=={version}"]
        try:
            result = subprocess.run(
                [*command, "-d", tmp, *pip_args], capture_output=True, text=True, timeout=SDIST_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            marker.write_text(f"pip took over {SDIST_TIMEOUT_S} s to prepare the sdist\n", encoding="utf-8")
            return None
        sdists = [p for p in Path(tmp).iterdir() if p.name.endswith(SDIST_SUFFIXES)]
        if result.returncode == 0 and sdists:
            target = wheel.parent / sdists[0].name
            shutil.move(str(sdists[0]), target)
            return target
    lines = (result.stderr or result.stdout).strip().splitlines()
    reason = lines[-1] if lines else f"pip exited with {result.returncode}"
    marker.write_text(
        ("wheels only: " if "no matching distribution" in reason.lower() else "") + reason + "\n", encoding="utf-8"
    )
    return None


def _download(name: str, version: str, folder: Path, pip_args: Sequence[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    errors = []
    for binary in ("--only-binary=:all:", "--no-binary=:all:"):
        with tempfile.TemporaryDirectory(prefix=".download-", dir=folder) as tmp:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", binary, f"{name}=={version}", "-d", tmp]
            result = subprocess.run([*command, *pip_args], capture_output=True, text=True, timeout=600)
            archives = [p for p in Path(tmp).iterdir() if p.name.endswith(ARCHIVE_SUFFIXES)]
            if result.returncode == 0 and archives:
                target = folder / archives[0].name
                shutil.move(str(archives[0]), target)
                return target
            lines = (result.stderr or result.stdout).strip().splitlines()
            errors.append(lines[-1] if lines else f"pip exited with {result.returncode}")
    raise ConfigurationError(f"cannot download {name}=={version}: {'; '.join(errors)}")
