"""The one place that calls litellm: model choice, timeouts, retries with backoff, fallbacks, streaming.

litellm is imported on first use only, so errata without a model configured never loads it. Keys come
from the providers' own environment variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...) through
litellm; errata never reads, logs or repeats them. Failures become :class:`~assistant.errors.LLMError`
whose message says in general terms what went wrong (timed out, server error, key rejected, ...),
never the provider's raw reply, which can echo part of a key.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import LLMError
from ..settings import Settings

logger = logging.getLogger(__name__)

# Seconds before the first retry; doubled for each further one.
BACKOFF_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 8.0

_litellm: Any = None
_import_lock = threading.Lock()


def _import_litellm() -> Any:
    """litellm, imported once and quietened (its own debug hints print provider replies)."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            # litellm's own config, not errata's: use the model cost map shipped in the package instead
            # of fetching it from the internet at import time (which retries for seconds offline).
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            # litellm logs whole prompts at INFO and provider replies (which can echo a key) at DEBUG;
            # errata's -v is about errata, so keep litellm's own loggers to warnings.
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
                logging.getLogger(name).setLevel(logging.WARNING)
            _litellm = litellm
        return _litellm


@dataclass(frozen=True)
class Failure:
    """Why a call failed, in words safe to show a user, and whether trying again may help."""

    reason: str
    retryable: bool


def classify(exc: BaseException, timeout: float) -> Failure:
    """Sort an exception from litellm into a general reason; never uses the exception's text."""
    litellm = _import_litellm()
    errors = litellm.exceptions
    status = getattr(exc, "status_code", None)
    if isinstance(exc, errors.Timeout):
        return Failure(f"it did not answer within {timeout:g} s", True)
    if _caused_by_connection_error(exc):  # litellm reports a refused connection as a 500
        return Failure("errata could not connect to it", True)
    if isinstance(exc, (errors.AuthenticationError, errors.PermissionDeniedError)) or status in (401, 403):
        return Failure("the API key was missing or rejected (set the provider's key variable)", False)
    if isinstance(exc, errors.RateLimitError) or status == 429:
        return Failure("the provider's rate limit or quota was reached", True)
    if isinstance(exc, (errors.NotFoundError, errors.BadRequestError)) or status in (400, 404, 422):
        return Failure("the provider rejected the request (check the model name)", False)
    if isinstance(exc, (errors.InternalServerError, errors.ServiceUnavailableError, errors.BadGatewayError)) or (
        isinstance(status, int) and status >= 500
    ):
        return Failure("the server returned an error", True)
    if isinstance(exc, errors.APIConnectionError):
        return Failure("errata could not connect to it", True)
    return Failure("the call failed unexpectedly", False)


