import datetime

from chronolog.gen.chronolog.v1 import event_pb2 as _event_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProcessorStatus(_message.Message):
    __slots__ = ("name", "ack_floor", "delivered", "lag", "in_flight", "retries", "failures", "paused", "limits", "rate_waits", "rate_wait_ms", "rate_waiting", "debounce_held", "debounce_deliveries", "debounce_events", "latency")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ACK_FLOOR_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    RATE_WAITS_FIELD_NUMBER: _ClassVar[int]
    RATE_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    RATE_WAITING_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_HELD_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_EVENTS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_FIELD_NUMBER: _ClassVar[int]
    name: str
    ack_floor: int
    delivered: int
    lag: int
    in_flight: int
    retries: int
    failures: int
    paused: bool
    limits: str
    rate_waits: int
    rate_wait_ms: int
    rate_waiting: int
    debounce_held: int
    debounce_deliveries: int
    debounce_events: int
    latency: DeliveryLatency
    def __init__(self, name: _Optional[str] = ..., ack_floor: _Optional[int] = ..., delivered: _Optional[int] = ..., lag: _Optional[int] = ..., in_flight: _Optional[int] = ..., retries: _Optional[int] = ..., failures: _Optional[int] = ..., paused: _Optional[bool] = ..., limits: _Optional[str] = ..., rate_waits: _Optional[int] = ..., rate_wait_ms: _Optional[int] = ..., rate_waiting: _Optional[int] = ..., debounce_held: _Optional[int] = ..., debounce_deliveries: _Optional[int] = ..., debounce_events: _Optional[int] = ..., latency: _Optional[_Union[DeliveryLatency, _Mapping]] = ...) -> None: ...

class DeliveryLatency(_message.Message):
    __slots__ = ("p50_ms", "p99_ms", "count", "window_seconds")
    P50_MS_FIELD_NUMBER: _ClassVar[int]
    P99_MS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    WINDOW_SECONDS_FIELD_NUMBER: _ClassVar[int]
    p50_ms: float
    p99_ms: float
    count: int
    window_seconds: float
    def __init__(self, p50_ms: _Optional[float] = ..., p99_ms: _Optional[float] = ..., count: _Optional[int] = ..., window_seconds: _Optional[float] = ...) -> None: ...

class ListProcessorsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListProcessorsResponse(_message.Message):
    __slots__ = ("processors",)
    PROCESSORS_FIELD_NUMBER: _ClassVar[int]
    processors: _containers.RepeatedCompositeFieldContainer[ProcessorStatus]
    def __init__(self, processors: _Optional[_Iterable[_Union[ProcessorStatus, _Mapping]]] = ...) -> None: ...

