"""A plugin defined in Python: its manifest (event types, collections, ...) and the processors
and actions an executor runs, added by decorator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from google.protobuf import json_format

from chronolog.contexts import ActionContext, DeliveryContext
from chronolog.gen.chronolog.v1 import plugin_pb2

__all__ = ["Plugin", "ProcessorDefinition", "ActionDefinition"]


@dataclass
class ProcessorDefinition:
    """A processor in code; times in ms. ``run(ctx)`` handles one delivery: raise to fail it."""

    run: Callable[[DeliveryContext], None]
    on: Sequence[str] = ()
    where: Optional[Mapping[str, Any]] = None
    key: str = ""
    concurrency: Union[int, Mapping[str, Any]] = 0
    rate: Optional[Mapping[str, Any]] = None
    debounce: Optional[Mapping[str, Any]] = None
    priority: str = ""
    ack_timeout_ms: int = 0
    retry_delays_ms: Sequence[int] = ()
    start: Union[str, int] = "end"
    timeout_grace_ms: Optional[int] = None
    read: Sequence[str] = ()

    def declaration(self) -> dict:
        """The processor's manifest entry (JSON form)."""
        if self.start == "end":
            start: dict = {"end": True}
        elif self.start == "beginning":
            start = {"beginning": True}
        elif isinstance(self.start, int):
            start = {"after_seq": self.start}
        else:
            raise ValueError(f"processor start {self.start!r}: expected 'end', 'beginning' or a seq")
        d: dict = {"on": list(self.on), "key": self.key, "start": start}
        if self.where is not None:
            d["where"] = dict(self.where)
        if isinstance(self.concurrency, Mapping):
            d["concurrency_limit"] = dict(self.concurrency)
        elif self.concurrency:
            d["concurrency"] = self.concurrency
        if self.rate is not None:
            d["rate"] = dict(self.rate)
        if self.debounce is not None:
            d["debounce"] = dict(self.debounce)
        if self.priority:
            d["priority"] = self.priority
        if self.ack_timeout_ms:
            d["ack_timeout_ms"] = self.ack_timeout_ms
        if self.retry_delays_ms:
            d["retry_delays_ms"] = list(self.retry_delays_ms)
        if self.timeout_grace_ms is not None:
            d["timeout_grace_ms"] = self.timeout_grace_ms
        if self.read:
            d["read"] = list(self.read)
        return d


@dataclass
class ActionDefinition:
    """An action in code; times in ms. ``run(ctx, input)`` returns the output (a dict; None means ``{}``)."""

    run: Callable[[ActionContext, dict], Optional[Mapping[str, Any]]]
    input_schema: Optional[Mapping[str, Any]] = None
    private_fields: Sequence[str] = ()
    record: Optional[bool] = None
    allow: Sequence[str] = ()
    timeout_ms: int = 0
    timeout_grace_ms: Optional[int] = None
    concurrency: Optional[Mapping[str, Any]] = None
    rate: Optional[Mapping[str, Any]] = None
    priority: str = ""
    read: Sequence[str] = ()

    def declaration(self) -> dict:
        """The action's manifest entry (JSON form)."""
        d: dict = {"private_fields": list(self.private_fields), "allow": list(self.allow)}
        if self.concurrency is not None:
            d["concurrency_limit"] = dict(self.concurrency)
        if self.rate is not None:
            d["rate"] = dict(self.rate)
        if self.priority:
            d["priority"] = self.priority
        if self.input_schema is not None:
            d["input_schema"] = dict(self.input_schema)
        if self.record is not None:
            d["record"] = self.record
        if self.timeout_ms:
            d["timeout_ms"] = self.timeout_ms
        if self.timeout_grace_ms is not None:
            d["timeout_grace_ms"] = self.timeout_grace_ms
        if self.read:
            d["read"] = list(self.read)
        return d


