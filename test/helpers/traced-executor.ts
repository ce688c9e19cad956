// A TypeScript executor process that records OpenTelemetry spans, as an application would: it
// registers a tracer provider exporting over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (service
// `trips-executor`; none with TRACES_UNRECORDED=1, as in an application without OpenTelemetry),
// then hosts the trips plugin: processor `trips.confirm` on `trip.booked` calls
// action `rooms.reserve` (hosted by the Python executor, sdk/python/tests/traced_executor.py).
// Prints a JSON line per run.
// Usage: node --import tsx test/helpers/traced-executor.ts URL
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { definePlugin } from "../../sdk/ts/src/plugin.js";

const [url] = process.argv.slice(2);
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "trips-executor" }),
  spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter())],
});
if (!process.env.TRACES_UNRECORDED) provider.register();

const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);

const trips = definePlugin({
  name: "trips",
  events: { "trip.booked": { allow: ["*"] } },
  processors: {
    confirm: {
      on: "trip.booked",
      async run(ctx) {
        const { output } = await ctx.call("rooms.reserve", { trip: ctx.data.trip as string });
        print({ ran: "confirm", traceId: ctx.span.spanContext().traceId, output });
      },
    },
  },
});

const executor = runExecutor({ url, plugins: [trips], credits: 4, maxBackoffMs: 200, onError: () => {} });
await executor.ready;
process.stderr.write("executor ready\n");
for (const signal of ["SIGTERM", "SIGINT"] as const)
  process.once(signal, () => {
    void provider.shutdown().finally(() => process.exit(0));
  });
