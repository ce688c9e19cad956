"""The time calls' arguments as request fields: moments, when a timer fires or a delay is due,
lateness bounds and timer kinds, checked before anything is sent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping, Optional, Sequence, Union

from google.protobuf import timestamp_pb2

from chronolog.gen.chronolog.v1 import event_pb2, time_pb2
from chronolog.values import actor_from_dict, to_struct

__all__ = ["Moment", "timer_spec", "overdue_bound", "delay_request", "cancel_on_entries"]

#: A moment: a timezone-aware ``datetime``, or ms since the epoch (int or float; rounded to whole ms).
Moment = Union[datetime, int, float]

#: The API's timer kinds by name (``list_timers(kind=...)``).
TIMER_KINDS = {
    "runtime": time_pb2.TIMER_KIND_RUNTIME,
    "declared": time_pb2.TIMER_KIND_DECLARED,
    "delay": time_pb2.TIMER_KIND_DELAY,
}


def timestamp_of(at: Moment, what: str) -> timestamp_pb2.Timestamp:
    """A moment as a Timestamp of whole ms (naive datetimes are refused: their zone is unknown)."""
    if isinstance(at, datetime):
        if at.tzinfo is None or at.utcoffset() is None:
            raise ValueError(f"{what}: a naive datetime has no time zone; give an aware one (e.g. datetime.now(timezone.utc)) or ms since the epoch")
        ms = round(at.timestamp() * 1000)
    elif isinstance(at, (int, float)) and not isinstance(at, bool):
        ms = round(at)
    else:
        raise TypeError(f"{what}: expected a timezone-aware datetime or ms since the epoch, got {type(at).__name__}")
    return timestamp_pb2.Timestamp(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def timer_spec(when: Mapping[str, Any]) -> time_pb2.TimerSpec:
    """A ``TimerSpec`` from ``{"at": moment}``, ``{"cron": "0 9 * * 1", "zone": "Europe/Berlin"}``
    (zone optional, default UTC) or ``{"every_ms": n}``."""
    keys = set(when)
    if keys == {"at"}:
        return time_pb2.TimerSpec(at=timestamp_of(when["at"], "at"))
    if keys in ({"cron"}, {"cron", "zone"}):
        return time_pb2.TimerSpec(cron=time_pb2.CronSpec(expression=when["cron"], zone=when.get("zone", "")))
    if keys == {"every_ms"}:
        return time_pb2.TimerSpec(every_ms=whole_ms(when["every_ms"], "every_ms"))
    raise ValueError(f"when {dict(when)!r}: expected {{'at': moment}}, {{'cron': expr, 'zone': iana}} or {{'every_ms': n}}")


def overdue_bound(overdue: Union[str, Mapping[str, Any]]) -> time_pb2.Overdue:
    """An ``Overdue`` from ``"unbounded"``, ``"on_time_or_never"`` or ``{"max_lateness_ms": n}``."""
    if overdue == "unbounded":
        return time_pb2.Overdue(unbounded=True)
    if overdue == "on_time_or_never":
        return time_pb2.Overdue(on_time_or_never=True)
    if isinstance(overdue, Mapping) and set(overdue) == {"max_lateness_ms"}:
        return time_pb2.Overdue(max_lateness_ms=whole_ms(overdue["max_lateness_ms"], "max_lateness_ms"))
    raise ValueError(f"overdue {overdue!r}: expected 'unbounded', 'on_time_or_never' or {{'max_lateness_ms': n}}")


def whole_ms(value: Any, name: str) -> int:
    """``value`` as a whole number of milliseconds (an int, or a float without a fraction); else
    ValueError naming ``name`` (``int()`` would cut 1.5 to 1 and send what was not asked for)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"{name} must be a whole number of milliseconds, got {value!r}")
    return int(value)


def cancel_on_entries(cancel_on: Sequence[Mapping[str, Any]]) -> list:
    """``CancelOn`` entries from mappings ``{"type": "order.paid", "match": {"data.order_id":
    "input.order_id"}}`` (``match`` optional: every event of the type). A matching event cancels
    the pending timer in the commit that records it; a timer is claimed at its moment, so either
    its call is made (and the event cancels nothing) or no call is ever made."""
    entries = []
    for i, c in enumerate(cancel_on):
        unknown = sorted(set(c) - {"type", "match"})
        if unknown or not isinstance(c.get("type"), str):
            raise ValueError(f"cancel_on[{i}]: expected {{'type': str, 'match': {{event path: input path}}}}, got {dict(c)!r}")
        entries.append(time_pb2.CancelOn(type=c["type"], match=dict(c.get("match") or {})))
    return entries


#: The arguments a delay takes (each entry of ``delay_batch``).
DELAY_KEYS = {"action", "input", "when", "overdue", "fresh_chain", "cause", "actor", "delay_id", "cancel_on"}


def delay_request(
    action: str,
    input: Optional[Mapping[str, Any]],
    when: Mapping[str, Any],
    overdue: Union[str, Mapping[str, Any]],
    *,
    fresh_chain: bool = False,
    cause: Optional[event_pb2.Cause] = None,
    actor: Optional[Mapping[str, str]] = None,
    delay_id: str = "",
    cancel_on: Sequence[Mapping[str, Any]] = (),
) -> time_pb2.DelayRequest:
    """A DelayRequest from :meth:`Client.delay`'s arguments."""
    keys = set(when)
    if keys == {"interval_ms"}:
        timing: dict = {"interval_ms": whole_ms(when["interval_ms"], "interval_ms")}
    elif keys == {"at"}:
        timing = {"at": timestamp_of(when["at"], "at")}
    else:
        raise ValueError(f"when {dict(when)!r}: expected {{'interval_ms': n}} or {{'at': moment}}")
    return time_pb2.DelayRequest(
        action=action, input=to_struct(input, "input"), overdue=overdue_bound(overdue), cause=cause, actor=actor_from_dict(actor), fresh_chain=fresh_chain, delay_id=delay_id, cancel_on=cancel_on_entries(cancel_on), **timing
    )
