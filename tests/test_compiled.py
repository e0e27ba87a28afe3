"""Records from compiled sources (issue 46): C/C++, Cython and Rust read as text, and answered through errata."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assistant import Assistant, Settings
from assistant.ingest import ingest_to_file
from assistant.ingest.compiled import find_in_compiled
from assistant.ingest.compiled.sources import compiled_records, is_own_code, vendored_folders
from assistant.ingest.compiled.templates import message_template
from assistant.ingest.raises import Origin
from assistant.knowledge.records import load_records

C_MODULE = textwrap.dedent(
    r"""
    #include <Python.h>
    #include <inttypes.h>

    static PyObject *ParserError;

    /* PyErr_SetString(PyExc_ValueError, "a commented-out raise is not a record"); */
    static int
    tokenize_rows(parser_t *self, int64_t ex_fields, int64_t fields)
    {
        if (fields > ex_fields) {
            PyErr_Format(PyExc_ValueError,
                         "Expected %" PRId64 " fields in line %" PRIu64
                         ", saw %" PRId64,
                         ex_fields, self->file_lines, fields);
            return -1;
        }
        if (self->stream == NULL)
            PyErr_SetString(ParserError, "the stream of the parser "
                                         "was closed before reading");
        else {
            PyErr_WarnEx(PyExc_DeprecationWarning, "reading a stream twice is deprecated", 1);
        }
        PyErr_Format(PyExc_TypeError, "%.200s() argument must be str, not %R", "tokenize", self->obj);
        return 0;
    }

    PyMODINIT_FUNC PyInit__tok(void) {
        ParserError = PyErr_NewException("toktok.errors.ParserError", NULL, NULL);
        return NULL;
    }
    """
)

FAISS_CPP = textwrap.dedent(
    r"""
    #include <faiss/impl/FaissAssert.h>

    namespace faiss {

    FileIOReader::FileIOReader(const char* fname) {
        name = fname;
        f = fopen(fname, "rb");
        FAISS_THROW_IF_NOT_FMT(
                f,
                "could not open %s for reading: %s",
                fname,
                strerror(errno));
        need_close = true;
    }

    Index* read_index(IOReader* f, int io_flags) {
        uint32_t h;
        READ1(h);
        if (h == fourcc("IxFI")) {
            return read_flat(f);
        } else {
            FAISS_THROW_FMT("Index type 0x%08x (\"%s\") not recognized", h, fourcc_inv_printable(h).c_str());
        }
    }

    void IndexFlat::add(idx_t n, const float* x) {
        FAISS_THROW_IF_NOT_MSG(is_trained, "Index not trained, call train() first");
    }

    }  // namespace faiss
    """
)

FAISS_SWIG = "%module swigfaiss\n%exception { try { $action } catch(faiss::FaissException& e) {} }\n"

PYBIND_CPP = textwrap.dedent(
    r"""
    #include <pybind11/pybind11.h>
    namespace py = pybind11;

    class TokenizerError : public std::exception {};

    void set_truncation(size_t max_length, size_t stride) {
        if (stride >= max_length) {
            throw std::invalid_argument("stride (" + std::to_string(stride) + ") must be smaller than "
                                        "max_length (" + std::to_string(max_length) + ")");
        }
        try {
            load();
        } catch (const std::exception& e) {
            throw TokenizerError();
        }
        if (max_length == 0) throw py::type_error(py::str("max_length of {} must be positive").format(max_length));
    }

    PYBIND11_MODULE(_tok, m) {
        py::register_exception<TokenizerError>(m, "TokenizerException");
    }
    """
)

RUST_SOURCE = textwrap.dedent(
    r"""
    use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
    use pyo3::prelude::*;

    #[derive(thiserror::Error, Debug)]
    pub enum DecodeError {
        #[error("Invalid token for decoding: {0}")]
        InvalidToken(u32),
        #[error("Could not decode tokens: \
                 the bytes are not valid {encoding}")]
        Utf8 { encoding: String },
    }

    impl From<DecodeError> for PyErr {
        fn from(err: DecodeError) -> PyErr {
            match err {
                DecodeError::InvalidToken(_) => PyKeyError::new_err(err.to_string()),
                _ => PyValueError::new_err(err.to_string()),
            }
        }
    }

    #[pymethods]
    impl Serializer {
        fn serialize(&self, value: &PyAny, field_type: &str) -> PyResult<String> {
            if value.is_none() {
                return Err(PyValueError::new_err("a value is required, None was given"));
            }
            // PyValueError::new_err("commented out");
            let type_name = value.get_type().name()?;
            if !self.known(type_name) {
                return Err(PydanticSerializationError::new_err(format!(
                    "Unable to serialize unknown type: {:?}",
                    value.get_type()
                )));
            }
            Err(PyErr::new::<PyTypeError, _>(format!(
                "Expected `{field_type}` but got `{}` with `{value_str}` - serialized value may not be as expected",
                type_name,
                value_str = truncate(value, 50),
            )))
        }
    }
    """
)

CYTHON_SOURCE = textwrap.dedent(
    """
    # cython: language_level=3
    import warnings

    cdef class TextReader:
        cdef _tokenize_rows(self, size_t nrows):
            cdef int status
            status = tokenize_nrows(self.parser, nrows)
            if status < 0:
                msg = (f"Error tokenizing data. C error: "
                       f"{self.parser.error_msg.decode('utf-8')}")
                raise ParserError(msg)

        def read(self, rows=None):
            if rows is not None and rows < 0:
                raise ValueError("'rows' must be a non-negative integer, "
                                 "got %d" % rows)
            if self.low_memory:  # the old path
                warnings.warn("low_memory is deprecated and will be removed", FutureWarning)
            raise NotImplementedError(<object>self.parser)
    """
)


def found(name: str, text: str) -> list[tuple]:
    findings, _skipped = find_in_compiled(name, text)
    return [(f.error_class, *message_template(f.parts), f.line, f.qualname, f.guards) for f in findings]


def test_c_messages_split_over_lines_with_format_macros_become_templates():
    rows = found("tokenizer.c", C_MODULE)
    assert [r[:3] for r in rows] == [
        (
            "ValueError",
            "Expected {ex_fields} fields in line {self->file_lines}, saw {fields}",
            r"Expected (.+?) fields in line (.+?), saw",
        ),
        (
            "ParserError",
            "the stream of the parser was closed before reading",
            r"the stream of the parser was closed before reading",
        ),
        ("DeprecationWarning", "reading a stream twice is deprecated", "reading a stream twice is deprecated"),
        ("TypeError", '{"tokenize"}() argument must be str, not {self->obj!r}', r"\(\) argument must be str, not"),
    ]
    # Each at its line, in its function, behind the condition that guards it.
    first, second, third, _ = rows
    assert first[3] == C_MODULE.splitlines().index("        PyErr_Format(PyExc_ValueError,") + 1
    assert first[4] == "tokenize_rows" and first[5] == ("fields > ex_fields",)
    assert second[5] == ("self->stream == NULL",) and third[5] == ("!(self->stream == NULL)",)
    assert re.search(rows[0][2], "ValueError: Expected 3 fields in line 5, saw 4")


def test_faiss_check_macros_print_as_the_swig_wrapper_shows_them():
    findings, _ = find_in_compiled("faiss/impl/io.cpp", FAISS_CPP)
    rows = [(f.error_class, *message_template(f.parts), f.qualname, f.guards) for f in findings]
    assert rows[0][:2] == ("RuntimeError", "Error: 'f' failed: could not open {fname} for reading: {strerror(errno)}")
    assert rows[0][3:] == ("FileIOReader::FileIOReader", ("!(f)",))
    assert rows[1][1] == 'Index type 0x{h} ("{fourcc_inv_printable(h).c_str()}") not recognized'
    assert rows[1][3:] == ("read_index", ('!(h == fourcc("IxFI"))',))
    assert rows[2][1] == "Error: 'is_trained' failed: Index not trained, call train() first"
    pasted = {
        0: "RuntimeError: Error in faiss::FileIOReader::FileIOReader(const char*) at /project/faiss/impl/io.cpp:67: "
        "Error: 'f' failed: could not open index.faiss for reading: No such file or directory",
        1: "RuntimeError: Error in faiss::Index* faiss::read_index(IOReader*, int) at io.cpp:1046: Index type "
        '0x73726576 ("vers") not recognized',
    }
    for i, text in pasted.items():
        assert re.search(rows[i][2], text), (rows[i][2], text)


def test_the_trees_macro_definition_and_binding_decide_the_message_and_class():
    header = "#define FAISS_THROW_IF_NOT_MSG(X, MSG) FAISS_THROW_IF_MSG(!(X), MSG)\n"
    origin = Origin("acme/faissy", sha="v1.9.0")
    files = {"faiss/impl/FaissAssert.h": header, "faiss/IndexFlat.cpp": FAISS_CPP}
    records = [r for r, _f in compiled_records(files, origin, "2026-12-07T00:00:00.000Z")]
    messages = [r["errorMessage"] for r in records]
    assert "Error: '!(is_trained)' failed: Index not trained, call train() first" in messages
    # Vendored: FAISS's own code inside faiss-cpu's sdist names facebookresearch/faiss, at its path there.
    files = {"faiss/faiss/impl/io.cpp": FAISS_CPP, "faiss/faiss/python/swigfaiss.swig": FAISS_SWIG}
    vendored = vendored_folders("faiss-cpu", "1.9.0")
    records = [r for r, _f in compiled_records(files, origin, "2026-12-07T00:00:00.000Z", vendored=vendored)]
    assert {(r["repo"], r["filePath"], r["errorClass"]) for r in records} == {
        ("facebookresearch/faiss", "faiss/impl/io.cpp", "RuntimeError")
    }
    assert records[0]["githubUrl"].startswith(
        "https://github.com/facebookresearch/faiss/blob/v1.9.0/faiss/impl/io.cpp#L"
    )
    assert "compiled" in records[0]["tags"] and "ingested" in records[0]["tags"]


def test_pybind11_throws_print_as_pybind11_translates_them():
    rows = found("tok.cpp", PYBIND_CPP)
    assert [r[:2] for r in rows] == [
        ("ValueError", "stride ({stride}) must be smaller than max_length ({max_length})"),
        ("TypeError", "max_length of {max_length} must be positive"),
    ]
    assert re.search(rows[0][2], "ValueError: stride (600) must be smaller than max_length (512)")
    assert rows[0][4:] == ("set_truncation", ("stride >= max_length",))
    assert rows[1][5] == ("max_length == 0",)


def test_rust_format_with_named_captured_and_positional_arguments_and_error_enums():
    findings, skipped = find_in_compiled("src/ser.rs", RUST_SOURCE)
    rows = {message_template(f.parts)[0]: (f.error_class, message_template(f.parts)[1], f) for f in findings}
    serialize = (
        "Expected `{field_type}` but got `{type_name}` with `{truncate(value, 50)}` - serialized value may not be as "
        "expected"
    )
    assert {message: row[0] for message, row in rows.items()} == {
        "Invalid token for decoding: {0}": "KeyError",  # the enum's variant, mapped by its arm
        "Could not decode tokens: the bytes are not valid {encoding}": "ValueError",  # the catch-all arm
        "a value is required, None was given": "ValueError",
        "Unable to serialize unknown type: {value.get_type():?}": "PydanticSerializationError",
        serialize: "TypeError",
    }
    assert rows[serialize][2].qualname == "Serializer::serialize"
    assert rows["Unable to serialize unknown type: {value.get_type():?}"][2].guards == ("!self.known(type_name)",)
    printed = {
        "Invalid token for decoding: {0}": "KeyError: 'Invalid token for decoding: 100264'",
        "Unable to serialize unknown type: {value.get_type():?}": "Unable to serialize unknown type: <class 'type'>",
        serialize: "UserWarning: Expected `str` but got `int` with `1` - serialized value may not be as expected",
    }
    for message, text in printed.items():
        assert re.search(rows[message][1], text), (rows[message][1], text)
    assert skipped["not a literal message"] == 0  # err.to_string() in the From impl is the enum's, read above


def test_cython_raises_read_through_assignments_and_lines():
    rows = found("pandas/_libs/parsers.pyx", CYTHON_SOURCE)
    assert [r[:2] for r in rows] == [
        ("ParserError", "Error tokenizing data. C error: {self.parser.error_msg.decode('utf-8')}"),
        ("ValueError", "'rows' must be a non-negative integer, got {rows}"),
        ("FutureWarning", "low_memory is deprecated and will be removed"),
    ]
    assert rows[0][4:] == ("TextReader._tokenize_rows", ("status < 0",))
    assert rows[1][4:] == ("TextReader.read", ("rows is not None and rows < 0",))
    assert rows[2][5] == ("self.low_memory",)
    assert re.search(rows[0][2], "ParserError: Error tokenizing data. C error: Expected 3 fields in line 5, saw 4")


@pytest.fixture
def compiled_tree(tmp_path) -> Path:
    """A small project with a Python module, a C extension and a Rust crate."""
    root = tmp_path / "toktok"
    (root / "src").mkdir(parents=True)
    (root / "toktok").mkdir()
    (root / "toktok" / "__init__.py").write_text(
        "def f(x):\n    raise ValueError(f'the value {x} is not valid here')\n"
    )
    (root / "toktok" / "_tok.c").write_text(C_MODULE)
    (root / "src" / "ser.rs").write_text(RUST_SOURCE)
    return root


def test_errata_ingest_reads_the_compiled_sources_of_a_tree(compiled_tree, tmp_path):
    out = tmp_path / "kb" / "toktok.jsonl"
    report = ingest_to_file(out, compiled_tree, repo="acme/toktok", sha="v1.0")
    assert report.records == 1 + 4 + 5 and report.compiled_records == {"c": 4, "rust": 5}
    assert "9 from 2 compiled source file(s) (C/C++ 4, Rust 5)" in report.summary()
    records = load_records(out, strict=True)
    by_file = {r.file_path for r in records}
    assert by_file == {"toktok/__init__.py", "toktok/_tok.c", "src/ser.rs"}
    c_record = next(r for r in records if r.error_class == "ParserError")
    assert c_record.github_url.startswith("https://github.com/acme/toktok/blob/v1.0/toktok/_tok.c#L")
    assert "when `self->stream == NULL`" in c_record.documentation
    without = ingest_to_file(tmp_path / "py-only.jsonl", compiled_tree, repo="acme/toktok", compiled=False)
    assert without.records == 1


@pytest.mark.slow
def test_ingested_compiled_records_answer_a_pasted_message(compiled_tree, tmp_path, embedder):
    kb = tmp_path / "kb"
    ingest_to_file(kb / "toktok.jsonl", compiled_tree, repo="acme/toktok", sha="v1.0")
    assistant = Assistant(Settings.load(env={}), kb=kb, index_dir=tmp_path / "index", embedder=embedder)
    answer = assistant.ask(
        'Traceback (most recent call last):\n  File "run.py", line 3, in <module>\n    rows = toktok.read(path)\n'
        "ValueError: Expected 3 fields in line 5, saw 4"
    )
    top = answer.hits[0].record
    assert (top.error_class, top.file_path) == ("ValueError", "toktok/_tok.c")
    # A short message answers where its library is in the traceback, as an ingested Python raise's does.
    answer = assistant.ask(
        'Traceback (most recent call last):\n  File "/app/run.py", line 3, in <module>\n    enc.decode([100264])\n'
        '  File "/usr/lib/python3.11/site-packages/toktok/core.py", line 40, in decode\n'
        "    return self._core.decode_bytes(tokens)\nKeyError: 'Invalid token for decoding: 100264'"
    )
    assert answer.hits[0].record.error_message == "Invalid token for decoding: {0}"


@pytest.mark.slow
def test_cli_ingest_says_what_it_read_of_compiled_sources(compiled_tree, tmp_path):
    out = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "assistant", "ingest", str(compiled_tree), "--repo", "acme/toktok", "-o", str(out)]
    result = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["compiled_records"] == {"c": 4, "rust": 5}
    result = subprocess.run([*command, "--no-compiled"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "1 record(s)" in result.stdout and "compiled" not in result.stdout


@pytest.mark.slow
def test_a_release_build_reads_the_sdist_beside_a_binary_wheel_and_says_when_there_is_none(tmp_path):
    """pip fetches the sdist of a release whose wheel is compiled; a release with wheels only is named."""
    from packaging.tags import sys_tags

    from assistant.releases.download import download_release
    from assistant.releases.scan import cached_scan
    from tests.releases_toys import build_sdist, build_wheel

    index = tmp_path / "index"
    index.mkdir()
    tag = str(next(iter(sys_tags())))
    for name in ("toyext", "toywhl"):
        pure = build_wheel(index, name, "1.0", {f"{name}/__init__.py": "X = 1\n"})
        pure.rename(index / f"{name}-1.0-{tag}.whl")
    build_sdist(index, "toyext", "1.0", {"toyext/__init__.py": "X = 1\n", "toyext/_tok.c": C_MODULE})
    args = ["--no-index", "--find-links", str(index), "--no-build-isolation"]

    wheel = download_release("toyext", "1.0", tmp_path / "cache", args)  # by default, no sdist is fetched
    assert not (wheel.parent / "toyext-1.0.tar.gz").exists()
    wheel = download_release("toyext", "1.0", tmp_path / "cache", args, compiled_sources=True)
    assert wheel.name.endswith(f"{tag}.whl") and (wheel.parent / "toyext-1.0.tar.gz").exists()
    scan = cached_scan(wheel, tmp_path / "cache")
    assert scan["report"]["compiledFrom"] == "toyext-1.0.tar.gz" and scan["report"]["compiledRecords"] == {"c": 4}
    record = next(e["record"] for e in scan["entries"] if e["record"]["errorClass"] == "ParserError")
    assert record["filePath"] == "src/toyext/_tok.c" and "compiled" in record["tags"]
    assert record["githubUrl"].startswith("https://github.com/acme/toyext/blob/v1.0/src/toyext/_tok.c#L")

    wheel = download_release("toywhl", "1.0", tmp_path / "cache", args, compiled_sources=True)
    scan = cached_scan(wheel, tmp_path / "cache")
    assert scan["report"]["compiledSkipped"].startswith("compiled sources not read: wheels only")
    assert scan["entries"] == []


# ---------------------------------------------------------------------------------------------- downloads


@pytest.fixture
def stalling_index():
    """The URL of a package index that accepts connections and never answers."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def hold() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=hold, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/simple"
    server.close()
    for conn in held:
        conn.close()


