"""Several owners behind one client: one leads, the others are standbys that serve reads and
refuse every other call with UNAVAILABLE ``this owner is a standby; the leader is at <url>`` and
metadata ``chronolog-leader: <url>``. A :class:`FollowingChannel` sends each call to the owner it
believes leads, follows a standby's pointer to the leader, and moves on to the next owner when
one cannot be reached.

- With ``reads="any"``, reads (``Get*``, ``List*``, ``Read*``, ``Find*`` and ``Watch`` of
  Chronolog's services) go to the owners in the order given, a standby included: the first that
  answers, and the next when one cannot be reached or was lost. A read a standby does not serve
  (``ListExecutors``, a collection kept in memory) goes to the leader it names.

- A unary call, or a server stream until its first response, that a standby refused or that
  reached no owner (nothing was done) is made again at the leader named or the next owner, with
  pauses (none until each owner had its turn, then 0.1 s doubling up to 0.25 s), for up to
  ``failover_timeout_s`` (and within the call's own timeout); then its error is the caller's.
- A failure that leaves the owner in doubt (the connection dropped, a ping unanswered, the owner
  is stopping) is the caller's at once (the call may have run), unless the call may be made twice
  for once (a read; an Emit naming its event's id; a Delay naming its delay id or made under a
  cause; a batch whose every item is such: the owner answers the second from the log): that one
  is made again at the next owner as above. The next call goes to the next owner either way.
- Client and bidirectional streams are not made again (grpc consumes their requests): the
  publisher and the executor open them again, and the failure that ended them has moved the
  channel on.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union
from urllib.parse import urlsplit

import grpc

__all__ = ["LEADER_KEY", "ROLE_KEY", "DEFAULT_FAILOVER_TIMEOUT_S", "READS", "owner_urls", "OwnerFailure", "owner_failure_of", "Owners", "FollowingChannel", "owners_of", "Reopening"]

#: The metadata key in which an owner names the leader's URL (a standby's refusals, health checks).
LEADER_KEY = "chronolog-leader"
#: The metadata key in which an owner's health check says its role: ``leader`` or ``standby``.
ROLE_KEY = "chronolog-role"
#: How long a call (or a broken watch) is tried across the owners before its error is the caller's, by default.
DEFAULT_FAILOVER_TIMEOUT_S = 15.0
#: Where a client's reads may go: with its other calls to the ``leader`` (the default), or to ``any`` owner, a standby included.
READS = ("leader", "any")

#: grpc-core's words for a connection that was never made (nothing was sent).
_UNREACHED = ("failed to connect to all addresses", "DNS resolution failed", "Name resolution failure", "Connection refused")
#: grpc-core's words for a connection lost during a call (a ping unanswered too), and the owner's for a stop.
_LOST = ("Socket closed", "Stream removed", "Connection reset", "Broken pipe", "GOAWAY", "RST_STREAM", "Endpoint read failed", "owner is stopping", "keepalive", "Keepalive", "ping timeout")


def owner_urls(url: Union[str, Sequence[str]]) -> list:
    """The owner URLs in ``url``: one URL, a comma-separated list of them or a list. Each is
    ``http://host:port`` or ``https://host:port`` (``host:port`` means ``http://``); a ValueError
    names the one that is not."""
    urls = [u.strip() for u in url.split(",")] if isinstance(url, str) else list(url)
    if not urls:
        raise ValueError("owner url: expected http://host:port or https://host:port, or several (got an empty list)")
    for i, u in enumerate(urls):
        where = f" (url[{i}])" if len(urls) > 1 else ""
        if not isinstance(u, str):
            raise ValueError(f"owner url {u!r}{where}: expected http://host:port or https://host:port")
        parts = urlsplit(u if "://" in u else f"http://{u}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"owner url {u!r}{where}: expected http://host:port or https://host:port")
    return urls


def _same_owner(a: str, b: str) -> bool:
    """``a`` and ``b`` name the same owner (``http://h:1``, ``http://h:1/`` and ``h:1`` do)."""

    def key(u: str) -> str:
        return (u if "://" in u else f"http://{u}").rstrip("/")

    return key(a) == key(b)


@dataclass(frozen=True)
class OwnerFailure:
    """Why a call failed, when it is about the owner rather than the request: ``standby`` (a
    standby refused it, nothing was done; ``leader`` is the URL it names, if any), ``unreached``
    (no owner got it, nothing was done) or ``lost`` (the owner went away or is stopping during the
    call: it may have run)."""

    kind: str
    leader: Optional[str] = None


def owner_failure_of(error: BaseException) -> Optional[OwnerFailure]:
    """The owner failure behind a failed call's ``error``, or None when it is the owner's answer."""
    if not isinstance(error, grpc.RpcError) or not hasattr(error, "code"):
        return None
    code, details = error.code(), error.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE:
        metadata = dict(error.trailing_metadata() or ()) if hasattr(error, "trailing_metadata") else {}
        if LEADER_KEY in metadata or details.startswith("this owner is a standby"):
            leader = metadata.get(LEADER_KEY) or (details.rsplit("the leader is at ", 1)[1] if "the leader is at " in details else None)
            return OwnerFailure("standby", leader if leader and leader.startswith(("http://", "https://")) else None)
        if any(words in details for words in _UNREACHED):
            return OwnerFailure("unreached")
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.INTERNAL) and any(words in details for words in _LOST):
        return OwnerFailure("lost")
    return None


