import datetime

from chronolog.gen.chronolog.v1 import event_pb2 as _event_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from chronolog.gen.chronolog.v1 import plugin_pb2 as _plugin_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_OK: _ClassVar[Outcome]
    OUTCOME_ERROR: _ClassVar[Outcome]
    OUTCOME_TERMINAL_ERROR: _ClassVar[Outcome]
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_OK: Outcome
OUTCOME_ERROR: Outcome
OUTCOME_TERMINAL_ERROR: Outcome

class SubscribeRequest(_message.Message):
    __slots__ = ("hello", "ack", "action_result", "progress", "credit", "heartbeat", "acks", "action_results", "stopping")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    ACTION_RESULT_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ACKS_FIELD_NUMBER: _ClassVar[int]
    ACTION_RESULTS_FIELD_NUMBER: _ClassVar[int]
    STOPPING_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    ack: Ack
    action_result: ActionResult
    progress: Progress
    credit: Credit
    heartbeat: Heartbeat
    acks: AckBatch
    action_results: ActionResultBatch
    stopping: Stopping
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., ack: _Optional[_Union[Ack, _Mapping]] = ..., action_result: _Optional[_Union[ActionResult, _Mapping]] = ..., progress: _Optional[_Union[Progress, _Mapping]] = ..., credit: _Optional[_Union[Credit, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., acks: _Optional[_Union[AckBatch, _Mapping]] = ..., action_results: _Optional[_Union[ActionResultBatch, _Mapping]] = ..., stopping: _Optional[_Union[Stopping, _Mapping]] = ...) -> None: ...

class Stopping(_message.Message):
    __slots__ = ("grace_ms",)
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    grace_ms: int
    def __init__(self, grace_ms: _Optional[int] = ...) -> None: ...

class AckBatch(_message.Message):
    __slots__ = ("acks",)
    ACKS_FIELD_NUMBER: _ClassVar[int]
    acks: _containers.RepeatedCompositeFieldContainer[Ack]
    def __init__(self, acks: _Optional[_Iterable[_Union[Ack, _Mapping]]] = ...) -> None: ...

class ActionResultBatch(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ActionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[ActionResult, _Mapping]]] = ...) -> None: ...

