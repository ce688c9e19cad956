"""A gRPC channel to an owner, or to the leader among several (see :mod:`chronolog.owners`),
with the bearer token on every call.
"""

from __future__ import annotations

import collections
from typing import Optional, Sequence, Union
from urllib.parse import urlsplit

import grpc

from chronolog.owners import DEFAULT_FAILOVER_TIMEOUT_S, FollowingChannel, Owners, owner_urls
from chronolog.tracing import current_trace_headers

__all__ = ["DEFAULT_URL", "connect"]

DEFAULT_URL = "http://127.0.0.1:50051"


class _CallDetails(
    collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")),
    grpc.ClientCallDetails,
):
    """Call details with the bearer token added."""


class _Bearer(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds ``authorization: Bearer <token>`` to every call (plaintext channels included)."""

    def __init__(self, token: str):
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, d: grpc.ClientCallDetails) -> _CallDetails:
        metadata = list(d.metadata or []) + [self._header]
        return _CallDetails(d.method, d.timeout, metadata, d.credentials, getattr(d, "wait_for_ready", None), getattr(d, "compression", None))

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation, details, requests):
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation, details, requests):
        return continuation(self._details(details), requests)


class _TraceContext(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Sends the current trace context (:func:`chronolog.tracing.current_trace_headers`) as W3C
    ``traceparent``/``tracestate`` metadata with every call but a Publish stream, shared by the
    emits of many traces (each of its emits says its own, ``EmitRequest.traceparent``)."""

    def _details(self, d: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        if d.method.endswith("/Publish"):
            return d
        headers = current_trace_headers()
        if headers is None or any(k == "traceparent" for k, _ in d.metadata or []):
            return d
        traceparent, tracestate = headers
        metadata = list(d.metadata or []) + [("traceparent", traceparent)] + ([("tracestate", tracestate)] if tracestate else [])
        return _CallDetails(d.method, d.timeout, metadata, d.credentials, getattr(d, "wait_for_ready", None), getattr(d, "compression", None))

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation, details, requests):
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation, details, requests):
        return continuation(self._details(details), requests)


def connect(
    url: Union[str, Sequence[str]] = DEFAULT_URL,
    token: Optional[str] = None,
    root_certificates: Optional[bytes] = None,
    *,
    failover_timeout_s: float = DEFAULT_FAILOVER_TIMEOUT_S,
    reads: str = "leader",
) -> grpc.Channel:
    """Opens a gRPC channel to an owner, or to the leader among several.

    ``url`` is ``http://host:port`` (plaintext HTTP/2) or ``https://host:port``
    (TLS; ``root_certificates`` is a PEM bundle for a private CA); or several
    owners (one leads, the others are standbys) as a comma-separated list or a
    list. With a ``token`` every call carries ``authorization: Bearer <token>``.

    Calls go to the leader (see :mod:`chronolog.owners`): a standby's refusal
    (UNAVAILABLE with ``chronolog-leader: <url>``) is followed to the URL it
    names, and an owner that cannot be reached to the next one. A call that
    nothing was done of is made again there for up to ``failover_timeout_s``
    (0: never again); one the owner may have run when it was lost (the
    connection dropped, the owner is stopping) raises, and the next call goes
    to the next owner.

    ``reads``: where reads go (``Get*``, ``List*``, ``ReadLog``, ``FindDocuments``, ``Watch``):
    ``"leader"`` (default) with every other call; ``"any"``: to the owners in the order of ``url``,
    a standby included (the first that answers; list the nearest first). A standby serves what is
    committed, a moment behind the leader (a read just after a write may not see it yet); a read it
    does not serve (``ListExecutors``, a collection kept in memory) goes to the leader.
    """
    if not isinstance(failover_timeout_s, (int, float)) or isinstance(failover_timeout_s, bool) or not failover_timeout_s >= 0:
        raise ValueError(f"failover_timeout_s {failover_timeout_s!r}: expected a number of seconds >= 0")
    return FollowingChannel(Owners(owner_urls(url), lambda u: _channel(u, token, root_certificates), float(failover_timeout_s), reads))


def _channel(url: str, token: Optional[str], root_certificates: Optional[bytes]) -> grpc.Channel:
    """A gRPC channel to the owner at ``url`` (checked by :func:`owner_urls`)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    target = f"{host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    options = [
        ("grpc.max_receive_message_length", 64 * 1024 * 1024),
        # grpc-core's own reconnect backoff (up to 120 s) would sit under the
        # executor's: keep it short so a restarted owner is found within seconds.
        ("grpc.initial_reconnect_backoff_ms", 200),
        ("grpc.min_reconnect_backoff_ms", 200),
        ("grpc.max_reconnect_backoff_ms", 2000),
        # A connection waiting on a call pings the owner after 1.5 s without data and is closed
        # (UNAVAILABLE: the next owner is tried) when the ping is not answered within 1.5 s: a
        # frozen owner (paused, hung, cut off) keeps its TCP connections open. Three seconds of
        # silence is the default lease: the client leaves a frozen leader about when a standby
        # takes over.
        ("grpc.keepalive_time_ms", 1500),
        ("grpc.keepalive_timeout_ms", 1500),
        ("grpc.http2.ping_timeout_ms", 1500),
        # grpc-core sends one ping at a time: a bandwidth probe's ping sent with the request and
        # never answered would hold back the keepalive's, and the call would wait forever.
        ("grpc.http2.bdp_probe", 0),
        ("grpc.http2.max_pings_without_data", 0),
    ]
    if parts.scheme == "https":
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates), options)
    else:
        channel = grpc.insecure_channel(target, options)
    return grpc.intercept_channel(channel, *([_Bearer(token)] if token else []), _TraceContext())
