// bench/compare's arithmetic: medians over runs and the ratio of Chronolog's figure to the best
// peer's (the highest rate, the lowest latency), and the trivial gRPC servers it measures.
//
// @module-tag serial
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { Figures } from "../bench/compare/report.js";
import { freePort } from "../bench/lib/proc.js";
import { GetEventRequestSchema, GetEventResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";

describe("bench/compare figures", () => {
  it("takes medians over runs and compares Chronolog with the best peer in the row's direction", () => {
    const f = new Figures();
    for (const [col, v] of [
      ["nats", 100],
      ["nats", 300],
      ["nats", 200],
      ["redis", 400],
      ["bullmq", 50],
      ["chronolog", 40],
      ["chronolog", 10],
    ] as const)
      f.add("rate", "higher", col, v);
    for (const [col, v] of [
      ["nats", 2],
      ["redis", 1],
      ["chronolog", 5],
    ] as const)
      f.add("p99", "lower", col, v);
    const rate = f.rows.get("rate")!;
    expect(f.median(rate, "nats")).toBe(200);
    expect(f.median(rate, "chronolog")).toBe(25);
    expect(f.ratio(rate)).toEqual({ ratio: 25 / 400, best: "Redis (always)" });
    expect(f.ratio(f.rows.get("p99")!)).toEqual({ ratio: 5, best: "Redis (always)" });
    expect(f.table().find((l) => l.startsWith("| p99 "))).toContain("5.00× (Redis (always); lower is better)");
    expect(f.runs().find((l) => l.startsWith("| rate "))).toBe("| rate | 100, 300, 200 | 400 | 50.0 | 40.0, 10.0 |");
  });

  it("keeps a latency without bound (events never handled) as ∞ in medians and the table", () => {
    const f = new Figures();
    for (const v of [Infinity, Infinity, 3]) f.add("p99", "lower", "chronolog", v);
    f.add("p99", "lower", "nats", 1);
    expect(f.median(f.rows.get("p99")!, "chronolog")).toBe(Infinity);
    expect(f.table().find((l) => l.startsWith("| p99 "))).toContain("| ∞ |");
  });

  it("compares a row against another row's peers when told to", () => {
    const f = new Figures();
    f.add("single", "higher", "nats", 1000);
    f.add("batch", "higher", "chronolog", 500, "single");
    expect(f.ratio(f.rows.get("batch")!).ratio).toBe(0.5);
  });
});

describe("bench/compare trivial servers", () => {
  for (const kind of ["connect", "grpc-js", "http2"]) {
    it(`${kind}: answers GetEvent over gRPC with an empty response`, async () => {
      const port = await freePort();
      const child = spawn(process.execPath, ["--conditions=chronolog-source", "--import", "tsx", "bench/compare/trivial-server.ts", kind, String(port)], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      try {
        await new Promise((resolve) => createInterface({ input: child.stdout! }).once("line", resolve));
        const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
        const identity = (b: Buffer) => b;
        const call = (id: string) =>
          new Promise<{ err: grpc.ServiceError | null; value?: Buffer }>((resolve) =>
            client.makeUnaryRequest(
              "/chronolog.v1.LogService/GetEvent",
              identity,
              identity,
              Buffer.from(toBinary(GetEventRequestSchema, create(GetEventRequestSchema, { id }))),
              (err, value) => resolve({ err, value }),
            ),
          );
        const ok = await call("x".repeat(200));
        expect(ok.err).toBeNull();
        expect(fromBinary(GetEventResponseSchema, ok.value!).event).toBeUndefined();
        client.close();
      } finally {
        child.kill();
      }
    }, 30_000);
  }
});
