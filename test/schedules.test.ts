// Declared schedules, retries of failed occurrences and cancel/fire
// races through the real transport: manifests registered over PluginService (by an SDK
// executor's hello or a client), the action hosted by an in-process SDK executor, TimeService
// and the store read directly to inspect timers and occurrences.
//
// As in time.test.ts, a ManualClock is both the owner's clock and its TimerHost:
// `clock.set/advance` rings what the owner armed, `clock.armed()` shows the one armed timer.
// The last describe runs real owner processes killed with SIGKILL on the real clock.
//
// @module-tag postgres

import { create, toJson } from "@bufbuild/protobuf";
import { timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, createClient as createRpcClient, type Client } from "@connectrpc/connect";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, TerminalError, type ActionContext } from "../sdk/ts/src/executor.js";
import { PluginManifestSchema } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { TimeService, TimerKind } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { definePlugin, manifestOf, type PluginDefinition } from "../sdk/ts/src/plugin.js";
import { expectConnectError, expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { ownerRows, spawnOwner, startTestOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";
import { eventsOf } from "./helpers/log-snapshot.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** 2026-03-02T12:00:00Z, a Monday. */
const T0 = Date.UTC(2026, 2, 2, 12);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** What the `reports` plugin's actions saw, and whether `flaky` fails. */
interface Recorder {
  calls: ActionContext[];
  failing: boolean;
}

/** Schedules in manifest form (ScheduleDeclaration's JSON names, camelCase). */
type Schedules = Record<string, Record<string, unknown>>;

/** The `reports` plugin: `build` records its calls; `flaky` records them and throws while `failing`; `final` records them and throws a TerminalError; `mail` has an input schema. */
function reportsPlugin(rec: Recorder, schedules: Schedules): PluginDefinition {
  return definePlugin({
    name: "reports",
    actions: {
      build: {
        allow: ["*"],
        run(ctx) {
          rec.calls.push(ctx);
          return {};
        },
      },
      flaky: {
        allow: ["*"],
        run(ctx) {
          rec.calls.push(ctx);
          if (rec.failing) throw new Error("the report store is down");
          return {};
        },
      },
      final: {
        allow: ["*"],
        run(ctx) {
          rec.calls.push(ctx);
          throw new TerminalError("the report's month is closed");
        },
      },
      mail: {
        inputSchema: { type: "object", required: ["to"], properties: { to: { type: "string" } } },
        run: () => ({}),
      },
    },
    manifest: { schedules: schedules as never },
  });
}

interface Harness {
  owner: TestOwner;
  client: ChronologClient;
  time: Client<typeof TimeService>;
}

/** An in-process owner on `clock` (also its TimerHost) and its clients. */
async function ownerOn(
  clock: ManualClock,
  options: { dataDir?: string; region?: number; pluginsDir?: string; timerLookaheadMs?: number } = {},
): Promise<Harness> {
  const owner = await startTestOwner({
    clock,
    timers: clock,
    heartbeatIntervalMs: 600_000,
    shutdownGraceMs: 200,
    ...options,
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  const closeOwner = owner.close.bind(owner);
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= closeOwner());
  cleanups.push(close);
  const client = createClient({ url: owner.url });
  return { owner: Object.assign(owner, { close }), client, time: createRpcClient(TimeService, client.transport) };
}

/** Runs an SDK executor for `plugin` (its hello registers the manifest); `holds: false`: calls of time come at their moment on the owner's clock. */
async function executor(url: string, plugin: PluginDefinition, holds?: boolean): Promise<void> {
  const ex = runExecutor({ url, plugins: [plugin], credits: 16, maxBackoffMs: 200, holds, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
}

/** An owner on `clock` with an executor hosting `reports` declaring `schedules`. */
async function harness(
  clock: ManualClock,
  rec: Recorder,
  schedules: Schedules,
  options: { dataDir?: string; region?: number; timerLookaheadMs?: number; holds?: boolean } = {},
): Promise<Harness> {
  const { holds, ...ownerOptions } = options;
  const h = await ownerOn(clock, ownerOptions);
  await executor(h.owner.url, reportsPlugin(rec, schedules), holds);
  return h;
}

const ms = (t: Timestamp | undefined) => (t ? timestampMs(t) : undefined);
const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

/** The occurrence rows of `timerId`, by due moment. */
function occurrences(h: Harness, timerId: string): Promise<Record<string, unknown>[]> {
  return ownerRows(h, "SELECT id, due_ms, status, attempts, next_attempt_ms, lateness_ms, error FROM timer_occurrences WHERE timer_id = ? ORDER BY due_ms", [
    timerId,
  ]);
}

/** The action.* events of call `callId`, as `type#attempt`. */
async function callHistory(client: ChronologClient, callId: string): Promise<string[]> {
  const events = await eventsOf(client, ["action.started", "action.completed", "action.failed", "action.retried"]);
  return events.filter((e) => e.data?.call_id === callId).map((e) => `${e.type}#${e.data?.attempt}`);
}

describe("declared schedules", () => {
  it("a cron schedule in a manifest is a timer of kind declared (`plugin/schedule`) that fires as the system with `scheduled.due`", async () => {
    const clock = new ManualClock(T0);
    const rec: Recorder = { calls: [], failing: false };
    const h = await harness(clock, rec, { weekly: { action: "build", cron: "0 9 * * 1", zone: "Europe/Berlin", input: { kind: "weekly" } } });
    const due = Date.UTC(2026, 2, 9, 8); // Mon 2026-03-09 09:00 CET
    const { timer } = await h.time.getTimer({ timerId: "reports/weekly", previewCount: 3 });
    expect(timer).toMatchObject({
      kind: TimerKind.DECLARED,
      action: "reports.build",
      plugin: "reports",
      schedule: "weekly",
      input: { kind: "weekly" },
      disabled: false,
      region: 0,
    });
    expect(timer?.actor).toBeUndefined(); // the system
    expect(timer?.preview.map((t) => iso(ms(t)))).toEqual(["2026-03-09T08:00:00.000Z", "2026-03-16T08:00:00.000Z", "2026-03-23T08:00:00.000Z"]);
    expect(clock.armed()).toEqual([{ atMs: due, delayMs: due - T0 }]);
    const [scheduled] = await eventsOf(h.client, ["timer.scheduled"]);
    expect(scheduled.actor).toBeUndefined(); // the system
    expect(scheduled.data).toMatchObject({
      timer_id: "reports/weekly",
      kind: "declared",
      plugin: "reports",
      schedule: "weekly",
      spec: { cron: "0 9 * * 1", zone: "Europe/Berlin" },
      next_due_ms: due,
      retry_delays_ms: [10_000, 30_000],
    });

    clock.set(due - 1);
    expect(rec.calls).toEqual([]);
    clock.set(due);
    await until(() => rec.calls.length === 1, "the schedule's call");
    const [ctx] = rec.calls;
    expect(ctx.actor).toBeUndefined(); // runs as the system
    expect(ctx.scheduled).toEqual({ timerId: "reports/weekly", due: new Date(due), occurrenceId: ctx.callId });
    expect(ctx.input).toEqual({ kind: "weekly" });
    expect(iso(ms((await h.time.getTimer({ timerId: "reports/weekly" })).timer?.nextDue))).toBe("2026-03-16T08:00:00.000Z");
    const [started] = (await eventsOf(h.client, ["action.started"])).filter((e) => e.data?.call_id === ctx.callId);
    expect(started.actor).toBeUndefined();
    // Declared schedules are changed by manifests, not by Unschedule; runtime ids may not take their form.
    await expectConnectError(h.time.unschedule({ timerId: "reports/weekly" }), Code.FailedPrecondition, /declared schedule/);
    await expectConnectError(
      h.time.schedule({ timerId: "reports/x", action: "reports.build", spec: { when: { case: "everyMs", value: 5_000n } } }),
      Code.InvalidArgument,
      /may not contain "\/"/,
    );
  });

  it("registration checks schedules and patches (INVALID_ARGUMENT naming the field) and writes nothing when refused", async () => {
    const clock = new ManualClock(T0);
    const rec: Recorder = { calls: [], failing: false };
    const h = await harness(clock, rec, { nightly: { action: "build", cron: "0 2 * * *" } });
    const before = await logSnapshot(h.client);
    const fields = async (schedules: Schedules, patches: unknown[] = [], name = "reports") => {
      const manifest =
        name === "reports" ? manifestOf(reportsPlugin(rec, schedules)) : { name, schedules: schedules as never, schedulePatches: patches as never };
      const error = await expectConnectError(h.client.registerPlugin(manifest), Code.InvalidArgument);
      return error.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);
    };
    expect(await fields({ nightly: { action: "build", cron: "0 25 * * *" } })).toEqual(["schedules.nightly.cron"]);
    expect(await fields({ nightly: { action: "build", cron: "0 0 9 * * *" } })).toEqual(["schedules.nightly.cron"]);
    expect(await fields({ nightly: { action: "build", cron: "0 2 * * *", zone: "Mars/Olympus" } })).toEqual(["schedules.nightly.zone"]);
    expect(await fields({ nightly: { action: "build" } })).toEqual(["schedules.nightly"]);
    expect(await fields({ nightly: { action: "build", cron: "0 2 * * *", everyMs: 60_000n } })).toEqual(["schedules.nightly"]);
    expect(await fields({ nightly: { action: "build", everyMs: 10n } })).toEqual(["schedules.nightly.every_ms"]);
    expect(await fields({ nightly: { action: "nope", cron: "0 2 * * *" } })).toEqual(["schedules.nightly.action"]);
    expect(await fields({ nightly: { action: "elsewhere.build", cron: "0 2 * * *" } })).toEqual(["schedules.nightly.action"]);
    expect(await fields({ nightly: { action: "mail", cron: "0 2 * * *", input: {} } })).toEqual(["schedules.nightly.input"]);
    expect(await fields({}, [{ plugin: "nobody", schedule: "nightly", cron: "0 3 * * *" }], "ops")).toEqual(["schedule_patches[0].plugin"]);
    expect(await fields({}, [{ plugin: "reports", schedule: "daily", cron: "0 3 * * *" }], "ops")).toEqual(["schedule_patches[0].schedule"]);
    expect(await fields({}, [{ plugin: "reports", schedule: "nightly", cron: "61 * * * *" }], "ops")).toEqual(["schedule_patches[0].cron"]);
    expect(await fields({}, [{ plugin: "reports", schedule: "nightly", zone: "Nowhere/Land" }], "ops")).toEqual(["schedule_patches[0].zone"]);
    await expectUnchanged(h.client, before);
    expect((await h.time.listTimers({})).timers.map((t) => t.id)).toEqual(["reports/nightly"]);
    // Another plugin's action, as plugin.action, is fine.
    await h.client.registerPlugin({ name: "ops", schedules: { rebuild: { action: "reports.build", everyMs: 60_000n } } });
    expect((await h.time.getTimer({ timerId: "ops/rebuild" })).timer).toMatchObject({ action: "reports.build", nextDue: expect.anything() });
  });

  it("a later plugin's patch changes the cron and input (it fires at the new time only); a patch disables it; removing the patch restores the declaration; the plugin registered last wins", async () => {
    const clock = new ManualClock(T0);
    const rec: Recorder = { calls: [], failing: false };
    const h = await harness(clock, rec, { daily: { action: "build", cron: "0 6 * * *", input: { v: 1 } } });
    expect(iso(ms((await h.time.getTimer({ timerId: "reports/daily" })).timer?.nextDue))).toBe("2026-03-03T06:00:00.000Z");

    await h.client.registerPlugin({ name: "ops", schedulePatches: [{ plugin: "reports", schedule: "daily", cron: "30 7 * * *", input: { v: 2 } }] });
    const patched = (await h.time.getTimer({ timerId: "reports/daily" })).timer!;
    expect(patched.spec?.when).toEqual({ case: "cron", value: expect.objectContaining({ expression: "30 7 * * *" }) });
    expect(patched.input).toEqual({ v: 2 });
    expect(iso(ms(patched.nextDue))).toBe("2026-03-03T07:30:00.000Z");
    expect(iso(clock.armed()[0]?.atMs)).toBe("2026-03-03T07:30:00.000Z"); // re-armed in the registration's commit
    clock.set(Date.UTC(2026, 2, 3, 6)); // the declared moment: nothing any more
    expect(await occurrences(h, "reports/daily")).toEqual([]);
    clock.set(Date.UTC(2026, 2, 3, 7, 30));
    await until(() => rec.calls.length === 1, "the patched schedule's call");
    expect(rec.calls[0].input).toEqual({ v: 2 });
    expect(rec.calls[0].scheduled?.due.toISOString()).toBe("2026-03-03T07:30:00.000Z");

    // Disabled by a patch: no next due, nothing armed, no calls.
    clock.advance(HOUR);
    await h.client.registerPlugin({ name: "ops", schedulePatches: [{ plugin: "reports", schedule: "daily", cron: "30 7 * * *", disabled: true }] });
    const disabled = (await h.time.getTimer({ timerId: "reports/daily", previewCount: 3 })).timer!;
    expect(disabled).toMatchObject({ disabled: true, preview: [] });
    expect(disabled.nextDue).toBeUndefined();
    expect(clock.armed()).toEqual([]);
    clock.advance(3 * DAY);
    expect(rec.calls).toHaveLength(1);

    // The patch removed: the declaration again (cron, input), due from now.
    await h.client.registerPlugin({ name: "ops" });
    const restored = (await h.time.getTimer({ timerId: "reports/daily" })).timer!;
    expect(restored).toMatchObject({ disabled: false, input: { v: 1 } });
    expect(restored.spec?.when).toEqual({ case: "cron", value: expect.objectContaining({ expression: "0 6 * * *" }) });
    expect(iso(ms(restored.nextDue))).toBe("2026-03-07T06:00:00.000Z"); // now is 2026-03-06T08:30Z
    clock.set(Date.UTC(2026, 2, 7, 6));
    await until(() => rec.calls.length === 2, "the restored schedule's call");
    expect(rec.calls[1].input).toEqual({ v: 1 });

    // Two patchers: the one registered last wins; re-registering the other makes it the last.
    clock.advance(1_000);
    await h.client.registerPlugin({ name: "ops", schedulePatches: [{ plugin: "reports", schedule: "daily", cron: "0 8 * * *" }] });
    clock.advance(1_000);
    await h.client.registerPlugin({ name: "ops2", schedulePatches: [{ plugin: "reports", schedule: "daily", cron: "0 9 * * *" }] });
    const cronOf = async () => ((await h.time.getTimer({ timerId: "reports/daily" })).timer!.spec!.when.value as { expression: string }).expression;
    expect(await cronOf()).toBe("0 9 * * *");
    clock.advance(1_000);
    await h.client.registerPlugin({ name: "ops", schedulePatches: [{ plugin: "reports", schedule: "daily", cron: "0 10 * * *" }] });
    expect(await cronOf()).toBe("0 10 * * *");

    // A schedule removed from its manifest is removed (timer.unscheduled); the patches naming it are inert.
    await h.client.registerPlugin(manifestOf(reportsPlugin(rec, {})));
    await expectConnectError(h.time.getTimer({ timerId: "reports/daily" }), Code.NotFound);
    const unscheduled = await eventsOf(h.client, ["timer.unscheduled"]);
    expect(unscheduled.map((e) => e.data?.timer_id)).toEqual(["reports/daily"]);
    expect(unscheduled[0].actor).toBeUndefined();
    expect(clock.armed()).toEqual([]);
  });

  it("a schedule of another region is stored but made only by that region's owner", async () => {
    const schedules = { here: { action: "build", everyMs: 10_000n }, there: { action: "build", everyMs: 10_000n, region: 1 } };
    for (const region of [0, 1]) {
      const clock = new ManualClock(T0);
      const rec: Recorder = { calls: [], failing: false };
      const h = await harness(clock, rec, schedules, { region });
      const timers = (await h.time.listTimers({})).timers;
      const mine = region === 0 ? "reports/here" : "reports/there";
      const other = region === 0 ? "reports/there" : "reports/here";
      expect(timers.find((t) => t.id === mine)).toMatchObject({ region, nextDue: expect.anything() });
      expect(timers.find((t) => t.id === other)).toMatchObject({ region: 1 - region, disabled: false });
      expect(timers.find((t) => t.id === other)?.nextDue).toBeUndefined();
      clock.advance(10_000);
      await until(() => rec.calls.length === 1, "the region's call");
      clock.advance(60_000);
      await until(() => rec.calls.length === 2, "the region's next call");
      expect(new Set(rec.calls.map((c) => c.scheduled?.timerId))).toEqual(new Set([mine]));
      await h.owner.close();
    }
  });

  it("at start the declared timers are made to match the manifests: a folder manifest's schedule is created, changed with its file, and removed with it", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const pluginsDir = tempDir("chronolog-plugins-");
    const write = (schedules: Schedules) =>
      writeFileSync(
        join(pluginsDir, "reports.json"),
        JSON.stringify(toJson(PluginManifestSchema, create(PluginManifestSchema, manifestOf(reportsPlugin({ calls: [], failing: false }, schedules))))),
      );
    write({ a: { action: "build", cron: "0 6 * * *" }, b: { action: "build", everyMs: 60_000n } });
    let h = await ownerOn(clock, { dataDir, pluginsDir });
    expect((await h.time.listTimers({})).timers.map((t) => [t.id, iso(ms(t.nextDue))])).toEqual([
      ["reports/b", "2026-03-02T12:01:00.000Z"],
      ["reports/a", "2026-03-03T06:00:00.000Z"],
    ]);
    await h.owner.close();
    clock.advance(1_000);
    write({ a: { action: "build", cron: "0 7 * * *", zone: "Europe/Berlin" } });
    h = await ownerOn(clock, { dataDir, pluginsDir });
    expect((await h.time.listTimers({})).timers.map((t) => [t.id, iso(ms(t.nextDue))])).toEqual([["reports/a", "2026-03-03T06:00:00.000Z"]]); // 07:00 CET
    expect((await eventsOf(h.client, ["timer.scheduled", "timer.unscheduled"])).map((e) => `${e.type} ${e.data?.timer_id}`)).toEqual([
      "timer.scheduled reports/a",
      "timer.scheduled reports/b",
      "timer.scheduled reports/a",
      "timer.unscheduled reports/b",
    ]);
    // Unchanged at the next start: nothing written.
    await h.owner.close();
    h = await ownerOn(clock, { dataDir, pluginsDir });
    expect(await eventsOf(h.client, ["timer.scheduled", "timer.unscheduled"])).toHaveLength(4);
  });
});

describe("retries of failed occurrences", () => {
  it("a retry claimed inside the lookahead by an owner that then stopped is tried at its moment by the next one, not at once", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const rec: Recorder = { calls: [], failing: true };
    const options = { dataDir, timerLookaheadMs: 50, holds: false };
    const first = await harness(clock, rec, { hourly: { action: "flaky", cron: "0 * * * *" } }, options);
    const due = T0 + HOUR;
    clock.set(due);
    await until(async () => (await occurrences(first, "reports/hourly"))[0]?.status === "retry_wait", "the retry wait");
    clock.set(due + 10_000 - 30); // the retry is claimed 30 ms ahead of its moment...
    await until(async () => (await occurrences(first, "reports/hourly"))[0]?.status === "pending", "the retry claimed ahead");
    await first.owner.close(); // ...and the owner stops before it
    clock.set(due + 10_000 - 20);
    await harness(clock, rec, { hourly: { action: "flaky", cron: "0 * * * *" } }, options);
    await new Promise((r) => setTimeout(r, 200));
    expect(rec.calls).toHaveLength(1); // recovered, held until the retry's moment
    clock.set(due + 10_000);
    await until(() => rec.calls.length === 2, "the retry at its moment");
  });

  it("an occurrence whose action throws a TerminalError is not tried again: failed at once with timer.failed", async () => {
    const clock = new ManualClock(T0);
    const rec: Recorder = { calls: [], failing: true };
    const h = await harness(clock, rec, { hourly: { action: "final", cron: "0 * * * *" } });
    const due = T0 + HOUR;
    clock.set(due);
    await until(async () => (await occurrences(h, "reports/hourly"))[0]?.status === "failed", "the occurrence failed for good");
    expect((await occurrences(h, "reports/hourly"))[0]).toMatchObject({
      status: "failed",
      attempts: 1,
      next_attempt_ms: null,
      error: expect.stringContaining("the report's month is closed"),
    });
    expect(clock.armed()).toEqual([{ atMs: due + HOUR, delayMs: HOUR }]); // no retry armed: the next occurrence
    clock.advance(40_000); // past both default retry waits
    expect(rec.calls).toHaveLength(1);
    const failed = (await eventsOf(h.client, ["timer.failed"])).map((e) => e.data);
    expect(failed).toEqual([
      expect.objectContaining({ timer_id: "reports/hourly", attempts: 1, error: expect.stringContaining("the report's month is closed") }),
    ]);
  });

  it("a failing occurrence is tried 2 more times after 10 s then 30 s as the same occurrence (action.retried), then recorded failed; the next occurrence still comes", async () => {
    const clock = new ManualClock(T0);
    const rec: Recorder = { calls: [], failing: true };
    const h = await harness(clock, rec, { hourly: { action: "flaky", cron: "0 * * * *" } });
    const due = T0 + HOUR; // 13:00Z
    clock.set(due);
    await until(() => rec.calls.length === 1, "the first call");
    const id = rec.calls[0].callId;
    await until(async () => (await occurrences(h, "reports/hourly"))[0]?.status === "retry_wait", "the retry wait");
    expect(await occurrences(h, "reports/hourly")).toEqual([
      {
        id,
        due_ms: due,
        status: "retry_wait",
        attempts: 1,
        next_attempt_ms: due + 10_000,
        lateness_ms: 0,
        error: expect.stringContaining("the report store is down"),
      },
    ]);
    expect(clock.armed()).toEqual([{ atMs: due + 10_000, delayMs: 10_000 }]); // the one clock, armed for the retry

    clock.advance(9_999);
    expect(rec.calls).toHaveLength(1);
    clock.advance(1); // 13:00:10
    await until(() => rec.calls.length === 2, "the first retry");
    await until(async () => (await occurrences(h, "reports/hourly"))[0]?.attempts === 2, "the first retry recorded");
    expect((await occurrences(h, "reports/hourly"))[0]).toMatchObject({ status: "retry_wait", next_attempt_ms: due + 40_000 });
    expect(clock.armed()).toEqual([{ atMs: due + 40_000, delayMs: 30_000 }]);

    clock.advance(29_999);
    expect(rec.calls).toHaveLength(2);
    clock.advance(1); // 13:00:40
    await until(() => rec.calls.length === 3, "the second retry");
    await until(async () => (await occurrences(h, "reports/hourly"))[0]?.status === "failed", "the occurrence failed for good");
    expect((await occurrences(h, "reports/hourly"))[0]).toMatchObject({ attempts: 3, next_attempt_ms: null, lateness_ms: 0 });
    expect(clock.armed()).toEqual([{ atMs: due + HOUR, delayMs: HOUR - 40_000 }]); // no more tries: the next occurrence

    // Same occurrence each time: same call id, due moment and timer; attempts 1-3; the log shows the retries.
    expect(rec.calls.map((c) => [c.callId, c.attempt, c.scheduled?.due.getTime(), c.scheduled?.occurrenceId])).toEqual([
      [id, 1, due, id],
      [id, 2, due, id],
      [id, 3, due, id],
    ]);
    expect(await callHistory(h.client, id)).toEqual([
      "action.started#1",
      "action.failed#1",
      "action.retried#2",
      "action.failed#2",
      "action.retried#3",
      "action.failed#3",
    ]);
    const failed = await eventsOf(h.client, ["timer.failed"]);
    expect(failed.map((e) => e.data)).toEqual([
      {
        timer_id: "reports/hourly",
        occurrence_id: id,
        action: "reports.flaky",
        due_ms: due,
        attempts: 3,
        error: expect.stringContaining("the report store is down"),
      },
    ]);
    clock.advance(DAY / 2); // nothing more for it
    expect(rec.calls.filter((c) => c.callId === id)).toHaveLength(3);

    // The next occurrence comes (one, for the half day since) and completes.
    rec.failing = false;
    await until(() => rec.calls.length === 4, "the next occurrence");
    expect(rec.calls[3].callId).not.toBe(id);
    await until(async () => (await occurrences(h, "reports/hourly"))[1]?.status === "completed", "the next occurrence completed");
    expect(await callHistory(h.client, rec.calls[3].callId)).toEqual(["action.started#1", "action.completed#1"]);
  });

  it("configured retry_delays_ms: tries at exactly those waits; a pending retry survives an owner restart on the same data folder", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const rec: Recorder = { calls: [], failing: true };
    const schedules = { minutely: { action: "flaky", everyMs: 60_000n, retryDelaysMs: [2_000, 5_000] } };
    const first = await harness(clock, rec, schedules, { dataDir });
    const due = T0 + 60_000;
    clock.set(due);
    await until(async () => (await occurrences(first, "reports/minutely"))[0]?.status === "retry_wait", "the retry wait");
    const id = rec.calls[0].callId;
    expect(clock.armed()).toEqual([{ atMs: due + 2_000, delayMs: 2_000 }]);
    await first.owner.close(); // down during the wait

    const second = await harness(clock, rec, schedules, { dataDir });
    await until(() => clock.armed().length > 0, "the clock armed at the start (PostgreSQL reads its target without blocking)");
    expect(clock.armed()).toEqual([{ atMs: due + 2_000, delayMs: 2_000 }]); // armed again from the stored row
    expect(rec.calls).toHaveLength(1);
    clock.advance(2_000);
    await until(() => rec.calls.length === 2, "the retry after the restart");
    await until(async () => (await occurrences(second, "reports/minutely"))[0]?.attempts === 2, "the retry recorded");
    expect(clock.armed()).toEqual([{ atMs: due + 7_000, delayMs: 5_000 }]);
    clock.advance(5_000);
    await until(async () => (await occurrences(second, "reports/minutely"))[0]?.status === "failed", "failed for good");
    expect(rec.calls.map((c) => [c.callId, c.attempt])).toEqual([
      [id, 1],
      [id, 2],
      [id, 3],
    ]);
    expect(await callHistory(second.client, id)).toEqual([
      "action.started#1",
      "action.failed#1",
      "action.retried#2",
      "action.failed#2",
      "action.retried#3",
      "action.failed#3",
    ]);
    expect(clock.armed()).toEqual([{ atMs: due + 60_000, delayMs: 53_000 }]);
  });

  it("no executor within the action's timeout is a failed try too: retried at its wait, made once an executor is there", async () => {
    const clock = new ManualClock(T0);
    const h = await ownerOn(clock);
    const calls: ActionContext[] = [];
    const plugin = definePlugin({
      name: "lonely",
      actions: { ping: { timeoutMs: 200, run: (ctx) => void calls.push(ctx) } },
      manifest: { schedules: { often: { action: "ping", everyMs: 60_000n } } as never },
    });
    await h.client.registerPlugin(manifestOf(plugin)); // declared, but no executor hosts it yet
    clock.advance(60_000);
    await until(async () => (await occurrences(h, "lonely/often"))[0]?.status === "retry_wait", "the failed try (no executor within 200 ms)");
    expect((await occurrences(h, "lonely/often"))[0]).toMatchObject({ attempts: 1, next_attempt_ms: T0 + 70_000, error: expect.stringMatching(/no executor/) });
    expect(clock.armed()).toEqual([{ atMs: T0 + 70_000, delayMs: 10_000 }]);
    await executor(h.owner.url, plugin);
    clock.advance(10_000);
    await until(async () => (await occurrences(h, "lonely/often"))[0]?.status === "completed", "made on the retry");
    expect(calls).toHaveLength(1);
    expect(calls[0].scheduled?.due.getTime()).toBe(T0 + 60_000);
    // The first try never reached an executor, so nothing was recorded for it: the call's log starts at the retry.
    expect(await callHistory(h.client, calls[0].callId)).toEqual(["action.started#1", "action.completed#1"]);
  });

  it("a runtime timer's failed occurrence retries with the default waits (10 s, 30 s)", async () => {
    const clock = new ManualClock(T0);
    const rec: Recorder = { calls: [], failing: true };
    const h = await harness(clock, rec, {});
    await h.time.schedule({ timerId: "hourly-runtime", action: "reports.flaky", spec: { when: { case: "everyMs", value: 3_600_000n } } });
    clock.advance(HOUR);
    await until(async () => (await occurrences(h, "hourly-runtime"))[0]?.status === "retry_wait", "the retry wait");
    expect(clock.armed()).toEqual([{ atMs: T0 + HOUR + 10_000, delayMs: 10_000 }]);
    rec.failing = false;
    clock.advance(10_000);
    await until(async () => (await occurrences(h, "hourly-runtime"))[0]?.status === "completed", "completed on the retry");
    expect((await occurrences(h, "hourly-runtime"))[0]).toMatchObject({ attempts: 2, next_attempt_ms: null });
    expect(await callHistory(h.client, rec.calls[0].callId)).toEqual(["action.started#1", "action.failed#1", "action.retried#2", "action.completed#2"]);
  });
});

describe("lateness bound of a declared schedule", () => {
  it("an occurrence later than max_lateness_ms is skipped and recorded (timer.skipped); one within it is made with its original moment", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const rec: Recorder = { calls: [], failing: false };
    const schedules = { bounded: { action: "build", cron: "0 * * * *", maxLatenessMs: 300_000n } };
    const first = await harness(clock, rec, schedules, { dataDir });
    await first.owner.close();
    clock.set(T0 + HOUR + 10 * 60_000); // down through 13:00, back at 13:10: 10 min late, over 5 min
    const second = await harness(clock, rec, schedules, { dataDir });
    await until(async () => (await occurrences(second, "reports/bounded"))[0]?.status === "skipped", "the skipped occurrence");
    expect((await occurrences(second, "reports/bounded"))[0]).toMatchObject({
      due_ms: T0 + HOUR,
      attempts: 0,
      lateness_ms: 600_000,
      error: expect.stringContaining("300000 ms"),
    });
    const [skipped] = await eventsOf(second.client, ["timer.skipped"]);
    expect(skipped.data).toMatchObject({ timer_id: "reports/bounded", action: "reports.build", due_ms: T0 + HOUR, lateness_ms: 600_000 });
    expect(iso(ms((await second.time.getTimer({ timerId: "reports/bounded" })).timer?.nextDue))).toBe("2026-03-02T14:00:00.000Z");
    await second.owner.close();
    clock.set(T0 + 2 * HOUR + 2 * 60_000); // down through 14:00, back at 14:02: within the bound
    const third = await harness(clock, rec, schedules, { dataDir });
    await until(() => rec.calls.length === 1, "the late call within the bound");
    expect(rec.calls[0].scheduled?.due.getTime()).toBe(T0 + 2 * HOUR);
    await until(async () => (await occurrences(third, "reports/bounded"))[1]?.status === "completed", "recorded");
    expect((await occurrences(third, "reports/bounded"))[1]).toMatchObject({ lateness_ms: 120_000 });
  });
});