class Plugin:
    """A plugin defined in Python: its manifest (event types, collections, ...)
    plus the processors and actions this executor runs.

    ``events`` and ``collections`` take the manifest's JSON form (as in YAML
    manifests: ``{"cart.submitted": {"schema": {...}, "allow": ["*"]}}``);
    ``retention`` the manifest's retention rules, in order, the same way: dicts
    with ``types`` and a limit (``max_age_ms``, ``max_count``, ``max_bytes``,
    each 1 or more) or ``keep`` (``"latest_per_key"``, or the manifest's
    ``"RETENTION_KEEP_LATEST_PER_KEY"``) with ``key`` (e.g. ``"data._id"``);
    ``manifest`` holds any other manifest parts (schedules, pulses, ...).
    Processors and actions are added with the :meth:`processor` and
    :meth:`action` decorators.
    """

    def __init__(
        self,
        name: str,
        version: str = "",
        *,
        events: Optional[Mapping[str, Any]] = None,
        collections: Optional[Mapping[str, Any]] = None,
        retention: Optional[Sequence[Mapping[str, Any]]] = None,
        manifest: Optional[Mapping[str, Any]] = None,
    ):
        """Declares plugin ``name``; see the class docstring for the arguments."""
        self.name = name
        self.version = version
        self.events = dict(events or {})
        self.collections = dict(collections or {})
        self.retention = [_retention_rule(r) for r in retention or ()]
        self.extra = dict(manifest or {})
        self.processors: dict[str, ProcessorDefinition] = {}
        self.actions: dict[str, ActionDefinition] = {}

    def processor(
        self,
        name: str,
        *,
        on: Union[str, Sequence[str]] = (),
        where: Optional[Mapping[str, Any]] = None,
        key: str = "",
        concurrency: Union[int, Mapping[str, Any]] = 0,
        rate: Optional[Mapping[str, Any]] = None,
        debounce: Optional[Mapping[str, Any]] = None,
        priority: str = "",
        ack_timeout_ms: int = 0,
        retry_delays_ms: Sequence[int] = (),
        start: Union[str, int] = "end",
        timeout_grace_ms: Optional[int] = None,
        read: Sequence[str] = (),
    ) -> Callable[[Callable[[DeliveryContext], None]], Callable[[DeliveryContext], None]]:
        """Decorator: ``fn(ctx)`` becomes processor ``<plugin>.<name>``.

        ``on`` is an event type or a list (empty: every type), ``where`` a
        MongoDB filter on the data, ``key`` a lane key path such as
        ``data.cart_id``, ``retry_delays_ms`` the waits between tries (default
        [1000, 5000]), ``start`` ``"end"`` (default), ``"beginning"`` or a seq.
        ``timeout_grace_ms``: how long past its ack timeout (and cancel) a try
        may still ack before the next try; its key waits meanwhile (default:
        the ack timeout). ``concurrency``: lanes in flight at once (a number,
        default 1), or limits as a dict: ``limit`` deliveries in flight per
        value of ``key`` (a path such as ``data.customer_id``), ``total`` in
        all, ``if_active`` ``"queue"`` (default), ``"skip"`` or ``"coalesce"``,
        ``weights`` a dict of key value to weight (1 to 1000, default 1): with a
        backlog, a key of weight 3 starts 3 deliveries per turn where others start one.
        ``rate``: deliveries started per period per key, a dict ``limit``,
        ``period_ms`` (default 1000), ``key``, ``burst`` (default ``limit``).
        ``debounce``: a dict ``key``, ``period_ms``, ``max_wait_ms``: a burst of
        a key's events makes one delivery (the last, ``ctx.debounced`` the
        count it stands for) after ``period_ms`` of quiet or ``max_wait_ms``.
        ``priority``: a path into the event giving a number (e.g.
        ``data.priority``): keys whose next event has a higher one start first. ``read``: who may read its
        ``processor.*`` events besides admins and the executors that may host the
        plugin (default: no one else).
        """

        def register(fn: Callable[[DeliveryContext], None]) -> Callable[[DeliveryContext], None]:
            types = [on] if isinstance(on, str) else list(on)
            self.processors[name] = ProcessorDefinition(fn, types, where, key, concurrency, rate, debounce, priority, ack_timeout_ms, retry_delays_ms, start, timeout_grace_ms, read)
            return fn

        return register

    def action(
        self,
        name: str,
        *,
        input_schema: Optional[Mapping[str, Any]] = None,
        private_fields: Sequence[str] = (),
        record: Optional[bool] = None,
        allow: Sequence[str] = (),
        timeout_ms: int = 0,
        timeout_grace_ms: Optional[int] = None,
        concurrency: Optional[Mapping[str, Any]] = None,
        rate: Optional[Mapping[str, Any]] = None,
        priority: str = "",
        read: Sequence[str] = (),
    ) -> Callable[[Callable[[ActionContext, dict], Any]], Callable[[ActionContext, dict], Any]]:
        """Decorator: ``fn(ctx, input)`` becomes action ``<plugin>.<name>``.

        ``allow`` says who may call it from outside (default: only code under a
        cause); ``record=False`` leaves no events; ``timeout_ms`` bounds one run
        (default 30,000); ``timeout_grace_ms`` is how long past it (and its
        cancel) the run may still answer before the call fails (default:
        ``timeout_ms``). ``concurrency``: ``limit`` calls in flight per value
        of ``key`` (a path such as ``input.customer_id``; without it, ``limit``
        counts every call) and ``total`` in all, across executors; a call past
        a limit waits for a slot. ``rate``: calls started per period per key,
        a dict ``limit``, ``period_ms`` (default 1000), ``key``, ``burst``
        (default ``limit``); a call past it waits. ``priority``: a path such as
        ``input.priority`` giving a number: calls waiting for a concurrency
        slot start highest first. ``read``: who may read its ``action.*``
        events (inputs, outputs, errors) and its timers' ``timer.*`` events
        besides admins and the executors that may host the plugin (default: no
        one else).
        """

        def register(fn: Callable[[ActionContext, dict], Any]) -> Callable[[ActionContext, dict], Any]:
            self.actions[name] = ActionDefinition(fn, input_schema, private_fields, record, allow, timeout_ms, timeout_grace_ms, concurrency, rate, priority, read)
            return fn

        return register

    def manifest(self) -> plugin_pb2.PluginManifest:
        """The manifest registered on hello: everything but the code."""
        body = dict(self.extra)
        body.update(
            name=self.name,
            version=self.version,
            events=self.events,
            collections={**body.get("collections", {}), **self.collections},
            processors={name: p.declaration() for name, p in self.processors.items()},
            actions={**body.get("actions", {}), **{name: a.declaration() for name, a in self.actions.items()}},
            retention=[*body.get("retention", []), *self.retention],
        )
        return json_format.ParseDict(body, plugin_pb2.PluginManifest())


def _retention_rule(rule: Mapping[str, Any]) -> dict:
    """A retention rule in the manifest's JSON form; ``keep="latest_per_key"`` (the config's word) is its enum's name."""
    r = dict(rule)
    if r.get("keep") == "latest_per_key":
        r["keep"] = "RETENTION_KEEP_LATEST_PER_KEY"
    return r
