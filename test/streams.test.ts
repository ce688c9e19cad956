// Streams through the real transport: emits that name a stream take its next position; an
// expected version is checked in the commit of the append (FAILED_PRECONDITION naming the actual
// version, nothing written), in order within a batch and a group commit; of several clients
// appending with the same expected version exactly one wins; ReadStream pages forwards and
// backwards; each space has streams of its own; a retried emit is answered with its position.
//
// @module-tag postgres

import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { ErrorInfoSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { LogService } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import type { ExpectedVersion } from "../sdk/ts/src/streams.js";
import { createTransport } from "../sdk/ts/src/transport.js";
import { cli } from "./helpers/cli.js";
import { onPostgres, startTestOwner } from "./helpers/owner.js";

const repo = new URL("../", import.meta.url).pathname;
const python = join(repo, ".venv/bin/python");

describe("streams", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let client: ChronologClient;

  beforeAll(async () => {
    owner = await startTestOwner({ shutdownGraceMs: 100 });
    client = createClient({ url: owner.url });
    await client.registerPlugin({ name: "orders", events: { "order.changed": { allow: ["*"] } } });
  });
  afterAll(() => owner?.close());

  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.FailedPrecondition);
    const info = error!.findDetails(ErrorInfoSchema)[0];
    expect(info.reason).toBe("WRONG_EXPECTED_VERSION");
    return { message: error!.rawMessage, actual: info.metadata.actual_version };
  };
  const append = (stream: string, n: number, expectedVersion?: ExpectedVersion, id?: string) =>
    client.emit("order.changed", { n }, { stream, expectedVersion, id });
  const positions = async (stream: string, options: Parameters<ChronologClient["readStream"]>[1] = {}) => {
    const out: [number, number][] = [];
    for await (const e of client.readStream(stream, options)) out.push([Number(e.position), e.event.data?.n as number]);
    return out;
  };

  it("places events at the stream's next position and checks the expected version", async () => {
    expect((await append("order-o-1", 0, "noStream")).streamPosition).toBe(0n);
    const again = await refusal(append("order-o-1", 1, "noStream"));
    expect(again.actual).toBe("0");
    expect(again.message).toMatch(/stream "order-o-1" is at position 0, not at the expected no_stream/);
    expect((await refusal(append("order-o-1", 1, 5))).actual).toBe("0");
    expect((await refusal(append("order-o-2", 1, 0))).actual).toBe("no_stream");
    expect((await append("order-o-1", 1, 0)).streamPosition).toBe(1n);
    expect((await append("order-o-1", 2, "any")).streamPosition).toBe(2n);
    expect((await append("order-o-1", 3)).streamPosition).toBe(3n);
    expect(await positions("order-o-1")).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    // Nothing of the refused appends was written.
    let refused = 0;
    for await (const e of client.read({ types: ["order.changed"] })) if (e.data?.n === 1 && e.id !== "") refused++;
    expect(refused).toBe(1);
  });

  it("answers a retried emit with its position, whatever the stream's version now", async () => {
    const first = await append("order-o-3", 0, "noStream", "retry-1");
    await append("order-o-3", 1, 0);
    const retry = await append("order-o-3", 0, "noStream", "retry-1");
    expect(retry.existing).toBe(true);
    expect(retry.streamPosition).toBe(0n);
    expect(retry.event?.seq).toBe(first.event?.seq);
  });

  it("checks a batch's expectations in order, all or none", async () => {
    const ok = await client.emitBatch([
      { type: "order.changed", data: { n: 0 }, stream: "order-b-1", expectedVersion: "noStream" },
      { type: "order.changed", data: { n: 1 }, stream: "order-b-1", expectedVersion: 0 },
      { type: "order.changed", data: { n: 2 }, stream: "order-b-2", expectedVersion: "noStream" },
    ]);
    expect(ok.map((r) => r.streamPosition)).toEqual([0n, 1n, 0n]);
    const refused = await refusal(
      client.emitBatch([
        { type: "order.changed", data: { n: 3 }, stream: "order-b-2", expectedVersion: 0 },
        { type: "order.changed", data: { n: 4 }, stream: "order-b-1", expectedVersion: 0 },
      ]),
    );
    expect(refused.actual).toBe("1");
    expect(refused.message).toMatch(/events\[1\]|order-b-1/);
    expect(await positions("order-b-2")).toEqual([[0, 2]]); // the batch's first event was not written either
  });

  it("lets exactly one of several clients appending with the same expected version win, round after round", async () => {
    const clients = Array.from({ length: 8 }, () => createClient({ url: owner.url }));
    const stream = "order-race";
    let expected: ExpectedVersion = "noStream";
    for (let round = 0; round < 20; round++) {
      const outcomes = await Promise.allSettled(clients.map((c, k) => c.emit("order.changed", { n: round * 100 + k }, { stream, expectedVersion: expected })));
      const won = outcomes.filter((o) => o.status === "fulfilled");
      expect(won).toHaveLength(1);
      for (const o of outcomes) if (o.status === "rejected") expect(ConnectError.from(o.reason).code).toBe(Code.FailedPrecondition);
      expect((won[0] as PromiseFulfilledResult<Awaited<ReturnType<ChronologClient["emit"]>>>).value.streamPosition).toBe(BigInt(round));
      expected = round;
    }
    expect((await positions(stream)).map(([p]) => p)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it("checks expectations of emits sharing a group commit in order (Publish)", async () => {
    const log = createRpcClient(LogService, createTransport({ url: owner.url }));
    const acks: { ref: bigint; seq: bigint; streamPosition?: bigint; code?: number }[] = [];
    async function* requests() {
      yield {
        emits: Array.from({ length: 6 }, (_, i) => ({
          ref: BigInt(i),
          event: {
            type: "order.changed",
            dataJson: new TextEncoder().encode(`{"n":${i}}`),
            stream: "order-pub",
            expectedVersion: { version: { case: "noStream" as const, value: true } },
          },
        })),
      };
      await new Promise((r) => setTimeout(r, 1_000));
    }
    for await (const message of log.publish(requests())) {
      if (message.message.case === "acks")
        for (const a of message.message.value.acks) acks.push({ ref: a.ref, seq: a.seq, streamPosition: a.streamPosition, code: a.error?.code });
      if (acks.length === 6) break;
    }
    expect(acks.map((a) => [a.streamPosition, a.code])).toEqual([[0n, undefined], ...Array.from({ length: 5 }, () => [undefined, Code.FailedPrecondition])]);
  });

  it("reads a stream forwards and backwards, from a position, in pages", async () => {
    await client.emitBatch(Array.from({ length: 25 }, (_, n) => ({ type: "order.changed", data: { n }, stream: "order-pages" })));
    const all = Array.from({ length: 25 }, (_, n) => [n, n] as [number, number]);
    expect(await positions("order-pages", { pageSize: 7 })).toEqual(all);
    expect(await positions("order-pages", { backwards: true, pageSize: 4 })).toEqual([...all].reverse());
    expect(await positions("order-pages", { fromPosition: 20 })).toEqual(all.slice(20));
    expect(await positions("order-pages", { fromPosition: 3, backwards: true })).toEqual(all.slice(0, 4).reverse());
    expect(await positions("order-none")).toEqual([]);
    const page = await client.log.readStream({ stream: "order-pages", pageSize: 10 });
    expect([page.events.length, page.lastPosition, page.nextPageToken !== ""]).toEqual([10, 24n, true]);
    const empty = await client.log.readStream({ stream: "order-none" });
    expect([empty.events.length, empty.lastPosition, empty.nextPageToken]).toEqual([0, undefined, ""]);
  });

  it("keeps each space's streams apart: another space's appends never move a stream; ReadStream reads the caller's space or the one named", async () => {
    const acme = { in: "space:acme" };
    const beta = { in: "space:beta" };
    const emitIn = (actor: { in: string } | undefined, n: number, expectedVersion?: ExpectedVersion) =>
      client.emit("order.changed", { n }, { stream: "order-shared", expectedVersion, actor });
    expect((await emitIn(acme, 0, "noStream")).streamPosition).toBe(0n);
    expect((await emitIn(beta, 10, "noStream")).streamPosition).toBe(0n); // beta's own stream of that name
    expect((await emitIn(undefined, 20, "noStream")).streamPosition).toBe(0n); // and the one of no space
    expect((await emitIn(acme, 1, 0)).streamPosition).toBe(1n); // beta's appends did not move acme's
    const of = async (space: string) => (await client.log.readStream({ stream: "order-shared", space })).events.map((e) => e.event?.data?.n);
    expect([await of("space:acme"), await of("space:beta"), await of("")]).toEqual([[0, 1], [10], [20]]);
    const page = await client.log.readStream({ stream: "order-shared", space: "space:acme", pageSize: 1 });
    expect(await client.log.readStream({ stream: "order-shared", space: "space:acme", pageToken: page.nextPageToken })).toMatchObject({ lastPosition: 1n });
    const foreign = await client.log.readStream({ stream: "order-other", space: "space:beta", pageToken: page.nextPageToken }).then(
      () => 0,
      (e: unknown) => ConnectError.from(e).code,
    );
    expect(foreign).toBe(Code.InvalidArgument); // a token continues only the stream it came from
  });

  it.runIf(onPostgres)("on PostgreSQL, checks the expected versions of many emits in flight without a round trip on the owner's thread", async () => {
    /** The round trips the owner's thread waited for so far (chronolog_store_waits_total, both connections). */
    const waits = async () => {
      const text = await (await fetch(`${owner.url}/metrics`)).text();
      return [...text.matchAll(/^chronolog_store_waits_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
    };
    await append("order-w-warm", 0, "noStream"); // the statements prepared on the writer
    const before = await waits();
    // 16 streams, 4 rounds; in each round two emits expect the same version of each stream: one wins.
    for (let round = 0; round < 4; round++) {
      const expected: ExpectedVersion = round === 0 ? "noStream" : round - 1;
      const outcomes = await Promise.allSettled(Array.from({ length: 32 }, (_, i) => append(`order-w-${i % 16}`, round, expected)));
      for (let s = 0; s < 16; s++)
        expect([outcomes[s].status, outcomes[s + 16].status].sort(), `round ${round}, stream ${s}`).toEqual(["fulfilled", "rejected"]);
    }
    expect(await waits(), "waits for 128 emits to streams").toBeLessThan(before + 10); // a few others may come meanwhile
    expect(await positions("order-w-3")).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
  });

  it("refuses a bad stream name, an expected version without a stream and a foreign page token", async () => {
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 0,
        (e: unknown) => ConnectError.from(e).code,
      );
    expect(await code(client.log.emit({ type: "order.changed", stream: "x".repeat(201) }))).toBe(Code.InvalidArgument);
    expect(await code(client.log.emit({ type: "order.changed", stream: "a\nb" }))).toBe(Code.InvalidArgument);
    expect(await code(client.log.emit({ type: "order.changed", expectedVersion: { version: { case: "noStream", value: true } } }))).toBe(Code.InvalidArgument);
    expect(await code(client.log.readStream({ stream: "order-pages", pageToken: "nope" }))).toBe(Code.InvalidArgument);
    expect(await code(client.log.readStream({ stream: "" }))).toBe(Code.InvalidArgument);
  });

  it("from the CLI: emit --stream --expected-version, read-stream", { tags: ["serial"] }, async () => {
    const run = (args: string[]) => cli(["--url", owner.url, ...args]);
    const first = await run(["emit", "order.changed", '{"n":0}', "--stream", "order-cli", "--expected-version", "no_stream"]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).streamPosition).toBe(0);
    const refused = await run(["emit", "order.changed", '{"n":1}', "--stream", "order-cli", "--expected-version", "no_stream"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/FAILED_PRECONDITION|failed_precondition|is at position 0/);
    await run(["emit", "order.changed", '{"n":1}', "--stream", "order-cli", "--expected-version", "0"]);
    const read = await run(["read-stream", "order-cli", "--backwards"]);
    expect(
      read.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).position),
    ).toEqual([1, 0]);
    expect((await run(["emit", "order.changed", "{}", "--expected-version", "3"])).code).not.toBe(0);
    const empty = await run(["emit", "order.changed", "{}", "--stream", ""]);
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toContain("--stream needs a stream name");
  });

  it.skipIf(!existsSync(python) && !process.env.CI)("from the Python client", { tags: ["serial"] }, async () => {
    const script = [
      "import sys",
      "from chronolog import ChronologError, Client",
      "client = Client(sys.argv[1])",
      "print(client.emit('order.changed', {'n': 0}, stream='order-py', expected_version='no_stream').stream_position)",
      "try:",
      "    client.emit('order.changed', {'n': 1}, stream='order-py', expected_version='no_stream')",
      "except ChronologError as e:",
      "    print(e.code().name, e.reason, e.metadata['actual_version'])",
      "print([r.stream_position for r in client.emit_batch([{'type': 'order.changed', 'data': {'n': 1}, 'stream': 'order-py', 'expected_version': 0}, {'type': 'order.changed', 'data': {'n': 2}, 'stream': 'order-py'}])])",
      "print([e.position for e in client.read_stream('order-py', backwards=True, page_size=2)])",
    ].join("\n");
    const { stdout } = await promisify(execFile)(python, ["-c", script, owner.url], {
      env: { ...process.env, PYTHONPATH: join(repo, "sdk/python") },
      timeout: 30_000,
    });
    expect(stdout.trim().split("\n")).toEqual(["0", "FAILED_PRECONDITION WRONG_EXPECTED_VERSION 0", "[1, 2]", "[2, 1, 0]"]);
  });
});
