// TimeService's order of checks and messages for schedules (shape, who acts, NOT_FOUND, permission,
// input, state; nothing written when refused), and the CLI's pause/resume/trigger/backfill-timer.

// @module-tag postgres

import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient as createRpcClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { createClient } from "../sdk/ts/src/client.js";
import { CatchUpPolicy, TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { cli } from "./helpers/cli.js";
import { eventsOf, expectConnectError, expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { until } from "./helpers/until.js";
import { DAY, HOUR, T0, cleanUpAfterEach, cron, every, fields, harness } from "./helpers/schedule-harness.js";

cleanUpAfterEach();

describe("TimeService: one order of checks, and clearer messages", () => {
  const tokens = { admin: "admin-token-0123456789", web: "web-client-token-0123", exec: "executor-token-0123456", partner: "partner-token-0123456789" };
  const config = {
    principals: [
      { name: "ops", token: tokens.admin, role: "admin" as const },
      { name: "web", token: tokens.web, role: "client" as const },
      { name: "worker", token: tokens.exec, role: "executor" as const },
      { name: "partner", token: tokens.partner, role: "client" as const },
    ],
  };

  it("shape first (INVALID_ARGUMENT), then who acts, then NOT_FOUND, then the action's allow or managing the timer (PERMISSION_DENIED), then the input, then state; nothing written", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { config, token: tokens.exec });
    const ops = createClient({ url: h.owner.url, token: tokens.admin });
    const web = createClient({ url: h.owner.url, token: tokens.web });
    const webTime = createRpcClient(TimeService, web.transport);
    await createClient({ url: h.owner.url, token: tokens.partner }).schedule("jobs.closed", {}, { everyMs: HOUR }, { timerId: "closed-timer" });
    const before = await logSnapshot(ops);

    // A bad expression from a caller who may not call the action: the request's shape is checked first.
    expect(await fields(webTime.schedule({ action: "jobs.closed", spec: cron("0 25 * * *") }), Code.InvalidArgument, /hour/)).toEqual(["spec.cron.expression"]);
    expect(
      await fields(
        webTime.schedule({ action: "jobs.nope", spec: cron("0 9 * * 1 2026") }),
        Code.InvalidArgument,
        /has 6 fields \("0" "9" "\*" "\*" "1" "2026"\); expected 5: minute hour day-of-month month day-of-week/,
      ),
    ).toEqual(["spec.cron.expression"]);
    expect(
      await fields(
        webTime.schedule({ action: "jobs.closed", spec: every(HOUR), policy: { catchUp: CatchUpPolicy.ALL_WITHIN_WINDOW } }),
        Code.InvalidArgument,
        /catch_up_window_ms/,
      ),
    ).toEqual(["policy.catch_up_window_ms"]);
    expect(
      await fields(
        webTime.schedule({ action: "jobs.closed", spec: every(HOUR), policy: { start: timestampFromMs(T0 + DAY), end: timestampFromMs(T0) } }),
        Code.InvalidArgument,
        /policy\.end .* must be after policy\.start/,
      ),
    ).toEqual(["policy.end"]);
    expect(
      await fields(
        webTime.schedule({ action: "jobs.closed", spec: { when: { case: "at", value: timestampFromMs(T0 + HOUR) } }, policy: { jitterMs: 5n } }),
        Code.InvalidArgument,
        /recurring timers/,
      ),
    ).toEqual(["policy"]);
    expect(await fields(webTime.pauseTimer({ timerId: "closed-timer", note: "x".repeat(1_001) }), Code.InvalidArgument)).toEqual(["note"]);
    // Then who acts: a client never acts under a cause.
    await expectConnectError(
      webTime.pauseTimer({ timerId: "nope", cause: { eventId: "x", position: 0 } }),
      Code.PermissionDenied,
      /only executors act under a cause/,
    );
    // Then what the request names: NOT_FOUND.
    await expectConnectError(webTime.schedule({ action: "jobs.nope", spec: every(HOUR) }), Code.NotFound, /jobs\.nope/);
    await expectConnectError(webTime.pauseTimer({ timerId: "nope" }), Code.NotFound, /no timer "nope"/);
    // Then the permission: the action's allow; managing a timer needs it too; declared schedules are the admins'.
    await expectConnectError(
      webTime.schedule({ action: "jobs.closed", spec: every(HOUR), input: { not: "checked yet" } }),
      Code.PermissionDenied,
      /may not schedule jobs\.closed \(allow: partner\)/,
    );
    for (const call of [
      () => webTime.pauseTimer({ timerId: "closed-timer" }),
      () => webTime.triggerTimer({ timerId: "closed-timer" }),
      () => webTime.unschedule({ timerId: "closed-timer" }),
    ]) {
      await expectConnectError(call(), Code.PermissionDenied, /may not (pause|trigger|cancel)/); // one at a time: none is left rejected unawaited
    }
    // Then the input against the action's schema: the missing property is named on `input`.
    const missing = await expectConnectError(
      web.schedule("jobs.strict", {}, { everyMs: HOUR }),
      Code.InvalidArgument,
      /input: must have required property 'items'/,
    );
    expect(missing.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description])).toEqual([
      ["input", "must have required property 'items' (rule: required)"],
    ]);
    // interval_ms and every_ms: one message for every out-of-range ms value.
    const big = await expectConnectError(
      webTime.delay({ action: "jobs.run", when: { case: "intervalMs", value: 2n ** 60n }, overdue: { bound: { case: "unbounded", value: true } } }),
      Code.InvalidArgument,
    );
    const far = await expectConnectError(
      webTime.delay({ action: "jobs.run", when: { case: "intervalMs", value: 4_000_000_000_000n }, overdue: { bound: { case: "unbounded", value: true } } }),
      Code.InvalidArgument,
    );
    expect(big.rawMessage).toBe("interval_ms must be from 0 to 3162240000000 ms, got 1152921504606846976");
    expect(far.rawMessage).toBe("interval_ms must be from 0 to 3162240000000 ms, got 4000000000000");
    expect((await expectConnectError(webTime.schedule({ action: "jobs.run", spec: every(2 ** 60) }), Code.InvalidArgument)).rawMessage).toMatch(
      /^spec\.every_ms must be from 1000 to 3162240000000 ms, got \d+$/,
    );
    expect((await expectConnectError(webTime.schedule({ action: "jobs.run", spec: every(10) }), Code.InvalidArgument)).rawMessage).toBe(
      "spec.every_ms must be from 1000 to 3162240000000 ms, got 10",
    );
    await expectUnchanged(ops, before);

    // The declared schedule's zone and a runtime one's: stored with the canonical IANA spelling.
    const utc = await web.schedule("jobs.run", {}, { cron: "0 9 * * *", zone: "utc" });
    expect(utc.spec?.when.value).toMatchObject({ zone: "UTC" });
    const [scheduled] = (await eventsOf(ops, ["timer.scheduled"])).filter((e) => e.data?.timer_id === utc.id);
    expect(scheduled.data?.spec).toEqual({ cron: "0 9 * * *", zone: "UTC" });
    // An admin manages anything; the client that may call the action manages its runtime timer.
    expect((await web.pauseTimer(utc.id, { note: "mine" })).unchanged).toBe(false);
    expect((await ops.pauseTimer("closed-timer")).unchanged).toBe(false);
  });

  it("declared schedules are managed by admins (and code under a cause): a client that may call the action gets PERMISSION_DENIED", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { config, token: tokens.exec, schedules: { hourly: { action: "run", cron: "0 * * * *" } } });
    const web = createClient({ url: h.owner.url, token: tokens.web });
    const ops = createClient({ url: h.owner.url, token: tokens.admin });
    await expectConnectError(web.pauseTimer("jobs/hourly"), Code.PermissionDenied, /declared schedules are managed by admins/);
    await expectConnectError(web.backfillTimer("jobs/hourly", T0 - HOUR, T0), Code.PermissionDenied, /declared schedules are managed by admins/);
    expect((await ops.pauseTimer("jobs/hourly", { note: "ops" })).timer.paused).toBe(true);
    // Code under a cause (an executor) may: e.g. a processor resuming it.
    await ops.registerPlugin({ name: "orders", events: { "order.placed": { allow: ["*"] } } });
    const placed = (await ops.emit("order.placed", {})).event!;
    expect((await h.client.resumeTimer("jobs/hourly", { note: "from code", cause: { eventId: placed.id, position: 0 } })).timer.paused).toBe(false);
    const [resumed] = await eventsOf(ops, ["timer.resumed"]);
    expect(resumed).toMatchObject({ cause: placed.id, data: { note: "from code" } });
  });
});

