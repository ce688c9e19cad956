import datetime

from chronolog.gen.chronolog.v1 import event_pb2 as _event_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DstGap(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DST_GAP_UNSPECIFIED: _ClassVar[DstGap]
    DST_GAP_SHIFT: _ClassVar[DstGap]
    DST_GAP_SKIP: _ClassVar[DstGap]

class DstRepeated(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DST_REPEATED_UNSPECIFIED: _ClassVar[DstRepeated]
    DST_REPEATED_FIRST: _ClassVar[DstRepeated]
    DST_REPEATED_LAST: _ClassVar[DstRepeated]
    DST_REPEATED_BOTH: _ClassVar[DstRepeated]

class OverlapPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OVERLAP_POLICY_UNSPECIFIED: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_ALLOW: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_SKIP: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_BUFFER_ONE: _ClassVar[OverlapPolicy]

class CatchUpPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CATCH_UP_POLICY_UNSPECIFIED: _ClassVar[CatchUpPolicy]
    CATCH_UP_POLICY_LATEST: _ClassVar[CatchUpPolicy]
    CATCH_UP_POLICY_ALL_WITHIN_WINDOW: _ClassVar[CatchUpPolicy]
    CATCH_UP_POLICY_NONE: _ClassVar[CatchUpPolicy]

class TimerKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIMER_KIND_UNSPECIFIED: _ClassVar[TimerKind]
    TIMER_KIND_RUNTIME: _ClassVar[TimerKind]
    TIMER_KIND_DECLARED: _ClassVar[TimerKind]
    TIMER_KIND_DELAY: _ClassVar[TimerKind]
DST_GAP_UNSPECIFIED: DstGap
DST_GAP_SHIFT: DstGap
DST_GAP_SKIP: DstGap
DST_REPEATED_UNSPECIFIED: DstRepeated
DST_REPEATED_FIRST: DstRepeated
DST_REPEATED_LAST: DstRepeated
DST_REPEATED_BOTH: DstRepeated
OVERLAP_POLICY_UNSPECIFIED: OverlapPolicy
OVERLAP_POLICY_ALLOW: OverlapPolicy
OVERLAP_POLICY_SKIP: OverlapPolicy
OVERLAP_POLICY_BUFFER_ONE: OverlapPolicy
CATCH_UP_POLICY_UNSPECIFIED: CatchUpPolicy
CATCH_UP_POLICY_LATEST: CatchUpPolicy
CATCH_UP_POLICY_ALL_WITHIN_WINDOW: CatchUpPolicy
CATCH_UP_POLICY_NONE: CatchUpPolicy
TIMER_KIND_UNSPECIFIED: TimerKind
TIMER_KIND_RUNTIME: TimerKind
TIMER_KIND_DECLARED: TimerKind
TIMER_KIND_DELAY: TimerKind

class TimerSpec(_message.Message):
    __slots__ = ("at", "cron", "every_ms")
    AT_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    EVERY_MS_FIELD_NUMBER: _ClassVar[int]
    at: _timestamp_pb2.Timestamp
    cron: CronSpec
    every_ms: int
    def __init__(self, at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cron: _Optional[_Union[CronSpec, _Mapping]] = ..., every_ms: _Optional[int] = ...) -> None: ...

class CronSpec(_message.Message):
    __slots__ = ("expression", "zone", "dst")
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    expression: str
    zone: str
    dst: DstPolicy
    def __init__(self, expression: _Optional[str] = ..., zone: _Optional[str] = ..., dst: _Optional[_Union[DstPolicy, _Mapping]] = ...) -> None: ...

class DstPolicy(_message.Message):
    __slots__ = ("gap", "repeated")
    GAP_FIELD_NUMBER: _ClassVar[int]
    REPEATED_FIELD_NUMBER: _ClassVar[int]
    gap: DstGap
    repeated: DstRepeated
    def __init__(self, gap: _Optional[_Union[DstGap, str]] = ..., repeated: _Optional[_Union[DstRepeated, str]] = ...) -> None: ...

class SchedulePolicy(_message.Message):
    __slots__ = ("jitter_ms", "start", "end", "max_count", "overlap", "catch_up", "catch_up_window_ms")
    JITTER_MS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    MAX_COUNT_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    jitter_ms: int
    start: _timestamp_pb2.Timestamp
    end: _timestamp_pb2.Timestamp
    max_count: int
    overlap: OverlapPolicy
    catch_up: CatchUpPolicy
    catch_up_window_ms: int
    def __init__(self, jitter_ms: _Optional[int] = ..., start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., max_count: _Optional[int] = ..., overlap: _Optional[_Union[OverlapPolicy, str]] = ..., catch_up: _Optional[_Union[CatchUpPolicy, str]] = ..., catch_up_window_ms: _Optional[int] = ...) -> None: ...

class Timer(_message.Message):
    __slots__ = ("id", "kind", "action", "input", "spec", "next_due", "actor", "plugin", "schedule", "region", "occurrences", "disabled", "overdue", "chain_depth", "preview", "policy", "paused", "pause_note", "paused_at", "cancel_on", "input_withheld")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    NEXT_DUE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    OVERDUE_FIELD_NUMBER: _ClassVar[int]
    CHAIN_DEPTH_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    PAUSE_NOTE_FIELD_NUMBER: _ClassVar[int]
    PAUSED_AT_FIELD_NUMBER: _ClassVar[int]
    CANCEL_ON_FIELD_NUMBER: _ClassVar[int]
    INPUT_WITHHELD_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: TimerKind
    action: str
    input: _struct_pb2.Struct
    spec: TimerSpec
    next_due: _timestamp_pb2.Timestamp
    actor: _event_pb2.Actor
    plugin: str
    schedule: str
    region: int
    occurrences: int
    disabled: bool
    overdue: Overdue
    chain_depth: int
    preview: _containers.RepeatedCompositeFieldContainer[_timestamp_pb2.Timestamp]
    policy: SchedulePolicy
    paused: bool
    pause_note: str
    paused_at: _timestamp_pb2.Timestamp
    cancel_on: _containers.RepeatedCompositeFieldContainer[CancelOn]
    input_withheld: bool
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[TimerKind, str]] = ..., action: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., spec: _Optional[_Union[TimerSpec, _Mapping]] = ..., next_due: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ..., plugin: _Optional[str] = ..., schedule: _Optional[str] = ..., region: _Optional[int] = ..., occurrences: _Optional[int] = ..., disabled: _Optional[bool] = ..., overdue: _Optional[_Union[Overdue, _Mapping]] = ..., chain_depth: _Optional[int] = ..., preview: _Optional[_Iterable[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]]] = ..., policy: _Optional[_Union[SchedulePolicy, _Mapping]] = ..., paused: _Optional[bool] = ..., pause_note: _Optional[str] = ..., paused_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cancel_on: _Optional[_Iterable[_Union[CancelOn, _Mapping]]] = ..., input_withheld: _Optional[bool] = ...) -> None: ...

