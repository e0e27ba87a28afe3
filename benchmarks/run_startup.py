"""What ``errata run`` adds to a script that succeeds: ``python ok.py`` and ``errata run ok.py`` side by side.

Runs alternate (python, errata, python, errata, ...) so that load on the machine hits both alike; prints
the median wall time of each and the difference. ``--runs N`` (default 9).

    python benchmarks/run_startup.py --runs 9
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "ok.py"
        script.write_text("import json\nprint(json.dumps({'ok': True}))\n")
        commands = {
            "python ok.py": [sys.executable, str(script)],
            "python -m assistant run ok.py": [sys.executable, "-m", "assistant", "run", str(script)],
        }
        if shutil.which("errata"):
            commands["errata run ok.py"] = [shutil.which("errata"), "run", str(script)]
        for command in commands.values():  # warm the file cache
            timed(command, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, command in commands.items():
                times[name].append(timed(command, env))
    base = statistics.median(times["python ok.py"])
    for name, values in times.items():
        median = statistics.median(values)
        extra = f"  (+{(median - base) * 1000:.0f} ms)" if name != "python ok.py" else ""
        print(f"{name:32s} median {median * 1000:6.0f} ms over {len(values)} runs{extra}")


if __name__ == "__main__":
    main()
