"""Feedback on answers (helpful or not, with a comment), kept in a local SQLite file.

The web chat and the Slack bot write to the same store; ``errata feedback export`` turns it into
eval-style JSONL so that real questions become test queries.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import ErrataError

logger = logging.getLogger(__name__)
# Seconds a vote waits for a file another process holds locked before it is refused.
BUSY_TIMEOUT_S = 2.0


class FeedbackError(ErrataError):
    """A vote could not be stored (the feedback file is damaged, locked or read-only); answers still work."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    source TEXT NOT NULL,
    query TEXT NOT NULL,
    answer TEXT NOT NULL,
    record_ids TEXT NOT NULL,
    helpful INTEGER NOT NULL,
    comment TEXT NOT NULL DEFAULT '',
    context TEXT NOT NULL DEFAULT ''
)
"""


@dataclass(frozen=True)
class Feedback:
    id: int
    created_at: str
    source: str
    query: str
    answer: str
    record_ids: list[str]
    helpful: bool
    comment: str
    context: str


class FeedbackStore:
    """A SQLite file of feedback rows; safe to share between threads of one process and between processes.

    A file that is damaged, locked or read-only never stops a server from starting or answering: the
    problem is logged at start, and each vote while it lasts raises :class:`FeedbackError` saying so
    (front ends show that instead of a thank-you). Each operation opens one connection and closes it.
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._ready = False
        try:
            self._prepare()
        except FeedbackError as exc:
            logger.warning("%s; answers are served, votes are refused until it is fixed", exc)

    def _prepare(self) -> None:
        if self._ready:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connection() as conn:
                conn.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise FeedbackError(self._problem(exc)) from exc
        self._ready = True

    def _problem(self, exc: BaseException) -> str:
        return (
            f"cannot use the feedback store {self.path} ({exc}); move a damaged file away, make it writable,"
            " or set ERRATA_FEEDBACK_DB to another file"
        )

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """One connection, committed on success and closed either way (``with sqlite3.connect()``
        only commits: the connections of every vote stayed open until garbage collection)."""
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        try:
            with conn:
                yield conn
        finally:
            conn.close()

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection to a usable store, or :class:`FeedbackError` saying what is wrong with it.

        A file deleted (or emptied) while the server runs is made again: SQLite would otherwise create an
        empty one on connecting, and every vote until a restart failed with "no such table".
        """
        if self._ready and not _has_data(self.path):
            logger.warning("the feedback store %s was removed while errata ran; it is made again", self.path)
            self._ready = False
        self._prepare()
        try:
            with self._connection() as conn:
                yield conn
        except (OSError, sqlite3.Error) as exc:
            raise FeedbackError(self._problem(exc)) from exc

    def add(
        self,
        *,
        query: str,
        answer: str,
        record_ids: Sequence[str],
        helpful: bool,
        comment: str = "",
        source: str = "web",
        context: str = "",
    ) -> int:
        """Store one piece of feedback; returns its row id. ``context`` is free text (a Slack thread, say).

        A vote on no question (a Slack button whose value is not one errata wrote) is refused with
        :class:`FeedbackError`: a row with an empty query is useless and pollutes ``feedback export``.
        """
        _check_vote(query, answer, record_ids, helpful)
        created = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self._lock, self._connect() as conn:
            cursor = conn.execute(
                "INSERT INTO feedback (created_at, source, query, answer, record_ids, helpful, comment, context)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (created, source, query, answer, json.dumps(list(record_ids)), int(helpful), comment, context),
            )
            return int(cursor.lastrowid)

    def update(self, row_id: int, *, helpful: bool | None = None, comment: str | None = None) -> bool:
        """Change a stored vote or its comment (a user flips thumbs or adds a note); False if the row is gone."""
        changes = {"helpful": None if helpful is None else int(helpful), "comment": comment}
        changes = {name: value for name, value in changes.items() if value is not None}
        if not changes:
            return True
        assignments = ", ".join(f"{name} = ?" for name in changes)
        with self._lock, self._connect() as conn:
            cursor = conn.execute(f"UPDATE feedback SET {assignments} WHERE id = ?", (*changes.values(), row_id))
            return cursor.rowcount == 1

    def delete(self, row_id: int) -> bool:
        """Remove one row (a user took their vote back); False if it was not there."""
        with self._lock, self._connect() as conn:
            return conn.execute("DELETE FROM feedback WHERE id = ?", (row_id,)).rowcount == 1

    def all(self) -> Iterator[Feedback]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT id, created_at, source, query, answer, record_ids, helpful, comment, context"
                " FROM feedback ORDER BY id"
            ).fetchall()
        for row in rows:
            yield Feedback(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), bool(row[6]), row[7], row[8])

    def export_jsonl(self, out: Path | str) -> int:
        """Write feedback as eval-style JSONL ``{"id", "query", "style", "relevant", ...}``; returns the count.

        A helpful answer's top cited record becomes ``relevant``; an unhelpful one is exported with an
        empty ``relevant`` and ``"needs_label": true`` so a person can label it.
        """
        from ..parse.query import parse_query

        count = 0
        out = Path(out)
        with out.open("w", encoding="utf-8") as handle:
            for item in self.all():
                row = {
                    "id": f"feedback-{item.id}",
                    "query": item.query,
                    "style": parse_query(item.query).kind,
                    "relevant": item.record_ids[:1] if item.helpful else [],
                    "helpful": item.helpful,
                    "comment": item.comment,
                    "source": item.source,
                    "created_at": item.created_at,
                }
                if not item.helpful:
                    row["needs_label"] = True
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
        return count


def _has_data(path: Path) -> bool:
    """Whether ``path`` still holds a database (not deleted, not emptied)."""
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _check_vote(query: object, answer: object, record_ids: object, helpful: object) -> None:
    """:class:`FeedbackError` unless these make a vote worth keeping: a question, an answer, ids, a verdict."""
    if not isinstance(query, str) or not query.strip():
        raise FeedbackError("a vote must name the question it is about; this one names none, so it was not stored")
    if not isinstance(answer, str) or not isinstance(helpful, bool):
        raise FeedbackError("a vote needs the answer's text and whether it helped (True or False); not stored")
    if not isinstance(record_ids, (list, tuple)) or not all(isinstance(r, str) and r for r in record_ids):
        raise FeedbackError("a vote's record ids must be a list of non-empty strings; not stored")
