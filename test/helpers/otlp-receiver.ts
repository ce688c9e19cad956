// A loopback OTLP/HTTP trace receiver for tests: it takes what OTLP exporters POST to /v1/traces,
// in either encoding the protocol has (protobuf, as the Python exporter sends it; JSON, as the
// JavaScript exporter-trace-otlp-http sends it), decodes it as an ExportTraceServiceRequest with
// the official opentelemetry-proto definitions (test/otlp) and keeps every span, with its
// service's name.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fromBinary, fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ExportTraceServiceRequestSchema, type ExportTraceServiceRequest } from "../otlp/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { AnyValue, KeyValue } from "../otlp/gen/opentelemetry/proto/common/v1/common_pb.js";

/** One span as received. */
export interface ReceivedSpan {
  /** The `service.name` of its resource. */
  service: string;
  /** Ids in lowercase hex. */
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** SpanKind as OTLP numbers it: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  links: { traceId: string; spanId: string }[];
  attributes: Record<string, string | number | boolean>;
  /** Status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

function anyValue(v: AnyValue | undefined): string | number | boolean {
  switch (v?.value.case) {
    case "stringValue":
    case "boolValue":
    case "doubleValue":
      return v.value.value;
    case "intValue":
      return Number(v.value.value);
    default:
      return "";
  }
}

function attributesOf(kvs: KeyValue[]): Record<string, string | number | boolean> {
  return Object.fromEntries(kvs.map((kv) => [kv.key, anyValue(kv.value)]));
}

/** The spans of one ExportTraceServiceRequest. */
export function spansOfRequest(request: ExportTraceServiceRequest): ReceivedSpan[] {
  return request.resourceSpans.flatMap((rs) => {
    const service = String(attributesOf(rs.resource?.attributes ?? [])["service.name"] ?? "");
    return rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s) => ({
        service,
        traceId: hex(s.traceId),
        spanId: hex(s.spanId),
        parentSpanId: hex(s.parentSpanId),
        name: s.name,
        kind: s.kind,
        links: s.links.map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
        attributes: attributesOf(s.attributes),
        statusCode: s.status?.code ?? 0,
      })),
    );
  });
}

/**
 * The request of an OTLP/JSON body. OTLP/JSON differs from protobuf's JSON mapping in one point
 * that matters here: trace and span ids are hex, not base64; they are turned to base64 first.
 */
function fromOtlpJson(text: string): ExportTraceServiceRequest {
  const body = JSON.parse(text) as JsonObject;
  const base64 = (id: JsonValue | undefined) => (typeof id === "string" ? Buffer.from(id, "hex").toString("base64") : id);
  for (const rs of (body.resourceSpans as JsonObject[] | undefined) ?? [])
    for (const ss of (rs.scopeSpans as JsonObject[] | undefined) ?? [])
      for (const span of (ss.spans as JsonObject[] | undefined) ?? []) {
        for (const key of ["traceId", "spanId", "parentSpanId"]) if (span[key] !== undefined) span[key] = base64(span[key]) as JsonValue;
        for (const link of (span.links as JsonObject[] | undefined) ?? []) for (const key of ["traceId", "spanId"]) link[key] = base64(link[key]) as JsonValue;
      }
  return fromJson(ExportTraceServiceRequestSchema, body, { ignoreUnknownFields: true });
}

/** A started receiver: its base URL (for OTEL_EXPORTER_OTLP_ENDPOINT), the spans so far, and `close`. */
export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

/** Starts a receiver on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") return void res.writeHead(404).end();
      const type = String(req.headers["content-type"] ?? "");
      const body = Buffer.concat(chunks);
      try {
        if (type.startsWith("application/x-protobuf")) spans.push(...spansOfRequest(fromBinary(ExportTraceServiceRequestSchema, body)));
        else if (type.startsWith("application/json")) spans.push(...spansOfRequest(fromOtlpJson(body.toString("utf8"))));
        else return void res.writeHead(415).end();
      } catch {
        return void res.writeHead(400).end();
      }
      res
        .writeHead(200, { "content-type": type.startsWith("application/json") ? "application/json" : "application/x-protobuf" })
        .end(type.startsWith("application/json") ? "{}" : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
