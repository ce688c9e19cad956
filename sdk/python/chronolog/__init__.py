"""Chronolog for Python: a client and a small executor over the generated
stubs in ``chronolog.gen``.

``from chronolog import Client, Plugin, run_executor, TerminalError``.
"""

from chronolog.client import (
    CallResult,
    ChronologError,
    Client,
    DelayResult,
    DocumentWriteResult,
    FieldViolation,
    actor_from_dict,
    actor_to_dict,
    connect,
    event_data,
    event_to_dict,
    from_struct,
    to_struct,
)
from chronolog.executor import (
    ActionContext,
    ActionDefinition,
    CauseCollections,
    DeliveryContext,
    Executor,
    Plugin,
    ProcessorDefinition,
    Scheduled,
    TerminalError,
    WorkUnderCause,
    run_executor,
)

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