@pytest.mark.slow
def test_a_download_past_its_time_limit_is_killed_with_everything_it_started(tmp_path):
    import os
    import time

    from assistant.releases.download import run_bounded

    pid_file = tmp_path / "grandchild.pid"
    child = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen(['sleep', '60']); open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded([sys.executable, "-c", child], timeout=1.0)
    assert time.monotonic() - started < 8
    grandchild = int(pid_file.read_text())
    for _ in range(50):  # reaped by init shortly after the kill
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the process pip started outlived the time limit")
    assert run_bounded([sys.executable, "-c", "print('ok')"], timeout=30).stdout == "ok\n"


@pytest.mark.slow
def test_an_index_that_never_answers_skips_the_release_with_the_reason_and_the_build_goes_on(
    tmp_path, stalling_index, monkeypatch
):
    import time

    from assistant.errors import ConfigurationError
    from assistant.releases import download
    from assistant.releases.build import ReleasesReport, scan_releases
    from assistant.releases.compiled_sdist import compiled_entries

    args = ["--isolated", "--index-url", stalling_index, "--timeout", "60", "--retries", "0"]
    wheel = tmp_path / "cache" / "archives" / "toyext" / "toyext-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"")
    started = time.monotonic()
    assert download.download_sdist(wheel, args, timeout=2) is None
    assert time.monotonic() - started < 15
    reason = download.no_sdist_reason(wheel)
    assert reason.startswith("timed out: the sdist did not come in 2 s")
    _entries, report = compiled_entries(wheel, "toyext", "1.0", Origin("acme/toyext"), "2026-12-07T00:00:00.000Z")
    assert report == {"compiledSkipped": f"compiled sources not read: {reason}"}
    # A time-out is no answer about the release: the next run asks again (and here times out again).
    assert download.download_sdist(wheel, args, timeout=1) is None
    assert download.no_sdist_reason(wheel).startswith("timed out: the sdist did not come in 1 s")

    # A release with no archive in the cache: pip's wheel download and the sdist both time out; the release is
    # skipped, said so in the report, and the next release is read.
    monkeypatch.setattr(download, "DOWNLOAD_TIMEOUT_S", 1.5)
    with pytest.raises(ConfigurationError, match=r"cannot download toyslow==2\.0: timed out: .*\(skipped\)"):
        download.download_release("toyslow", "2.0", tmp_path / "cache", args)
    report = ReleasesReport(package="toyslow")
    scans = scan_releases("toyslow", ["2.0"], cache=tmp_path / "cache", pip_args=args, skipped=report.skipped)
    assert scans == [] and report.skipped[0].startswith("2.0: cannot download toyslow==2.0: timed out")
    assert "skipped 2.0: cannot download" in report.summary()


