"""The SDK's errors: :class:`ChronologError` (a call the owner refused, with what it put in the
status details) and :class:`TerminalError` (raised by a handler to fail without further tries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

__all__ = ["ChronologError", "FieldViolation", "TerminalError"]


@dataclass(frozen=True)
class FieldViolation:
    """One problem named by the owner: the field (a JSON pointer such as ``data/amount``) and what is wrong."""

    field: str
    description: str


class ChronologError(grpc.RpcError):
    """An RPC the owner refused or that failed on the way.

    ``status_code`` is the gRPC status code (e.g. ``grpc.StatusCode.INVALID_ARGUMENT``;
    ``code()`` returns it too, as a ``grpc.RpcError`` does: compare ``e.code() ==
    grpc.StatusCode.NOT_FOUND``, not ``e.code``), ``message`` the owner's message naming the
    problem (``details()`` returns it too), ``reason`` the stable ``google.rpc.ErrorInfo`` reason
    when the owner sent one, with its ``metadata`` (stable facts, e.g. ``actual_version`` of a
    refused append), and ``field_violations`` the ``google.rpc.BadRequest`` entries.
    """

    def __init__(
        self, code: grpc.StatusCode, message: str, reason: str = "", field_violations: Sequence[FieldViolation] = (), metadata: Optional[Mapping[str, str]] = None
    ):
        """Builds the error; usually made by :meth:`from_rpc_error`."""
        super().__init__(f"{code.name}: {message}")
        self.status_code = code
        self.message = message
        self.reason = reason
        self.field_violations = list(field_violations)
        self.metadata = dict(metadata or {})

    def code(self) -> grpc.StatusCode:  # noqa: D401 - grpc.RpcError's interface
        """The gRPC status code."""
        return self.status_code

    def details(self) -> str:
        """The owner's message."""
        return self.message

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> "ChronologError":
        """Reads code, message, ErrorInfo reason and BadRequest violations from a failed call."""
        if isinstance(error, ChronologError):
            return error
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        message = (error.details() if hasattr(error, "details") else str(error)) or ""
        reason = ""
        metadata: dict = {}
        violations: list[FieldViolation] = []
        try:
            status = rpc_status.from_call(error) if hasattr(error, "trailing_metadata") else None
        except ValueError:  # details that disagree with the status: keep code and message
            status = None
        for detail in status.details if status is not None else ():
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
                metadata = dict(info.metadata)
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend(FieldViolation(v.field, v.description) for v in bad.field_violations)
        return cls(code, message, reason, violations, metadata)


class TerminalError(Exception):
    """Raised by a handler to fail without further tries.

    From a processor the owner records ``processor.failed`` at once; any other
    exception is retried (3 tries in all by default). From an action it is
    reported as a terminal failure (the owner never retries actions by itself).
    """
