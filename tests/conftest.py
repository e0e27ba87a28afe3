"""Shared fixtures: the real bundled records, the real MiniLM model, real FAISS files in temp folders."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from assistant import Assistant, Settings
from assistant.embedding.embedder import Embedder
from assistant.settings import BUNDLED_EVAL_DIR, BUNDLED_KB_DIR, TORCH_EMBEDDER

# The tests measure the curated records' behaviour; the shipped release-built records (90,000 of them, a
# minute to load on two cores) join only where a test asks for them (``release_records=True``, or
# ERRATA_RELEASE_RECORDS=true for a subprocess). Set here so subprocesses started by tests inherit it.
os.environ["ERRATA_RELEASE_RECORDS"] = "false"

# The dev set as bundled beside the knowledge base (``errata refresh-kb`` copies it from ../shared/kb/eval),
# so a clone alone runs every test.
DEV_SET = BUNDLED_EVAL_DIR / "dev.jsonl"


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The default embedder (the bundled MiniLM, int8, on ONNX Runtime), loaded once for the whole run."""
    return Embedder()


@pytest.fixture(scope="session")
def float_embedder() -> Embedder:
    """The same weights run by sentence-transformers in float: what faster runtimes are compared with, and
    whose vectors do not depend on their batch (int8 activations are scaled per batch)."""
    return Embedder(TORCH_EMBEDDER)


@pytest.fixture(scope="session")
def bundled_index_dir() -> Path:
    """A real index of the bundled records, kept between runs in the temp folder.

    The first run builds it (about 20 s); later runs find it up to date, or update it when records or
    the embedded text changed. Tests of building itself use fresh folders of their own.
    """
    return Path(tempfile.gettempdir()) / f"errata-test-bundled-index-{os.getuid()}"


@pytest.fixture(scope="session")
def assistant(embedder, bundled_index_dir) -> Assistant:
    """An Assistant over the bundled knowledge base, its index built once into a temp folder."""
    settings = Settings.load(env={}, index_dir=bundled_index_dir, release_records=False)
    return Assistant(settings, embedder=embedder)


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory) -> Path:
    """One ONNX export for the session: the ONNX Runtime and OpenVINO tests reuse it (exporting takes ~10 s)."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture
def slack():
    """A local server speaking Slack's Web API (tests/slack_server.py), closed after the test."""
    from .slack_server import FakeSlack

    fake = FakeSlack()
    yield fake
    fake.close()


@pytest.fixture
def small_kb(tmp_path) -> Path:
    """A private copy of two bundled record files (~60 records), safe to edit."""
    kb = tmp_path / "kb"
    kb.mkdir()
    for name in ("huggingface__smolagents.jsonl", "ollama__ollama-python.jsonl"):
        shutil.copy(BUNDLED_KB_DIR / name, kb / name)
    return kb


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_lines(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def ingested_line(rid: str, repo: str, cls: str, message: str, pattern: str, path: str, line: int) -> dict:
    """A release-built record's line: the fields a raise read from source has."""
    return {
        "record": {
            "id": rid,
            "repo": repo,
            "slug": rid,
            "errorMessage": message,
            "messagePattern": pattern,
            "errorClass": cls,
            "errorType": "exception",
            "filePath": path,
            "lineNumber": line,
            "documentation": f"{path} raises {cls} here.",
            "solutions": ["Read the check."],
            "tags": ["ingested", "extracted"],
        }
    }
