"""rooms: a Python executor that records OpenTelemetry spans, as an application would.

Run by test/traces.test.ts: it installs a tracer provider exporting over OTLP/HTTP to
OTEL_EXPORTER_OTLP_ENDPOINT (service ``rooms-executor``), then hosts the actions
``rooms.reserve`` (emits ``room.held`` on the client's Publish stream and arms a delay of
``rooms.remind`` DELAY_MS later) and ``rooms.remind``.
Prints a JSON line per run on stdout, and "executor ready" on stderr once welcomed.

    PYTHONPATH=sdk/python .venv/bin/python sdk/python/tests/traced_executor.py --url URL --delay-ms MS
"""

import argparse
import json
import signal
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from chronolog import ActionContext, Plugin, run_executor

provider = TracerProvider(resource=Resource.create({"service.name": "rooms-executor"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)

rooms = Plugin("rooms", version="1", events={"room.held": {}})
delay_ms = 0


def ran(what: str, ctx: ActionContext, **more) -> None:
    """One JSON line: which action ran and the trace its span is in."""
    print(json.dumps({"ran": what, "traceId": format(ctx.span.get_span_context().trace_id, "032x"), **more}), flush=True)


@rooms.action("reserve")
def reserve(ctx: ActionContext, input: dict) -> dict:
    """Holds the room (an event under this run) and arms the reminder (a delay under it)."""
    ctx.emit("room.held", input)
    armed = ctx.delay("rooms.remind", input, {"interval_ms": delay_ms}, "unbounded")
    ran("reserve", ctx, delayId=armed.delay_id)
    return {"delay_id": armed.delay_id}


@rooms.action("remind")
def remind(ctx: ActionContext, input: dict) -> dict:
    ran("remind", ctx)
    return {}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--delay-ms", type=int, required=True)
    args = parser.parse_args()
    delay_ms = args.delay_ms
    executor = run_executor([rooms], url=args.url, max_backoff_s=0.2)
    signal.signal(signal.SIGTERM, lambda *_: executor.stop())
    if not executor.wait_ready(30):
        sys.exit("not welcomed within 30 s")
    print("executor ready", file=sys.stderr, flush=True)
    try:
        executor.run_forever()
    finally:
        provider.shutdown()
