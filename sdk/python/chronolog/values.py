"""Event data and actors as plain Python values: JSON objects to and from
``google.protobuf.Struct`` (whole numbers back as ints), actors as dicts (``Actor.for`` and
``Actor.in`` are Python keywords), an event's data in either of its forms.
"""

from __future__ import annotations

import json
import math
from datetime import timezone
from typing import Any, Mapping, Optional

from google.protobuf import json_format, struct_pb2

from chronolog.gen.chronolog.v1 import event_pb2
from chronolog.json_check import non_finite

__all__ = ["to_struct", "from_struct", "actor_to_dict", "actor_from_dict", "event_data", "event_to_dict"]


def to_struct(data: Optional[Mapping[str, Any]], field: str = "data") -> struct_pb2.Struct:
    """Converts a JSON object (a dict) to a ``google.protobuf.Struct``.

    Numbers travel as doubles, as in every JSON-over-protobuf client. A float that JSON cannot
    hold (NaN, infinity) raises ``ValueError`` naming its path (``data.v: nan is not a JSON
    number``) before anything is sent: the owner would store it as null.
    """
    struct = struct_pb2.Struct()
    if data:
        problem = non_finite(data, field)
        if problem:
            raise ValueError(problem)
        json_format.ParseDict(dict(data), struct)
    return struct


def _plain(value: Any) -> Any:
    """Turns whole-number floats back into ints (a Struct stores every number as a double)."""
    if isinstance(value, float) and value.is_integer() and math.fabs(value) <= 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def from_struct(struct: Optional[struct_pb2.Struct]) -> dict:
    """Converts a ``google.protobuf.Struct`` to a dict; whole numbers come back as ints."""
    if struct is None:
        return {}
    return _plain(json_format.MessageToDict(struct))


def actor_to_dict(actor: Optional[event_pb2.Actor]) -> Optional[dict]:
    """The actor as ``{"id", "for", "in", "via"}``, or None for none (the system).

    ``for`` and ``in`` are Python keywords, so the message's fields are read
    with getattr.
    """
    if actor is None:
        return None
    return {"id": actor.id, "for": getattr(actor, "for"), "in": getattr(actor, "in"), "via": actor.via}


def actor_from_dict(actor: Optional[Mapping[str, str]]) -> Optional[event_pb2.Actor]:
    """Builds an ``Actor`` message from ``{"id", "for", "in", "via"}`` (any may be missing)."""
    if not actor:
        return None
    return event_pb2.Actor(**{k: v for k, v in actor.items() if k in ("id", "for", "in", "via") and v})


def event_data(event: event_pb2.Event) -> dict:
    """An event's data as a dict, whichever form it came in: JSON text (``data_json``, as Watch,
    deliveries and emits on the publish stream give it by default) or a Struct (``data``)."""
    if event.data_json:
        return json.loads(event.data_json)
    return from_struct(event.data)


def event_to_dict(event: event_pb2.Event) -> dict:
    """An event as plain Python values: seq (int), id, type, data (dict), cause, actor (dict or None), at (datetime, UTC)."""
    return {
        "seq": event.seq,
        "id": event.id,
        "type": event.type,
        "data": event_data(event),
        "cause": event.cause,
        "actor": actor_to_dict(event.actor) if event.HasField("actor") else None,
        "at": event.at.ToDatetime(tzinfo=timezone.utc) if event.HasField("at") else None,
    }