class MoveCursorRequest(_message.Message):
    __slots__ = ("processor", "ack_floor", "at")
    PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    ACK_FLOOR_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    processor: str
    ack_floor: int
    at: _timestamp_pb2.Timestamp
    def __init__(self, processor: _Optional[str] = ..., ack_floor: _Optional[int] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MoveCursorResponse(_message.Message):
    __slots__ = ("processor",)
    PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    processor: ProcessorStatus
    def __init__(self, processor: _Optional[_Union[ProcessorStatus, _Mapping]] = ...) -> None: ...

class SetProcessorPausedRequest(_message.Message):
    __slots__ = ("processor", "paused")
    PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    processor: str
    paused: bool
    def __init__(self, processor: _Optional[str] = ..., paused: _Optional[bool] = ...) -> None: ...

class SetProcessorPausedResponse(_message.Message):
    __slots__ = ("processor", "unchanged")
    PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    processor: ProcessorStatus
    unchanged: bool
    def __init__(self, processor: _Optional[_Union[ProcessorStatus, _Mapping]] = ..., unchanged: _Optional[bool] = ...) -> None: ...

class FailedDelivery(_message.Message):
    __slots__ = ("processor", "event", "error", "attempts", "failed_seq", "seq")
    PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    FAILED_SEQ_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    processor: str
    event: _event_pb2.Event
    error: str
    attempts: int
    failed_seq: int
    seq: int
    def __init__(self, processor: _Optional[str] = ..., event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ..., error: _Optional[str] = ..., attempts: _Optional[int] = ..., failed_seq: _Optional[int] = ..., seq: _Optional[int] = ...) -> None: ...

class ListFailedDeliveriesRequest(_message.Message):
    __slots__ = ("processor", "page_size", "page_token")
    PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    processor: str
    page_size: int
    page_token: str
    def __init__(self, processor: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListFailedDeliveriesResponse(_message.Message):
    __slots__ = ("deliveries", "next_page_token")
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    deliveries: _containers.RepeatedCompositeFieldContainer[FailedDelivery]
    next_page_token: str
    def __init__(self, deliveries: _Optional[_Iterable[_Union[FailedDelivery, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RedeliverFailedRequest(_message.Message):
    __slots__ = ("processor", "seqs")
    PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    processor: str
    seqs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, processor: _Optional[str] = ..., seqs: _Optional[_Iterable[int]] = ...) -> None: ...

class RedeliverFailedResponse(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class DismissFailedRequest(_message.Message):
    __slots__ = ("processor", "seqs", "all")
    PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    processor: str
    seqs: _containers.RepeatedScalarFieldContainer[int]
    all: bool
    def __init__(self, processor: _Optional[str] = ..., seqs: _Optional[_Iterable[int]] = ..., all: _Optional[bool] = ...) -> None: ...

class DismissFailedResponse(_message.Message):
    __slots__ = ("count", "seqs")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    count: int
    seqs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, count: _Optional[int] = ..., seqs: _Optional[_Iterable[int]] = ...) -> None: ...

class ExecutorStatus(_message.Message):
    __slots__ = ("session_id", "executor", "instance_id", "principal", "processors", "actions", "pulses", "credits", "in_flight", "connected_at", "last_seen_at", "sdk", "sdk_version")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    PROCESSORS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    PULSES_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    SDK_FIELD_NUMBER: _ClassVar[int]
    SDK_VERSION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    executor: str
    instance_id: str
    principal: str
    processors: _containers.RepeatedScalarFieldContainer[str]
    actions: _containers.RepeatedScalarFieldContainer[str]
    pulses: _containers.RepeatedScalarFieldContainer[str]
    credits: int
    in_flight: int
    connected_at: _timestamp_pb2.Timestamp
    last_seen_at: _timestamp_pb2.Timestamp
    sdk: str
    sdk_version: str
    def __init__(self, session_id: _Optional[str] = ..., executor: _Optional[str] = ..., instance_id: _Optional[str] = ..., principal: _Optional[str] = ..., processors: _Optional[_Iterable[str]] = ..., actions: _Optional[_Iterable[str]] = ..., pulses: _Optional[_Iterable[str]] = ..., credits: _Optional[int] = ..., in_flight: _Optional[int] = ..., connected_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_seen_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sdk: _Optional[str] = ..., sdk_version: _Optional[str] = ...) -> None: ...

class ListExecutorsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListExecutorsResponse(_message.Message):
    __slots__ = ("executors",)
    EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    executors: _containers.RepeatedCompositeFieldContainer[ExecutorStatus]
    def __init__(self, executors: _Optional[_Iterable[_Union[ExecutorStatus, _Mapping]]] = ...) -> None: ...

class ExecuteSqlRequest(_message.Message):
    __slots__ = ("sql", "params")
    SQL_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    sql: str
    params: _struct_pb2.ListValue
    def __init__(self, sql: _Optional[str] = ..., params: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ...) -> None: ...

class ExecuteSqlResponse(_message.Message):
    __slots__ = ("rows", "changes", "seq")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    changes: int
    seq: int
    def __init__(self, rows: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., changes: _Optional[int] = ..., seq: _Optional[int] = ...) -> None: ...

class ActionStatus(_message.Message):
    __slots__ = ("name", "limits", "running", "waiting", "rate_waits", "rate_wait_ms", "rate_waiting")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    RATE_WAITS_FIELD_NUMBER: _ClassVar[int]
    RATE_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    RATE_WAITING_FIELD_NUMBER: _ClassVar[int]
    name: str
    limits: str
    running: int
    waiting: int
    rate_waits: int
    rate_wait_ms: int
    rate_waiting: int
    def __init__(self, name: _Optional[str] = ..., limits: _Optional[str] = ..., running: _Optional[int] = ..., waiting: _Optional[int] = ..., rate_waits: _Optional[int] = ..., rate_wait_ms: _Optional[int] = ..., rate_waiting: _Optional[int] = ...) -> None: ...

class ListActionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListActionsResponse(_message.Message):
    __slots__ = ("actions",)
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    actions: _containers.RepeatedCompositeFieldContainer[ActionStatus]
    def __init__(self, actions: _Optional[_Iterable[_Union[ActionStatus, _Mapping]]] = ...) -> None: ...
