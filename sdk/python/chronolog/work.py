"""Work under a cause: what code running for a delivery or an action does (emit, call,
collection writes and reads, timers and delays), each call naming its cause and its position
among the calls made under it, so the owner derives the same ids when the work runs again.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping, Optional, Sequence, Union

from chronolog.client import CallResult, Client, DelayResult, DocumentWriteResult
from chronolog.gen.chronolog.v1 import event_pb2, time_pb2

__all__ = ["CauseCollections", "WorkUnderCause"]


class CauseCollections:
    """Collection operations done by code under a cause: ``ctx.collections``.

    Writes take the next position under the cause (shared with emit, call and
    the timer calls): the owner derives the write's id, and a created
    document's ``_id`` when none is given, from the cause, the position and the
    input, so a retried run making the same writes in the same order applies
    them once and gets the same answer. Writes run as the cause's actor.
    Reads take no position; they name the cause too, so when its actor
    has a space they find only that space's documents and those without one.
    Each raises :class:`ChronologError`.
    """

    def __init__(self, work: "WorkUnderCause"):
        """The collection helpers of ``work``."""
        self._work = work

    def create(self, collection: str, doc: Mapping[str, Any]) -> DocumentWriteResult:
        """Creates a document (its ``_id`` derived when absent); returns it with its ``.created`` seq. ALREADY_EXISTS when its ``_id`` is taken (by other work)."""
        return self._work._client.create_document(collection, doc, cause=self._work._next_cause())

    def replace(self, collection: str, id: str, doc: Mapping[str, Any]) -> DocumentWriteResult:
        """Replaces document ``id``; returns it with its ``.updated`` seq. NOT_FOUND when absent."""
        return self._work._client.replace_document(collection, id, doc, cause=self._work._next_cause())

    def patch(self, collection: str, id: str, set: Optional[Mapping[str, Any]] = None, unset: Sequence[str] = ()) -> DocumentWriteResult:
        """Sets fields (``set``, by dotted path) and removes paths (``unset``) of document ``id``. NOT_FOUND when absent."""
        return self._work._client.patch_document(collection, id, set, unset, cause=self._work._next_cause())

    def delete(self, collection: str, id: str) -> DocumentWriteResult:
        """Deletes document ``id`` (``doc`` None, the ``.deleted`` seq). NOT_FOUND when absent."""
        return self._work._client.delete_document(collection, id, cause=self._work._next_cause())

    def get(self, collection: str, id: str) -> dict:
        """Document ``id``, private fields included (code reads them). NOT_FOUND when absent."""
        return self._work._client.get_document(collection, id, cause=self._work._read_cause())

    def find(self, collection: str, filter: Optional[Mapping[str, Any]] = None, sort: Optional[Mapping[str, int]] = None, limit: int = 0) -> list:
        """Documents matching a MongoDB ``filter``, sorted (``{"field": 1 or -1}``), at most ``limit`` (default 100)."""
        return self._work._client.find_documents(collection, filter, sort, limit, cause=self._work._read_cause())


class WorkUnderCause:
    """What code can do under a cause: ``emit``, ``call``,
    ``collections``, ``schedule``, ``unschedule``, ``delay`` and
    ``cancel_delay``.

    Each call names the cause event id and its position among the calls made
    under it (from 0, shared by all of them, thread-safe), so the owner
    derives the same ids and the cause's actor when the work runs
    again.
    """

    def __init__(self, client: Client, cause_event_id: str, cancelled: threading.Event):
        """Work under ``cause_event_id``; ``cancelled`` is set when the run is cancelled or its stream is lost."""
        self._client = client
        self.cause_event_id = cause_event_id
        self.cancelled = cancelled
        self.collections = CauseCollections(self)
        self._position = 0
        self._lock = threading.Lock()

    def _read_cause(self) -> event_pb2.Cause:
        """The cause a read names: the event id, no position taken (only writes derive ids from positions)."""
        return event_pb2.Cause(event_id=self.cause_event_id, position=0)

    def _next_cause(self) -> event_pb2.Cause:
        """The cause for the next call: the event id and the next position."""
        with self._lock:
            position = self._position
            self._position += 1
        return event_pb2.Cause(event_id=self.cause_event_id, position=position)

    def emit(self, type: str, data: Optional[Mapping[str, Any]] = None) -> event_pb2.Event:
        """Emits an event under the cause and returns it as stored.

        Its id is derived by the owner from the cause, this call's position and
        the input: a retried run making the same calls finds the same event
        instead of writing a second one. Raises :class:`ChronologError`.
        """
        return self._client.emit(type, data, cause=self._next_cause()).event

    def call(self, action: str, input: Optional[Mapping[str, Any]] = None) -> CallResult:
        """Calls action ``plugin.action`` under the cause and returns its :class:`CallResult`.

        The call id is derived, so a retried run gets the recorded output
        (``from_log`` true) instead of running the action again. Raises
        :class:`ChronologError` (ABORTED when the action failed).
        """
        return self._client.call(action, input, cause=self._next_cause())

    def schedule(
        self,
        action: str,
        input: Optional[Mapping[str, Any]],
        when: Mapping[str, Any],
        *,
        timer_id: str = "",
        overdue: Union[str, Mapping[str, Any]] = "unbounded",
        cancel_on: Sequence[Mapping[str, Any]] = (),
    ) -> time_pb2.Timer:
        """Sets a timer calling ``action`` with ``input`` and returns it as stored.

        ``when``: ``{"at": moment}`` (a timezone-aware datetime or ms since the
        epoch), ``{"cron": "0 9 * * 1", "zone": "Europe/Berlin"}`` or
        ``{"every_ms": n}``. Its id is derived from the cause and position
        unless ``timer_id`` is given (the same id replaces). It runs as the
        cause's actor. A retried run making the same request at the same
        position is answered from the log (the timer as it set it) and changes
        nothing. ``overdue``: ``"unbounded"`` (default), ``{"max_lateness_ms":
        n}`` or ``"on_time_or_never"``. Raises :class:`ChronologError` like
        :meth:`Client.schedule`.
        """
        return self._client.schedule(action, input, when, timer_id=timer_id, overdue=overdue, cancel_on=cancel_on, cause=self._next_cause())

    def unschedule(self, timer_id: str) -> None:
        """Stops runtime timer ``timer_id``. NOT_FOUND when unknown.

        A retried run making the same request at the same position is answered
        from the log: it succeeds (the first run removed the timer) and removes
        nothing.
        """
        self._client.unschedule(timer_id, cause=self._next_cause())

    def delay(
        self,
        action: str,
        input: Optional[Mapping[str, Any]],
        when: Mapping[str, Any],
        overdue: Union[str, Mapping[str, Any]],
        *,
        fresh_chain: bool = False,
        cancel_on: Sequence[Mapping[str, Any]] = (),
    ) -> DelayResult:
        """Arms one call of ``action`` later and returns its :class:`DelayResult` (``delay_id``, ``due``).

        ``when``: ``{"interval_ms": n}`` from now or ``{"at": moment}``.
        ``overdue`` is required: ``"unbounded"``, ``{"max_lateness_ms": n}`` or
        ``"on_time_or_never"``. The delayed call continues this work's chain
        (depth + 1) unless ``fresh_chain``; past the owner's maximum depth
        it is refused (FAILED_PRECONDITION, recorded as
        ``timer.chain_exceeded``). The delay id is derived from the cause and
        position: a retried run arms it once and gets the first run's id
        and due moment, from the log. ``cancel_on``: the events that cancel it (see
        :meth:`Client.delay`).
        """
        return self._client.delay(action, input, when, overdue, fresh_chain=fresh_chain, cancel_on=cancel_on, cause=self._next_cause())

    def cancel_delay(self, delay_id: str) -> None:
        """Cancels a pending delay. NOT_FOUND when unknown or already made.

        A retried run making the same request at the same position is answered
        from the log: it succeeds (the first run cancelled it) and changes
        nothing.
        """
        self._client.cancel_delay(delay_id, cause=self._next_cause())