@pytest.mark.slow
def test_an_sdist_is_fetched_without_running_its_build_backend(tmp_path):
    """pip download prepares an sdist (runs its backend; meson-python compiles the project): errata only fetches."""
    import io
    import tarfile

    from assistant.releases.download import download_sdist

    index = tmp_path / "index"
    index.mkdir()
    ran = tmp_path / "backend-ran"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "hang"\nbackend-path = ["."]\n'
        '[project]\nname = "toyhang"\nversion = "1.0"\n',
        "hang.py": f"import pathlib, time\npathlib.Path({str(ran)!r}).touch()\ntime.sleep(600)\n",
        "PKG-INFO": "Metadata-Version: 2.1\nName: toyhang\nVersion: 1.0\n",
        "src/_tok.c": C_MODULE,
    }
    with tarfile.open(index / "toyhang-1.0.tar.gz", "w:gz") as archive:
        for rel, text in files.items():
            member = tarfile.TarInfo(f"toyhang-1.0/{rel}")
            member.size = len(text.encode())
            archive.addfile(member, io.BytesIO(text.encode()))
    wheel = tmp_path / "cache" / "toyhang-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"")
    args = ["--isolated", "--no-index", "--find-links", str(index), "--no-build-isolation"]
    sdist = download_sdist(wheel, args, timeout=60)
    assert sdist == wheel.parent / "toyhang-1.0.tar.gz" and sdist.read_bytes() == (index / sdist.name).read_bytes()
    assert not ran.exists()


