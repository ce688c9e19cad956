"""A small Chronolog executor for Python, mirroring the
TypeScript one (sdk/ts/src/executor.ts, action.ts, work.ts). The handlers' contexts are in
:mod:`chronolog.contexts`, the plugin in :mod:`chronolog.plugin`, running one delivery or
invocation in :mod:`chronolog.runs`.

Declare a :class:`Plugin` with event types, processors and actions, then run
it with :func:`run_executor`::

    shop = Plugin("pyshop", events={"cart.submitted": {"allow": ["*"]}, "cart.checked": {}})

    @shop.action("total")
    def total(ctx, input):
        return {"total": sum(i["price"] * i["qty"] for i in input["items"])}

    @shop.processor("checker", on="cart.submitted")
    def check(ctx):
        result = ctx.call("pyshop.total", {"items": ctx.data["items"]})
        ctx.emit("cart.checked", {"total": result.output["total"]})

    executor = run_executor([shop], url="http://127.0.0.1:50051", token="...")
    executor.run_forever()

The executor opens the bidirectional ``Subscribe`` stream, says hello (its
plugin manifests, processors, actions and credits), then runs each delivery
and invocation on a thread of its own (at most ``credits`` at once, as the
owner never sends more; deliveries come in DeliveryBatches), acknowledges
deliveries (ok, error, or terminal error when the handler raises
:class:`TerminalError`; acks that end while the stream writes go out together
in one AckBatch), answers invocations
with an ``action_result`` (those that end while the stream writes go out together
in one ActionResultBatch, to an owner whose welcome accepts them), and sends heartbeats at the interval the owner's
welcome asks for. An owner silent for 3 intervals counts as gone. When the
stream breaks it reconnects with backoff (0.25 s doubling up to
``max_backoff_s``); work that was running then is retried by the owner.
Given several owners (``url``: a comma-separated list or a list; one leads,
the others are standbys), it subscribes to the leader: a standby's refusal
sends it to the leader the standby names at once (not reported), and an
owner that cannot be reached to the next one (after each owner had its turn,
with pauses of 0.1 s doubling up to 0.25 s); the new leader gets the hello and
sends the deliveries (those that ran on the lost stream again).

An owner that refuses the stream itself with UNAUTHENTICATED (a missing or
unknown token), PERMISSION_DENIED (a principal whose role may not
subscribe) or INVALID_ARGUMENT or RESOURCE_EXHAUSTED before its welcome (a
hello it rejects, e.g. a plugin manifest that does not register, or one
larger than the owner reads) is not retried: trying again
cannot help. The executor stops at once and keeps the owner's error (a
:class:`ChronologError`) in ``fatal_error``; :meth:`Executor.wait_ready` and
:meth:`Executor.run_forever` raise it. The TypeScript executor does the same
(``ready`` and ``done`` reject).

Work done inside a delivery or an invocation (``ctx.emit``, ``ctx.call``,
``ctx.collections.create/replace/patch/delete``, ``ctx.schedule``,
``ctx.unschedule``, ``ctx.delay``, ``ctx.cancel_delay``) names its cause (the
delivery's event, or the invocation's ``action.started``) and its position
among the calls made under that cause, counted from 0 and shared by all of
them. The owner derives the work's id from them and a hash of the input,
and its actor from the cause: a retried handler that makes the same calls
in the same order finds the events, documents, call results and timers it
made before instead of writing them twice.
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
import time
import uuid
from typing import Any, Callable, Optional, Sequence

import grpc
from google.protobuf import timestamp_pb2

from chronolog.channel import DEFAULT_URL
from chronolog.client import Client
from chronolog.errors import ChronologError
from chronolog.gen.chronolog.v1 import executor_pb2, executor_pb2_grpc
from chronolog.owners import DEFAULT_FAILOVER_TIMEOUT_S, OwnerFailure, owner_failure_of, owners_of
from chronolog.plugin import Plugin
from chronolog.runs import cancel_work, describe, run_delivery, run_invocation
from chronolog.session import DEFAULT_MAX_MESSAGE_BYTES, Session
from chronolog.version import SDK_NAME, __version__, versions_differ
from chronolog.worker_pool import WorkerPool

__all__ = ["Executor", "run_executor"]


#: Codes with which the owner refuses the Subscribe stream for good: a bad
#: token, or a principal whose role may not subscribe. Retrying cannot help.
#: (INVALID_ARGUMENT and RESOURCE_EXHAUSTED count too, but only before the welcome: see _is_fatal.)
FATAL_CODES = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


#: The most credits Hello can carry (a uint32; the owner clamps what it takes further), and what 0 means.
_MAX_CREDITS = 2**32 - 1
_DEFAULT_CREDITS = 16


#: How long a new stream waits for the owner's welcome before it is ended and opened again (s).
WELCOME_TIMEOUT_S = 10.0


def _is_fatal(error: BaseException, welcomed: bool) -> bool:
    """True for a stream error the executor must not retry: one of FATAL_CODES,
    or INVALID_ARGUMENT or RESOURCE_EXHAUSTED before the session's welcome (the
    owner rejected the hello: a manifest that does not register, an unknown
    processor, action or pulse, or a hello larger than the owner reads), which
    the same hello would meet again."""
    if not isinstance(error, ChronologError):
        return False
    return error.code() in FATAL_CODES or (not welcomed and error.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED))


def _print_error(error: BaseException, fatal: bool = False) -> None:
    """The default error report: one line on stderr (reconnects repeat it); ``fatal`` says the executor stopped."""
    suffix = " (the executor stopped: not retrying)" if fatal else ""
    print(f"chronolog executor: {describe(error)}{suffix}", file=sys.stderr, flush=True)


_CLOSE_WAIT_S = 2.0
"""How long stop() lets the owner end a half-closed stream before cancelling it, s."""


class Executor:
    """Hosts the plugins' processors and actions over the Subscribe stream.

    Create it, then :meth:`start` it (or use :func:`run_executor`);
    :meth:`wait_ready` waits for the owner's first welcome, :meth:`stop` lets
    running work finish, then closes the stream. ``last_error`` is the most
    recent connection error, owner notice or warning about the owner's version
    (also passed to ``on_error``, which by default prints one line on stderr).

    Connection errors are retried with backoff, except a refusal of the stream
    with UNAUTHENTICATED or PERMISSION_DENIED (a bad token, a principal whose
    role may not subscribe), or with INVALID_ARGUMENT or RESOURCE_EXHAUSTED
    before the welcome (a hello the owner rejects): then the executor reports
    it once, stops, and keeps it in ``fatal_error`` (a :class:`ChronologError`
    with the owner's message), which :meth:`wait_ready` and :meth:`run_forever`
    raise.
    """

    def __init__(
        self,
        plugins: Sequence[Plugin],
        url: str = DEFAULT_URL,
        token: Optional[str] = None,
        *,
        executor: Optional[str] = None,
        credits: int = 16,
        on_error: Optional[Callable[[BaseException], None]] = None,
        max_backoff_s: float = 5.0,
        root_certificates: Optional[bytes] = None,
        holds: bool = True,
        data_json: bool = True,
        failover_timeout_s: float = DEFAULT_FAILOVER_TIMEOUT_S,
        on_log: Optional[Callable[[str], None]] = None,
    ):
        """Prepares an executor for ``plugins`` against the owner at ``url`` with bearer ``token``;
        or against the leader among several owners (``url`` a comma-separated list or a list; its
        calls under deliveries follow the leader for up to ``failover_timeout_s``, see :func:`connect`).

        ``executor`` is the name replicas share (default: the first plugin's
        name); ``credits`` the deliveries and invocations accepted at once (a
        whole number; 0: the owner's default, 16; else ValueError).
        ``holds`` (default True): take calls of time up to the owner's lookahead
        before their moment, with ``hold_ms``, and start them at it on a worker
        thread that waits meanwhile; False: the owner sends them at the moment.
        ``data_json`` (default True): deliveries carry the event's data as JSON
        text (``ctx.event.data_json``, parsed into ``ctx.data``), not a Struct.
        ``on_log`` is told what the executor does (default: a line on stderr,
        ``chronolog executor: ...``): ``connected to URL (session S)``,
        ``reconnected to URL after N s (session S)``, and each handler that failed
        (``plugin.processor failed on event ID (attempt N): ...``, ``plugin.action
        failed (call C, attempt N): ...``); ``lambda line: None`` keeps it quiet.
        """
        self.plugins = list(plugins)
        self.name = executor or (self.plugins[0].name if self.plugins else "executor")
        if isinstance(credits, bool) or not isinstance(credits, int) or not 0 <= credits <= _MAX_CREDITS:
            raise ValueError(f"credits must be a whole number from 0 to {_MAX_CREDITS} (0: the owner's default, 16), got {credits!r}")
        self.credits = credits or _DEFAULT_CREDITS
        self.holds = holds
        self.data_json = data_json
        self.instance_id = str(uuid.uuid4())
        self.client = Client(url, token, root_certificates=root_certificates, failover_timeout_s=failover_timeout_s)
        self.last_error: Optional[BaseException] = None
        self.fatal_error: Optional[ChronologError] = None
        self._on_error = on_error or (lambda error: _print_error(error, fatal=error is self.fatal_error))
        self._log = on_log or (lambda line: print(f"chronolog executor: {line}", file=sys.stderr, flush=True))
        self._lost_at: Optional[float] = None  # when the last welcomed stream ended (time.monotonic()), for the reconnect line
        self._max_backoff_s = max_backoff_s
        self._processors = {f"{p.name}.{n}": d for p in self.plugins for n, d in p.processors.items()}
        self._actions = {f"{p.name}.{n}": d for p in self.plugins for n, d in p.actions.items()}
        self._manifests = [p.manifest() for p in self.plugins]
        self._pool = WorkerPool(self.credits, "chronolog-work")
        self._closed_lock = threading.Lock()
        self._ready = threading.Event()
        self._settled = threading.Event()  # welcomed, or stopped for good
        self._stopping = threading.Event()
        self._session: Optional[Session] = None
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        self._owner_version_seen: Optional[str] = None

    # lifecycle

    def start(self) -> "Executor":
        """Starts the connection loop on a background thread; returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="chronolog-executor", daemon=True)
            self._thread.start()
        return self

    def wait_ready(self, timeout: Optional[float] = None) -> bool:
        """Waits for the owner's first welcome; False if ``timeout`` (s) passed first (see ``last_error``).

        Raises the owner's :class:`ChronologError` (``fatal_error``) at once
        when the owner refused the stream for good (UNAUTHENTICATED,
        PERMISSION_DENIED, or INVALID_ARGUMENT at hello): the executor has
        stopped and will never be ready.
        """
        self._settled.wait(timeout)
        if self.fatal_error is not None:
            raise self.fatal_error
        return self._ready.is_set()

    @property
    def connected(self) -> bool:
        """True while a welcomed stream is open."""
        session = self._session
        return session is not None and not session.ended.is_set() and self._ready.is_set()

    def stop(self, grace_s: float = 5.0) -> None:
        """Tells the owner this executor stops (it sends no more work, and answers once nothing more
        is on its way), lets held and running deliveries and invocations finish (up to ``grace_s``,
        work that comes meanwhile included), then half-closes the stream after the results and acks
        so far: the owner reads them and ends it (given up to 2 s), so finished work is never run
        again and the stop is no disconnect; what still runs then, the owner runs again elsewhere.
        Safe to call again."""
        first = not self._stopping.is_set()
        self._stopping.set()
        deadline = time.monotonic() + grace_s
        session = self._session
        if first and session is not None and not session.ended.is_set():
            session.send(executor_pb2.SubscribeRequest(stopping=executor_pb2.Stopping(grace_ms=int(grace_s * 1000))))
            while not session.stopping_answered.is_set() and not session.ended.is_set() and time.monotonic() < deadline:
                session.stopping_answered.wait(0.05)
        self._pool.wait_idle(max(0.0, deadline - time.monotonic()))
        session = self._session
        if session is not None:
            session.close_sends()
            session.ended.wait(_CLOSE_WAIT_S)
            session.end()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._pool.shutdown()
        with self._closed_lock:
            closed, self._closed = self._closed, True
        if not closed:
            self.client.close()

    def run_forever(self) -> None:
        """Starts (if needed) and blocks until :meth:`stop` is called, Ctrl-C or SIGTERM (then stops
        gracefully, see :meth:`stop`).

        Raises ``fatal_error`` when the owner refused the stream for good
        (UNAUTHENTICATED, PERMISSION_DENIED, or INVALID_ARGUMENT at hello).
        """
        self.start()
        terminated = threading.Event()
        # SIGTERM stops it gracefully, unless the program handles SIGTERM itself.
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, lambda *_: terminated.set())
        try:
            while not self._stopping.is_set():
                if terminated.wait(0.2):
                    self.stop()
        except KeyboardInterrupt:
            self.stop()
        if self.fatal_error is not None:
            raise self.fatal_error

    # the connection loop

    def _report(self, error: BaseException) -> None:
        """Records and reports a connection error or notice."""
        self.last_error = error
        try:
            self._on_error(error)
        except Exception:  # a failing reporter must not kill the loop
            pass

    def _loop(self) -> None:
        """Opens sessions until stopped, with backoff between them; stops for good when the owner refuses the stream (_is_fatal)."""
        backoff = 0.25
        moves = 0
        owners = owners_of(self.client.channel)
        try:
            while not self._stopping.is_set():
                welcomed = threading.Event()
                pause: Optional[float] = None
                try:
                    self._run_session(welcomed)
                except grpc.RpcError as e:
                    error = ChronologError.from_rpc_error(e)
                    if not self._stopping.is_set():
                        if _is_fatal(error, welcomed.is_set()):
                            # A bad token, a role that may not subscribe or a rejected hello: retrying cannot help.
                            self.fatal_error = error
                            self._report(error)
                            self.stop(grace_s=0)
                            return
                        failure = owner_failure_of(e)
                        if welcomed.is_set():
                            moves = 0
                        if owners is not None and failure is not None and owners.retries(failure):
                            # To the leader a standby named, or the next owner: at once, then with the owners' pauses.
                            moves += 1
                            pause = owners.pause_s(moves)
                        if failure is None or failure.kind != "standby" or failure.leader is None:
                            self._report(error)
                except Exception as e:  # keep reconnecting whatever broke
                    if not self._stopping.is_set():
                        self._report(e)
                if welcomed.is_set():
                    backoff = 0.25
                if self._stopping.wait(backoff if pause is None else pause):
                    return
                if pause is None:
                    backoff = min(backoff * 2, self._max_backoff_s)
        finally:
            self._settled.set()

    def _run_session(self, welcomed: threading.Event) -> None:
        """One stream, from hello to its end."""
        session = Session()
        session.log = self._log
        self._session = session
        session.send(
            executor_pb2.SubscribeRequest(
                hello=executor_pb2.Hello(
                    executor=self.name,
                    instance_id=self.instance_id,
                    plugins=self._manifests,
                    processors=list(self._processors),
                    actions=list(self._actions),
                    credits=self.credits,
                    batches=True,
                    holds=self.holds,
                    data_json=self.data_json,
                    sdk=SDK_NAME,
                    sdk_version=__version__,
                )
            )
        )
        stub = executor_pb2_grpc.ExecutorServiceStub(self.client.channel)
        owners = owners_of(self.client.channel)
        opened_at = owners.pick()[0] if owners else None
        session.call = stub.Subscribe(session.requests())
        threading.Thread(target=self._await_welcome, args=(session, welcomed, opened_at), name="chronolog-welcome", daemon=True).start()
        try:
            for response in session.call:
                session.last_heard = time.monotonic()
                kind = response.WhichOneof("message")
                if kind == "welcome":
                    owners = owners_of(self.client.channel)
                    url = owners.pick()[0] if owners else ""
                    session_id = response.welcome.session_id
                    if self._lost_at is None:
                        self._log(f"connected to {url} (session {session_id})")
                    else:
                        self._log(f"reconnected to {url} after {time.monotonic() - self._lost_at:.1f} s (session {session_id})")
                    self._lost_at = None
                    welcomed.set()
                    session.max_message_bytes = response.welcome.max_message_bytes or DEFAULT_MAX_MESSAGE_BYTES
                    session.action_result_batches = response.welcome.action_result_batches
                    self._check_owner_version(response.welcome.owner_version)
                    self._ready.set()
                    self._settled.set()
                    interval = max(response.welcome.heartbeat_interval_ms, 10) / 1000
                    threading.Thread(target=self._heartbeat, args=(session, interval), name="chronolog-heartbeat", daemon=True).start()
                elif kind == "delivery":
                    self._submit(functools.partial(run_delivery, self._processors, self.client), response.delivery, session)
                elif kind == "deliveries":  # DeliveryBatch: hello.batches is set
                    for delivery in response.deliveries.deliveries:
                        self._submit(functools.partial(run_delivery, self._processors, self.client), delivery, session)
                elif kind in ("invocation", "invocations"):  # invocations: only sent when hello.invocation_batches is set; handled anyway
                    for invocation in [response.invocation] if kind == "invocation" else response.invocations.invocations:
                        written_at = session.clock.written_at(invocation.written_at_ms, time.monotonic() * 1000) / 1000
                        self._submit(functools.partial(run_invocation, self._actions, self.client, hold_from=written_at), invocation, session)
                elif kind == "cancel_invocation":
                    cancel_work(session, response.cancel_invocation.invocation_id, response.cancel_invocation.reason)
                elif kind == "cancel_delivery":
                    cancel_work(session, response.cancel_delivery.delivery_id, response.cancel_delivery.reason)
                elif kind == "stopping":
                    session.stopping_answered.set()
                elif kind == "notice":
                    notice = response.notice
                    if notice.reason == "UNSUPPORTED" and notice.message.startswith("message stopping "):
                        session.stopping_answered.set()  # an owner older than `stopping` sends until the stream closes
                    else:
                        self._report(RuntimeError(f"owner notice {notice.reason}: {notice.message}"))
        except grpc.RpcError as e:
            if session.ended.is_set() and e.code() == grpc.StatusCode.CANCELLED:
                return  # ended here: by stop() or a silent owner (already reported)
            raise
        finally:
            if welcomed.is_set():
                self._lost_at = time.monotonic()
            session.end()
            with session.lock:
                for cancelled, ctx in session.cancels.values():
                    ctx.cancel_reason = ctx.cancel_reason or "stream to the owner lost"
                    cancelled.set()

    def _check_owner_version(self, owner_version: str) -> None:
        """Reports (as a notice is) an owner whose version differs from this SDK's in its major or
        minor number, or that does not say it: once per owner version, not at every reconnect."""
        if owner_version == self._owner_version_seen:
            return
        self._owner_version_seen = owner_version
        if versions_differ(owner_version):
            owner = f"the owner is {owner_version}" if owner_version else "the owner does not say its version (an older owner)"
            self._report(RuntimeError(f"{owner}, this SDK ({SDK_NAME}) is {__version__}: their major or minor versions differ, so one may send what the other does not understand; upgrade them together"))

    def _await_welcome(self, session: Session, welcomed: threading.Event, url: Optional[str]) -> None:
        """Ends the stream when the owner at ``url`` did not welcome it within WELCOME_TIMEOUT_S (a
        connection that never answers): it is opened again, at the next owner when there are several."""
        if welcomed.wait(WELCOME_TIMEOUT_S) or session.ended.is_set() or self._stopping.is_set():
            return
        self._report(ConnectionError(f"no welcome from {url or 'the owner'} within {WELCOME_TIMEOUT_S:.0f} s: reconnecting"))
        owners = owners_of(self.client.channel)
        if owners is not None and url is not None:
            owners.route(url, OwnerFailure("unreached"))
        session.end()

    def _heartbeat(self, session: Session, interval: float) -> None:
        """Sends heartbeats every ``interval`` s; ends the stream when the owner was silent for 3 intervals."""
        while not session.ended.wait(interval):
            if time.monotonic() - session.last_heard > 3 * interval:
                if not self._stopping.is_set():
                    self._report(ConnectionError(f"owner silent for {3 * interval:.1f} s (3 heartbeat intervals): reconnecting"))
                session.end()
                return
            now = timestamp_pb2.Timestamp()
            now.GetCurrentTime()
            session.send(executor_pb2.SubscribeRequest(heartbeat=executor_pb2.Heartbeat(at=now)))

    def _submit(self, fn: Callable[..., None], work: Any, session: Session) -> None:
        """Runs one delivery or invocation on a worker thread (stop() waits for them)."""
        self._pool.submit(fn, work, session)


def run_executor(plugins: Sequence[Plugin], url: str = DEFAULT_URL, token: Optional[str] = None, **options: Any) -> Executor:
    """Creates an :class:`Executor` (same arguments) and starts it."""
    return Executor(plugins, url, token, **options).start()