class Overdue(_message.Message):
    __slots__ = ("unbounded", "max_lateness_ms", "on_time_or_never")
    UNBOUNDED_FIELD_NUMBER: _ClassVar[int]
    MAX_LATENESS_MS_FIELD_NUMBER: _ClassVar[int]
    ON_TIME_OR_NEVER_FIELD_NUMBER: _ClassVar[int]
    unbounded: bool
    max_lateness_ms: int
    on_time_or_never: bool
    def __init__(self, unbounded: _Optional[bool] = ..., max_lateness_ms: _Optional[int] = ..., on_time_or_never: _Optional[bool] = ...) -> None: ...

class CancelOn(_message.Message):
    __slots__ = ("type", "match")
    class MatchEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    type: str
    match: _containers.ScalarMap[str, str]
    def __init__(self, type: _Optional[str] = ..., match: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ScheduleRequest(_message.Message):
    __slots__ = ("timer_id", "action", "input", "spec", "cause", "actor", "overdue", "policy", "cancel_on")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    OVERDUE_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    CANCEL_ON_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    action: str
    input: _struct_pb2.Struct
    spec: TimerSpec
    cause: _event_pb2.Cause
    actor: _event_pb2.Actor
    overdue: Overdue
    policy: SchedulePolicy
    cancel_on: _containers.RepeatedCompositeFieldContainer[CancelOn]
    def __init__(self, timer_id: _Optional[str] = ..., action: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., spec: _Optional[_Union[TimerSpec, _Mapping]] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ..., overdue: _Optional[_Union[Overdue, _Mapping]] = ..., policy: _Optional[_Union[SchedulePolicy, _Mapping]] = ..., cancel_on: _Optional[_Iterable[_Union[CancelOn, _Mapping]]] = ...) -> None: ...

class ScheduleResponse(_message.Message):
    __slots__ = ("timer",)
    TIMER_FIELD_NUMBER: _ClassVar[int]
    timer: Timer
    def __init__(self, timer: _Optional[_Union[Timer, _Mapping]] = ...) -> None: ...

class UnscheduleRequest(_message.Message):
    __slots__ = ("timer_id", "cause")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    cause: _event_pb2.Cause
    def __init__(self, timer_id: _Optional[str] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ...) -> None: ...

class UnscheduleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DelayRequest(_message.Message):
    __slots__ = ("action", "input", "interval_ms", "at", "overdue", "cause", "actor", "fresh_chain", "delay_id", "cancel_on")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    OVERDUE_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    FRESH_CHAIN_FIELD_NUMBER: _ClassVar[int]
    DELAY_ID_FIELD_NUMBER: _ClassVar[int]
    CANCEL_ON_FIELD_NUMBER: _ClassVar[int]
    action: str
    input: _struct_pb2.Struct
    interval_ms: int
    at: _timestamp_pb2.Timestamp
    overdue: Overdue
    cause: _event_pb2.Cause
    actor: _event_pb2.Actor
    fresh_chain: bool
    delay_id: str
    cancel_on: _containers.RepeatedCompositeFieldContainer[CancelOn]
    def __init__(self, action: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., interval_ms: _Optional[int] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., overdue: _Optional[_Union[Overdue, _Mapping]] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ..., fresh_chain: _Optional[bool] = ..., delay_id: _Optional[str] = ..., cancel_on: _Optional[_Iterable[_Union[CancelOn, _Mapping]]] = ...) -> None: ...

class DelayResponse(_message.Message):
    __slots__ = ("delay_id", "due")
    DELAY_ID_FIELD_NUMBER: _ClassVar[int]
    DUE_FIELD_NUMBER: _ClassVar[int]
    delay_id: str
    due: _timestamp_pb2.Timestamp
    def __init__(self, delay_id: _Optional[str] = ..., due: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DelayBatchRequest(_message.Message):
    __slots__ = ("delays",)
    DELAYS_FIELD_NUMBER: _ClassVar[int]
    delays: _containers.RepeatedCompositeFieldContainer[DelayRequest]
    def __init__(self, delays: _Optional[_Iterable[_Union[DelayRequest, _Mapping]]] = ...) -> None: ...

class DelayBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DelayResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[DelayResponse, _Mapping]]] = ...) -> None: ...

