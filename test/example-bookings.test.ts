// @module-tag serial
// @module-tag sqlite-only

import { spawn, spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { DateTime } from "luxon";
import { createClient } from "../sdk/ts/src/client.js";
import { cli } from "./helpers/cli.js";
import { eventsOf } from "./helpers/log-snapshot.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const kill: (() => void)[] = [];
afterEach(() => kill.splice(0).forEach((k) => k()));

describe("examples/bookings, as the README walks through it", () => {
  it("a pending booking created with buf curl is confirmed by the processor through the action", async () => {
    const owner: OwnerProcess = await spawnOwner(tempDir());
    kill.push(() => owner.child.kill("SIGKILL"));
    const executor = spawn(process.execPath, ["--import", "tsx", "examples/bookings/executor.ts", owner.url], {
      cwd: repo,
      stdio: ["ignore", "ignore", "pipe"],
    });
    kill.push(() => executor.kill("SIGKILL"));
    await new Promise<void>((resolve) => executor.stderr!.on("data", (d: Buffer) => d.toString().includes("connected") && resolve()));
    const checkIn = new Date(Date.now() + 24 * 3600_000 + 5_000).toISOString();
    const create = spawnSync(
      "node_modules/.bin/buf",
      [
        "curl",
        "--protocol",
        "grpc",
        "--http2-prior-knowledge",
        "-d",
        JSON.stringify({
          collection: "booking",
          doc: { _id: "b-1", guest: "Ana", room: "101", nights: 2, status: "pending", card: "4111-1111", check_in: checkIn },
        }),
        `${owner.url}/chronolog.v1.CollectionService/CreateDocument`,
      ],
      { cwd: repo, encoding: "utf8" },
    );
    expect(create.status, create.stderr).toBe(0);
    const client = createClient({ url: owner.url });
    const deadline = Date.now() + 15_000;
    let doc: Record<string, unknown> = {};
    while (Date.now() < deadline && doc.status !== "confirmed") {
      doc = (await client.getDocument("booking", "b-1")) as Record<string, unknown>;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(doc).toMatchObject({ _id: "b-1", status: "confirmed", confirmed_by: "bookings.confirm" });
    // The document is confirmed in the action's run; the run's action.completed commits after it.
    const types: string[] = [];
    const texts: string[] = [];
    let changed: unknown;
    await until(async () => {
      types.length = texts.length = 0;
      for await (const e of client.read()) {
        types.push(e.type);
        texts.push(JSON.stringify(e.data));
        if (e.type === "booking.updated") changed = e.data?.changed;
      }
      return types.includes("action.completed");
    }, "the confirm call's action.completed");
    // The changed paths are sorted (as the README's tail output shows them).
    expect(changed).toEqual(["confirmed_by", "status"]);
    // (Registering the plugin recorded its weekly schedule as timer.scheduled; the confirmation armed a delay.)
    expect(types.filter((t) => !t.startsWith("timer.")).slice(0, 4)).toEqual(["booking.created", "action.started", "booking.updated", "action.completed"]);
    expect(texts.join("\n")).not.toContain("4111"); // the private card number never reaches the log
    // The reminder delay (24 h before check-in, here 5 s away) calls bookings.remind.
    let reminded: string | undefined;
    while (Date.now() < deadline + 10_000 && !reminded) {
      for await (const e of client.read({ types: ["booking.reminded"] })) reminded = JSON.stringify(e.data);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Due exactly 24 h before check-in (an `at` from the check-in, not an interval from the action's now).
    expect(JSON.parse(reminded ?? "{}")).toMatchObject({ booking_id: "b-1", guest: "Ana", due: new Date(Date.parse(checkIn) - 24 * 3600_000).toISOString() });
    // The weekly report is a declared schedule: next Monday 09:00 in Berlin.
    const timer = await client.getTimer("bookings/weekly-report");
    const due = DateTime.fromJSDate(timestampDate(timer.nextDue!)).setZone("Europe/Berlin");
    expect([due.weekday, due.hour, due.minute]).toEqual([1, 9, 0]);

    // The README's time examples: the operator (the local admin, whom both actions allow) sets a
    // schedule and a delay from the command line, and the same with grpcurl.
    const friday = await cli(["--url", owner.url, "schedule", "bookings.report", "--cron", "0 18 * * 5", "--zone", "Europe/Berlin", "--id", "friday-report"]);
    expect(friday.stdout, friday.stderr).toMatch(/^friday-report: scheduled cron "0 18 \* \* 5" in Europe\/Berlin, next due \S+Z\n$/);
    const delay = await cli(["--url", owner.url, "delay", "bookings.remind", '{"booking_id":"b-1"}', "--in-ms", "200", "--overdue", "3600000"]);
    expect(delay.stdout, delay.stderr).toMatch(/^\S+: due \S+Z\n$/);
    await until(async () => (await eventsOf(client, ["booking.reminded"])).length === 2, "the delayed reminder");
    const grpcurl = join(repo, ".tools/grpcurl");
    if (existsSync(grpcurl)) {
      const address = `127.0.0.1:${owner.port}`;
      const schedule = spawnSync(
        grpcurl,
        [
          "-plaintext",
          "-d",
          '{"timer_id":"friday-report","action":"bookings.report","spec":{"cron":{"expression":"0 18 * * 5","zone":"Europe/Berlin"}}}',
          address,
          "chronolog.v1.TimeService/Schedule",
        ],
        { encoding: "utf8" },
      );
      expect(schedule.status, schedule.stderr).toBe(0);
      expect(JSON.parse(schedule.stdout).timer).toMatchObject({ id: "friday-report", kind: "TIMER_KIND_RUNTIME" });
      const delayed = spawnSync(
        grpcurl,
        [
          "-plaintext",
          "-d",
          '{"action":"bookings.remind","input":{"booking_id":"b-1"},"interval_ms":"60000","overdue":{"max_lateness_ms":"3600000"}}',
          address,
          "chronolog.v1.TimeService/Delay",
        ],
        { encoding: "utf8" },
      );
      expect(delayed.status, delayed.stderr).toBe(0);
      expect(Object.keys(JSON.parse(delayed.stdout))).toEqual(["delayId", "due"]);
    }
  });

  it("an executor the owner refuses (unknown token) prints the owner's message once and exits with status 1", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "owner.json"), JSON.stringify({ principals: [{ name: "ops", token: "bookings-admin-token-0123", role: "admin" }] }));
    const owner: OwnerProcess = await spawnOwner(join(dir, "data"), ["--config", join(dir, "owner.json")]);
    kill.push(() => owner.child.kill("SIGKILL"));
    const started = Date.now();
    const run = spawnSync(process.execPath, ["--import", "tsx", "examples/bookings/executor.ts", owner.url], {
      cwd: repo,
      encoding: "utf8",
      env: { ...process.env, CHRONOLOG_TOKEN: "not-a-token-0123456789" },
      timeout: 20_000,
    });
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr.trim().split("\n")).toEqual(["chronolog executor: UNAUTHENTICATED: unknown bearer token (the executor stopped: not retrying)"]);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
