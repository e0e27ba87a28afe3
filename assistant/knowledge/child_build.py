"""A server's first build, made in a child process: the serving process then reads what it saved.

Why: building an index takes what a server never needs again (the records parsed whole, the embedding
runtime's buffers, the ONNX export's torch in its own grandchild); a process that built its index kept
over a gigabyte for its whole life. Built in a child that exits, the server holds only what it serves
from. The child's progress bars and errors go to the same terminal.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable

from ..settings import Settings

logger = logging.getLogger(__name__)


def build_in_child(
    settings: Settings, build: Callable[[Settings, bool], object], *, show_progress: bool = True
) -> bool:
    """Run ``build(settings, show_progress)`` (a module-level function that builds and saves the index) in a
    child process; ``False`` (with a log line) when the child failed, so the caller builds in its own
    process and raises what is wrong there."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no copy of this one's memory
    child = context.Process(target=build, args=(settings, show_progress), name="errata-build")
    child.start()
    try:
        child.join()
    except BaseException:  # Ctrl+C while building: stop the child too, never leave it running
        child.terminate()
        child.join()
        raise
    if child.exitcode != 0:
        logger.warning("the build in a child process ended with status %s; building in this one", child.exitcode)
        return False
    return True
