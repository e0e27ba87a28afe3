"""How many threads the embedding runtimes use, without importing torch to ask.

Why: the serving path encodes queries with ONNX Runtime and must not load torch just to read or set a
thread count. A serving entry point sets the count here (``configure_serving_threads``); torch gets it
too when it is loaded, now or later (the fallback to the torch model).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

_configured: int | None = None
_CORES = os.cpu_count() or 1  # asked once: each query reads the count, and asking costs ~70 us


def set_threads(count: int) -> None:
    """The thread count for every runtime in this process; torch's too if it is loaded, and numpy's BLAS."""
    global _configured
    _configured = max(1, int(count))
    if "torch" in sys.modules:
        apply_to_torch()
    if "numpy" in sys.modules:
        _limit_blas(_configured)


def _limit_blas(count: int) -> None:
    """numpy's BLAS threads: a query's product with the piece vectors (1,400 x 384) took 2-4 ms with OpenBLAS's
    threads spinning against the other runtimes on two busy cores, 0.1-0.2 ms on one thread."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=count, user_api="blas")


def apply_to_torch() -> None:
    """Give torch the configured count (called once torch is loaded); nothing when none was configured."""
    if _configured is not None:
        import torch

        torch.set_num_threads(_configured)


def thread_count() -> int:
    """The configured count; else torch's own when torch is loaded (a library user's setting); else all cores."""
    if _configured is not None:
        return _configured
    torch = sys.modules.get("torch")
    if torch is not None:
        return int(torch.get_num_threads())
    return _CORES


@contextlib.contextmanager
def all_cores() -> Iterator[None]:
    """Builds use every core even in a serving process (which set one thread for queries); restored after.
    Where no serving count was set (a library user's process), nothing changes."""
    global _configured
    serving = _configured
    if serving is None:
        yield
        return
    try:
        set_threads(_CORES)
        yield
    finally:
        set_threads(serving)
