"""The BM25 index over every text field of a large knowledge base, built in a second process meanwhile.

Why: a first start builds the signal index of ~118,000 records in ~35 s on one core, and half of that is
this index (every record's text fields read again, tokenized, indexed) while the machine's second core
waits. A worker process reads the records from their files itself (the shelf's layout tells where each
line is), builds the index as ``SignalIndex.build`` would and saves it; the build reads it back when the
rest is done. Any failure of the worker (a process that cannot start or is killed, a full disk) is logged
and the build makes the index itself, as before.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..storage.shelf import RecordShelf
from .bm25_files import SavedBM25, TokenCorpus
from .signals import all_text

logger = logging.getLogger(__name__)

# Below this many records the index takes a second or two: not worth a process.
PARALLEL_MIN_RECORDS = 20_000
# What the worker reads and writes in its folder.
LAYOUT, INPUTS, INDEX, DONE = "layout.npz", "inputs.json", "bm25_all", "done.json"


def build_and_save(folder: Path) -> int:
    """In the worker: the index over every text field of the records ``folder``'s inputs locate, saved there."""
    import bm25s

    inputs = json.loads((folder / INPUTS).read_text(encoding="utf-8"))
    layout = np.load(folder / LAYOUT)
    patterns = {int(position): pattern for position, pattern in inputs["patterns"].items()}
    shelf = RecordShelf([Path(f) for f in inputs["files"]], layout["places"], layout["ids"], patterns)
    try:
        corpus = TokenCorpus()
        for record in shelf:
            corpus.add(all_text(record))
        index = bm25s.BM25()
        index.index(corpus, show_progress=False)
        index.save(str(folder / INDEX), show_progress=False)
        return len(shelf)
    finally:
        shelf.close()


class AllFieldsInBackground:
    """The worker's index, or the caller's own where it fails: ``result()`` after ``SignalIndex.build``'s pass.

    The worker is ``python -m assistant.retrieval.all_fields_bm25 FOLDER``, a fresh interpreter: a process
    started by ``multiprocessing`` would import the program's main module again, and a script that asks
    errata at its top level, with no ``if __name__ == "__main__"``, would run again in it."""

    def __init__(self, shelf: RecordShelf, work_dir: Path):
        self._count = len(shelf)
        self._folder = Path(tempfile.mkdtemp(prefix=".bm25-all-", dir=work_dir))
        try:
            places, ids = shelf.layout()
            np.savez(self._folder / LAYOUT, places=places, ids=ids)
            inputs = {
                "files": [str(f) for f in shelf.files],
                "patterns": {str(k): v for k, v in shelf.patterns.items()},
            }
            (self._folder / INPUTS).write_text(json.dumps(inputs), encoding="utf-8")
            command = [sys.executable, "-m", __name__, str(self._folder)]
            # This package importable in the worker whether installed or run from its source tree.
            source = str(Path(__file__).resolve().parents[2])
            path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
            env = {**os.environ, "PYTHONPATH": path}
            self._worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        except BaseException:
            shutil.rmtree(self._folder, ignore_errors=True)
            raise

    @classmethod
    def start(cls, shelf: RecordShelf, work_dir: Path) -> AllFieldsInBackground | None:
        """A worker for a large ``shelf`` (None for a small one, or where no process can start)."""
        if len(shelf) < PARALLEL_MIN_RECORDS:
            return None
        try:
            Path(work_dir).mkdir(parents=True, exist_ok=True)
            return cls(shelf, Path(work_dir))
        except (OSError, ValueError) as exc:
            logger.info("building the signal index in one process (%s)", exc)
            return None

    def close(self) -> None:
        """The worker stopped and its folder removed (after ``result``, or where the build failed before)."""
        if self._worker.poll() is None:
            self._worker.kill()
            self._worker.communicate()
        shutil.rmtree(self._folder, ignore_errors=True)

    def result(self) -> SavedBM25 | None:
        """The index the worker built, or None where it failed (the caller builds its own)."""
        try:
            _out, err = self._worker.communicate()
            if self._worker.returncode != 0:
                last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
                raise RuntimeError(f"exit status {self._worker.returncode}: {last[0]}")
            built = json.loads((self._folder / DONE).read_text(encoding="utf-8"))["records"]
            if built != self._count:
                raise RuntimeError(f"the worker read {built} records of {self._count}")
            return SavedBM25.load(self._folder / INDEX, in_memory=True)  # its folder goes next
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            logger.warning("the second process building the signal index failed (%s); building it here", exc)
            return None
        finally:
            self.close()


def main(argv: list[str] | None = None) -> int:
    folder = Path((sys.argv[1:] if argv is None else argv)[0])
    count = build_and_save(folder)
    (folder / DONE).write_text(json.dumps({"records": count}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
