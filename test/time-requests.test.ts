// Time through the real transport (test/helpers/time-harness.ts, ManualClock): TimeService's bad
// input and permissions (nothing written), and Delay from outside with a client delay_id.

// @module-tag postgres

import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient as createRpcClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { createClient } from "../sdk/ts/src/client.js";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { expectConnectError, expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";
import { eventsOf } from "./helpers/log-snapshot.js";
import { T0, at, cleanUpAfterEach, cleanups, cron, every, executor, harness, ms, occurrences } from "./helpers/time-harness.js";

cleanUpAfterEach();

describe("TimeService bad input (nothing written)", () => {
  it("INVALID_ARGUMENT for bad cron, unknown zones, 6 fields, `at` in the past, short every_ms, Delay without overdue; NOT_FOUND for unknown actions; input checked against the schema", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const before = await logSnapshot(h.client);
    const fields = async (p: Promise<unknown>, code: Code, message: RegExp) =>
      (await expectConnectError(p, code, message)).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);
    const schedule = (spec: Parameters<typeof h.time.schedule>[0]["spec"], action = "remind.send") => h.time.schedule({ action, spec });
    expect(await fields(schedule(cron("0 25 * * *")), Code.InvalidArgument, /hour.*25/)).toEqual(["spec.cron.expression"]);
    expect(await fields(schedule(cron("0 9 * * *", "Mars/Olympus")), Code.InvalidArgument, /Mars\/Olympus/)).toEqual(["spec.cron.zone"]);
    expect(
      await fields(schedule(cron("0 0 9 * * *")), Code.InvalidArgument, /has 6 fields .*; expected 5: minute hour day-of-month month day-of-week/),
    ).toEqual(["spec.cron.expression"]);
    expect(await fields(schedule(cron("0 0 30 2 *")), Code.InvalidArgument, /./)).toEqual(["spec.cron.expression"]);
    expect(await fields(schedule(at(T0 - 5_000)), Code.InvalidArgument, /in the past/)).toEqual(["spec.at"]);
    expect(await fields(schedule(every(10)), Code.InvalidArgument, /every_ms/)).toEqual(["spec.every_ms"]);
    expect(await fields(h.time.schedule({ action: "remind.send" }), Code.InvalidArgument, /spec is required/)).toEqual(["spec"]);
    await expectConnectError(schedule(every(5_000), "remind.nope"), Code.NotFound, /remind\.nope/);
    expect(
      await fields(
        h.time.schedule({ action: "remind.strict", input: {}, spec: every(5_000) }),
        Code.InvalidArgument,
        /schema: input: must have required property 'to'/,
      ),
    ).toEqual(["input"]);
    expect(
      await fields(h.time.delay({ action: "remind.send", when: { case: "intervalMs", value: 1_000n } }), Code.InvalidArgument, /overdue is required/),
    ).toEqual(["overdue"]);
    expect(
      await fields(h.time.delay({ action: "remind.send", when: { case: "intervalMs", value: 1_000n }, overdue: {} }), Code.InvalidArgument, /bound/),
    ).toEqual(["overdue"]);
    expect(
      await fields(h.time.delay({ action: "remind.send", overdue: { bound: { case: "unbounded", value: true } } }), Code.InvalidArgument, /interval_ms or at/),
    ).toEqual(["when"]);
    expect(
      await fields(
        h.time.delay({
          action: "remind.send",
          when: { case: "at", value: timestampFromMs(T0 - 2_000) },
          overdue: { bound: { case: "unbounded", value: true } },
        }),
        Code.InvalidArgument,
        /past/,
      ),
    ).toEqual(["at"]);
    // Past JavaScript's Date range (±8.64e15 ms) too: INVALID_ARGUMENT, not INTERNAL.
    const beyond = (seconds: bigint) =>
      h.time.delay({
        action: "remind.send",
        when: { case: "at", value: { seconds, nanos: 1_000_000 } as never },
        overdue: { bound: { case: "unbounded", value: true } },
      });
    expect(await fields(beyond(8_640_000_000_000n), Code.InvalidArgument, /more than 100 years ahead/)).toEqual(["at"]);
    expect(await fields(beyond(-10_000_000_000_000n), Code.InvalidArgument, /at -10000000000000000 ms is in the past/)).toEqual(["at"]);
    // A Timestamp's nanos outside 0-999,999,999 would move the moment silently (2e9 nanos: 2 s later).
    const nanos = (n: number) => ({ seconds: BigInt(Math.floor(T0 / 1000) + 5), nanos: n }) as never;
    expect(
      await fields(
        h.time.delay({ action: "remind.send", when: { case: "at", value: nanos(-1) }, overdue: { bound: { case: "unbounded", value: true } } }),
        Code.InvalidArgument,
        /at\.nanos must be 0 to 999999999 \(got -1\)/,
      ),
    ).toEqual(["at.nanos"]);
    expect(await fields(schedule({ when: { case: "at", value: nanos(2_000_000_000) } } as never), Code.InvalidArgument, /nanos/)).toEqual(["spec.at.nanos"]);
    await expectUnchanged(h.client, before);
    // `at` up to 1 s in the past is accepted and fires at once.
    await h.time.schedule({ timerId: "just-past", action: "remind.send", spec: at(T0 - 500) });
    await until(() => h.calls.length === 1, "the just-past timer's call");
    expect(h.calls[0].scheduled?.due.getTime()).toBe(T0 - 500);
    expect(await eventsOf(h.client, ["timer.scheduled"])).toHaveLength(1);
  });

  it("a client needs the action's allow to schedule it; under a cause only executors may; nothing is written when refused", async () => {
    const tokens = { exec: "executor-token-0123456789", web: "client-token-0123456789" };
    const config = {
      principals: [
        { name: "ex", token: tokens.exec, role: "executor" as const },
        { name: "web", token: tokens.web, role: "client" as const },
      ],
    };
    const clock = new ManualClock(T0);
    const owner = await startTestOwner({ clock, timers: clock, config, heartbeatIntervalMs: 600_000, shutdownGraceMs: 200 });
    cleanups.push(() => owner.close());
    const plugin = definePlugin({ name: "p", actions: { open: { allow: ["*"], run: () => ({}) }, closed: { allow: ["partner"], run: () => ({}) } } });
    await executor(owner.url, plugin, tokens.exec);
    const web = createRpcClient(TimeService, createClient({ url: owner.url, token: tokens.web }).transport);
    const before = await logSnapshot(createClient({ url: owner.url, token: tokens.exec }));
    await expectConnectError(web.schedule({ action: "p.closed", spec: every(5_000) }), Code.PermissionDenied, /p\.closed/);
    await expectConnectError(
      web.schedule({ action: "p.open", spec: every(5_000), cause: { eventId: "x", position: 0 } }),
      Code.PermissionDenied,
      /under a cause/,
    );
    await expectUnchanged(createClient({ url: owner.url, token: tokens.exec }), before);
    const { timer } = await web.schedule({ action: "p.open", spec: every(5_000) });
    expect(timer?.id).toMatch(/^[0-9a-f-]{36}$/); // a fresh UUIDv7
    await expectConnectError(web.unschedule({ timerId: timer!.id, cause: { eventId: "x", position: 0 } }), Code.PermissionDenied);
  });
});

