import datetime

from chronolog.gen.chronolog.v1 import time_pb2 as _time_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RetentionKeep(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RETENTION_KEEP_UNSPECIFIED: _ClassVar[RetentionKeep]
    RETENTION_KEEP_LATEST_PER_KEY: _ClassVar[RetentionKeep]

class PulseScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PULSE_SCOPE_UNSPECIFIED: _ClassVar[PulseScope]
    PULSE_SCOPE_COMPONENT: _ClassVar[PulseScope]
    PULSE_SCOPE_REPLICA: _ClassVar[PulseScope]
RETENTION_KEEP_UNSPECIFIED: RetentionKeep
RETENTION_KEEP_LATEST_PER_KEY: RetentionKeep
PULSE_SCOPE_UNSPECIFIED: PulseScope
PULSE_SCOPE_COMPONENT: PulseScope
PULSE_SCOPE_REPLICA: PulseScope

class PluginManifest(_message.Message):
    __slots__ = ("name", "version", "events", "collections", "actions", "processors", "schedules", "pulses", "schedule_patches", "retention")
    class EventsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: EventTypeDeclaration
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[EventTypeDeclaration, _Mapping]] = ...) -> None: ...
    class CollectionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: CollectionDeclaration
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[CollectionDeclaration, _Mapping]] = ...) -> None: ...
    class ActionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ActionDeclaration
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ActionDeclaration, _Mapping]] = ...) -> None: ...
    class ProcessorsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ProcessorDeclaration
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ProcessorDeclaration, _Mapping]] = ...) -> None: ...
    class SchedulesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ScheduleDeclaration
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ScheduleDeclaration, _Mapping]] = ...) -> None: ...
    class PulsesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: PulseDeclaration
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[PulseDeclaration, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    PROCESSORS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    PULSES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_PATCHES_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    events: _containers.MessageMap[str, EventTypeDeclaration]
    collections: _containers.MessageMap[str, CollectionDeclaration]
    actions: _containers.MessageMap[str, ActionDeclaration]
    processors: _containers.MessageMap[str, ProcessorDeclaration]
    schedules: _containers.MessageMap[str, ScheduleDeclaration]
    pulses: _containers.MessageMap[str, PulseDeclaration]
    schedule_patches: _containers.RepeatedCompositeFieldContainer[SchedulePatch]
    retention: _containers.RepeatedCompositeFieldContainer[RetentionRule]
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., events: _Optional[_Mapping[str, EventTypeDeclaration]] = ..., collections: _Optional[_Mapping[str, CollectionDeclaration]] = ..., actions: _Optional[_Mapping[str, ActionDeclaration]] = ..., processors: _Optional[_Mapping[str, ProcessorDeclaration]] = ..., schedules: _Optional[_Mapping[str, ScheduleDeclaration]] = ..., pulses: _Optional[_Mapping[str, PulseDeclaration]] = ..., schedule_patches: _Optional[_Iterable[_Union[SchedulePatch, _Mapping]]] = ..., retention: _Optional[_Iterable[_Union[RetentionRule, _Mapping]]] = ...) -> None: ...

class RetentionRule(_message.Message):
    __slots__ = ("types", "max_age_ms", "max_count", "max_bytes", "keep", "key")
    TYPES_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_COUNT_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    KEEP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    types: str
    max_age_ms: int
    max_count: int
    max_bytes: int
    keep: RetentionKeep
    key: str
    def __init__(self, types: _Optional[str] = ..., max_age_ms: _Optional[int] = ..., max_count: _Optional[int] = ..., max_bytes: _Optional[int] = ..., keep: _Optional[_Union[RetentionKeep, str]] = ..., key: _Optional[str] = ...) -> None: ...

class EventTypeDeclaration(_message.Message):
    __slots__ = ("schema", "allow", "description", "read")
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    ALLOW_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    READ_FIELD_NUMBER: _ClassVar[int]
    schema: _struct_pb2.Struct
    allow: _containers.RepeatedScalarFieldContainer[str]
    description: str
    read: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., allow: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., read: _Optional[_Iterable[str]] = ...) -> None: ...

class CollectionDeclaration(_message.Message):
    __slots__ = ("schema", "private_fields", "events", "durable", "records", "allow")
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PRIVATE_FIELDS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_FIELD_NUMBER: _ClassVar[int]
    schema: _struct_pb2.Struct
    private_fields: _containers.RepeatedScalarFieldContainer[str]
    events: bool
    durable: bool
    records: bool
    allow: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., private_fields: _Optional[_Iterable[str]] = ..., events: _Optional[bool] = ..., durable: _Optional[bool] = ..., records: _Optional[bool] = ..., allow: _Optional[_Iterable[str]] = ...) -> None: ...

