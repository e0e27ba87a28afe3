"""A serving process limits every runtime's threads, numpy's BLAS too, and a build gets all cores back."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = """
import json, os
from threadpoolctl import threadpool_info
from assistant import Settings
from assistant.api import configure_serving_threads
from assistant.embedding.threads import all_cores

def blas():
    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")

before = blas()
configure_serving_threads(Settings.load(env={"ERRATA_SERVE_THREADS": "1"}))
serving = blas()
with all_cores():
    building = blas()
print(json.dumps({"before": before, "serving": serving, "building": building, "after": blas()}))
"""


@pytest.mark.slow
def test_serving_limits_numpys_blas_threads_and_a_build_restores_them():
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    counts = json.loads(out.stdout.strip().splitlines()[-1])
    assert counts["before"] == 2  # numpy's own setting until a serving process limits it
    assert counts["serving"] == 1 and counts["after"] == 1
    assert counts["building"] == min(2, os.cpu_count() or 1)  # all cores, within what OpenBLAS was started with