describe("Delay from outside with a client delay_id", () => {
  const unbounded = { bound: { case: "unbounded" as const, value: true } };

  it("the same Delay retried arms one delay, records one timer.scheduled and gets the same answer: while pending, after it was made, after it was cancelled", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const request = {
      delayId: "remind-order-7",
      action: "remind.send",
      input: { order: 7 },
      when: { case: "intervalMs" as const, value: 5_000n },
      overdue: unbounded,
    };
    const a = await h.time.delay(request);
    expect([a.delayId, ms(a.due)]).toEqual(["remind-order-7", T0 + 5_000]);
    clock.advance(1_000); // a retry later would be due later if it armed again
    const b = await h.time.delay(request);
    expect(b).toEqual(a);
    expect(await eventsOf(h.client, ["timer.scheduled"])).toHaveLength(1);
    expect(clock.armed().map((a) => a.atMs)).toEqual([T0 + 5_000]);

    clock.advance(4_000);
    await until(() => h.calls.length === 1, "the delayed call");
    await until(async () => (await occurrences(h, "remind-order-7"))[0]?.status === "completed", "the occurrence recorded");
    const before = await logSnapshot(h.client);
    expect(await h.time.delay(request)).toEqual(a); // made: the same answer, not armed again
    await expectUnchanged(h.client, before);
    expect((await h.time.getTimer({ timerId: "remind-order-7" })).timer?.nextDue).toBeUndefined();
    clock.advance(60_000);
    expect(h.calls).toHaveLength(1);

    // Cancelled (its row is gone): answered from the log's timer.scheduled, nothing armed.
    const cancelRequest = { ...request, delayId: "remind-order-8", when: { case: "at" as const, value: timestampFromMs(clock.now() + 10_000) } };
    const c = await h.time.delay(cancelRequest);
    await h.time.cancelDelay({ delayId: "remind-order-8" });
    await expectConnectError(h.time.getTimer({ timerId: "remind-order-8" }), Code.NotFound);
    const afterCancel = await logSnapshot(h.client);
    expect(await h.time.delay(cancelRequest)).toEqual(c);
    await expectUnchanged(h.client, afterCancel);
    await expectConnectError(h.time.getTimer({ timerId: "remind-order-8" }), Code.NotFound);
    clock.advance(20_000);
    expect(h.calls).toHaveLength(1);
    // The same through the TS SDK client.
    const viaSdk = await h.client.delay("remind.send", { order: 9 }, { intervalMs: 1_000 }, "unbounded", { delayId: "remind-order-9" });
    expect(await h.client.delay("remind.send", { order: 9 }, { intervalMs: 1_000 }, "unbounded", { delayId: "remind-order-9" })).toEqual(viaSdk);
    expect((await eventsOf(h.client, ["timer.scheduled"])).map((e) => e.data?.timer_id)).toEqual(["remind-order-7", "remind-order-8", "remind-order-9"]);
  });

  it("another request with the same delay_id is ALREADY_EXISTS (pending, made or cancelled), an id naming a schedule FAILED_PRECONDITION, bad ids and a delay_id under a cause INVALID_ARGUMENT; nothing written", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.client.registerPlugin({ name: "orders", events: { "order.placed": { allow: ["*"] } } });
    const placed = (await h.client.emit("order.placed", { id: 7 })).event!;
    const request = { delayId: "d-1", action: "remind.send", input: { order: 7 }, when: { case: "intervalMs" as const, value: 5_000n }, overdue: unbounded };
    await h.time.delay(request);
    await h.time.schedule({ timerId: "weekly", action: "remind.send", spec: every(60_000) });
    const fields = async (p: Promise<unknown>, code: Code, message: RegExp) =>
      (await expectConnectError(p, code, message)).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);
    const conflicts = async () => {
      const before = await logSnapshot(h.client);
      for (const other of [
        { input: { order: 8 } },
        { when: { case: "intervalMs" as const, value: 6_000n } },
        { when: { case: "at" as const, value: timestampFromMs(T0 + 5_000) } },
        { overdue: { bound: { case: "onTimeOrNever" as const, value: true } } },
      ]) {
        expect(await fields(h.time.delay({ ...request, ...other }), Code.AlreadyExists, /delay_id "d-1" already names a delay/)).toEqual(["delay_id"]);
      }
      await expectUnchanged(h.client, before);
    };
    await conflicts(); // pending
    clock.advance(5_000);
    await until(() => h.calls.length === 1, "the delayed call");
    await until(async () => (await occurrences(h, "d-1"))[0]?.status === "completed", "the call's end recorded"); // the log is still from here on
    await conflicts(); // made
    const before = await logSnapshot(h.client);
    expect(await fields(h.time.delay({ ...request, delayId: "weekly" }), Code.FailedPrecondition, /delay_id "weekly" names a runtime timer/)).toEqual([
      "delay_id",
    ]);
    for (const [bad, message] of [
      [" ", /delay_id is only whitespace/],
      ["a\u0001b", /delay_id contains a control character/],
      ["x".repeat(257), /delay_id is longer than 256/],
      ["plugin/schedule", /delay_id "plugin\/schedule" may not contain "\/"/],
    ] as const) {
      expect(await fields(h.time.delay({ ...request, delayId: bad }), Code.InvalidArgument, message)).toEqual(["delay_id"]);
    }
    expect(
      await fields(
        h.time.delay({ ...request, delayId: "d-2", cause: { eventId: placed.id, position: 0 } }),
        Code.InvalidArgument,
        /delay_id must be empty under a cause/,
      ),
    ).toEqual(["delay_id"]);
    await expectUnchanged(h.client, before);
    expect(h.calls).toHaveLength(1);
  });
});
