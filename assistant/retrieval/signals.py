"""What the Retriever knows of every record, as arrays and postings: built in one pass, saved, read back.

Why: at a million records, building this at every start took minutes and held gigabytes (every record's
text tokenized for BM25, dicts of postings). Built once with the vector index and saved, a serving
process keeps only the small tables (where each key's postings start, the BM25 vocabularies) in memory
and reads from disk just the slices its queries touch: the postings of the query's words, classes and
files, the patterns filed under its words (see ``diskarray``).
"""

from __future__ import annotations

import json
import re
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from ..knowledge.records import API_CHANGE_TAG, INGESTED_TAG, Record
from ..parse.query import normalize_library
from ..storage.diskarray import IN_MEMORY_BYTES, DiskArray
from ..storage.postings import Postings, PostingsBuilder
from .bm25_files import STOPWORDS_EN, SavedBM25, TokenCorpus
from .patterns import PatternIndex, literal_chars

if TYPE_CHECKING:
    import bm25s

FORMAT = 10  # 2: generic_ingested; 3: Python's modules' path tails; 4: ingested; 5: None/True/False not words;
# 6: the words every alternative of a pattern's alternation holds file it (patterns.required_words);
# 7: a generic template has no snake_case name (is_generic_message); 8: an alternation pins its longest
# alternative's characters, not all of theirs (patterns.literal_chars); 9: api_changes, every pattern's
# required words as CRC-32s (patterns.PatternIndex.may_hold), and the wording twins of Python's classes
# (ownership.wording_twins) where the knowledge base's build found them; 10: "python" names no library
_PYTHON_LIB_DIR_RE = re.compile(r"Lib|python\d+(?:\.\d+)*")
# Only this much of a message is read for its literal words (the Retriever reads queries the same way).
MESSAGE_CHARS = 2_000
# An ingested record whose message has at most this many literal words is a generic template ("'{type}'
# object has no attribute '{name}'", "cannot import name '{name}'"): with thousands of them from many
# packages, one answers only where its library is in play (retriever._not_in_play). Curated records are
# not held to it.
GENERIC_WORDS = 3
TWINS = "wording_twins"  # the saved postings of SignalIndex.wording_twins

PLACEHOLDER_RE = re.compile(r"\{[^{}]*\}")  # a template's ``{name}``
_QUOTED_RE = re.compile(r"'[^'\n]{0,80}'|\"[^\"\n]{0,80}\"")
_VALUE_RE = re.compile(r"\S*[/\\=\d]\S*")  # paths, URLs, key=value pairs, numbers, versions, model names
_MESSAGE_WORD_RE = re.compile(r"[a-z_][a-z0-9_]+")
# Python's constants are values a placeholder took ("403 Forbidden: None." from "{code} Forbidden: {reason}."),
# like numbers: not words of the message's template.
_STOPWORDS = frozenset(STOPWORDS_EN) | {"none", "true", "false"}
_STOP_DIRS = frozenset({"src", "lib", "libs", "python", "packages", "utils", "tests", "test", "internal"})


def message_words(message: str) -> frozenset[str]:
    """The literal words of an error message: what stays the same each time it is raised.

    Placeholders (``{name}``), quoted values, paths, ``key=value`` pairs, anything with a digit in it and
    stop words are left out, so a rendered message and the template it came from share their words.
    """
    text = PLACEHOLDER_RE.sub(" ", message[:MESSAGE_CHARS])
    text = _VALUE_RE.sub(" ", _QUOTED_RE.sub(" ", text))
    return frozenset(w for w in _MESSAGE_WORD_RE.findall(text.lower()) if w not in _STOPWORDS)


def is_generic_message(message: str, words: frozenset[str] | None = None) -> bool:
    """Whether an ingested record's message (its literal ``words``, when already read) is a generic template
    (see ``GENERIC_WORDS``): a few literal words, none a snake_case name from code, which is the library's
    own (``Both invocation_id and new_message are None.`` is not the kind that matches any library's)."""
    words = message_words(message) if words is None else words
    return len(words) <= GENERIC_WORDS and (len(words) < 2 or not any("_" in w.strip("_") for w in words))


