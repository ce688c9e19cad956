// DelayBatch through the real transport: many delays armed in one call, all or none; errors
// name the delay; a retried batch arms nothing twice; the calls are made once each, at their
// moments. Then the same from the Python client.
//
// @module-tag postgres

import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import type { DelaySpec } from "../sdk/ts/src/time-requests.js";
import { runExecutor, type ActionContext, type Executor } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { onPostgres, startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const python = join(repo, ".venv/bin/python");

describe("DelayBatch", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let client: ChronologClient;
  let executor: Executor;
  const calls: ActionContext[] = [];

  beforeAll(async () => {
    owner = await startTestOwner({ shutdownGraceMs: 100 });
    client = createClient({ url: owner.url });
    const plugin = definePlugin({
      name: "remind",
      actions: {
        send: { allow: ["*"], inputSchema: { type: "object", required: ["n"], properties: { n: { type: "integer" } } }, run: (ctx) => void calls.push(ctx) },
      },
    });
    executor = runExecutor({ url: owner.url, plugins: [plugin], onError: () => {} });
    await executor.ready;
  });
  afterAll(async () => {
    await executor?.stop(50);
    await owner?.close();
  });

  const scheduledEvents = async () => {
    let n = 0;
    for await (const e of client.read({ types: ["timer.scheduled"] })) if (e.data?.kind === "delay") n++;
    return n;
  };
  const pendingDelays = async () => {
    let n = 0;
    for await (const t of client.listTimers({ kind: "delay" })) if (t.nextDue) n++;
    return n;
  };

  it("arms 2,000 delays in one call, answers in order, and makes each call once at its moment", async () => {
    const far = Date.now() + 3_600_000;
    const delays: DelaySpec[] = Array.from({ length: 2_000 }, (_, i) => ({
      action: "remind.send",
      input: { n: i },
      when: i < 3 ? { intervalMs: 500 } : { at: far + i },
      overdue: "unbounded",
      delayId: `batch-${i}`,
    }));
    const results = await client.delayBatch(delays);
    expect(results.map((r) => r.delayId)).toEqual(delays.map((d) => d.delayId));
    expect(results[10].due.getTime()).toBe(far + 10);
    expect(await pendingDelays()).toBeGreaterThanOrEqual(1_997);
    await until(() => calls.length >= 3, "the three short delays' calls", 10_000);
    expect(calls.map((c) => c.input.n).sort()).toEqual([0, 1, 2]);
    expect(calls.map((c) => c.scheduled?.timerId).sort()).toEqual(["batch-0", "batch-1", "batch-2"]);

    // The same batch again (a retry): the same answers, nothing armed twice.
    const before = await scheduledEvents();
    const again = await client.delayBatch(delays);
    expect(again.map((r) => [r.delayId, r.due.getTime()])).toEqual(results.map((r) => [r.delayId, r.due.getTime()]));
    expect(await scheduledEvents()).toBe(before);
    await new Promise((r) => setTimeout(r, 700));
    expect(calls).toHaveLength(3);
  });

  it("arms none when one is wrong, and the error names it", async () => {
    const before = await scheduledEvents();
    const good = (i: number): DelaySpec => ({
      action: "remind.send",
      input: { n: i },
      when: { intervalMs: 60_000 },
      overdue: "unbounded",
      delayId: `none-${i}`,
    });
    const cases: [DelaySpec[], Code, RegExp][] = [
      [[good(0), { ...good(1), input: { n: "one" } }, good(2)], Code.InvalidArgument, /^delays\[1\]: input .*n/],
      [[good(0), good(1), { ...good(2), action: "remind.nope" }], Code.NotFound, /^delays\[2\]: .*remind\.nope/],
      [[good(0), { ...good(1), delayId: "a/b" }], Code.InvalidArgument, /^delays\[1\]: .*delay_id/],
      [[good(0), { ...good(3), delayId: "none-0" }], Code.AlreadyExists, /^delays\[1\]: delay_id "none-0" already names/],
      [[], Code.InvalidArgument, /no delays to arm/],
    ];
    for (const [delays, code, message] of cases) {
      const error = await client.delayBatch(delays).then(
        () => null,
        (e: unknown) => ConnectError.from(e),
      );
      expect([error?.code, error?.rawMessage]).toEqual([code, expect.stringMatching(message)]);
    }
    expect(await scheduledEvents()).toBe(before);
    for (const i of [0, 1, 2]) await expect(client.getTimer(`none-${i}`)).rejects.toMatchObject({ code: Code.NotFound });

    // The same request twice in one batch is one delay, answered twice.
    const twice = await client.delayBatch([good(7), good(7)]);
    expect(twice.map((r) => r.delayId)).toEqual(["none-7", "none-7"]);
    expect(await scheduledEvents()).toBe(before + 1);

    // Refused in the client, before sending, naming the delay.
    await expect(client.delayBatch([good(8), { ...good(9), when: { intervalMs: -1 } }])).rejects.toThrow(/delays\[1\]: intervalMs must be/);
  });

  it.runIf(onPostgres)("arms 1,000 delays with client ids, new or sent again, without a round trip per delay on the owner's thread", async () => {
    /** The round trips the owner's thread waited for so far (chronolog_store_waits_total, both connections). */
    const waits = async () => {
      const text = await (await fetch(`${owner.url}/metrics`)).text();
      return [...text.matchAll(/^chronolog_store_waits_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
    };
    const far = Date.now() + 3_600_000;
    const delays: DelaySpec[] = Array.from({ length: 1_000 }, (_, i) => ({
      action: "remind.send",
      input: { n: i },
      when: i % 2 === 0 ? { intervalMs: 3_600_000 } : { at: far + i },
      overdue: "unbounded",
      delayId: `waits-${i}`,
    }));
    for (const round of ["new", "sent again"]) {
      const before = await waits();
      expect((await client.delayBatch(delays)).map((r) => r.delayId)).toEqual(delays.map((d) => d.delayId));
      // The batch's reads go ahead of its units without blocking (about 2,500 waits when each delay's were its own); a few others may come meanwhile.
      expect(await waits(), `waits for a batch of 1,000 delays, ${round}`).toBeLessThan(before + 20);
    }
  });

  it.skipIf(!existsSync(python) && !process.env.CI)("from the Python client", { tags: ["serial"] }, async () => {
    const script = [
      "import sys",
      "from chronolog import Client",
      "client = Client(sys.argv[1])",
      "results = client.delay_batch([{'action': 'remind.send', 'input': {'n': i}, 'when': {'interval_ms': 3600000}, 'overdue': 'unbounded', 'delay_id': f'py-{i}'} for i in range(50)])",
      "print(len(results), results[0].delay_id, results[49].delay_id)",
      "try:",
      "    client.delay_batch([{'action': 'remind.send', 'input': {'n': 1}, 'when': {'every': 1}, 'overdue': 'unbounded'}])",
      "except ValueError as e:",
      "    print(e)",
    ].join("\n");
    const { stdout } = await promisify(execFile)(python, ["-c", script, owner.url], {
      env: { ...process.env, PYTHONPATH: join(repo, "sdk/python") },
      timeout: 30_000,
    });
    const [counted, refused] = stdout.trim().split("\n");
    expect(counted).toBe("50 py-0 py-49");
    expect(refused).toMatch(/^delays\[0\]: when/);
    expect((await client.getTimer("py-7")).id).toBe("py-7");
  });
});
