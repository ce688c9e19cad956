// The processors' reads that used to wait for a round trip on PostgreSQL, for bench/postgres/waits.ts:
//   - a hot key's backlog drained: BENCH_BACKLOG events (default 6,000) of 2 KiB (past the 8 MiB
//     of the log's tail in memory), five in six of one key, far past the 64 a key holds, read
//     again from the log as the key's queue runs low; delivered 8 at a time, in order per key;
//   - RedeliverFailed of BENCH_FAILURES failed deliveries (default 500), then ListProcessors 100
//     times, then MoveCursor by time 100 times.
// Each prints its time, the owner's event-loop delay p99 and the round trips its thread waited for.
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { ChronologClient } from "../../sdk/ts/src/client.js";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import type { DeliveryContext } from "../../sdk/ts/src/executor.js";
import type { PluginDefinition } from "../../sdk/ts/src/plugin.js";
import { scrapeStoreWaits as scrape } from "../lib/owner.js";
import { sleep } from "../lib/proc.js";

const backlog = Number(process.env.BENCH_BACKLOG ?? 6_000);
const failures = Number(process.env.BENCH_FAILURES ?? 500);

/** What the handlers of the processors declared by {@link processorDeclarations} saw. */
const seen = new Map<string, number[]>();
let failing = true;
let redelivered = 0;

/** The processors of the bench's plugin: `hot` (by key, 8 at a time) and `flaky` (fails until told not to). */
export const processorDeclarations = {
  hot: {
    on: "pgwaits.queued",
    concurrency: { key: "data.tenant", total: 8 },
    run(ctx: DeliveryContext) {
      const tenant = String(ctx.data.tenant);
      const ns = seen.get(tenant) ?? [];
      ns.push(Number(ctx.data.n));
      seen.set(tenant, ns);
    },
  },
  flaky: {
    on: "pgwaits.failing",
    retryDelaysMs: [1],
    run() {
      if (failing) throw new Error("not yet");
      redelivered++;
    },
  },
};

async function measured(url: string, label: string, work: () => Promise<string>): Promise<void> {
  const before = await scrape(url);
  const started = performance.now();
  const what = await work();
  const ms = performance.now() - started;
  const after = await scrape(url);
  console.log(
    `  ${label}: ${what}, ${ms.toFixed(0)} ms; loop p99 ${after.loopP99Ms.toFixed(0)} ms, ${after.waits - before.waits} waits (${((after.waitMs - before.waitMs) / 1000).toFixed(2)} s)`,
  );
}

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 300_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Runs the processor cases against the owner at `url` serving `plugin` (which declares {@link processorDeclarations}). */
export async function processorCases(url: string, client: ChronologClient, plugin: PluginDefinition): Promise<void> {
  const admin = createRpcClient(AdminService, createGrpcTransport({ baseUrl: url }));
  const pad = "p".repeat(2_048);
  const data = Array.from({ length: backlog }, (_, i) => ({ tenant: i % 6 === 5 ? `t${i % 7}` : "hot", n: i, pad }));
  for (let i = 0; i < data.length; i += 500) await client.emitBatch(data.slice(i, i + 500).map((d) => ({ type: "pgwaits.queued", data: d })));
  for (let n = 0; n < failures; n += 500)
    await client.emitBatch(Array.from({ length: Math.min(500, failures - n) }, (_, i) => ({ type: "pgwaits.failing", data: { n: n + i } })));
  const failed = async () => (await admin.listProcessors({})).processors.find((p) => p.name === "pgwaits.flaky")?.failures ?? 0n;
  const executor = runExecutor({ url, plugins: [plugin], credits: 64, onError: () => undefined, onLog: () => undefined });
  await executor.ready;
  try {
    await measured(url, `a hot key's backlog drained (${backlog} events of 2 KiB, 5 in 6 of one key)`, async () => {
      await until(() => [...seen.values()].reduce((n, ns) => n + ns.length, 0) >= backlog, "the backlog delivered");
      for (const [tenant, ns] of seen) {
        const expected = data.filter((d) => d.tenant === tenant).map((d) => d.n);
        if (ns.join() !== expected.join()) throw new Error(`${tenant}: delivered out of order or not once each`);
      }
      return `${backlog} delivered, once each and in order per key`;
    });
    await until(async () => (await failed()) === BigInt(failures), "the failures recorded");
    failing = false;
    await measured(url, `RedeliverFailed of ${failures} failures`, async () => {
      const { count } = await admin.redeliverFailed({ processor: "pgwaits.flaky" });
      await until(() => redelivered >= failures, "the redeliveries");
      return `${count} redelivered and handled`;
    });
    await measured(url, "ListProcessors, 100 calls", async () => {
      for (let i = 0; i < 100; i++) await admin.listProcessors({});
      return "100 answered";
    });
    await measured(url, "MoveCursor by time, 100 calls", async () => {
      for (let i = 0; i < 100; i++) await admin.moveCursor({ processor: "pgwaits.flaky", to: { case: "at", value: timestampFromMs(Date.now() + 60_000) } });
      return "100 answered";
    });
  } finally {
    await executor.stop(100);
  }
}