describe("cancel and unschedule racing the clock", () => {
  /** Lets the event loop turn `n` times (the race's offset). */
  const turns = async (n: number) => {
    for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
  };

  it("CancelDelay against the delay's moment: either it was cancelled and is never called, or it was made once and the cancel is NOT_FOUND", async () => {
    const clock = new ManualClock(T0);
    const rec: Recorder = { calls: [], failing: false };
    const h = await harness(clock, rec, {});
    const outcomes = { cancelled: 0, made: 0 };
    for (let i = 0; i < 40; i++) {
      const { delayId } = await h.time.delay({
        action: "reports.build",
        input: { i },
        when: { case: "intervalMs", value: 1_000n },
        overdue: { bound: { case: "unbounded", value: true } },
      });
      const cancel = h.time.cancelDelay({ delayId }).then(
        () => "cancelled" as const,
        (e: unknown) => e,
      );
      await turns(i % 8);
      clock.advance(1_000); // the moment: the clock claims it, racing the cancel in the committer
      const result = await cancel;
      if (result === "cancelled") {
        outcomes.cancelled++;
        clock.advance(60_000);
        expect(await occurrences(h, delayId)).toEqual([]);
        await expectConnectError(h.time.getTimer({ timerId: delayId }), Code.NotFound);
      } else {
        outcomes.made++;
        expect(result).toMatchObject({ code: Code.NotFound, rawMessage: expect.stringMatching(/already made/) });
        await until(() => rec.calls.some((c) => c.scheduled?.timerId === delayId), "the made delay's call");
        await until(async () => (await occurrences(h, delayId))[0]?.status === "completed", "recorded");
      }
    }
    // Each delay has exactly one outcome: its calls are 1 if made, 0 if cancelled.
    const calledIds = rec.calls.map((c) => c.scheduled?.timerId);
    expect(calledIds).toHaveLength(outcomes.made);
    expect(new Set(calledIds).size).toBe(outcomes.made);
    expect(outcomes.cancelled + outcomes.made).toBe(40);
    expect(outcomes.cancelled).toBeGreaterThan(0);
    expect(outcomes.made).toBeGreaterThan(0);
  });

  it("Unschedule against a recurring timer's moment: either the occurrence was claimed first and is called once, or it never is", async () => {
    const clock = new ManualClock(T0);
    const rec: Recorder = { calls: [], failing: false };
    const h = await harness(clock, rec, {});
    const outcomes = { before: 0, after: 0 };
    for (let i = 0; i < 40; i++) {
      const timerId = `race-${i}`;
      const { timer } = await h.time.schedule({ timerId, action: "reports.build", spec: { when: { case: "everyMs", value: 5_000n } } });
      const due = ms(timer?.nextDue)!;
      const unschedule = h.time.unschedule({ timerId });
      await turns(i % 8);
      clock.advance(5_000);
      await unschedule; // succeeds either way: the timer exists until it is removed
      clock.advance(60_000); // never again
      const [event] = (await eventsOf(h.client, ["timer.unscheduled"])).filter((e) => e.data?.timer_id === timerId);
      if (event.data?.next_due_ms === due) {
        outcomes.before++; // removed before the claim: nothing claimed, nothing called
        expect(await occurrences(h, timerId)).toEqual([]);
      } else {
        outcomes.after++; // claimed first (the timer had moved on): that one occurrence is called, once
        expect(event.data?.next_due_ms).toBe(due + 5_000);
        await until(async () => (await occurrences(h, timerId))[0]?.status === "completed", "the claimed occurrence");
        expect(await occurrences(h, timerId)).toHaveLength(1);
      }
      expect(rec.calls.filter((c) => c.scheduled?.timerId === timerId)).toHaveLength(event.data?.next_due_ms === due ? 0 : 1);
    }
    expect(outcomes.before + outcomes.after).toBe(40);
    expect(outcomes.before).toBeGreaterThan(0);
    expect(outcomes.after).toBeGreaterThan(0);
  });
});