def path_tail(path: str) -> str:
    """The last two parts of a path: ``faiss/class_wrappers.py`` whether installed or in the repo. Python's
    own top-level modules end the same way installed (``/usr/lib/python3.10/os.py``) and in CPython's
    repository (``Lib/os.py``): ``Lib/os.py``."""
    parts = [p for p in re.split(r"[/\\]", path) if p]
    if len(parts) >= 2 and _PYTHON_LIB_DIR_RE.fullmatch(parts[-2]):
        return f"Lib/{parts[-1]}"
    return "/".join(parts[-2:])


def message_text(record: Record) -> str:
    return f"{record.error_class} {record.error_message} {record.slug.replace('-', ' ')}"


def all_text(record: Record) -> str:
    parts = [
        message_text(record),
        record.documentation,
        record.trigger_scenarios or "",
        record.common_situations or "",
        " ".join(record.tags),
    ]
    return "\n".join(parts)


# The language's own name: nearly every paste says it ("python manage.py", "Python 3.12"), which names no
# library; Python's records are in play by the error's class and frames, not by this word.
_LANGUAGE_NAMES = frozenset({"python"})


def library_names(records: Iterable[Record]) -> dict[str, frozenset[str]]:
    """For each repo, the package names people see: its import name(s), its repo name, its first tag.

    A name counts when at least half of the repo's records sit under a folder of that name and no other
    repo uses it, so ``pydantic_ai`` and ``pydantic`` stay apart.
    """
    counts = LibraryCounts()
    for r in records:
        counts.add(r)
    return counts.names()


class LibraryCounts:
    """What :func:`library_names` needs of each record, gathered one record at a time."""

    def __init__(self) -> None:
        self.records: Counter = Counter()
        self.folders: dict[str, Counter] = defaultdict(Counter)
        self.tags: dict[str, set[str]] = defaultdict(set)

    def add(self, r: Record) -> None:
        self.records[r.repo] += 1
        self.folders[r.repo].update({normalize_library(p) for p in r.file_path.split("/")[:-1][:4]})
        if r.tags:
            self.tags[r.repo].add(normalize_library(r.tags[0]))

    def names(self) -> dict[str, frozenset[str]]:
        owners: Counter = Counter()
        names: dict[str, set[str]] = {}
        for repo, count in self.records.items():
            repo_name = normalize_library(repo.split("/")[-1])
            found = {repo_name, re.sub(r"(_sdk)?_python$", "", repo_name)}
            found |= {n for n, c in self.folders[repo].items() if c * 2 >= count and n not in _STOP_DIRS}
            found |= self.tags[repo]
            names[repo] = {n for n in found if n.isidentifier() and len(n) > 2 and n not in _LANGUAGE_NAMES}
            owners.update(names[repo])
        return {repo: frozenset(n for n in ns if owners[n] == 1) for repo, ns in names.items()}


class Texts:
    """Strings kept as one UTF-8 blob and offsets: a million short strings without a million objects."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray):
        self._blob = blob
        self._offsets = offsets

    @classmethod
    def build(cls, strings: Iterable[str]) -> Texts:
        encoded = [s.encode("utf-8") for s in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: int) -> str:
        start, stop = (int(v) for v in self._offsets[i : i + 2])
        return self._blob[start:stop].tobytes().decode("utf-8")

    def save(self, folder: Path, name: str) -> None:
        np.save(folder / f"{name}.blob.npy", self._blob)
        np.save(folder / f"{name}.offsets.npy", self._offsets)

    @classmethod
    def load(cls, folder: Path, name: str) -> Texts:
        blob = DiskArray.open(folder / f"{name}.blob.npy")
        offsets = DiskArray.open(folder / f"{name}.offsets.npy")
        if not len(offsets) or int(offsets[len(offsets) - 1 :][0]) != len(blob):
            raise ValueError(f"{name} in {folder} is truncated")
        return cls(blob, offsets)


class WordColumns:
    """A BM25 matrix read a word (a column) at a time: the records holding the word, ascending, and the
    word's BM25 weight in each. Read from disk when the index was loaded (see ``diskarray``)."""

    def __init__(self, bm25: bm25s.BM25 | SavedBM25):
        self.indptr = np.asarray(bm25.scores["indptr"])  # one number per word: kept in memory
        self._indices = DiskArray.of(bm25.scores["indices"], IN_MEMORY_BYTES)
        self._data = DiskArray.of(bm25.scores["data"], IN_MEMORY_BYTES)

    def __call__(self, word: int) -> tuple[np.ndarray, np.ndarray]:
        start, stop = int(self.indptr[word]), int(self.indptr[word + 1])
        return self._indices[start:stop], self._data[start:stop]

    def size(self, word: int) -> int:
        """How many records hold ``word``."""
        return int(self.indptr[word + 1] - self.indptr[word])