class ActionDeclaration(_message.Message):
    __slots__ = ("input_schema", "private_fields", "record", "allow", "timeout_ms", "timeout_grace_ms", "read", "concurrency_limit", "rate", "priority")
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PRIVATE_FIELDS_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    ALLOW_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    READ_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    input_schema: _struct_pb2.Struct
    private_fields: _containers.RepeatedScalarFieldContainer[str]
    record: bool
    allow: _containers.RepeatedScalarFieldContainer[str]
    timeout_ms: int
    timeout_grace_ms: int
    read: _containers.RepeatedScalarFieldContainer[str]
    concurrency_limit: ConcurrencyLimit
    rate: RateLimit
    priority: str
    def __init__(self, input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., private_fields: _Optional[_Iterable[str]] = ..., record: _Optional[bool] = ..., allow: _Optional[_Iterable[str]] = ..., timeout_ms: _Optional[int] = ..., timeout_grace_ms: _Optional[int] = ..., read: _Optional[_Iterable[str]] = ..., concurrency_limit: _Optional[_Union[ConcurrencyLimit, _Mapping]] = ..., rate: _Optional[_Union[RateLimit, _Mapping]] = ..., priority: _Optional[str] = ...) -> None: ...

class RateLimit(_message.Message):
    __slots__ = ("limit", "period_ms", "key", "burst")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PERIOD_MS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    BURST_FIELD_NUMBER: _ClassVar[int]
    limit: int
    period_ms: int
    key: str
    burst: int
    def __init__(self, limit: _Optional[int] = ..., period_ms: _Optional[int] = ..., key: _Optional[str] = ..., burst: _Optional[int] = ...) -> None: ...

class ConcurrencyLimit(_message.Message):
    __slots__ = ("limit", "key", "total", "if_active", "weights")
    class WeightsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    IF_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    limit: int
    key: str
    total: int
    if_active: str
    weights: _containers.ScalarMap[str, int]
    def __init__(self, limit: _Optional[int] = ..., key: _Optional[str] = ..., total: _Optional[int] = ..., if_active: _Optional[str] = ..., weights: _Optional[_Mapping[str, int]] = ...) -> None: ...

class ProcessorDeclaration(_message.Message):
    __slots__ = ("on", "where", "key", "concurrency", "ack_timeout_ms", "start", "retry_delays_ms", "timeout_grace_ms", "read", "concurrency_limit", "rate", "debounce", "priority")
    ON_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    ACK_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAYS_MS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    READ_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    on: _containers.RepeatedScalarFieldContainer[str]
    where: _struct_pb2.Struct
    key: str
    concurrency: int
    ack_timeout_ms: int
    start: StartPosition
    retry_delays_ms: _containers.RepeatedScalarFieldContainer[int]
    timeout_grace_ms: int
    read: _containers.RepeatedScalarFieldContainer[str]
    concurrency_limit: ConcurrencyLimit
    rate: RateLimit
    debounce: Debounce
    priority: str
    def __init__(self, on: _Optional[_Iterable[str]] = ..., where: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., key: _Optional[str] = ..., concurrency: _Optional[int] = ..., ack_timeout_ms: _Optional[int] = ..., start: _Optional[_Union[StartPosition, _Mapping]] = ..., retry_delays_ms: _Optional[_Iterable[int]] = ..., timeout_grace_ms: _Optional[int] = ..., read: _Optional[_Iterable[str]] = ..., concurrency_limit: _Optional[_Union[ConcurrencyLimit, _Mapping]] = ..., rate: _Optional[_Union[RateLimit, _Mapping]] = ..., debounce: _Optional[_Union[Debounce, _Mapping]] = ..., priority: _Optional[str] = ...) -> None: ...

class Debounce(_message.Message):
    __slots__ = ("key", "period_ms", "max_wait_ms")
    KEY_FIELD_NUMBER: _ClassVar[int]
    PERIOD_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    key: str
    period_ms: int
    max_wait_ms: int
    def __init__(self, key: _Optional[str] = ..., period_ms: _Optional[int] = ..., max_wait_ms: _Optional[int] = ...) -> None: ...

