"""Chronolog for Python: a client and a small executor over the generated
stubs in ``chronolog.gen``.

``from chronolog import Client, Plugin, run_executor, TerminalError``; ``chronolog.__version__``
is this SDK's version.
"""

from chronolog.channel import connect
from chronolog.client import CallResult, Client, DelayResult, DocumentWriteResult
from chronolog.contexts import ActionContext, DeliveryContext, Scheduled
from chronolog.errors import ChronologError, FieldViolation, TerminalError
from chronolog.executor import Executor, run_executor
from chronolog.plugin import ActionDefinition, Plugin, ProcessorDefinition
from chronolog.streams import StreamEntry
from chronolog.version import __version__
from chronolog.values import actor_from_dict, actor_to_dict, event_data, event_to_dict, from_struct, to_struct
from chronolog.work import CauseCollections, WorkUnderCause

__all__ = [
    "ActionContext",
    "ActionDefinition",
    "CallResult",
    "CauseCollections",
    "ChronologError",
    "Client",
    "DelayResult",
    "DeliveryContext",
    "DocumentWriteResult",
    "Executor",
    "FieldViolation",
    "Plugin",
    "ProcessorDefinition",
    "Scheduled",
    "StreamEntry",
    "TerminalError",
    "WorkUnderCause",
    "actor_from_dict",
    "actor_to_dict",
    "connect",
    "event_data",
    "event_to_dict",
    "from_struct",
    "run_executor",
    "to_struct",
]