class SubscribeResponse(_message.Message):
    __slots__ = ("welcome", "delivery", "invocation", "cancel_invocation", "heartbeat", "notice", "deliveries", "invocations", "cancel_delivery", "stopping")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    INVOCATION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_INVOCATION_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    NOTICE_FIELD_NUMBER: _ClassVar[int]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    INVOCATIONS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_DELIVERY_FIELD_NUMBER: _ClassVar[int]
    STOPPING_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    delivery: Delivery
    invocation: Invocation
    cancel_invocation: CancelInvocation
    heartbeat: Heartbeat
    notice: Notice
    deliveries: DeliveryBatch
    invocations: InvocationBatch
    cancel_delivery: CancelDelivery
    stopping: Stopping
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., delivery: _Optional[_Union[Delivery, _Mapping]] = ..., invocation: _Optional[_Union[Invocation, _Mapping]] = ..., cancel_invocation: _Optional[_Union[CancelInvocation, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., notice: _Optional[_Union[Notice, _Mapping]] = ..., deliveries: _Optional[_Union[DeliveryBatch, _Mapping]] = ..., invocations: _Optional[_Union[InvocationBatch, _Mapping]] = ..., cancel_delivery: _Optional[_Union[CancelDelivery, _Mapping]] = ..., stopping: _Optional[_Union[Stopping, _Mapping]] = ...) -> None: ...

class DeliveryBatch(_message.Message):
    __slots__ = ("deliveries",)
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    deliveries: _containers.RepeatedCompositeFieldContainer[Delivery]
    def __init__(self, deliveries: _Optional[_Iterable[_Union[Delivery, _Mapping]]] = ...) -> None: ...

class InvocationBatch(_message.Message):
    __slots__ = ("invocations",)
    INVOCATIONS_FIELD_NUMBER: _ClassVar[int]
    invocations: _containers.RepeatedCompositeFieldContainer[Invocation]
    def __init__(self, invocations: _Optional[_Iterable[_Union[Invocation, _Mapping]]] = ...) -> None: ...

class Notice(_message.Message):
    __slots__ = ("reason", "message", "work_id")
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    WORK_ID_FIELD_NUMBER: _ClassVar[int]
    reason: str
    message: str
    work_id: str
    def __init__(self, reason: _Optional[str] = ..., message: _Optional[str] = ..., work_id: _Optional[str] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("executor", "instance_id", "plugins", "processors", "actions", "pulses", "credits", "batches", "holds", "invocation_batches", "data_json", "sdk", "sdk_version")
    EXECUTOR_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    PROCESSORS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    PULSES_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    HOLDS_FIELD_NUMBER: _ClassVar[int]
    INVOCATION_BATCHES_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    SDK_FIELD_NUMBER: _ClassVar[int]
    SDK_VERSION_FIELD_NUMBER: _ClassVar[int]
    executor: str
    instance_id: str
    plugins: _containers.RepeatedCompositeFieldContainer[_plugin_pb2.PluginManifest]
    processors: _containers.RepeatedScalarFieldContainer[str]
    actions: _containers.RepeatedScalarFieldContainer[str]
    pulses: _containers.RepeatedScalarFieldContainer[str]
    credits: int
    batches: bool
    holds: bool
    invocation_batches: bool
    data_json: bool
    sdk: str
    sdk_version: str
    def __init__(self, executor: _Optional[str] = ..., instance_id: _Optional[str] = ..., plugins: _Optional[_Iterable[_Union[_plugin_pb2.PluginManifest, _Mapping]]] = ..., processors: _Optional[_Iterable[str]] = ..., actions: _Optional[_Iterable[str]] = ..., pulses: _Optional[_Iterable[str]] = ..., credits: _Optional[int] = ..., batches: _Optional[bool] = ..., holds: _Optional[bool] = ..., invocation_batches: _Optional[bool] = ..., data_json: _Optional[bool] = ..., sdk: _Optional[str] = ..., sdk_version: _Optional[str] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("session_id", "heartbeat_interval_ms", "action_result_batches", "max_message_bytes", "owner_version")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    ACTION_RESULT_BATCHES_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    OWNER_VERSION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    heartbeat_interval_ms: int
    action_result_batches: bool
    max_message_bytes: int
    owner_version: str
    def __init__(self, session_id: _Optional[str] = ..., heartbeat_interval_ms: _Optional[int] = ..., action_result_batches: _Optional[bool] = ..., max_message_bytes: _Optional[int] = ..., owner_version: _Optional[str] = ...) -> None: ...

class Delivery(_message.Message):
    __slots__ = ("delivery_id", "processor", "event", "attempt", "deadline", "key", "traceparent", "tracestate", "debounced")
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    PROCESSOR_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCED_FIELD_NUMBER: _ClassVar[int]
    delivery_id: str
    processor: str
    event: _event_pb2.Event
    attempt: int
    deadline: _timestamp_pb2.Timestamp
    key: str
    traceparent: str
    tracestate: str
    debounced: int
    def __init__(self, delivery_id: _Optional[str] = ..., processor: _Optional[str] = ..., event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ..., attempt: _Optional[int] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., key: _Optional[str] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ..., debounced: _Optional[int] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("delivery_id", "outcome", "error")
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    delivery_id: str
    outcome: Outcome
    error: str
    def __init__(self, delivery_id: _Optional[str] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., error: _Optional[str] = ...) -> None: ...

class Invocation(_message.Message):
    __slots__ = ("invocation_id", "action", "input", "call_id", "cause_event_id", "actor", "deadline", "attempt", "scheduled", "pulse", "chain_depth", "hold_ms", "written_at_ms", "traceparent", "tracestate")
    INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    PULSE_FIELD_NUMBER: _ClassVar[int]
    CHAIN_DEPTH_FIELD_NUMBER: _ClassVar[int]
    HOLD_MS_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    invocation_id: str
    action: str
    input: _struct_pb2.Struct
    call_id: str
    cause_event_id: str
    actor: _event_pb2.Actor
    deadline: _timestamp_pb2.Timestamp
    attempt: int
    scheduled: Scheduled
    pulse: PulseCall
    chain_depth: int
    hold_ms: int
    written_at_ms: float
    traceparent: str
    tracestate: str
    def __init__(self, invocation_id: _Optional[str] = ..., action: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., call_id: _Optional[str] = ..., cause_event_id: _Optional[str] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attempt: _Optional[int] = ..., scheduled: _Optional[_Union[Scheduled, _Mapping]] = ..., pulse: _Optional[_Union[PulseCall, _Mapping]] = ..., chain_depth: _Optional[int] = ..., hold_ms: _Optional[int] = ..., written_at_ms: _Optional[float] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class Scheduled(_message.Message):
    __slots__ = ("timer_id", "due", "occurrence_id")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    DUE_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCE_ID_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    due: _timestamp_pb2.Timestamp
    occurrence_id: str
    def __init__(self, timer_id: _Optional[str] = ..., due: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., occurrence_id: _Optional[str] = ...) -> None: ...

class PulseCall(_message.Message):
    __slots__ = ("pulse", "interval", "due")
    PULSE_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    DUE_FIELD_NUMBER: _ClassVar[int]
    pulse: str
    interval: int
    due: _timestamp_pb2.Timestamp
    def __init__(self, pulse: _Optional[str] = ..., interval: _Optional[int] = ..., due: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ActionResult(_message.Message):
    __slots__ = ("invocation_id", "outcome", "output", "error", "started_late_ms")
    INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STARTED_LATE_MS_FIELD_NUMBER: _ClassVar[int]
    invocation_id: str
    outcome: Outcome
    output: _struct_pb2.Struct
    error: str
    started_late_ms: int
    def __init__(self, invocation_id: _Optional[str] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[str] = ..., started_late_ms: _Optional[int] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("work_id", "extend_ms")
    WORK_ID_FIELD_NUMBER: _ClassVar[int]
    EXTEND_MS_FIELD_NUMBER: _ClassVar[int]
    work_id: str
    extend_ms: int
    def __init__(self, work_id: _Optional[str] = ..., extend_ms: _Optional[int] = ...) -> None: ...

class Credit(_message.Message):
    __slots__ = ("credits",)
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    credits: int
    def __init__(self, credits: _Optional[int] = ...) -> None: ...

class CancelInvocation(_message.Message):
    __slots__ = ("invocation_id", "reason")
    INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    invocation_id: str
    reason: str
    def __init__(self, invocation_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelDelivery(_message.Message):
    __slots__ = ("delivery_id", "reason")
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    delivery_id: str
    reason: str
    def __init__(self, delivery_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("at",)
    AT_FIELD_NUMBER: _ClassVar[int]
    at: _timestamp_pb2.Timestamp
    def __init__(self, at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
