"""Errors a user of errata can catch, each saying what to do next."""

from __future__ import annotations


class ErrataError(Exception):
    """Base class of every error errata raises on purpose."""


class KnowledgeBaseError(ErrataError):
    """A knowledge-base file is missing, unreadable or holds a malformed record."""


class IndexBuildError(ErrataError):
    """The vector index could not be built or written (disk full, unwritable folder, ...)."""


class EmbedderError(ErrataError):
    """The embedding model could not be loaded."""


class ConfigurationError(ErrataError):
    """A setting has a value errata cannot use."""


class LLMError(ErrataError):
    """The language model could not be reached or gave no usable reply."""