def is_read(method: str) -> bool:
    """Whether ``method`` (``/chronolog.v1.LogService/ReadLog``) is a read of Chronolog's API: what a standby may serve."""
    service, _, name = method.lstrip("/").partition("/")
    return service.startswith("chronolog.") and (name == "Watch" or any(name.startswith(verb) and name[len(verb) : len(verb) + 1].isupper() for verb in ("Get", "List", "Read", "Find")))


class Owners:
    """The owners a client knows (those given, then leaders named by standbys), the one calls go
    to now, the one reads go to now with ``reads="any"`` (the first given that answers), and a
    channel for each (made on first use by ``make_channel``)."""

    def __init__(self, urls: Sequence[str], make_channel: Callable[[str], grpc.Channel], failover_timeout_s: float, reads: str = "leader"):
        if reads not in READS:
            raise ValueError(f"reads {reads!r}: expected 'leader' or 'any'")
        self._urls = list(urls)
        self._current = 0
        self._reading = 0
        self._channels: dict = {}
        self._make_channel = make_channel
        self._lock = threading.Lock()
        self._closed = False
        self.failover_timeout_s = failover_timeout_s
        self.reads = reads

    def pick(self, read: bool = False) -> "tuple[str, grpc.Channel]":
        """The owner calls go to now (a ``read`` with ``reads="any"``: the one reads go to), and its channel."""
        with self._lock:
            if self._closed:
                raise ValueError("Cannot invoke RPC: the channel is closed")
            url = self._urls[self._reading if read and self.reads == "any" else self._current]
            channel = self._channels.get(url)
            if channel is None:
                channel = self._channels[url] = self._make_channel(url)
            return url, channel

    @property
    def several(self) -> bool:
        """More than one owner is known (given, or named as the leader)."""
        return len(self._urls) > 1

    def route(self, url: str, failure: OwnerFailure) -> None:
        """Moves on after ``failure`` of a call made at ``url``: to the leader a standby named (added
        to the owners when it was not given: it is the URL the leader advertises), else to the next
        owner, unless another call already moved on from ``url``. Reads that go to any owner leave
        an owner that could not be reached or was lost for the next one; a standby's refusal does not
        move them (it serves reads: the one it refused goes to the leader)."""
        with self._lock:
            leader = failure.leader if failure.kind == "standby" else None
            if leader is not None and not _same_owner(leader, url):
                known = next((i for i, u in enumerate(self._urls) if _same_owner(u, leader)), None)
                if known is None:
                    self._urls.append(leader)
                    known = len(self._urls) - 1
                self._current = known
            elif self._urls[self._current] == url:
                self._current = (self._current + 1) % len(self._urls)
            if failure.kind != "standby" and self._urls[self._reading] == url:
                self._reading = (self._reading + 1) % len(self._urls)

    def route_after(self, error: BaseException, url: str) -> Optional[OwnerFailure]:
        """Moves on after ``error`` of a call made at ``url`` when it is an owner failure (returned)."""
        failure = owner_failure_of(error)
        if failure is not None:
            self.route(url, failure)
        return failure

    def retries(self, failure: OwnerFailure, repeatable: bool = False) -> bool:
        """A call that failed so may be made again: nothing was done, and a leader (named, or to come)
        or another owner may take it; or, when ``repeatable`` (making it twice does what making it
        once does), it was lost and another owner may take it."""
        return failure.kind == "standby" or ((failure.kind == "unreached" or (failure.kind == "lost" and repeatable)) and self.several)

    def pause_s(self, n: int) -> float:
        """The pause before try ``n`` (1: the first retry) of one call.

        None until each owner had its turn, then 0.1 s doubling up to 0.25 s: until a standby takes
        over, tries alternate between it and the lost leader it names, so a longer pause finds the new
        leader later.
        """
        return 0.0 if n < len(self._urls) else min(0.1 * 2 ** (n - len(self._urls)), 0.25)

    def close(self) -> None:
        """Closes every channel."""
        with self._lock:
            self._closed = True
            channels = list(self._channels.values())
        for channel in channels:
            channel.close()


