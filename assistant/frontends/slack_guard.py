"""Requests to ``/slack/events`` checked for shape before Bolt reads them: bad ones get 400 or 401, not 500.

Why: Bolt turns the request timestamp into a number and the body into a dict without checking either;
a non-numeric ``X-Slack-Request-Timestamp`` or a JSON body that is not an object (``[]``) raised inside
it and came back as HTTP 500, which reads as errata being broken and makes Slack retry. Slack itself
always sends a numeric timestamp and an object, so nothing it sends is refused here.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
MAX_BODY_BYTES = 3 * 1024 * 1024  # Slack's largest payloads (views with many blocks) are far smaller
MAX_TIMESTAMP_DIGITS = 12  # Slack's are ten digits until the year 2286


def guarded(app: WSGIApp) -> WSGIApp:
    """``app`` behind the checks above."""

    def checked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            return app(environ, start_response)
        timestamp = environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP")
        if timestamp is not None and not _plausible_timestamp(timestamp.strip()):
            return _refuse(start_response, 401, "invalid X-Slack-Request-Timestamp")
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _refuse(start_response, 400, "invalid Content-Length")
        if length < 0 or length > MAX_BODY_BYTES:
            return _refuse(start_response, 413 if length > 0 else 400, "request body too large")
        body = environ["wsgi.input"].read(length) if length else b""
        problem = body_problem(body, environ.get("CONTENT_TYPE") or "")
        if problem:
            return _refuse(start_response, 400, problem)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return app(environ, start_response)

    return checked


def _plausible_timestamp(timestamp: str) -> bool:
    """Seconds since 1970 in ASCII digits, short enough to be a float (Bolt subtracts it from ``time()``: 400
    digits raised OverflowError, an HTTP 500)."""
    return timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= MAX_TIMESTAMP_DIGITS


def body_problem(body: bytes, content_type: str) -> str | None:
    """Why ``body`` is not a Slack request Bolt can read, or ``None`` when it is."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    if "json" in content_type or text.lstrip().startswith(("{", "[")):
        return _object_problem(text, "the body")
    form = parse_qs(text, keep_blank_values=True)
    if "payload" in form:
        return _object_problem(form["payload"][0], "the payload")
    return None


def _object_problem(text: str, what: str) -> str | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return f"{what} is not valid JSON"
    return None if isinstance(value, dict) else f"{what} is not a JSON object"


def _refuse(start_response: Callable[..., Any], status: int, reason: str) -> list[bytes]:
    phrases = {400: "Bad Request", 401: "Unauthorized", 413: "Payload Too Large"}
    data = json.dumps({"error": reason}).encode()
    start_response(
        f"{status} {phrases[status]}", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
    )
    return [data]
