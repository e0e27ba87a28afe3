"""Writing files safely: the one atomic replacement helper, a build lock, and size plus checksum checks."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import IndexBuildError
from .space import remove_stale_temporaries

CHECKSUM_LIMIT = 256 * 1024 * 1024  # larger files are checked by size only


def _default_mode() -> int:
    """What ``open()`` would give a new file here: 0o666 less the process's umask (read once, at import,
    since reading it means setting it)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


DEFAULT_MODE = _default_mode()


@contextlib.contextmanager
def atomic_path(final: Path, *, mode: int | None = None) -> Iterator[Path]:
    """A temporary path beside ``final``, flushed to disk and renamed onto it when the block succeeds, so a
    crash leaves the old file or the new one, never half of one; the temporary file is removed either way.
    ``mode``: permissions of the result; by default those of any new file (the temporary file itself is
    private to its owner until then, as ``mkstemp`` makes it)."""
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, DEFAULT_MODE if mode is None else mode)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def build_lock(index_dir: Path) -> Iterator[None]:
    """Serialize builds of one folder across processes (two servers starting at once)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        handle = open(index_dir / ".lock", "a+")  # noqa: SIM115 - held for the block
    except OSError as exc:
        raise IndexBuildError(f"cannot use index folder {index_dir}: {exc}") from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            remove_stale_temporaries(index_dir)  # a dead run's; every live writer holds this lock
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def describe_file(path: Path) -> dict[str, Any]:
    size = path.stat().st_size
    return {"size": size, "sha256": sha256_file(path) if size <= CHECKSUM_LIMIT else None}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_matches(path: Path, expected: dict[str, Any] | None) -> bool:
    if not expected or not path.exists() or path.stat().st_size != expected.get("size"):
        return False
    return expected.get("sha256") is None or sha256_file(path) == expected["sha256"]
