"""Making records from a package's source: finding raises, warnings and log calls (``ast``, nothing run),
describing them, and optionally enriching them with an LLM. Must not know about indexes or retrieval."""

from .output import IngestReport
from .pipeline import ingest_to_file

__all__ = ["IngestReport", "ingest_to_file"]
