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


# --- what the index trusts is checksummed, not sized (issue 47) ----------------------------------


def _small_start(kb: Path, index_dir: Path, embedder) -> Assistant:
    return Assistant(Settings.load(env={}), kb=kb, index_dir=index_dir, embedder=embedder)


def _keep_time(path: Path, damage) -> None:
    """Apply ``damage`` to ``path`` and give it back its size and modification time, as a bit flipped on disk."""
    stat = path.stat()
    damage(path)
    assert path.stat().st_size == stat.st_size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _flip_id(path: Path) -> None:
    data = path.read_bytes()
    at = data.index(f'"id": "{INTERRUPTED_ID}"'.encode()) + len('"id": "')
    path.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])  # 'c' -> 'b': one bit


def _swap_ids(path: Path) -> None:
    other = next(e["id"] for e in json.loads(path.read_text())["records"] if e["id"] != INTERRUPTED_ID)
    text = path.read_text()
    text = text.replace(INTERRUPTED_ID, "\0").replace(other, INTERRUPTED_ID).replace("\0", other)
    path.write_text(text)


def test_a_sealed_json_file_finds_one_flipped_bit_anywhere(tmp_path):
    from assistant.storage.checksums import read_sealed_json, sealed_json

    path = tmp_path / "manifest.json"
    path.write_text(sealed_json({"records": [{"id": INTERRUPTED_ID}, {"id": "0123456789abcdef"}]}))
    assert read_sealed_json(path)[0]["records"][0]["id"] == INTERRUPTED_ID
    _keep_time(path, _flip_id)
    with pytest.raises(DamagedFolderError, match="manifest.json holds other bytes"):
        read_sealed_json(path)


QUESTIONS = (
    INTERRUPTED,
    "why was my agent interrupted in smolagents?",
    "my smolagents agent stopped: Agent interrupted",
)


def _answers(assistant: Assistant) -> list[tuple[str, float]]:
    return [(answer.hits[0].record.id, answer.confidence) for answer in map(assistant.ask, QUESTIONS)]


@pytest.mark.slow
@pytest.mark.parametrize("damage", [_flip_id, _swap_ids], ids=["one-bit-flip", "two-ids-swapped"])
def test_a_damaged_record_id_in_the_manifest_is_found_and_rebuilt_never_trusted(
    small_kb, tmp_path, embedder, caplog, damage
):
    """Size and time kept: a start from the snapshot trusted the manifest's ids, and answered a question with
    another record (a flip), or the right one with less confidence (a swap: the two records' vectors exchanged)."""
    index_dir = tmp_path / "index"
    whole = _answers(_small_start(small_kb, index_dir, embedder))
    assert _small_start(small_kb, index_dir, embedder).build_report.reason == "up to date (snapshot)"
    _keep_time(index_dir / "manifest.json", damage)
    with caplog.at_level(logging.WARNING):
        again = _small_start(small_kb, index_dir, embedder)
    for (record, confidence), (record_again, confidence_again) in zip(whole, _answers(again), strict=True):
        assert record_again == record and abs(confidence_again - confidence) < 0.02
    assert again.build_report.rebuilt
    assert any("manifest.json" in r.getMessage() and "other bytes" in r.getMessage() for r in caplog.records)
    assert _small_start(small_kb, index_dir, embedder).build_report.reason == "up to date (snapshot)"


@pytest.fixture
def private_onnx_cache(embedder, tmp_path) -> Path:
    """A copy of the user's export cache (whole: made again first if it is not), safe to damage."""
    from assistant.embedding.onnx import OnnxEncoder, default_cache_dir

    OnnxEncoder(embedder.local_dir(), int8=True)
    target = tmp_path / "onnx-cache"
    shutil.copytree(default_cache_dir(), target)
    return target


def _sha256(path: Path) -> str:
    from assistant.storage.files import sha256_file

    return sha256_file(path)


def _write_random_blocks(path: Path, blocks: int = 32) -> None:
    rng = np.random.default_rng(47)
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        for offset in rng.integers(0, size - 4096, blocks):
            handle.seek(int(offset))
            handle.write(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())


@pytest.mark.slow
def test_random_blocks_in_the_stored_encoder_are_found_and_never_reach_the_cache(
    small_kb, tmp_path, private_onnx_cache, caplog
):
    from assistant.embedding.embedder import Embedder

    private = Embedder(cache_dir=private_onnx_cache)
    index_dir = tmp_path / "index"
    _small_start(small_kb, index_dir, private)
    stored = next((index_dir / "encoder").glob("*.onnx"))
    cached = private_onnx_cache / stored.name
    whole = _sha256(cached)
    os.chmod(stored, 0o644)  # as root would write it anyway
    _keep_time(stored, _write_random_blocks)

    assert _sha256(cached) == whole  # a copy, not a link: the cache every later index is made from is untouched
    with caplog.at_level(logging.WARNING):
        again = _small_start(small_kb, index_dir, Embedder(cache_dir=private_onnx_cache))
    lines = [r.getMessage() for r in caplog.records if "export" in r.getMessage()]
    assert len(lines) == 1 and "other bytes" in lines[0], lines
    assert again.embedder.model.path != stored  # queries go through the cache's whole file
    _assert_right_answer(again)
    assert _sha256(stored) == whole  # stored again: the next start uses it, with no warning
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        later = _small_start(small_kb, index_dir, Embedder(cache_dir=private_onnx_cache))
    assert later.embedder.model.path == stored and not [r for r in caplog.records if "export" in r.getMessage()]
    _assert_right_answer(later)


@pytest.mark.slow
def test_a_damaged_cache_entry_is_made_again_not_copied_into_an_index(small_kb, tmp_path, private_onnx_cache, caplog):
    from assistant.embedding.embedder import Embedder

    cached = next(private_onnx_cache.glob("*-int8.onnx"))
    whole = _sha256(cached)
    _keep_time(cached, _write_random_blocks)
    with caplog.at_level(logging.WARNING):
        _small_start(small_kb, tmp_path / "index", Embedder(cache_dir=private_onnx_cache))
    assert any("making it again" in r.getMessage() for r in caplog.records)
    assert _sha256(tmp_path / "index" / "encoder" / cached.name) == whole == _sha256(cached)


@pytest.mark.slow
def test_a_first_build_on_a_full_disk_stores_its_encoder_at_the_next_start(small_kb, tmp_path, embedder, caplog):
    """The export (23 MB) does not fit; the rest of the index does. Once there is room, the next start stores
    it and no start warns about it again."""
    with _small_filesystem(tmp_path, "24m") as disk:
        index_dir = disk / "index"
        _fill(disk, leave=8 * 1024 * 1024)
        with caplog.at_level(logging.WARNING):
            first = _small_start(small_kb, index_dir, embedder)
        _assert_right_answer(first)
        assert any("cannot store an ONNX export" in r.getMessage() for r in caplog.records)
        (disk / "filler").unlink()
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            _assert_right_answer(_small_start(small_kb, index_dir, embedder))
            later = _small_start(small_kb, index_dir, embedder)
        assert not [r.getMessage() for r in caplog.records if "export" in r.getMessage()]
        assert later.build_report.reason == "up to date (snapshot)"
        assert later.embedder.model.path == next((index_dir / "encoder").glob("*.onnx"))