class _Method:
    """One method of a :class:`FollowingChannel`: its multicallable on each owner's channel, made
    on first use; a ``read`` goes where reads go (see :meth:`Owners.pick`)."""

    def __init__(self, owners: Owners, make: Callable[[grpc.Channel], Any], read: bool = False):
        self.owners = owners
        self._make = make
        self._read = read
        self._at: dict = {}

    def pick(self, to_leader: bool = False) -> "tuple[str, Any]":
        """The owner this method's call goes to (``to_leader``: the leader's, after a standby refused a read), and its multicallable there."""
        url, channel = self.owners.pick(self._read and not to_leader)
        callable_ = self._at.get(url)
        if callable_ is None:
            callable_ = self._at[url] = self._make(channel)
        return url, callable_

    def attempts(self, call: Callable[[Any, Optional[float]], Any], timeout: Optional[float], repeatable: bool = False) -> Any:
        """Makes ``call`` at the current owner until it succeeds or its failure is the caller's (see
        the module's docstring); ``repeatable``: the call may be made twice for once."""
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        n = 1
        refused = False
        while True:
            url, callable_ = self.pick(refused)
            try:
                return call(callable_, timeout if n == 1 or deadline is None else deadline - time.monotonic())
            except grpc.RpcError as e:
                failure = self.owners.route_after(e, url)
                refused = refused or (failure is not None and failure.kind == "standby")
                pause = self.owners.pause_s(n)
                at = time.monotonic() + pause
                if failure is None or not self.owners.retries(failure, repeatable) or at - started > self.owners.failover_timeout_s or (deadline is not None and at >= deadline):
                    raise
                time.sleep(pause)
            n += 1


def repeatable(method: str, request: Any) -> bool:
    """Whether unary call ``method`` (``/chronolog.v1.LogService/Emit``) with ``request`` may be made
    twice for once: a read, an Emit that names its event's id, a Delay that names its delay id or is
    made under a cause, or a batch of such (the owner answers a second one from the log). The others
    go once: a lost one's error is the caller's, who knows whether to make it again."""
    name = method.rsplit("/", 1)[-1]
    if is_read(method):
        return True

    def delay(d: Any) -> bool:
        return bool(d.delay_id) or d.HasField("cause")

    if name == "Emit":
        return bool(request.id)
    if name == "EmitBatch":
        return len(request.events) > 0 and all(e.id for e in request.events)
    if name == "Delay":
        return delay(request)
    if name == "DelayBatch":
        return len(request.delays) > 0 and all(delay(d) for d in request.delays)
    return False


