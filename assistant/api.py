"""The public door: ``Assistant`` (load once, ask many times, from many threads) and ``ask``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .answering.answer import Answer, Hit, Retrieval
from .answering.draft import stream_answer
from .answering.llm import ChatModel
from .embedding.embedder import Embedder
from .index import BuildReport, VectorStore
from .knowledge.knowledge_base import open_knowledge_base
from .knowledge.records import LoadReport, Record
from .parse.query import Query, parse_query
from .retrieval import Retriever
from .retrieval.versions import prefer_installed
from .settings import Settings

logger = logging.getLogger(__name__)


class Assistant:
    """Loads the knowledge base and its index once; answers queries from any thread.

    ``Assistant()`` uses the bundled knowledge base and the default index folder; keyword arguments
    override single settings (``Assistant(kb="my_kb/", index_dir="/tmp/idx")``).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        kb: str | Path | Sequence[str | Path] | None = None,
        index_dir: str | Path | None = None,
        embedder: Embedder | None = None,
        show_progress: bool = False,
        build_in_child: bool = False,
        **overrides: Any,
    ):
        if kb is not None and isinstance(kb, (str, Path)):
            kb = [kb]
        settings = settings or Settings.load()
        self.settings = settings.replace(kb=kb, index_dir=index_dir, **overrides)
        self.embedder = embedder or Embedder(self.settings.embedder, batch_size=self.settings.embed_batch_size)
        # Records stay on disk, read when shown (see shelf.py); unchanged files start from the saved
        # snapshot (see snapshot.py).
        # A server builds in a child process (``build_in_child``) and keeps only what it serves from.
        opened = open_knowledge_base(
            self.settings, self.embedder, show_progress=show_progress, build_in_child=build_in_child
        )
        self.embedder = opened.query_embedder  # through the ONNX export stored with the index: no torch
        self.records: Sequence[Record] = opened.records
        self.load_report: LoadReport = opened.load_report
        self.vector_index: VectorStore = opened.vector_index
        self.build_report: BuildReport = opened.build_report
        self.retriever = Retriever(
            self.records,
            self.embedder,
            self.vector_index,
            signals=opened.signals,
            pieces=opened.pieces,
            confidence_threshold=self.settings.confidence_threshold,
        )
        # Loaded now rather than on the first question (the ONNX export: ~0.3 s; the torch model: ~4 s).
        _ = self.embedder.model

    def parse(self, text: str | bytes) -> Query:
        return parse_query(text, max_chars=self.settings.max_query_chars)

    def retrieve(self, text: str | bytes, k: int | None = None) -> tuple[Query, Retrieval]:
        query = self.parse(text)
        return query, self.retriever.retrieve(query, k or self.settings.top_k)

    def search(self, text: str | bytes, k: int | None = None) -> list[Hit]:
        """The records nearest to ``text``, best first, without drafting an answer."""
        return self.retrieve(text, k)[1].hits

    def ask(
        self,
        text: str | bytes,
        k: int | None = None,
        *,
        model: str | None = None,
        installed: Mapping[str, str] | None = None,
    ) -> Answer:
        """An answer to what was pasted, citing the records it comes from.

        Drafted by the configured LLM (``settings.model``), else composed offline from the records;
        ``model`` picks another for this call (see :meth:`ask_stream`).
        """
        *_pieces, answer = self.ask_stream(text, k, model=model, installed=installed)
        return answer

    def ask_stream(
        self,
        text: str | bytes,
        k: int | None = None,
        *,
        model: str | None = None,
        installed: Mapping[str, str] | None = None,
    ) -> Iterator[str | Answer]:
        """Text chunks as they are drafted, then the final :class:`Answer`.

        The chunks join up to ``Answer.text``. An unreachable LLM gives the offline answer with one
        line saying why, never an exception. ``model``: a litellm model name for this call only (called
        like a fallback: on its provider's own endpoint), or :data:`OFFLINE` for the offline answer.
        ``installed``: distribution -> version where the error happened (``errata run`` knows it); a
        versioned record valid for that version is preferred to a nearly as likely one that is not.
        """
        query, retrieval = self.retrieve(text, k)
        retrieval = prefer_installed(retrieval, installed)
        yield from stream_answer(query, retrieval, self._chat_model(model))

    def _chat_model(self, model: str | None) -> ChatModel | None:
        if not model or model == self.settings.model:
            return ChatModel.from_settings(self.settings)
        if model == OFFLINE:
            return None
        return ChatModel.from_settings(self.settings.replace(model=model, api_base="", fallback_models=()))


# ``Assistant.ask(..., model=OFFLINE)``: the answer composed from the records, whatever model is configured.
OFFLINE = "offline"


def configure_serving_threads(settings: Settings) -> None:
    """Set the embedding runtimes' thread count for a serving process (the web chat, the Slack bot, the CLI).

    Serving encodes one short query at a time, fastest on one thread, and concurrent requests then use the
    other cores instead of fighting over them (see ``serve_threads``); builds still use every core. Called
    by the serving entry points before they make their ``Assistant`` (so the query encoder is prepared for
    this count once), not by ``Assistant``: a library user's process keeps its own setting. Torch is not
    imported for this: it gets the count if and when it loads.
    """
    if settings.serve_threads <= 0:
        return
    from .embedding.threads import set_threads

    set_threads(settings.serve_threads)


_default: Assistant | None = None
_default_lock = threading.Lock()


def default_assistant() -> Assistant:
    """One shared Assistant on the default settings, built on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Assistant()
        return _default


def ask(text: str | bytes) -> Answer:
    """Answer ``text`` with the shared default Assistant (bundled knowledge base)."""
    return default_assistant().ask(text)


def search(text: str | bytes, k: int | None = None) -> list[Hit]:
    """The records nearest to ``text`` with the shared default Assistant."""
    return default_assistant().search(text, k)
