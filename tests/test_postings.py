"""Postings: the records holding each key, as flat arrays, the same after a save and a memory-mapped load."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.storage.postings import Postings


def _holders(key_sets: list[set[str]], key: str) -> list[int]:
    return [i for i, keys in enumerate(key_sets) if key in keys]


def test_postings_list_each_keys_records_in_order_and_survive_a_mapped_load(tmp_path):
    rng = np.random.default_rng(1)
    vocabulary = [f"w{i}" for i in range(40)]
    key_sets = [set(rng.choice(vocabulary, size=rng.integers(0, 6), replace=False)) for _ in range(300)]
    built = Postings.build(key_sets)
    built.save(tmp_path, "words")
    loaded = Postings.load(tmp_path, "words")
    for postings in (built, loaded):
        for key in vocabulary:
            assert postings.get(key).tolist() == _holders(key_sets, key)
            assert postings.count(key) == len(_holders(key_sets, key))
        assert postings.get("absent").tolist() == [] and "absent" not in postings
        either = sorted(set(_holders(key_sets, "w1")) | set(_holders(key_sets, "w2")))
        assert postings.union(["w1", "w2", "absent"]).tolist() == either
        both = sorted(set(_holders(key_sets, "w1")) & set(_holders(key_sets, "w2")))
        assert postings.intersection(["w1", "w2"]).tolist() == both
        assert postings.intersection(["w1", "absent"]).tolist() == [] and postings.intersection([]).tolist() == []


def test_groups_numbered_by_the_caller():
    numbers = np.array([2, 0, 2, 1, 0, 2], dtype=np.int32)
    groups = Postings.grouping(numbers, 4)
    assert [groups.numbered(g).tolist() for g in range(4)] == [[1, 4], [3], [0, 2, 5], []]


def test_a_truncated_postings_file_is_refused(tmp_path):
    Postings.build([{"a"}, {"a", "b"}]).save(tmp_path, "words")
    np.save(tmp_path / "words.positions.npy", np.array([0], dtype=np.int32))
    with pytest.raises(ValueError, match="do not match"):
        Postings.load(tmp_path, "words")


def test_a_disk_array_reads_slices_without_mapping_them(tmp_path):
    from assistant.storage.diskarray import DiskArray

    values = np.arange(1000, dtype=np.int32) * 3
    np.save(tmp_path / "a.npy", values)
    array = DiskArray.open(tmp_path / "a.npy", in_memory_bytes=0)
    assert isinstance(array, DiskArray) and len(array) == 1000
    assert array[10:13].tolist() == [30, 33, 36] and array[998:2000].tolist() == [2994, 2997]
    assert array[5:5].tolist() == [] and np.array_equal(np.asarray(array), values)
    mapped = np.load(tmp_path / "a.npy", mmap_mode="r")
    assert isinstance(DiskArray.of(mapped), DiskArray) and DiskArray.of(values) is values
    with pytest.raises(TypeError):
        array[3]


def test_a_small_saved_array_is_held_in_memory_read_only(tmp_path):
    """Below IN_MEMORY_BYTES a row read by pread costs more than the memory (~130 reads a query)."""
    from assistant.storage.diskarray import IN_MEMORY_BYTES, DiskArray

    values = np.arange(1000, dtype=np.int32)
    np.save(tmp_path / "a.npy", values)
    held = DiskArray.open(tmp_path / "a.npy")
    assert type(held) is np.ndarray and np.array_equal(held, values) and not held.flags.writeable
    mapped = np.load(tmp_path / "a.npy", mmap_mode="r")
    assert type(DiskArray.of(mapped, IN_MEMORY_BYTES)) is np.ndarray
    assert isinstance(DiskArray.of(mapped, values.nbytes - 1), DiskArray)
    big = np.zeros(IN_MEMORY_BYTES // 4 + 1, dtype=np.int32)
    np.save(tmp_path / "big.npy", big)
    assert isinstance(DiskArray.open(tmp_path / "big.npy"), DiskArray)


def test_a_disk_array_reads_rows_of_a_matrix_in_any_order(tmp_path):
    from assistant.storage.diskarray import DiskArray

    matrix = np.arange(60, dtype=np.float16).reshape(20, 3)
    np.save(tmp_path / "m.npy", matrix)
    mapped = np.load(tmp_path / "m.npy", mmap_mode="r")
    array = DiskArray.of(mapped)
    assert isinstance(array, DiskArray) and array.shape == (20, 3) and len(array) == 20
    assert np.array_equal(array[2:4], matrix[2:4]) and np.array_equal(np.asarray(array), matrix)
    assert np.array_equal(array.take(np.array([7, 0, 19])), matrix[[7, 0, 19]]) and array.take([]).shape == (0, 3)
    with pytest.raises(IndexError):
        array.take([20])
    # A slice of a map keeps the map's offset: it is read from memory, not from the wrong place on disk.
    assert not isinstance(DiskArray.of(mapped[5:]), DiskArray)


def test_bm25_tokens_added_a_chunk_at_a_time_index_as_tokenizing_everything_at_once():
    """The signal index tokenizes records 10,000 at a time; its BM25 matrices must not depend on that."""
    import bm25s

    from assistant import load_records
    from assistant.retrieval.bm25_files import TokenCorpus, tokenize
    from assistant.retrieval.signals import all_text
    from assistant.settings import BUNDLED_KB_DIR

    texts = [all_text(r) for r in load_records(BUNDLED_KB_DIR)]
    texts[10:10] = ["", "the of and"]  # no words at all, and stop words only
    corpus = TokenCorpus()
    corpus.CHUNK = 7
    for text in texts:
        corpus.add(text)
    chunked, whole = bm25s.BM25(), bm25s.BM25()
    chunked.index(corpus, show_progress=False)
    whole.index(tokenize(texts), show_progress=False)
    assert chunked.vocab_dict == whole.vocab_dict and len(corpus.ids) == len(texts)
    for part in ("data", "indices", "indptr"):
        assert np.array_equal(chunked.scores[part], whole.scores[part])
    assert corpus.ids[3] == corpus.ids[2:4][1] and corpus.ids[10] == corpus.ids[11]
