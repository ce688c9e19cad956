from chronolog.gen.chronolog.v1 import event_pb2 as _event_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CallActionRequest(_message.Message):
    __slots__ = ("action", "input", "call_id", "cause", "actor")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    action: str
    input: _struct_pb2.Struct
    call_id: str
    cause: _event_pb2.Cause
    actor: _event_pb2.Actor
    def __init__(self, action: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., call_id: _Optional[str] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ...) -> None: ...

class CallActionResponse(_message.Message):
    __slots__ = ("call_id", "output", "from_log")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    FROM_LOG_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    output: _struct_pb2.Struct
    from_log: bool
    def __init__(self, call_id: _Optional[str] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., from_log: _Optional[bool] = ...) -> None: ...
