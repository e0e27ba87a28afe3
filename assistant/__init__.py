"""errata: answers for Python errors, grounded in a knowledge base of real error records.

The public API. Names load on first use, so ``import assistant`` is cheap (the CLI and the front ends import
only what their command needs; faiss, bm25s and torch load when an ``Assistant`` is made).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    ConfigurationError,
    EmbedderError,
    ErrataError,
    IndexBuildError,
    KnowledgeBaseError,
    LLMError,
)

# public name -> module that defines it
_LAZY = {
    "Answer": ".answering.answer",
    "Citation": ".answering.answer",
    "Hit": ".answering.answer",
    "Retrieval": ".answering.answer",
    "Assistant": ".api",
    "ask": ".api",
    "search": ".api",
    "VectorStore": ".index",
    "load_index": ".index",
    "open_index": ".index",
    "IngestReport": ".ingest",
    "ingest_to_file": ".ingest",
    "Frame": ".parse.frames",
    "Query": ".parse.query",
    "parse_query": ".parse.query",
    "Record": ".knowledge.records",
    "load_records": ".knowledge.records",
    "Settings": ".settings",
    "install": ".frontends.excepthook",
    "load_ipython_extension": ".frontends.ipython",
    "unload_ipython_extension": ".frontends.ipython",
}

__all__ = [
    "Answer",
    "Assistant",
    "Citation",
    "ConfigurationError",
    "EmbedderError",
    "ErrataError",
    "Frame",
    "Hit",
    "IndexBuildError",
    "IngestReport",
    "KnowledgeBaseError",
    "LLMError",
    "Query",
    "Record",
    "Retrieval",
    "Settings",
    "VectorStore",
    "ask",
    "ingest_to_file",
    "install",
    "load_index",
    "load_ipython_extension",
    "load_records",
    "open_index",
    "parse_query",
    "search",
    "unload_ipython_extension",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'assistant' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and editors; at run time the names load lazily (above)
    from .answering.answer import Answer, Citation, Hit, Retrieval
    from .api import Assistant, ask, search
    from .frontends.excepthook import install
    from .frontends.ipython import load_ipython_extension, unload_ipython_extension
    from .index import VectorStore, load_index, open_index
    from .ingest import IngestReport, ingest_to_file
    from .knowledge.records import Record, load_records
    from .parse.frames import Frame
    from .parse.query import Query, parse_query
    from .settings import Settings