class CancelDelayRequest(_message.Message):
    __slots__ = ("delay_id", "cause")
    DELAY_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    delay_id: str
    cause: _event_pb2.Cause
    def __init__(self, delay_id: _Optional[str] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ...) -> None: ...

class CancelDelayResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTimersRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "kind")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    kind: TimerKind
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., kind: _Optional[_Union[TimerKind, str]] = ...) -> None: ...

class ListTimersResponse(_message.Message):
    __slots__ = ("timers", "next_page_token")
    TIMERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    timers: _containers.RepeatedCompositeFieldContainer[Timer]
    next_page_token: str
    def __init__(self, timers: _Optional[_Iterable[_Union[Timer, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetTimerRequest(_message.Message):
    __slots__ = ("timer_id", "preview_count")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_COUNT_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    preview_count: int
    def __init__(self, timer_id: _Optional[str] = ..., preview_count: _Optional[int] = ...) -> None: ...

class GetTimerResponse(_message.Message):
    __slots__ = ("timer",)
    TIMER_FIELD_NUMBER: _ClassVar[int]
    timer: Timer
    def __init__(self, timer: _Optional[_Union[Timer, _Mapping]] = ...) -> None: ...

class PauseTimerRequest(_message.Message):
    __slots__ = ("timer_id", "note", "cause")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    note: str
    cause: _event_pb2.Cause
    def __init__(self, timer_id: _Optional[str] = ..., note: _Optional[str] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ...) -> None: ...

class PauseTimerResponse(_message.Message):
    __slots__ = ("timer", "unchanged")
    TIMER_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    timer: Timer
    unchanged: bool
    def __init__(self, timer: _Optional[_Union[Timer, _Mapping]] = ..., unchanged: _Optional[bool] = ...) -> None: ...

class ResumeTimerRequest(_message.Message):
    __slots__ = ("timer_id", "note", "cause")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    note: str
    cause: _event_pb2.Cause
    def __init__(self, timer_id: _Optional[str] = ..., note: _Optional[str] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ...) -> None: ...

class ResumeTimerResponse(_message.Message):
    __slots__ = ("timer", "unchanged")
    TIMER_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    timer: Timer
    unchanged: bool
    def __init__(self, timer: _Optional[_Union[Timer, _Mapping]] = ..., unchanged: _Optional[bool] = ...) -> None: ...

class TriggerTimerRequest(_message.Message):
    __slots__ = ("timer_id", "cause")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    cause: _event_pb2.Cause
    def __init__(self, timer_id: _Optional[str] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ...) -> None: ...

class TriggerTimerResponse(_message.Message):
    __slots__ = ("occurrence_id", "due")
    OCCURRENCE_ID_FIELD_NUMBER: _ClassVar[int]
    DUE_FIELD_NUMBER: _ClassVar[int]
    occurrence_id: str
    due: _timestamp_pb2.Timestamp
    def __init__(self, occurrence_id: _Optional[str] = ..., due: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class BackfillTimerRequest(_message.Message):
    __slots__ = ("timer_id", "start", "end", "cause")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    start: _timestamp_pb2.Timestamp
    end: _timestamp_pb2.Timestamp
    cause: _event_pb2.Cause
    def __init__(self, timer_id: _Optional[str] = ..., start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ...) -> None: ...

class BackfillTimerResponse(_message.Message):
    __slots__ = ("occurrences",)
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    occurrences: _containers.RepeatedCompositeFieldContainer[BackfilledOccurrence]
    def __init__(self, occurrences: _Optional[_Iterable[_Union[BackfilledOccurrence, _Mapping]]] = ...) -> None: ...

class BackfilledOccurrence(_message.Message):
    __slots__ = ("occurrence_id", "due", "existing")
    OCCURRENCE_ID_FIELD_NUMBER: _ClassVar[int]
    DUE_FIELD_NUMBER: _ClassVar[int]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    occurrence_id: str
    due: _timestamp_pb2.Timestamp
    existing: bool
    def __init__(self, occurrence_id: _Optional[str] = ..., due: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., existing: _Optional[bool] = ...) -> None: ...
