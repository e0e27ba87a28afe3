"""Damaged index files and a full disk: real files cut, emptied and overwritten, a real small file system filled.
Every case must end in the right answer (after a rebuild with a warning) or a clear error, never a wrong one."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, Settings
from assistant.knowledge.knowledge_base import SNAPSHOT_DIR
from assistant.storage.checksums import DamagedFolderError, record_checksums, verify_checksums

REPO = Path(__file__).resolve().parents[1]
INTERRUPTED = "smolagents.utils.AgentError: Agent interrupted."
INTERRUPTED_ID = "c6aeeba10bb30da8"


@pytest.fixture(scope="session")
def whole_index(assistant, bundled_index_dir, tmp_path_factory, embedder) -> Path:
    """The bundled index made private once: its vector files copied, the snapshot written by this code (the
    shared folder's snapshot may be rewritten at any time by test runs of other checkouts)."""
    target = tmp_path_factory.mktemp("whole") / "index"
    target.mkdir()
    for name in ("manifest.json", "embeddings.npy", "vectors.faiss", "pieces.npy", "pieces.json"):
        shutil.copy(bundled_index_dir / name, target / name)
    _start(target, embedder)
    assert _start(target, embedder).build_report.reason == "up to date (snapshot)"
    return target


@pytest.fixture
def index_copy(whole_index, tmp_path) -> Path:
    """A private copy of the bundled index (vectors and snapshot), safe to damage."""
    target = tmp_path / "index"
    shutil.copytree(whole_index, target, ignore=shutil.ignore_patterns(".lock"))
    return target


def _start(index_dir: Path, embedder, **overrides) -> Assistant:
    return Assistant(Settings.load(env={}, release_records=False), index_dir=index_dir, embedder=embedder, **overrides)


def _assert_right_answer(assistant: Assistant) -> None:
    answer = assistant.ask(INTERRUPTED)
    assert answer.hits[0].record.id == INTERRUPTED_ID
    assert answer.confidence > 0.9


def test_the_second_half_of_a_bm25_matrix_overwritten_is_found_and_rebuilt(index_copy, embedder, caplog):
    path = index_copy / SNAPSHOT_DIR / "bm25_all" / "data.csc.index.npy"
    size = path.stat().st_size
    with open(path, "r+b") as handle:  # the header stays valid; the data is other numbers
        handle.seek(size // 2)
        handle.write(np.random.default_rng(0).integers(0, 2**31, (size - size // 2) // 4, dtype=np.int32).tobytes())
    with caplog.at_level(logging.WARNING):
        again = _start(index_copy, embedder)
    assert not again.build_report.reason.endswith("(snapshot)")
    assert any("holds other bytes" in r.getMessage() for r in caplog.records)
    _assert_right_answer(again)
    assert _start(index_copy, embedder).build_report.reason == "up to date (snapshot)"  # rewritten, whole


@pytest.mark.parametrize(
    "name", ["places.npy", "ids.npy", "literals.npy", "pattern_always.npy", "bm25_message/data.csc.index.npy"]
)
def test_a_zero_length_npy_is_rebuilt_with_a_warning(index_copy, embedder, caplog, name):
    (index_copy / SNAPSHOT_DIR / name).write_bytes(b"")
    with caplog.at_level(logging.WARNING):
        again = _start(index_copy, embedder)
    assert any("snapshot" in r.getMessage() and "unusable" in r.getMessage() for r in caplog.records)
    _assert_right_answer(again)


def test_every_npy_of_the_snapshot_emptied_at_once_still_starts(index_copy, embedder):
    for path in (index_copy / SNAPSHOT_DIR).rglob("*.npy"):
        path.write_bytes(b"")
    _assert_right_answer(_start(index_copy, embedder))


def test_damaged_data_behind_a_valid_header_is_rebuilt(index_copy, embedder):
    path = index_copy / SNAPSHOT_DIR / "message_words.positions.npy"
    array = np.load(path)
    np.save(path, np.full_like(array, 7))  # a well-formed array of the right shape, wrong content
    _assert_right_answer(_start(index_copy, embedder))


@pytest.mark.slow
@pytest.mark.parametrize("content", ["[]", "3", '"text"', "null", "{"])
def test_a_manifest_that_is_not_an_object_rebuilds(small_kb, tmp_path, embedder, content, caplog):
    """On two record files (a rebuild re-embeds every record: the whole bundled set would take minutes)."""
    index_dir = tmp_path / "index"
    Assistant(Settings.load(env={}), kb=small_kb, index_dir=index_dir, embedder=embedder)
    (index_dir / "manifest.json").write_text(content)
    (index_dir / SNAPSHOT_DIR / "snapshot.json").write_text(content)
    with caplog.at_level(logging.WARNING):
        again = Assistant(Settings.load(env={}), kb=small_kb, index_dir=index_dir, embedder=embedder)
    assert again.build_report.rebuilt
    _assert_right_answer(again)
    assert json.loads((index_dir / "manifest.json").read_text())["count"] == len(again.records)


def test_checksums_name_the_file_and_check_sizes_always(tmp_path):
    (tmp_path / "a.npy").write_bytes(b"12345678")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text("{}")
    record_checksums(tmp_path)
    verify_checksums(tmp_path)
    (tmp_path / "a.npy").write_bytes(b"1234")
    with pytest.raises(DamagedFolderError, match="a.npy has another size"):
        verify_checksums(tmp_path, contents=False)
    (tmp_path / "a.npy").write_bytes(b"87654321")
    verify_checksums(tmp_path, contents=False)  # same size: only the content pass sees it
    with pytest.raises(DamagedFolderError, match="a.npy holds other bytes"):
        verify_checksums(tmp_path)
    (tmp_path / "sub" / "b.json").unlink()
    with pytest.raises(DamagedFolderError, match="b.json"):
        verify_checksums(tmp_path)


# --- a full disk: a real tmpfs of a few hundred kilobytes --------------------------------------


@contextlib.contextmanager
def _small_filesystem(tmp_path: Path, size: str):
    mount = tmp_path / f"fs-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.decode().strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path, leave: int) -> None:
    """Fill the file system of ``folder`` until only ``leave`` bytes are free."""
    stat = os.statvfs(folder)
    free = stat.f_bavail * stat.f_frsize
    with open(folder / "filler", "wb") as handle:
        handle.write(b"\0" * max(0, free - leave))


def _build(kb: Path, index_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "assistant", "build", "--kb", str(kb), "--index", str(index_dir)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_a_full_disk_during_build_is_a_clear_error_and_the_old_index_still_serves(small_kb, tmp_path, embedder):
    extra = small_kb.parent / "extra"
    extra.mkdir()
    shutil.move(small_kb / "ollama__ollama-python.jsonl", extra / "ollama__ollama-python.jsonl")
    with _small_filesystem(tmp_path, "4m") as disk:
        index_dir = disk / "index"
        first = _build(small_kb, index_dir)
        assert first.returncode == 0, first.stderr
        before = sorted(p.name for p in index_dir.iterdir())
        _fill(disk, leave=24 * 1024)  # less than the new embeddings.npy needs
        shutil.move(extra / "ollama__ollama-python.jsonl", small_kb / "ollama__ollama-python.jsonl")
        failed = _build(small_kb, index_dir)
        assert failed.returncode == 2, (failed.returncode, failed.stderr[-2000:])  # was -7 (SIGBUS), exit 135
        assert "No space left on device" in failed.stderr and "free disk space" in failed.stderr
        assert "Traceback" not in failed.stderr
        assert not [p.name for p in index_dir.iterdir() if p.name.endswith(".tmp")]
        # Nothing half-written beside the old files (.partial holds the vectors embedded so far: a rerun resumes).
        assert sorted(p.name for p in index_dir.iterdir() if p.name != ".partial") == before
        # The previous index, for the previous knowledge base, still serves as it was.
        shutil.move(small_kb / "ollama__ollama-python.jsonl", extra / "ollama__ollama-python.jsonl")
        old = Assistant(Settings.load(env={}), kb=small_kb, index_dir=index_dir, embedder=embedder)
        assert not old.build_report.rebuilt
        _assert_right_answer(old)
        # Temporary files of a run killed outright are removed by the next build, once there is room.
        (disk / "filler").unlink()
        (index_dir / ".embeddings.npy.dead1234.tmp").write_bytes(b"x" * 100)
        (index_dir / ".signals.dead5678").mkdir()
        (index_dir / ".signals.dead5678" / "ids.npy").write_bytes(b"x")
        shutil.move(extra / "ollama__ollama-python.jsonl", small_kb / "ollama__ollama-python.jsonl")
        again = _build(small_kb, index_dir)
        assert again.returncode == 0, again.stderr
        assert not [p.name for p in index_dir.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".signals.")]


def test_a_build_that_cannot_reserve_space_raises_enospc_not_sigbus(tmp_path):
    """The in-process half of the above: ``preallocate`` on a file larger than the file system."""
    from assistant.storage.space import preallocate

    with _small_filesystem(tmp_path, "64k") as disk:
        path = disk / "big.npy"
        with open(path, "wb") as handle:
            handle.truncate(1 << 20)  # sparse, as open_memmap makes it
        with pytest.raises(OSError) as caught:
            preallocate(path)
        assert caught.value.errno == 28
