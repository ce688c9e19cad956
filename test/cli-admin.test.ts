// @module-tag serial
// @module-tag postgres

import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { cli } from "./helpers/cli.js";
import { onPostgres, startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const tokens = { admin: "admin-token-0123456789", web: "web-client-token-0123" };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe("admin CLI", () => {
  it("lists failed deliveries, dismisses and redelivers them, lists executors, pauses, moves a cursor and runs recorded SQL; refuses non-admins", async () => {
    const owner = await startTestOwner({
      shutdownGraceMs: 100,
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "web", token: tokens.web, role: "client" },
        ],
      },
    });
    cleanups.push(() => owner.close());
    const client = createClient({ url: owner.url, token: tokens.admin });
    let healthy = false;
    const handled: number[] = [];
    const plugin = definePlugin({
      name: "jobs",
      events: { "job.queued": { allow: ["*"] } },
      processors: {
        work: {
          on: "job.queued",
          retryDelaysMs: [5, 5],
          run: (ctx) => (healthy ? void handled.push(Number(ctx.event.seq)) : Promise.reject(new Error("disk full"))),
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    const executor = runExecutor({ url: owner.url, token: tokens.admin, plugins: [plugin], onError: () => {} });
    cleanups.push(() => executor.stop(50));
    await executor.ready;
    await client.emit("job.queued", {});
    const as = (token: string, args: string[]) => cli([...args, "--url", owner.url, "--token", token]);
    await until(async () => (await as(tokens.admin, ["failed"])).stdout.includes("disk full"), "a failed delivery listed");
    expect((await as(tokens.admin, ["failed"])).stdout).toMatch(/jobs\.work\s+1\s+job\.queued\s+3\s+disk full/);
    // A second failure, dismissed: forgotten without a delivery, recorded.
    const second = Number((await client.emit("job.queued", {})).event!.seq);
    await until(async () => (await client.admin.listFailedDeliveries({})).deliveries.length === 2, "a second failed delivery");
    expect((await as(tokens.admin, ["dismiss", "jobs.work"])).stderr).toContain("give the seqs of the failed deliveries to dismiss, or --all");
    expect((await as(tokens.admin, ["dismiss", "jobs.work", String(second), "999"])).stdout).toBe(
      `jobs.work: 1 dismissed (seqs ${second}); not failed deliveries on record: 999\n`,
    );
    expect((await client.admin.listFailedDeliveries({})).deliveries.map((d) => Number(d.event!.seq))).toEqual([1]);

    const unknown = await as(tokens.admin, ["failed", "--processor", "jobs.nope"]);
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining('NotFound: no processor named "jobs.nope" with failed deliveries')]);
    healthy = true;
    expect((await as(tokens.admin, ["redeliver", "jobs.work", "1", String(second)])).stdout).toContain(
      "jobs.work: 1 redelivered (1 of the seqs given not: no failed delivery on record",
    );
    await until(() => handled.length === 1, "the redelivered run");
    expect((await as(tokens.admin, ["executors"])).stdout).toMatch(/jobs\s+\S+\s+ops\s+\d+\/16\s+jobs\.work/);

    expect((await as(tokens.admin, ["pause", "jobs.work"])).stdout).toBe("jobs.work: paused\n");
    expect((await as(tokens.admin, ["pause", "jobs.work"])).stdout).toBe("jobs.work: already paused\n");
    expect((await as(tokens.admin, ["resume", "jobs.work"])).stdout).toBe("jobs.work: running\n");
    expect((await as(tokens.admin, ["resume", "jobs.work"])).stdout).toBe("jobs.work: already running\n");
    expect((await as(tokens.admin, ["move-cursor", "jobs.work", "--seq", "0"])).stdout).toContain("jobs.work: ack floor 0");
    await until(() => handled.length === 3, "the replay after the move (both jobs)");

    const sql = await as(tokens.admin, ["sql", "SELECT type FROM events WHERE seq = ?", "1"]);
    // Maintenance SQL runs on the SQLite store only: on PostgreSQL the command says so and records nothing.
    if (onPostgres) expect([sql.code, sql.stderr]).toEqual([1, expect.stringMatching(/FailedPrecondition.*runs on the SQLite store only/)]);
    else expect(sql.stdout.trim()).toBe(JSON.stringify({ type: "job.queued" }));
    const types: string[] = [];
    for await (const e of client.read()) types.push(e.type);
    expect(types).toEqual(
      expect.arrayContaining([
        "processor.redelivered",
        "processor.dismissed",
        "processor.paused",
        "processor.resumed",
        "processor.cursor_moved",
        ...(onPostgres ? [] : ["maintenance.sql"]),
      ]),
    );
    expect(types.includes("maintenance.sql")).toBe(!onPostgres);
    // The repeated pause and resume recorded nothing.
    expect(types.filter((t) => t === "processor.paused" || t === "processor.resumed")).toEqual(["processor.paused", "processor.resumed"]);

    const refused = await as(tokens.web, ["sql", "DELETE FROM events"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("PermissionDenied");
    const bad = await as(tokens.admin, ["move-cursor", "jobs.work"]);
    expect(bad.stderr).toContain("give exactly one of --seq");
  });
});