# ------------------------------------------------------------------------------------ messages held in variables

LOCALS_CPP = textwrap.dedent(
    r"""
    #include <Python.h>
    static void xerbla(const char *srname, int *info) {
        static const char format[] = "On entry to %.*s"
                " parameter number %d had an illegal value";
        char buf[sizeof(format) + 10];
        PyOS_snprintf(buf, sizeof(buf), format, len, srname, (int)*info);
        PyErr_SetString(PyExc_ValueError, buf);
    }
    static PyObject *nonzero(int ndim) {
        const char *msg;
        if (ndim == 0) {
            msg = "Calling nonzero on 0d arrays is not allowed.";
        } else {
            msg = "Calling nonzero on 1d arrays is deprecated.";
        }
        PyErr_SetString(PyExc_ValueError, msg);
        return NULL;
    }
    void Reader::open(const std::string& path, int flags) {
        std::string msg = "could not open " + path + " with flags " + std::to_string(flags);
        if (!ok) throw std::invalid_argument(msg);
        std::ostringstream ss;
        ss << "Wrong dimension " << d << ", expected " << expected;
        throw std::runtime_error(ss.str());
    }
    void unknown(const char *message) {
        PyErr_SetString(PyExc_ValueError, message);
        FAISS_THROW_IF_NOT_FMT(ok, fmt_from_elsewhere, x);
    }
    """
)


