"""errata: answers for Python errors, grounded in a knowledge base of real error records."""

from .answer import Answer, Citation
from .api import Assistant, ask, search
from .errors import (
    ConfigurationError,
    EmbedderError,
    ErrataError,
    IndexBuildError,
    KnowledgeBaseError,
    LLMError,
)
from .index import VectorIndex, load_index, open_index
from .ingest import IngestReport, ingest_to_file
from .query import Frame, Query, parse_query
from .records import Record, load_records
from .retrieve import Hit
from .settings import Settings

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
    "Settings",
    "VectorIndex",
    "ask",
    "ingest_to_file",
    "load_index",
    "load_records",
    "open_index",
    "parse_query",
    "search",
]
