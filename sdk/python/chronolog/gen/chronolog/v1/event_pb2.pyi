import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Event(_message.Message):
    __slots__ = ("seq", "id", "type", "data", "cause", "actor", "at", "data_json", "traceparent", "tracestate")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    seq: int
    id: str
    type: str
    data: _struct_pb2.Struct
    cause: str
    actor: Actor
    at: _timestamp_pb2.Timestamp
    data_json: bytes
    traceparent: str
    tracestate: str
    def __init__(self, seq: _Optional[int] = ..., id: _Optional[str] = ..., type: _Optional[str] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., cause: _Optional[str] = ..., actor: _Optional[_Union[Actor, _Mapping]] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., data_json: _Optional[bytes] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class Actor(_message.Message):
    __slots__ = ("id", "via")
    ID_FIELD_NUMBER: _ClassVar[int]
    FOR_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    VIA_FIELD_NUMBER: _ClassVar[int]
    id: str
    via: str
    def __init__(self, id: _Optional[str] = ..., via: _Optional[str] = ..., **kwargs) -> None: ...

class Cause(_message.Message):
    __slots__ = ("event_id", "position")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    position: int
    def __init__(self, event_id: _Optional[str] = ..., position: _Optional[int] = ...) -> None: ...