def test_messages_built_in_a_variable_before_the_raise_are_read_from_its_values():
    rows = found("x.cpp", LOCALS_CPP)
    assert [r[:2] for r in rows] == [
        ("ValueError", "On entry to {srname} parameter number {(int)*info} had an illegal value"),  # snprintf'd
        ("ValueError", "Calling nonzero on 1d arrays is deprecated."),  # both values the if/else gives
        ("ValueError", "Calling nonzero on 0d arrays is not allowed."),
        ("ValueError", "could not open {path} with flags {flags}"),  # std::string msg = ... + ...
        ("RuntimeError", "Wrong dimension {d}, expected {expected}"),  # ss << ... ; ss.str()
    ]
    assert rows[3][4:] == ("Reader::open", ("!ok",))
    assert re.search(rows[0][2], "ValueError: On entry to DGESDD parameter number 5 had an illegal value")
    _findings, skipped = find_in_compiled("x.cpp", LOCALS_CPP)
    assert skipped["not a literal message"] == 2  # a parameter, and a macro's format from elsewhere


def test_rust_error_types_displayed_into_python_elsewhere_in_the_crate():
    """tiktoken: a struct's Display raised as KeyError after the call that returns it; tokenizers: every
    error type of the crate raised as Exception by one generic conversion."""
    lib = textwrap.dedent(
        """
        pub struct DecodeKeyError { pub token: Rank }
        impl std::fmt::Display for DecodeKeyError {
            fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "Invalid token for decoding: {}", self.token)
            }
        }
        impl std::error::Error for DecodeKeyError {}
        pub struct Lattice;
        impl std::fmt::Display for Lattice {
            fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result { write!(f, "a lattice of {} nodes", 3) }
        }
        impl CoreBPE {
            fn decode_bytes(&self, tokens: &[Rank]) -> Result<Vec<u8>, DecodeKeyError> { todo!() }
        }
        """
    )
    py = textwrap.dedent(
        """
        fn py_decode_bytes(&self, py: Python, tokens: Vec<Rank>) -> Result<Py<PyBytes>, PyErr> {
            match py.detach(|| self.decode_bytes(&tokens)) {
                Ok(bytes) => Ok(PyBytes::new(py, &bytes).into()),
                Err(e) => Err(pyo3::exceptions::PyKeyError::new_err(format!("{}", e))),
            }
        }
        """
    )
    bpe = textwrap.dedent(
        """
        #[derive(thiserror::Error, Debug)]
        pub enum Error {
            #[error("Unk token `{0}` not found in the vocabulary")]
            UnkTokenOutOfVocabulary(String),
        }
        """
    )
    to_py = textwrap.dedent(
        """
        impl<T> From<ToPyResult<T>> for PyResult<T> {
            fn from(v: ToPyResult<T>) -> Self {
                v.0.map_err(|e| exceptions::PyException::new_err(format!("{e}")))
            }
        }
        """
    )
    origin, when = Origin("acme/toktok"), "2026-12-07T00:00:00.000Z"
    records = [r for r, _f in compiled_records({"src/lib.rs": lib, "src/py.rs": py}, origin, when)]
    assert [(r["errorClass"], r["errorMessage"], r["filePath"]) for r in records] == [
        ("KeyError", "Invalid token for decoding: {self.token}", "src/lib.rs")  # not Lattice: no error
    ]
    assert re.search(records[0]["messagePattern"], "KeyError: 'Invalid token for decoding: 100264'")
    records = [r for r, _f in compiled_records({"core/src/bpe.rs": bpe, "bindings/src/error.rs": to_py}, origin, when)]
    assert [(r["errorClass"], r["errorMessage"]) for r in records] == [
        ("Exception", "Unk token `{0}` not found in the vocabulary")
    ]
    assert re.search(records[0]["messagePattern"], "Exception: Unk token `<unk>` not found in the vocabulary")
    # Without the conversion, the enum is no Python error.
    assert compiled_records({"core/src/bpe.rs": bpe}, origin, when) == []


