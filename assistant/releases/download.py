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


def download_release(name: str, version: str, cache: Path, pip_args: Sequence[str] = ()) -> Path:
    """The path of ``name==version``'s wheel (or sdist) in ``cache``, downloaded with pip if not there yet.

    An sdist is only fetched when no wheel exists. Note that pip prepares an sdist's metadata, which runs
    its build backend in an isolated environment; errata itself never imports or runs the release.
    """
    folder = Path(cache).expanduser() / "archives" / str(canonicalize_name(name))
    found = cached_archive(folder, name, version)
    if found is not None:
        return found
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
