"""Disk space for files written through memory maps, and the temporary files a dead build left behind.

Why: a memory-mapped file is sparse until its pages are written; on a full disk the kernel can only answer
a write to such a page with SIGBUS, which kills the process (``errata build`` exited 135) before any
``finally`` removes its temporary file. Reserving the blocks first with ``posix_fallocate`` turns a full
disk into an ``OSError`` (ENOSPC) that the caller reports. Temporary files of runs killed anyway (SIGKILL,
power loss) are removed by the next build, which holds the folder's build lock, so no live writer owns them.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
from pathlib import Path

logger = logging.getLogger(__name__)

# What atomic_path (".name.XXXX.tmp") and the snapshot writer (".signals.XXXX", ".signals.old.PID") leave.
_TEMPORARY_RE = re.compile(r"^\..+\.tmp$|^\.signals\.[\w.]+$")


def preallocate(path: Path | str, size: int | None = None) -> None:
    """Reserve disk blocks for the whole of ``path`` (its current size unless ``size`` is given).

    Raises ``OSError`` (ENOSPC) when the disk cannot hold it; a file system without ``fallocate``
    (some network file systems) is left as it is.
    """
    fd = os.open(path, os.O_RDWR)
    try:
        length = os.fstat(fd).st_size if size is None else size
        if length > 0 and hasattr(os, "posix_fallocate"):
            try:
                os.posix_fallocate(fd, 0, length)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):  # not supported here: written as before
                    raise
    finally:
        os.close(fd)


def remove_stale_temporaries(folder: Path) -> list[str]:
    """Remove temporary files and folders that earlier runs left in ``folder``; returns their names.

    Call only while holding the folder's build lock (every writer of the index folder holds it)."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not _TEMPORARY_RE.match(entry.name):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(entry.name)
        except OSError as exc:
            logger.warning("cannot remove the stale temporary %s: %s", entry.path, exc)
    if removed:
        logger.warning("removed %d temporary file(s) left by an interrupted build in %s", len(removed), folder)
    return removed