def test_a_rust_exception_class_str_is_followed_to_the_format_it_returns():
    """pydantic-core: ValidationError's text comes from __str__ -> __repr__ -> display's format!, not new_err;
    ``{plural}`` (one of two literals) prints both ways, and the error line ends before the listed errors."""
    rust = textwrap.dedent(
        """
        use pyo3::prelude::*;
        #[pyclass(extends=PyValueError, module="pydantic_core._pydantic_core", subclass, frozen)]
        #[derive(Clone)]
        pub struct ValidationError { line_errors: Vec<PyLineError>, title: PyObject }

        impl ValidationError {
            pub fn display(&self, py: Python, prefix_override: Option<&'static str>) -> String {
                let line_errors = pretty_py_line_errors(py, self.line_errors.iter());
                if let Some(prefix) = prefix_override {
                    format!("{prefix}\\n{line_errors}")
                } else {
                    let count = self.line_errors.len();
                    let plural = if count == 1 { "" } else { "s" };
                    let title: &str = self.title.extract(py).unwrap();
                    format!("{count} validation error{plural} for {title}\\n{line_errors}")
                }
            }
        }

        #[pymethods]
        impl ValidationError {
            fn __repr__(&self, py: Python) -> String { self.display(py, None) }
            fn __str__(&self, py: Python) -> String { self.__repr__(py) }
        }

        #[pyclass]
        pub struct Helper;
        #[pymethods]
        impl Helper {
            fn __str__(&self) -> String { format!("a helper is not an exception {}", 1) }
        }
        """
    )
    origin, when = Origin("pydantic/pydantic-core"), "2026-12-07T00:00:00.000Z"
    records = [r for r, _f in compiled_records({"src/errors/validation_exception.rs": rust}, origin, when)]
    assert [(r["errorClass"], r["errorMessage"], r["lineNumber"]) for r in records] == [
        ("ValidationError", "{count} validation error for {title}", 16),
        ("ValidationError", "{count} validation errors for {title}", 16),
    ]
    one, many = (re.compile(r["messagePattern"]) for r in records)
    assert one.search("pydantic_core._pydantic_core.ValidationError: 1 validation error for Crew")
    assert many.search("ValidationError: 2 validation errors for Model") and not one.search("2 validation errors for M")