describe("declared schedules across a real owner process killed with SIGKILL", { tags: ["serial"] }, () => {
  it("an every-second schedule from a --plugins folder across a ~3 s outage: one call for the outage, not a storm", async () => {
    const dataDir = tempDir();
    const pluginsDir = tempDir("chronolog-plugins-");
    const rec: Recorder = { calls: [], failing: false };
    const plugin = reportsPlugin(rec, { beat: { action: "build", everyMs: 1_000n } });
    writeFileSync(join(pluginsDir, "reports.json"), JSON.stringify(toJson(PluginManifestSchema, create(PluginManifestSchema, manifestOf(plugin)))));
    const children: OwnerProcess[] = [];
    cleanups.push(() => {
      for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill("SIGKILL");
    });
    const first = await spawnOwner(dataDir, ["--plugins", pluginsDir]);
    children.push(first);
    await executor(first.url, plugin);
    await until(() => rec.calls.length >= 2, "calls before the kill");
    first.child.kill("SIGKILL");
    await first.exited;
    const killedAt = Date.now();
    const before = rec.calls.length;
    while (Date.now() < killedAt + 3_000) await new Promise((r) => setTimeout(r, 100));
    const restartedAt = Date.now();
    const second = await spawnOwner(dataDir, ["--plugins", pluginsDir]);
    children.push(second);
    await executor(second.url, plugin);
    await until(() => rec.calls.length >= before + 3, "calls after the restart", 20_000);
    second.child.kill("SIGKILL");

    // Each occurrence is one call id with one due moment on the 1 s grid. (A call in flight at the
    // kill is called again after the restart with the same id: the same occurrence.)
    const dueOf = new Map(rec.calls.map((c) => [c.callId, c.scheduled!.due.getTime()]));
    const grid = rec.calls[0].scheduled!.due.getTime();
    expect([...dueOf.values()].every((d) => (d - grid) % 1_000 === 0)).toBe(true);
    expect(new Set(dueOf.values()).size).toBe(dueOf.size);
    // The ~3 s outage owes one call (the most recent moment before the restart), not three.
    const outage = [...dueOf.values()].filter((d) => d >= killedAt && d < restartedAt);
    expect(outage.length).toBeLessThanOrEqual(1);
    const afterRestart = [...dueOf.values()].filter((d) => d >= killedAt).sort((a, b) => a - b);
    expect(afterRestart[0]).toBeGreaterThan(restartedAt - 1_000);
  });
});
