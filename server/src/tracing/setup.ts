import { diag, DiagLogLevel } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace-node";
import type { Logger } from "../logger.js";
import { ownerVersion } from "../version.js";
import { tracing } from "./tracer.js";

/** The owner config's `tracing` section; the standard OTEL_* environment variables win over it. */
export interface TracingConfig {
  /** OTLP/HTTP base URL, e.g. `http://localhost:4318` (traces go to `/v1/traces`); OTEL_EXPORTER_OTLP_ENDPOINT overrides. */
  endpoint?: string;
  /** `service.name` (default `chronolog`); OTEL_SERVICE_NAME overrides. */
  service_name?: string;
  /** Share of new traces recorded, 0..1 (default 1), parent-based; OTEL_TRACES_SAMPLER overrides. */
  sample_ratio?: number;
}

/** Started tracing: {@link stop} sends what is buffered and ends it. */
export interface Tracing {
  stop(): Promise<void>;
}

/** Longest the owner's stop waits for the last spans to be sent, ms. */
const stopWaitMs = 2_000;

/**
 * Starts recording traces when an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT,
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or `config.endpoint`) and neither OTEL_SDK_DISABLED=true
 * nor OTEL_TRACES_EXPORTER=none says not to; undefined (tracing stays off) otherwise. Spans go
 * in batches over OTLP/HTTP (JSON) to the endpoint; the exporter and sampler read the standard
 * OTEL_* variables. Registers the provider, the W3C propagator and the async context manager
 * globally: one owner per process records traces.
 */
export function startTracing(config: TracingConfig | undefined, logger: Logger, env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return undefined;
  const fromEnv = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (!fromEnv && !config?.endpoint) return undefined;
  // An unreachable endpoint fails every export: said once a minute at most, not per batch.
  let warnedAt = -Infinity;
  const warn = (message: string) => {
    if (performance.now() - warnedAt < 60_000) return;
    warnedAt = performance.now();
    logger.warn({ detail: message.slice(0, 1000) }, "tracing: spans could not be sent or recorded (said at most once a minute)");
  };
  diag.setLogger({ error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
  const exporter = new OTLPTraceExporter(fromEnv ? {} : { url: `${config!.endpoint!.replace(/\/$/, "")}/v1/traces` });
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": config?.service_name ?? "chronolog", "service.version": ownerVersion }))
    .merge(detectResources({ detectors: [envDetector] })); // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
  const ratio = config?.sample_ratio;
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(exporter)],
    ...(ratio !== undefined && !env.OTEL_TRACES_SAMPLER ? { sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }) } : {}),
  });
  provider.register();
  tracing.on = true;
  logger.info(
    { endpoint: fromEnv ? (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT) : config?.endpoint },
    "recording traces (OTLP/HTTP)",
  );
  return {
    async stop() {
      tracing.on = false;
      // An unreachable collector would hold the stop for the exporter's whole timeout (10 s): the last spans get a moment, not more.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer from the collector within ${stopWaitMs} ms`)), stopWaitMs);
      });
      await Promise.race([provider.shutdown(), late])
        .catch((e: unknown) => logger.warn({ err: e }, "tracing: the last spans could not be sent"))
        .finally(() => clearTimeout(timer));
    },
  };
}