def test_rust_panics_reach_python_as_panic_exception_outside_tests():
    rust = textwrap.dedent(
        """
        use pyo3::prelude::*;
        fn split(&self) -> Vec<String> {
            let parts = self.split_with_indices().expect("AddedVocabulary bad split");
            if parts.is_empty() { panic!("no split for {} in {name}", self.id, name = self.name); }
            let x = maybe.expect(message);  // not a literal: no record
            parts
        }
        #[cfg(test)]
        mod tests {
            #[test]
            fn splits() { split().expect("a test expectation is no record"); }
        }
        """
    )
    records = [r for r, _f in compiled_records({"src/added.rs": rust}, Origin("acme/tok"), "2026-12-07T00:00:00.000Z")]
    assert [(r["errorClass"], r["errorMessage"]) for r in records] == [
        ("PanicException", "AddedVocabulary bad split"),
        ("PanicException", "no split for {self.id} in {self.name}"),
    ]
    assert re.search(records[0]["messagePattern"], "pyo3_runtime.PanicException: AddedVocabulary bad split: Foo")
    # A crate that does not use PyO3 raises no panic into Python.
    assert compiled_records({"src/added.rs": rust.replace("use pyo3::prelude::*;", "")}, Origin("a/b"), "x") == []


def test_a_c_function_that_raises_its_message_argument_is_read_where_it_is_called():
    """Pillow: ImagingError_ValueError(const char *message) raises ValueError with what its callers pass."""
    imaging = textwrap.dedent(
        """
        void *
        ImagingError_ValueError(const char *message) {
            PyErr_SetString(
                PyExc_ValueError, (message) ? (char *)message : "unrecognized argument value"
            );
            return NULL;
        }
        static int getink(PyObject *color, char *ink) {
            PyErr_SetString(PyExc_TypeError, "color must be int or single-element tuple");
            return -1;
        }
        """
    )
    paste = textwrap.dedent(
        """
        extern void *ImagingError_ValueError(const char *message);
        int ImagingPaste(Imaging imOut, Imaging imIn, Imaging imMask) {
            if (imMask->xsize != xsize) {
                (void)ImagingError_ValueError("bad transparency mask");
                return -1;
            }
            return getink(color, "not a message: getink raises its own text");
        }
        """
    )
    records = [
        r
        for r, _f in compiled_records(
            {"src/_imaging.c": imaging, "src/libImaging/Paste.c": paste}, Origin("python-pillow/Pillow"), "x"
        )
    ]
    assert [(r["filePath"], r["errorClass"], r["errorMessage"]) for r in records] == [
        ("src/_imaging.c", "TypeError", "color must be int or single-element tuple"),
        ("src/libImaging/Paste.c", "ValueError", "bad transparency mask"),
    ]
    assert re.search(records[1]["messagePattern"], "ValueError: bad transparency mask")