def _caused_by_connection_error(exc: BaseException) -> bool:
    """Whether a connection that could not be made (not a slow one) is behind ``exc``.

    Matched by name so errata does not import the HTTP library litellm happens to use (httpx today).
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError) or type(cause).__name__ == "ConnectError":
            return True
        cause = cause.__cause__ or cause.__context__
    return False


class ChatStream:
    """Text pieces of one reply as they arrive; ``model`` names the model that is answering.

    Retries and fallbacks happen before the first piece: once text has been handed out, a failure
    raises :class:`LLMError` rather than starting the reply again. All attempts together get the
    client's ``deadline`` (each attempt's timeout is cut to what is left), and a reply stops at
    ``max_chars``: a trickle or a flood ends with ``cut`` saying why, the text so far kept. Between two
    pieces the wait is bounded by the attempt's timeout, so a reply ends by ``deadline + timeout``.
    """

    def __init__(self, client: ChatModel, messages: list[dict[str, str]]):
        self._client = client
        self._messages = messages
        self.model: str | None = None
        self.cut: str | None = None  # why the reply was cut short, when it was

    def __iter__(self) -> Iterator[str]:
        client = self._client
        last: Failure | None = None
        given_up: set[str] = set()
        ends = time.monotonic() + client.deadline
        for model, api_base, attempt in client.attempts(given_up):
            started = False
            left = ends - time.monotonic()
            if left <= 0:
                last = Failure(f"it did not answer within the {client.deadline:g} s deadline", False)
                break
            size = 0
            try:
                for piece in client._call(model, api_base, self._messages, timeout=min(client.timeout, left)):
                    if not started:
                        started = True
                        self.model = model
                    if size + len(piece) > client.max_chars:
                        self.cut = f"it was longer than {client.max_chars:,} characters"
                        yield piece[: client.max_chars - size]
                        return
                    size += len(piece)
                    yield piece
                    if time.monotonic() > ends:
                        self.cut = f"it was still arriving after the {client.deadline:g} s deadline"
                        return
                if started:
                    return
                last = Failure("it sent an empty reply", True)
            except Exception as exc:  # litellm raises many types; classify() sorts them
                failure = classify(exc, client.timeout)
                logger.info("LLM %s attempt %d: %s (%s)", model, attempt + 1, failure.reason, type(exc).__name__)
                if started:
                    logger.warning("LLM %s: the reply broke off: %s", model, failure.reason)
                    raise LLMError(f"the reply from {model} broke off: {failure.reason}") from None
                last = failure
                if not failure.retryable:
                    given_up.add(model)
        reason = last.reason if last else "no model is configured"
        logger.warning("LLM not used: %s", reason)
        raise LLMError(reason)


class ChatModel:
    """A configured model (plus fallbacks), called through litellm with streaming.

    ``api_base`` applies to the first model only: fallbacks are usually other providers with their
    own endpoints. Each attempt has ``timeout`` seconds; retryable failures (timeouts, 5xx, rate
    limits, connection errors) are retried ``retries`` times with exponential backoff, then the next
    fallback model is tried.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        timeout: float = 30.0,
        retries: int = 2,
        fallbacks: Sequence[str] = (),
        max_tokens: int = 800,
        temperature: float = 0.2,
        deadline: float = 60.0,
        max_chars: int = 20_000,
    ):
        self.model = model
        self.api_base = api_base
        self.timeout = timeout
        self.retries = max(0, retries)
        self.fallbacks = tuple(fallbacks)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.deadline = deadline
        self.max_chars = max_chars

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatModel | None:
        """The model the settings name, or ``None`` when none is configured (the offline drafter)."""
        if not settings.model:
            return None
        return cls(
            settings.model,
            api_base=settings.api_base or None,
            timeout=settings.llm_timeout,
            retries=settings.llm_retries,
            fallbacks=settings.fallback_models,
            max_tokens=settings.llm_max_tokens,
            temperature=settings.llm_temperature,
            deadline=settings.llm_deadline,
            max_chars=settings.llm_max_chars,
        )

    def candidates(self) -> list[tuple[str, str | None]]:
        return [(self.model, self.api_base), *((m, None) for m in self.fallbacks if m != self.model)]

    def attempts(self, given_up: set[str]) -> Iterator[tuple[str, str | None, int]]:
        """``(model, api_base, attempt)`` in the order to try them, sleeping with backoff before a retry.

        A model the caller adds to ``given_up`` (a failure retrying cannot fix) gets no further attempts.
        """
        for model, api_base in self.candidates():
            for attempt in range(self.retries + 1):
                if model in given_up:
                    break
                if attempt:
                    time.sleep(min(BACKOFF_SECONDS * 2 ** (attempt - 1), BACKOFF_MAX_SECONDS))
                yield model, api_base, attempt

    def request(
        self, model: str, api_base: str | None, messages: list[dict[str, str]], *, stream: bool, **extra: Any
    ) -> Any:
        """One litellm call with this model's timeout and sampling settings; ``extra`` overrides them."""
        # num_retries=0: errata does its own retries (``attempts``), so attempts and total time stay
        # predictable (litellm would otherwise retry in both its wrapper and the provider's SDK).
        options: dict[str, Any] = {
            "timeout": self.timeout,
            "num_retries": 0,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            **extra,
        }
        return _import_litellm().completion(model=model, messages=messages, api_base=api_base, stream=stream, **options)

    def stream(self, messages: list[dict[str, str]]) -> ChatStream:
        """The reply to ``messages``, piece by piece (iterate the result)."""
        return ChatStream(self, messages)

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The whole reply to ``messages``."""
        return "".join(self.stream(messages))

    def _call(self, model: str, api_base: str | None, messages: list[dict[str, str]], **extra: Any) -> Iterator[str]:
        response = self.request(model, api_base, messages, stream=True, **extra)
        for chunk in response:
            choices = getattr(chunk, "choices", None) or []
            if not choices:
                continue
            delta = getattr(choices[0], "delta", None)
            content = getattr(delta, "content", None) if delta is not None else None
            if content:
                yield content


# --- A whole reply in one response, optionally in JSON mode (used by `errata ingest --enrich`). ---


def complete_text(
    client: ChatModel, messages: list[dict[str, str]], *, json_mode: bool = False, max_tokens: int | None = None
) -> str:
    """The reply to ``messages`` as one non-streamed text, with the client's retries and fallbacks.

    ``json_mode`` asks the provider for a JSON object (``response_format``); providers without it get the
    request without that parameter (``drop_params``), so callers must still validate what comes back.
    """
    extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
    if max_tokens:
        extra["max_tokens"] = max_tokens
    last: Failure | None = None
    given_up: set[str] = set()
    for model, api_base, _attempt in client.attempts(given_up):
        try:
            response = client.request(model, api_base, messages, stream=False, drop_params=True, **extra)
            choices = getattr(response, "choices", None) or []
            text = getattr(choices[0].message, "content", None) if choices else None
            if text and text.strip():
                return text
            last = Failure("it sent an empty reply", True)
        except Exception as exc:  # litellm raises many types; classify() sorts them
            last = classify(exc, client.timeout)
            logger.warning("LLM %s: %s (%s)", model, last.reason, type(exc).__name__)
            if not last.retryable:
                given_up.add(model)
    raise LLMError(last.reason if last else "no model is configured")