class SignalIndex:
    """Per record: id, pattern, class, raising file, repo, message words, and two BM25 indexes (class and
    message; every text field). Per distinct pattern: its text, literal length and records (records that
    share a pattern, forks and variants of one raise, run it once). Per repo: the names people write."""

    def __init__(
        self,
        *,
        ids: np.ndarray,
        patterns: Texts,
        literals: np.ndarray,
        pattern_records: Postings,
        classes: Postings,
        files: Postings,
        repos: Postings,
        library_names: dict[str, frozenset[str]],
        pattern_index: PatternIndex,
        message_words: Postings,
        generic_ingested: np.ndarray,
        ingested: np.ndarray,
        api_changes: np.ndarray,
        bm25_message: bm25s.BM25 | SavedBM25,
        bm25_all: bm25s.BM25 | SavedBM25,
        wording_twins: Postings | None = None,
    ):
        self.ids = ids  # UTF-8 bytes
        self.patterns = patterns
        self.literals = literals
        self.pattern_records = pattern_records
        self.classes = classes
        self.files = files
        self.repos = repos
        self.library_names = library_names
        self.pattern_index = pattern_index
        self.message_words = message_words
        self.generic_ingested = generic_ingested  # ascending positions (see GENERIC_WORDS)
        self.ingested = ingested  # ascending positions of every record errata ingest wrote
        self.api_changes = api_changes  # ascending positions of the records of a removed or renamed API
        # Python's error class -> the library records worded as Python's own message of it (ownership.py): made
        # by the knowledge base's build, so no query pays for it; None: each class's found on first use.
        self.wording_twins = wording_twins
        self.bm25_message = bm25_message
        self.bm25_all = bm25_all
        self.message_columns = WordColumns(bm25_message)
        self.all_columns = WordColumns(bm25_all)

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def build(
        cls,
        records: Iterable[Record],
        *,
        show_progress: bool = False,
        all_fields: Callable[[], bm25s.BM25 | SavedBM25 | None] | None = None,
    ) -> SignalIndex:
        """One pass over the records (records on a shelf are parsed once). ``all_fields``: gives the BM25
        index over every text field, built elsewhere meanwhile (see all_fields_bm25.py), called at the end; where
        it gives None the records (a sequence, then) are read again for it."""
        import bm25s  # building only: serving reads the saved matrices without it (bm25_files.py)

        total = len(records) if isinstance(records, Sequence) else None
        source = records
        records = tqdm(records, total=total, desc="indexing signals", unit="rec", disable=not show_progress)
        ids: list[str] = []
        patterns: dict[str, int] = {}
        record_patterns = array("i")
        classes, files, repos, words = (PostingsBuilder() for _ in range(4))
        generic, ingested, api_changes = array("q"), array("q"), array("q")
        message_tokens = TokenCorpus()
        all_tokens = TokenCorpus()
        libraries = LibraryCounts()
        for r in records:
            ids.append(r.id)
            record_patterns.append(patterns.setdefault(r.message_pattern, len(patterns)))
            classes.add((r.error_class,))
            files.add((path_tail(r.file_path),))
            repos.add((r.repo,))
            message_tokens.add(message_text(r))
            if all_fields is None:
                all_tokens.add(all_text(r))
            literal = message_words(r.error_message)
            words.add(literal)
            if INGESTED_TAG in r.tags:
                ingested.append(len(ids) - 1)
                if is_generic_message(r.error_message, literal):
                    generic.append(len(ids) - 1)
            if API_CHANGE_TAG in r.tags:
                api_changes.append(len(ids) - 1)
            libraries.add(r)
        bm25_message = bm25s.BM25()
        bm25_message.index(message_tokens, show_progress=False)
        del message_tokens
        # Everything but the BM25 over every field first: that one may still be in the making elsewhere.
        parts = dict(
            ids=np.array([i.encode("utf-8") for i in ids], dtype="S"),
            patterns=Texts.build(patterns),
            literals=np.array([literal_chars(p) for p in patterns], dtype=np.int32),
            pattern_records=Postings.grouping(np.frombuffer(record_patterns, dtype=np.int32), len(patterns)),
            classes=classes.build(),
            files=files.build(),
            repos=repos.build(),
            library_names=libraries.names(),
            pattern_index=PatternIndex.build(patterns),
            message_words=words.build(),
            generic_ingested=np.frombuffer(generic, dtype=np.int64).copy(),
            ingested=np.frombuffer(ingested, dtype=np.int64).copy(),
            api_changes=np.frombuffer(api_changes, dtype=np.int64).copy(),
            bm25_message=bm25_message,
        )
        bm25_all = None if all_fields is None else all_fields()
        if bm25_all is None:
            if all_fields is not None:  # built elsewhere, and that failed: the records are read again
                for r in source:
                    all_tokens.add(all_text(r))
            bm25_all = bm25s.BM25()
            bm25_all.index(all_tokens, show_progress=False)
        del all_tokens
        return cls(**parts, bm25_all=bm25_all)

    def save(self, folder: Path) -> None:
        """Into ``folder`` (which must exist and be empty)."""
        np.save(folder / "ids.npy", self.ids)
        np.save(folder / "literals.npy", self.literals)
        np.save(folder / "generic_ingested.npy", self.generic_ingested)
        np.save(folder / "ingested.npy", self.ingested)
        np.save(folder / "api_changes.npy", self.api_changes)
        if self.wording_twins is not None:
            self.wording_twins.save(folder, TWINS)
        self.patterns.save(folder, "patterns")
        for name in ("pattern_records", "classes", "files", "repos", "message_words"):
            getattr(self, name).save(folder, name)
        self.pattern_index.save(folder)
        names = {repo: sorted(ns) for repo, ns in self.library_names.items()}
        (folder / "library_names.json").write_text(json.dumps(names), encoding="utf-8")
        for name in ("bm25_message", "bm25_all"):
            getattr(self, name).save(folder / name, show_progress=False)
        (folder / "signals.json").write_text(json.dumps({"format": FORMAT, "count": len(self)}), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> SignalIndex:
        """Read back lazily. Raises ``OSError`` or ``ValueError`` when the folder is incomplete or damaged."""
        meta = json.loads((folder / "signals.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise ValueError(f"signal index format {meta.get('format')} is not {FORMAT}")
        names = json.loads((folder / "library_names.json").read_text(encoding="utf-8"))
        index = cls(
            ids=np.load(folder / "ids.npy", mmap_mode="r"),  # read whole once, at start
            patterns=Texts.load(folder, "patterns"),
            literals=np.load(folder / "literals.npy"),
            pattern_records=Postings.load(folder, "pattern_records"),
            classes=Postings.load(folder, "classes"),
            files=Postings.load(folder, "files"),
            repos=Postings.load(folder, "repos"),
            library_names={repo: frozenset(ns) for repo, ns in names.items()},
            pattern_index=PatternIndex.load(folder),
            message_words=Postings.load(folder, "message_words"),
            generic_ingested=np.load(folder / "generic_ingested.npy"),
            ingested=np.load(folder / "ingested.npy"),
            api_changes=np.load(folder / "api_changes.npy"),
            wording_twins=Postings.load(folder, TWINS) if (folder / f"{TWINS}.keys.json").exists() else None,
            # Read without bm25s (and the scipy it imports): serving needs only the matrix and vocabulary.
            bm25_message=SavedBM25.load(folder / "bm25_message"),
            bm25_all=SavedBM25.load(folder / "bm25_all"),
        )
        patterns = {len(index.patterns), len(index.literals), len(index.pattern_records)}
        records = {len(index.ids), index.bm25_all.scores["num_docs"], int(meta.get("count", -1))}
        if len(patterns) != 1 or len(records) != 1:
            raise ValueError(f"the signal index in {folder} is incomplete")
        return index
