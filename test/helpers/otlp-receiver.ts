// A loopback OTLP/HTTP trace receiver for tests: it takes what OTLP exporters POST to
// /v1/traces as JSON (ExportTraceServiceRequest in the OTLP/JSON encoding of the
// opentelemetry-proto definitions: ids in hex, enums as numbers) and keeps every span it got,
// with its service's name. Protobuf bodies are refused (415), so an exporter in another mode
// is noticed.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One span as received. */
export interface ReceivedSpan {
  /** The `service.name` of its resource. */
  service: string;
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

interface JsonAnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface JsonKeyValue {
  key: string;
  value: JsonAnyValue;
}
interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  links?: { traceId: string; spanId: string }[];
  attributes?: JsonKeyValue[];
  status?: { code?: number };
}
interface JsonRequest {
  resourceSpans?: { resource?: { attributes?: JsonKeyValue[] }; scopeSpans?: { spans?: JsonSpan[] }[] }[];
}

function anyValue(v: JsonAnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return "";
}

function attributesOf(kvs: JsonKeyValue[] | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((kvs ?? []).map((kv) => [kv.key, anyValue(kv.value)]));
}

/** The spans of one ExportTraceServiceRequest in OTLP/JSON. */
export function spansOfRequest(body: JsonRequest): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const service = String(attributesOf(rs.resource?.attributes)["service.name"] ?? "");
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        service,
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? "",
        name: s.name,
        kind: s.kind,
        links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
        attributes: attributesOf(s.attributes),
        statusCode: s.status?.code ?? 0,
      })),
    );
  });
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
      if (!String(req.headers["content-type"] ?? "").startsWith("application/json")) return void res.writeHead(415).end();
      try {
        spans.push(...spansOfRequest(JSON.parse(Buffer.concat(chunks).toString("utf8")) as JsonRequest));
      } catch {
        return void res.writeHead(400).end();
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
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