class _UnaryUnary(grpc.UnaryUnaryMultiCallable):
    def __init__(self, method: _Method, name: str):
        self._method = method
        self._name = name

    def __call__(self, request, timeout=None, metadata=None, credentials=None, wait_for_ready=None, compression=None):
        return self._method.attempts(lambda c, t: c(request, timeout=t, metadata=metadata, credentials=credentials, wait_for_ready=wait_for_ready, compression=compression), timeout, repeatable(self._name, request))

    def with_call(self, request, timeout=None, metadata=None, credentials=None, wait_for_ready=None, compression=None):
        return self._method.attempts(lambda c, t: c.with_call(request, timeout=t, metadata=metadata, credentials=credentials, wait_for_ready=wait_for_ready, compression=compression), timeout, repeatable(self._name, request))

    def future(self, request, timeout=None, metadata=None, credentials=None, wait_for_ready=None, compression=None):
        """A future of the call at the current owner (not made again elsewhere)."""
        return self._method.pick()[1].future(request, timeout=timeout, metadata=metadata, credentials=credentials, wait_for_ready=wait_for_ready, compression=compression)


class _StreamCall:
    """A streaming call's responses at one owner; the error that ends them moves the owners on. A
    server stream (``reopen`` given) that fails so before its first response, when nothing was
    done, is opened again at the leader named or the next owner (see the module's docstring)."""

    def __init__(self, method: _Method, open_: Callable[[Any], Any], reopen: bool):
        self._method = method
        self._open = open_
        self._reopen = reopen
        self._cancelled = False
        self._started = time.monotonic()
        self._tries = 1
        self._refused = False
        self._url, callable_ = method.pick()
        self._call = open_(callable_)

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            try:
                response = next(self._call)
                self._reopen = False
                return response
            except grpc.RpcError as e:
                owners = self._method.owners
                failure = owners.route_after(e, self._url)
                self._refused = self._refused or (failure is not None and failure.kind == "standby")
                pause = owners.pause_s(self._tries)
                if not self._reopen or self._cancelled or failure is None or not owners.retries(failure) or time.monotonic() + pause - self._started > owners.failover_timeout_s:
                    raise
                time.sleep(pause)
                self._tries += 1
                self._url, callable_ = self._method.pick(self._refused)
                self._call = self._open(callable_)

    def cancel(self) -> bool:
        self._cancelled = True
        return self._call.cancel()

    def __getattr__(self, name: str) -> Any:
        if name == "_call":  # not opened (its opening raised)
            raise AttributeError(name)
        return getattr(self._call, name)


class _UnaryStream(grpc.UnaryStreamMultiCallable):
    def __init__(self, method: _Method):
        self._method = method

    def __call__(self, request, timeout=None, metadata=None, credentials=None, wait_for_ready=None, compression=None):
        return _StreamCall(self._method, lambda c: c(request, timeout=timeout, metadata=metadata, credentials=credentials, wait_for_ready=wait_for_ready, compression=compression), reopen=True)