describe("chronolog pause-timer, resume-timer, trigger-timer, backfill-timer", { tags: ["serial"] }, () => {
  it("pauses, resumes, triggers and backfills from the command line", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.client.schedule("jobs.run", {}, { cron: "0 * * * *" }, { timerId: "hourly" });
    const run = (args: string[]) => cli([...args, "--url", h.owner.url]);
    expect((await run(["pause-timer", "hourly", "--note", "cli"])).stdout).toBe("hourly: paused\n");
    expect((await run(["pause-timer", "hourly"])).stdout).toBe("hourly: already paused\n");
    expect((await run(["timers"])).stdout).toMatch(/hourly\s+runtime\s+jobs\.run\s+cron "0 \* \* \* \*" in UTC\s+paused/);
    expect((await run(["resume-timer", "hourly"])).stdout).toBe("hourly: resumed, next due 2026-03-02T13:00:00.000Z\n");
    expect((await run(["resume-timer", "hourly"])).stdout).toBe("hourly: was not paused\n");
    expect((await run(["trigger-timer", "hourly"])).stdout).toMatch(/^hourly: triggered occurrence [0-9a-f]{32} due 2026-03-02T12:00:00\.000Z\n$/);
    const backfill = await run(["backfill-timer", "hourly", "--start", "2026-03-02T09:00:00Z", "--end", "2026-03-02T11:00:00Z"]);
    expect(backfill.stdout).toMatch(/2026-03-02T09:00:00\.000Z\s+[0-9a-f]{32}\s+made\n2026-03-02T10:00:00\.000Z\s+[0-9a-f]{32}\s+made/);
    await until(() => h.calls.length === 3, "the triggered and backfilled calls");
    const bad = await run(["backfill-timer", "hourly", "--start", "yesterday", "--end", "2026-03-02T11:00:00Z"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--start must be an RFC 3339 time with its offset/);
  });
});
