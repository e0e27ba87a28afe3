"""Records from the compiled half of a package: messages raised in its C/C++, Cython and Rust sources,
read at the level of a lexer (nothing is compiled). Each language has its reader (``c_sources``,
``cython``, ``rust``); ``templates`` turns their formats into message parts; ``sources`` makes records."""

from .sources import COMPILED_TAG, CompiledReport, compiled_records, find_in_compiled, vendored_folders
from .tree import ingest_compiled

__all__ = [
    "COMPILED_TAG",
    "CompiledReport",
    "compiled_records",
    "find_in_compiled",
    "ingest_compiled",
    "vendored_folders",
]