class _StreamUnary(grpc.StreamUnaryMultiCallable):
    def __init__(self, method: _Method):
        self._method = method

    def _routed(self, url: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except grpc.RpcError as e:
            self._method.owners.route_after(e, url)
            raise

    def __call__(self, request_iterator, timeout=None, metadata=None, credentials=None, wait_for_ready=None, compression=None):
        url, c = self._method.pick()
        return self._routed(url, lambda: c(request_iterator, timeout=timeout, metadata=metadata, credentials=credentials, wait_for_ready=wait_for_ready, compression=compression))

    def with_call(self, request_iterator, timeout=None, metadata=None, credentials=None, wait_for_ready=None, compression=None):
        url, c = self._method.pick()
        return self._routed(url, lambda: c.with_call(request_iterator, timeout=timeout, metadata=metadata, credentials=credentials, wait_for_ready=wait_for_ready, compression=compression))

    def future(self, request_iterator, timeout=None, metadata=None, credentials=None, wait_for_ready=None, compression=None):
        return self._method.pick()[1].future(request_iterator, timeout=timeout, metadata=metadata, credentials=credentials, wait_for_ready=wait_for_ready, compression=compression)


class _StreamStream(grpc.StreamStreamMultiCallable):
    def __init__(self, method: _Method):
        self._method = method

    def __call__(self, request_iterator, timeout=None, metadata=None, credentials=None, wait_for_ready=None, compression=None):
        return _StreamCall(self._method, lambda c: c(request_iterator, timeout=timeout, metadata=metadata, credentials=credentials, wait_for_ready=wait_for_ready, compression=compression), reopen=False)


class FollowingChannel(grpc.Channel):
    """A channel to the leader among ``owners`` (see the module's docstring): each call goes to the
    owner :meth:`Owners.pick` names, on that owner's own grpc channel."""

    def __init__(self, owners: Owners):
        self.owners = owners

    def unary_unary(self, method, request_serializer=None, response_deserializer=None, _registered_method=False):
        return _UnaryUnary(_Method(self.owners, lambda ch: ch.unary_unary(method, request_serializer, response_deserializer, _registered_method=_registered_method), is_read(method)), method)

    def unary_stream(self, method, request_serializer=None, response_deserializer=None, _registered_method=False):
        return _UnaryStream(_Method(self.owners, lambda ch: ch.unary_stream(method, request_serializer, response_deserializer, _registered_method=_registered_method), is_read(method)))

    def stream_unary(self, method, request_serializer=None, response_deserializer=None, _registered_method=False):
        return _StreamUnary(_Method(self.owners, lambda ch: ch.stream_unary(method, request_serializer, response_deserializer, _registered_method=_registered_method)))

    def stream_stream(self, method, request_serializer=None, response_deserializer=None, _registered_method=False):
        return _StreamStream(_Method(self.owners, lambda ch: ch.stream_stream(method, request_serializer, response_deserializer, _registered_method=_registered_method)))

    def subscribe(self, callback, try_to_connect=False):
        """Watches the connectivity of the owner calls go to now."""
        self.owners.pick()[1].subscribe(callback, try_to_connect)

    def unsubscribe(self, callback):
        self.owners.pick()[1].unsubscribe(callback)

    def close(self):
        self.owners.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
        return False


def owners_of(channel: grpc.Channel) -> Optional[Owners]:
    """The owners behind a :class:`FollowingChannel` (None for any other channel)."""
    return channel.owners if isinstance(channel, FollowingChannel) else None


class Reopening:
    """The breaks of one stream that is opened again after them (a watch, from after the last event
    it gave): whether the last break may be followed by another opening, and after what pause. A
    stream that got something since its last break starts afresh (:meth:`progressed`)."""

    def __init__(self, owners: Optional[Owners]):
        self._owners = owners
        self._broken_since: Optional[float] = None
        self._breaks = 0

    def progressed(self) -> None:
        """The stream got something."""
        self._broken_since = None
        self._breaks = 0

    def again(self, error: BaseException) -> bool:
        """After ``error`` ended the stream: waits the pause and returns True when it may be opened
        again (a standby refused it, or, with several owners, the owner could not be reached or was
        lost, within ``failover_timeout_s`` of the first break); False when the error is the caller's."""
        failure = owner_failure_of(error)
        if self._owners is None or failure is None or not (failure.kind == "standby" or self._owners.several):
            return False
        now = time.monotonic()
        if self._broken_since is None:
            self._broken_since = now
        self._breaks += 1
        pause = self._owners.pause_s(self._breaks)
        if now + pause - self._broken_since > self._owners.failover_timeout_s:
            return False
        time.sleep(pause)
        return True
