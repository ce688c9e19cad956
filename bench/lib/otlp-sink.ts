// A local OTLP/HTTP trace receiver for measuring what recording traces costs the owner: it
// accepts what exporters POST to /v1/traces (JSON or protobuf), counts requests, bytes and (for
// JSON) spans, and prints the totals when stopped. Nothing is kept.
// Usage: node --import tsx bench/lib/otlp-sink.ts [PORT]   (default 4318; then
//   OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 for the owner)
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 4318);
const totals = { requests: 0, bytes: 0, spans: 0 };
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    totals.requests++;
    totals.bytes += body.length;
    if (String(req.headers["content-type"] ?? "").startsWith("application/json")) {
      const parsed = JSON.parse(body.toString("utf8")) as { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] };
      for (const rs of parsed.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) totals.spans += ss.spans?.length ?? 0;
    }
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
});
server.listen(port, "127.0.0.1", () => process.stderr.write(`otlp sink on http://127.0.0.1:${port}\n`));
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.once(signal, () => {
    process.stdout.write(`${JSON.stringify(totals)}\n`);
    process.exit(0);
  });
