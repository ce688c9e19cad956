// Back-pressure of Watch: a watcher that stops reading does not
// make the owner buffer the log for it. The owner runs as a child process so
// its memory (RSS) can be measured on its own; the stalled watcher is a raw
// HTTP/2 client that never reads. Meanwhile a normal watcher keeps up, and
// once the stalled one reads again it gets every event, in order.
//
// @module-tag serial
// @module-tag sqlite-only

import { readFileSync } from "node:fs";
import * as http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { WatchRequestSchema, WatchResponseSchema, type WatchResponse } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";

const EVENTS = 20_000;
const PAD = "x".repeat(1000); // ~1 KiB per event: ~20 MiB of log in all

/** Resident set size of a process, in bytes (Linux /proc). */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error("no VmRSS");
  return Number(m[1]) * 1024;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MiB = 1024 * 1024;

/** A Watch over raw HTTP/2 whose body is not read until `resume()`. */
function rawWatch(url: string, afterSeq: bigint) {
  const session = http2.connect(url);
  session.on("error", () => {});
  const body = toBinary(WatchRequestSchema, create(WatchRequestSchema, { afterSeq }));
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  const stream = session.request({ ":method": "POST", ":path": "/chronolog.v1.LogService/Watch", "content-type": "application/grpc", te: "trailers" });
  stream.on("error", () => {});
  stream.end(Buffer.concat([prefix, body]));
  stream.pause();
  let status: number | undefined;
  stream.on("response", (h) => (status = Number(h[":status"])));
  return {
    session,
    stream,
    /** Bytes that reached this client's socket (all the server could push past flow control). */
    bytesOnWire: () => session.socket?.bytesRead ?? 0,
    httpStatus: () => status,
    /** Reads messages until `until` says stop; returns them. */
    async resume(until: (m: WatchResponse, count: number) => boolean, limitMs: number): Promise<WatchResponse[]> {
      const out: WatchResponse[] = [];
      let buf: Buffer = Buffer.alloc(0);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`only ${out.length} messages within ${limitMs} ms`)), limitMs);
        stream.on("data", (chunk: Buffer) => {
          buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
          while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
            const len = buf.readUInt32BE(1);
            const m = fromBinary(WatchResponseSchema, buf.subarray(5, 5 + len));
            buf = buf.subarray(5 + len);
            out.push(m);
            if (until(m, out.length)) {
              clearTimeout(timer);
              stream.pause();
              resolve(out);
              return;
            }
          }
        });
        stream.on("close", () => reject(new Error(`stream closed after ${out.length} messages`)));
        stream.resume();
      });
    },
    close() {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      session.destroy();
    },
  };
}

describe("a stalled watcher does not make the owner buffer", () => {
  let owner: OwnerProcess;
  let client: ChronologClient;

  beforeAll(async () => {
    owner = await spawnOwner(tempDir(), ["--synchronous", "NORMAL", "--log-level", "info"]);
    client = createClient({ url: owner.url });
    await client.registerPlugin({ name: "blobs", events: { "blob.stored": { allow: ["*"] } } });
    for (let b = 0; b < EVENTS / 1000; b++) {
      await client.emitBatch(Array.from({ length: 1000 }, (_, i) => ({ type: "blob.stored", data: { i: b * 1000 + i, pad: PAD } })));
    }
    expect((await client.log.readLog({ pageSize: 1 })).headSeq).toBe(BigInt(EVENTS));
  });
  afterAll(async () => {
    if (owner && owner.child.exitCode === null) {
      owner.child.kill("SIGTERM");
      await owner.exited;
    }
  });

  it("holds memory flat for a watcher that never reads, keeps a normal watcher live, and delivers everything on resume", async () => {
    const pid = owner.child.pid!;
    await sleep(300);
    const baseline = Math.max(rss(pid), (await sleep(100), rss(pid)));

    // The stalled watcher asks for the whole log and reads nothing.
    const stalled = rawWatch(owner.url, 0n);
    // A normal watcher follows live events only.
    const abort = new AbortController();
    const live: number[] = [];
    let caughtUp = -1n;
    const following = (async () => {
      try {
        for await (const e of client.watch({ afterSeq: BigInt(EVENTS) }, { signal: abort.signal, onCaughtUp: (h) => (caughtUp = h) })) live.push(Number(e.seq));
      } catch (e) {
        if (ConnectError.from(e).code !== Code.Canceled) throw e;
      }
    })();
    await expect.poll(() => caughtUp, { timeout: 5000 }).toBe(BigInt(EVENTS));

    // Give the owner every chance to push the log into the stalled stream.
    let peak = 0;
    for (let i = 0; i < 10; i++) {
      await sleep(100);
      peak = Math.max(peak, rss(pid));
    }
    expect(stalled.httpStatus()).toBe(200);

    // The normal watcher keeps up while the stalled one is stuck.
    const t0 = Date.now();
    for (let i = 0; i < 50; i++) await client.emit("blob.stored", { i: EVENTS + i, pad: "live" });
    await expect.poll(() => live.length, { timeout: 5000 }).toBe(50);
    expect(live).toEqual(Array.from({ length: 50 }, (_, i) => EVENTS + 1 + i));
    expect(Date.now() - t0).toBeLessThan(5000);
    for (let i = 0; i < 5; i++) {
      await sleep(100);
      peak = Math.max(peak, rss(pid));
    }

    // Flow control let only a little through to the stalled client...
    const onWire = stalled.bytesOnWire();
    expect(onWire).toBeGreaterThan(0);
    expect(onWire).toBeLessThan(2 * MiB); // the log is ~20 MiB
    // ...and the owner did not queue the rest in memory: buffering 20,000 events
    // (~20 MiB serialized, more as objects) would show as tens of MiB.
    const growth = peak - baseline;
    expect(growth, `owner RSS grew ${(growth / MiB).toFixed(1)} MiB (baseline ${(baseline / MiB).toFixed(1)} MiB)`).toBeLessThan(8 * MiB);

    // Reading again, the stalled watcher gets every event in order, then caught_up.
    const messages = await stalled.resume((m) => m.message.case === "caughtUp", 20_000);
    const seqs = messages.filter((m) => m.message.case === "event").map((m) => (m.message.case === "event" ? Number(m.message.value.seq) : 0));
    expect(seqs.length).toBe(EVENTS + 50);
    expect(seqs.every((s, i) => s === i + 1)).toBe(true);
    const last = messages.at(-1)!.message;
    expect(last.case === "caughtUp" && last.value.headSeq).toBe(BigInt(EVENTS + 50));
    stalled.close();
    abort.abort();
    await following;
    // The owner is still fine.
    expect((await client.emit("blob.stored", { i: -1 })).event?.seq).toBe(BigInt(EVENTS + 51));
  });
});
