import datetime

from chronolog.gen.chronolog.v1 import event_pb2 as _event_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.rpc import error_details_pb2 as _error_details_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EmitRequest(_message.Message):
    __slots__ = ("type", "data", "id", "cause", "actor", "data_json", "stream", "expected_version", "traceparent", "tracestate")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    type: str
    data: _struct_pb2.Struct
    id: str
    cause: _event_pb2.Cause
    actor: _event_pb2.Actor
    data_json: bytes
    stream: str
    expected_version: ExpectedVersion
    traceparent: str
    tracestate: str
    def __init__(self, type: _Optional[str] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., id: _Optional[str] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ..., data_json: _Optional[bytes] = ..., stream: _Optional[str] = ..., expected_version: _Optional[_Union[ExpectedVersion, _Mapping]] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class ExpectedVersion(_message.Message):
    __slots__ = ("no_stream", "any", "position")
    NO_STREAM_FIELD_NUMBER: _ClassVar[int]
    ANY_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    no_stream: bool
    any: bool
    position: int
    def __init__(self, no_stream: _Optional[bool] = ..., any: _Optional[bool] = ..., position: _Optional[int] = ...) -> None: ...

class EmitResponse(_message.Message):
    __slots__ = ("event", "existing", "stream_position")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    STREAM_POSITION_FIELD_NUMBER: _ClassVar[int]
    event: _event_pb2.Event
    existing: bool
    stream_position: int
    def __init__(self, event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ..., existing: _Optional[bool] = ..., stream_position: _Optional[int] = ...) -> None: ...

class EmitBatchRequest(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[EmitRequest]
    def __init__(self, events: _Optional[_Iterable[_Union[EmitRequest, _Mapping]]] = ...) -> None: ...

class EmitBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[EmitResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[EmitResponse, _Mapping]]] = ...) -> None: ...

class ReadLogRequest(_message.Message):
    __slots__ = ("after_seq", "page_size", "page_token", "types", "where", "from_first_seq", "cause", "descendants")
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    FROM_FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    DESCENDANTS_FIELD_NUMBER: _ClassVar[int]
    after_seq: int
    page_size: int
    page_token: str
    types: _containers.RepeatedScalarFieldContainer[str]
    where: _struct_pb2.Struct
    from_first_seq: bool
    cause: str
    descendants: bool
    def __init__(self, after_seq: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., types: _Optional[_Iterable[str]] = ..., where: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., from_first_seq: _Optional[bool] = ..., cause: _Optional[str] = ..., descendants: _Optional[bool] = ...) -> None: ...

class ReadLogResponse(_message.Message):
    __slots__ = ("events", "next_page_token", "head_seq", "first_seq", "tree_cut")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    TREE_CUT_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    next_page_token: str
    head_seq: int
    first_seq: int
    tree_cut: bool
    def __init__(self, events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., head_seq: _Optional[int] = ..., first_seq: _Optional[int] = ..., tree_cut: _Optional[bool] = ...) -> None: ...

class GetEventRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetEventResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _event_pb2.Event
    def __init__(self, event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("after_seq", "types", "where", "data_json", "from_first_seq", "cause", "descendants")
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    FROM_FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    DESCENDANTS_FIELD_NUMBER: _ClassVar[int]
    after_seq: int
    types: _containers.RepeatedScalarFieldContainer[str]
    where: _struct_pb2.Struct
    data_json: bool
    from_first_seq: bool
    cause: str
    descendants: bool
    def __init__(self, after_seq: _Optional[int] = ..., types: _Optional[_Iterable[str]] = ..., where: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., data_json: _Optional[bool] = ..., from_first_seq: _Optional[bool] = ..., cause: _Optional[str] = ..., descendants: _Optional[bool] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("event", "caught_up")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    event: _event_pb2.Event
    caught_up: CaughtUp
    def __init__(self, event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ..., caught_up: _Optional[_Union[CaughtUp, _Mapping]] = ...) -> None: ...

class CaughtUp(_message.Message):
    __slots__ = ("head_seq", "first_seq")
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    head_seq: int
    first_seq: int
    def __init__(self, head_seq: _Optional[int] = ..., first_seq: _Optional[int] = ...) -> None: ...

class PublishRequest(_message.Message):
    __slots__ = ("emits",)
    EMITS_FIELD_NUMBER: _ClassVar[int]
    emits: _containers.RepeatedCompositeFieldContainer[PublishEmit]
    def __init__(self, emits: _Optional[_Iterable[_Union[PublishEmit, _Mapping]]] = ...) -> None: ...

class PublishEmit(_message.Message):
    __slots__ = ("ref", "event")
    REF_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    ref: int
    event: EmitRequest
    def __init__(self, ref: _Optional[int] = ..., event: _Optional[_Union[EmitRequest, _Mapping]] = ...) -> None: ...

class PublishResponse(_message.Message):
    __slots__ = ("welcome", "acks")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    ACKS_FIELD_NUMBER: _ClassVar[int]
    welcome: PublishWelcome
    acks: PublishAcks
    def __init__(self, welcome: _Optional[_Union[PublishWelcome, _Mapping]] = ..., acks: _Optional[_Union[PublishAcks, _Mapping]] = ...) -> None: ...

class PublishWelcome(_message.Message):
    __slots__ = ("window",)
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    window: int
    def __init__(self, window: _Optional[int] = ...) -> None: ...

class PublishAcks(_message.Message):
    __slots__ = ("acks",)
    ACKS_FIELD_NUMBER: _ClassVar[int]
    acks: _containers.RepeatedCompositeFieldContainer[PublishAck]
    def __init__(self, acks: _Optional[_Iterable[_Union[PublishAck, _Mapping]]] = ...) -> None: ...

class PublishAck(_message.Message):
    __slots__ = ("ref", "seq", "id", "existing", "at", "actor", "error", "stream_position")
    REF_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STREAM_POSITION_FIELD_NUMBER: _ClassVar[int]
    ref: int
    seq: int
    id: str
    existing: bool
    at: _timestamp_pb2.Timestamp
    actor: _event_pb2.Actor
    error: PublishError
    stream_position: int
    def __init__(self, ref: _Optional[int] = ..., seq: _Optional[int] = ..., id: _Optional[str] = ..., existing: _Optional[bool] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ..., error: _Optional[_Union[PublishError, _Mapping]] = ..., stream_position: _Optional[int] = ...) -> None: ...

class ReadStreamRequest(_message.Message):
    __slots__ = ("stream", "from_position", "backwards", "page_size", "page_token", "space")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    FROM_POSITION_FIELD_NUMBER: _ClassVar[int]
    BACKWARDS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SPACE_FIELD_NUMBER: _ClassVar[int]
    stream: str
    from_position: int
    backwards: bool
    page_size: int
    page_token: str
    space: str
    def __init__(self, stream: _Optional[str] = ..., from_position: _Optional[int] = ..., backwards: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., space: _Optional[str] = ...) -> None: ...

class ReadStreamResponse(_message.Message):
    __slots__ = ("events", "next_page_token", "last_position")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LAST_POSITION_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[StreamEvent]
    next_page_token: str
    last_position: int
    def __init__(self, events: _Optional[_Iterable[_Union[StreamEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., last_position: _Optional[int] = ...) -> None: ...

class StreamEvent(_message.Message):
    __slots__ = ("position", "event")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    position: int
    event: _event_pb2.Event
    def __init__(self, position: _Optional[int] = ..., event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ...) -> None: ...

class PublishError(_message.Message):
    __slots__ = ("code", "message", "reason", "metadata", "field_violations")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    FIELD_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    reason: str
    metadata: _containers.ScalarMap[str, str]
    field_violations: _containers.RepeatedCompositeFieldContainer[_error_details_pb2.BadRequest.FieldViolation]
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., field_violations: _Optional[_Iterable[_Union[_error_details_pb2.BadRequest.FieldViolation, _Mapping]]] = ...) -> None: ...