def test_arrow_status_messages_are_concatenated_arguments_raised_as_pyarrow_classes():
    """Arrow's C++ returns Status::Invalid("Column ", i, ...) and pyarrow raises it as ArrowInvalid; Parquet's
    throw ParquetException prints as OSError, another C++ throw never reaches Python; *_test.cc is a test."""
    table = textwrap.dedent(
        """
        #include "arrow/status.h"
        Status SimpleTable::Validate() const {
          for (int i = 0; i < num_columns(); ++i) {
            if (col->length() != num_rows_) {
              return Status::Invalid("Column ", i, " named ", field(i)->name(),
                                     " expected length ", num_rows_, " but got length ",
                                     col->length());
            }
          }
          if (offset > max) return Status::Invalid("offset overflow while concatenating arrays");
          if (bad) throw std::runtime_error("stays inside C++ code");
          if (broken) throw ParquetException("Unexpected end of stream");
          return Status::OK();
        }
        """
    )
    tree = {"cpp/src/arrow/table.cc": table, "cpp/src/arrow/table_test.cc": table}
    records = [r for r, _f in compiled_records(tree, Origin("apache/arrow"), "2026-12-07T00:00:00.000Z")]
    rows = [(r["filePath"], r["errorClass"], r["errorMessage"]) for r in records]
    assert rows == [
        (
            "cpp/src/arrow/table.cc",
            "ArrowInvalid",
            "Column {i} named {field(i)->name()} expected length {num_rows_} but got length {col->length()}",
        ),
        ("cpp/src/arrow/table.cc", "ArrowInvalid", "offset overflow while concatenating arrays"),
        ("cpp/src/arrow/table.cc", "OSError", "Unexpected end of stream"),
    ]
    printed = "pyarrow.lib.ArrowInvalid: Column 3 named text expected length 75 but got length 0"
    assert re.search(records[0]["messagePattern"], printed)
    # Without Arrow's status.h the same call is no Python error.
    plain = {"table.cc": table.replace('#include "arrow/status.h"', "")}
    assert all(r["errorClass"] != "ArrowInvalid" for r, _f in compiled_records(plain, Origin("a/b"), "x"))


def test_tests_examples_and_carried_projects_make_no_records_unless_vendored_json_names_them():
    """orjson's sdist carries its Cargo dependencies (include/cargo/syn-*), Pillow a CPython shim, numpy
    meson's test cases: none is the distribution's code raised into Python."""
    assert is_own_code("src/libImaging/Paste.c") and is_own_code("tokenizers/src/tokenizer/added_vocabulary.rs")
    for name in (
        "include/cargo/syn-3.0.6/src/lib.rs",
        "xet_runtime/tests/bin/log_test_executable.rs",
        "xet_data/examples/hash/main.rs",
        "src/thirdparty/pythoncapi_compat.h",
        "vendored-meson/meson/test cases/python/9 extmodule limited api/not_limited.c",
        "cpp/src/arrow/flight/test_flight_server.cc",
        "cpp/src/arrow/table_test.cc",
    ):
        assert not is_own_code(name), name
    raise_ = 'PyErr_SetString(PyExc_ValueError, "Unmatched quotes in the JSON input");'
    tree = {"pandas/_libs/src/vendored/ujson/lib/decoder.c": raise_, "src/vendor/other/x.c": raise_}
    vendored = vendored_folders("pandas", "2")
    records = [r for r, _f in compiled_records(tree, Origin("pandas-dev/pandas"), "x", vendored=vendored)]
    assert [(r["repo"], r["filePath"]) for r in records] == [("ultrajson/ultrajson", "lib/decoder.c")]


def test_numpys_templated_c_is_read_with_its_template_names_as_placeholders():
    """numpy raises ``setting an array element with a sequence.`` from ``arraytypes.c.src``, C that its build
    expands once per type (``@TYPE@_setitem``); a message naming a template variable prints the type there."""
    source = textwrap.dedent(
        """
        static int
        @TYPE@_setitem(PyObject *op, void *ov, void *vap)
        {
            if (PySequence_Check(op)) {
                PyErr_SetString(PyExc_ValueError,
                        "setting an array element with a sequence.");
                return -1;
            }
            PyErr_Format(PyExc_TypeError, "@name@ cannot hold %d values", 3);
            return 0;
        }
        """
    )
    findings, _skipped = find_in_compiled("numpy/_core/src/multiarray/arraytypes.c.src", source)
    messages = [(f.error_class, message_template(f.parts)[0]) for f in findings]
    assert ("ValueError", "setting an array element with a sequence.") in messages
    (typed,) = [f for f in findings if f.error_class == "TypeError"]
    assert not any("@" in str(part) for part in typed.parts)
    assert is_own_code("numpy/_core/src/multiarray/arraytypes.c.src")
    assert not is_own_code("numpy/_core/src/multiarray/_multiarray_tests.c.src")  # numpy's test module
