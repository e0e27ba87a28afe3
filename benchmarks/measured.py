"""One process run to the end and measured: wall seconds, its own peak RSS and, when asked, its stdout.

Shared by the benchmarks that time whole processes (startup.py, ecosystem.py).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time


def run_measured(
    command: list[str], *, env: dict[str, str] | None = None, capture: bool = False
) -> tuple[float, int, str]:
    """Wall seconds, peak resident kilobytes of that process alone, and its stdout (``""`` unless
    ``capture``). A failure stops the benchmark with the end of the process's stderr."""
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: progress bars cannot fill it and stall
        started = time.perf_counter()
        stdout = subprocess.PIPE if capture else subprocess.DEVNULL
        process = subprocess.Popen(command, env=env, stdout=stdout, stderr=errors, text=True)
        out = process.stdout.read() if capture else ""
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak RSS
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{command} failed: {errors.read().decode()[-2000:]}")
    return seconds, usage.ru_maxrss, out