class StartPosition(_message.Message):
    __slots__ = ("end", "beginning", "after_seq")
    END_FIELD_NUMBER: _ClassVar[int]
    BEGINNING_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    end: bool
    beginning: bool
    after_seq: int
    def __init__(self, end: _Optional[bool] = ..., beginning: _Optional[bool] = ..., after_seq: _Optional[int] = ...) -> None: ...

class ScheduleDeclaration(_message.Message):
    __slots__ = ("action", "input", "cron", "zone", "every_ms", "max_lateness_ms", "retry_delays_ms", "disabled", "region", "policy", "dst", "cancel_on")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    EVERY_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_LATENESS_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAYS_MS_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    CANCEL_ON_FIELD_NUMBER: _ClassVar[int]
    action: str
    input: _struct_pb2.Struct
    cron: str
    zone: str
    every_ms: int
    max_lateness_ms: int
    retry_delays_ms: _containers.RepeatedScalarFieldContainer[int]
    disabled: bool
    region: int
    policy: _time_pb2.SchedulePolicy
    dst: _time_pb2.DstPolicy
    cancel_on: _containers.RepeatedCompositeFieldContainer[_time_pb2.CancelOn]
    def __init__(self, action: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., cron: _Optional[str] = ..., zone: _Optional[str] = ..., every_ms: _Optional[int] = ..., max_lateness_ms: _Optional[int] = ..., retry_delays_ms: _Optional[_Iterable[int]] = ..., disabled: _Optional[bool] = ..., region: _Optional[int] = ..., policy: _Optional[_Union[_time_pb2.SchedulePolicy, _Mapping]] = ..., dst: _Optional[_Union[_time_pb2.DstPolicy, _Mapping]] = ..., cancel_on: _Optional[_Iterable[_Union[_time_pb2.CancelOn, _Mapping]]] = ...) -> None: ...

class SchedulePatch(_message.Message):
    __slots__ = ("plugin", "schedule", "cron", "zone", "input", "disabled", "dst", "policy")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    schedule: str
    cron: str
    zone: str
    input: _struct_pb2.Struct
    disabled: bool
    dst: _time_pb2.DstPolicy
    policy: _time_pb2.SchedulePolicy
    def __init__(self, plugin: _Optional[str] = ..., schedule: _Optional[str] = ..., cron: _Optional[str] = ..., zone: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., disabled: _Optional[bool] = ..., dst: _Optional[_Union[_time_pb2.DstPolicy, _Mapping]] = ..., policy: _Optional[_Union[_time_pb2.SchedulePolicy, _Mapping]] = ...) -> None: ...

class PulseDeclaration(_message.Message):
    __slots__ = ("action", "cycle_seconds", "intervals", "scope")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    CYCLE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    INTERVALS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    action: str
    cycle_seconds: int
    intervals: int
    scope: PulseScope
    def __init__(self, action: _Optional[str] = ..., cycle_seconds: _Optional[int] = ..., intervals: _Optional[int] = ..., scope: _Optional[_Union[PulseScope, str]] = ...) -> None: ...

class Plugin(_message.Message):
    __slots__ = ("manifest", "revision", "registered_at")
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_FIELD_NUMBER: _ClassVar[int]
    manifest: PluginManifest
    revision: int
    registered_at: _timestamp_pb2.Timestamp
    def __init__(self, manifest: _Optional[_Union[PluginManifest, _Mapping]] = ..., revision: _Optional[int] = ..., registered_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RegisterPluginRequest(_message.Message):
    __slots__ = ("manifest",)
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    manifest: PluginManifest
    def __init__(self, manifest: _Optional[_Union[PluginManifest, _Mapping]] = ...) -> None: ...

class RegisterPluginResponse(_message.Message):
    __slots__ = ("plugin", "changed")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    plugin: Plugin
    changed: bool
    def __init__(self, plugin: _Optional[_Union[Plugin, _Mapping]] = ..., changed: _Optional[bool] = ...) -> None: ...

class ListPluginsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPluginsResponse(_message.Message):
    __slots__ = ("plugins",)
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    plugins: _containers.RepeatedCompositeFieldContainer[Plugin]
    def __init__(self, plugins: _Optional[_Iterable[_Union[Plugin, _Mapping]]] = ...) -> None: ...

class GetPluginRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetPluginResponse(_message.Message):
    __slots__ = ("plugin",)
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    plugin: Plugin
    def __init__(self, plugin: _Optional[_Union[Plugin, _Mapping]] = ...) -> None: ...
