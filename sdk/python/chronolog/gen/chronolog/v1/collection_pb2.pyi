from chronolog.gen.chronolog.v1 import event_pb2 as _event_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Document(_message.Message):
    __slots__ = ("id", "doc")
    ID_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    id: str
    doc: _struct_pb2.Struct
    def __init__(self, id: _Optional[str] = ..., doc: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class CreateDocumentRequest(_message.Message):
    __slots__ = ("collection", "doc", "cause", "actor")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    collection: str
    doc: _struct_pb2.Struct
    cause: _event_pb2.Cause
    actor: _event_pb2.Actor
    def __init__(self, collection: _Optional[str] = ..., doc: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ...) -> None: ...

class CreateDocumentResponse(_message.Message):
    __slots__ = ("document", "seq")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    document: Document
    seq: int
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., seq: _Optional[int] = ...) -> None: ...

class ReplaceDocumentRequest(_message.Message):
    __slots__ = ("collection", "id", "doc", "cause", "actor")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    collection: str
    id: str
    doc: _struct_pb2.Struct
    cause: _event_pb2.Cause
    actor: _event_pb2.Actor
    def __init__(self, collection: _Optional[str] = ..., id: _Optional[str] = ..., doc: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ...) -> None: ...

class ReplaceDocumentResponse(_message.Message):
    __slots__ = ("document", "seq")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    document: Document
    seq: int
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., seq: _Optional[int] = ...) -> None: ...

class PatchDocumentRequest(_message.Message):
    __slots__ = ("collection", "id", "set", "unset", "cause", "actor")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    UNSET_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    collection: str
    id: str
    set: _struct_pb2.Struct
    unset: _containers.RepeatedScalarFieldContainer[str]
    cause: _event_pb2.Cause
    actor: _event_pb2.Actor
    def __init__(self, collection: _Optional[str] = ..., id: _Optional[str] = ..., set: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., unset: _Optional[_Iterable[str]] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ...) -> None: ...

class PatchDocumentResponse(_message.Message):
    __slots__ = ("document", "seq")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    document: Document
    seq: int
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., seq: _Optional[int] = ...) -> None: ...

class DeleteDocumentRequest(_message.Message):
    __slots__ = ("collection", "id", "cause", "actor")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    collection: str
    id: str
    cause: _event_pb2.Cause
    actor: _event_pb2.Actor
    def __init__(self, collection: _Optional[str] = ..., id: _Optional[str] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ..., actor: _Optional[_Union[_event_pb2.Actor, _Mapping]] = ...) -> None: ...

class DeleteDocumentResponse(_message.Message):
    __slots__ = ("seq",)
    SEQ_FIELD_NUMBER: _ClassVar[int]
    seq: int
    def __init__(self, seq: _Optional[int] = ...) -> None: ...

class GetDocumentRequest(_message.Message):
    __slots__ = ("collection", "id", "cause")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    collection: str
    id: str
    cause: _event_pb2.Cause
    def __init__(self, collection: _Optional[str] = ..., id: _Optional[str] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ...) -> None: ...

class GetDocumentResponse(_message.Message):
    __slots__ = ("document",)
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    document: Document
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ...) -> None: ...

class FindDocumentsRequest(_message.Message):
    __slots__ = ("collection", "filter", "sort", "limit", "cause")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    collection: str
    filter: _struct_pb2.Struct
    sort: _struct_pb2.Struct
    limit: int
    cause: _event_pb2.Cause
    def __init__(self, collection: _Optional[str] = ..., filter: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., sort: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., limit: _Optional[int] = ..., cause: _Optional[_Union[_event_pb2.Cause, _Mapping]] = ...) -> None: ...

class FindDocumentsResponse(_message.Message):
    __slots__ = ("documents",)
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[Document]
    def __init__(self, documents: _Optional[_Iterable[_Union[Document, _Mapping]]] = ...) -> None: ...
