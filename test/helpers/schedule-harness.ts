// The harness of the schedule suites (schedule-*.test.ts): instants and policies for the pure rules,
// and an in-process owner on a ManualClock (its clock and its TimerHost: `clock.set/advance` rings
// what the owner armed) with an SDK executor hosting the `jobs` plugin.

import { timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { type Code, createClient as createRpcClient, type Client } from "@connectrpc/connect";
import { afterEach } from "vitest";
import type { ManualClock } from "../../server/src/clock.js";
import { defaultSchedulePolicy, type SchedulePolicy, type TimerSpec } from "../../server/src/store/timer-records.js";
import type { TimerMoments } from "../../server/src/time/moments.js";
import { owedOccurrences } from "../../server/src/time/owed.js";
import { createClient, type ChronologClient } from "../../sdk/ts/src/client.js";
import { runExecutor, type ActionContext } from "../../sdk/ts/src/executor.js";
import { type DstGap, type DstRepeated, TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { definePlugin, type PluginDefinition, type ScheduleDefinition } from "../../sdk/ts/src/plugin.js";
import { expectConnectError } from "./log-snapshot.js";
import { ownerRows, startTestOwner } from "./owner.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
/** Run after each test, last first (see {@link cleanUpAfterEach}). */
const cleanups: (() => Promise<void> | void)[] = [];

/** Registers the afterEach that runs the cleanups: call once at a test file's top. */
export function cleanUpAfterEach(): void {
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
  });
}

/** 2026-03-02T12:00:00Z, a Monday. */
export const T0 = Date.UTC(2026, 2, 2, 12);
export const MIN = 60_000;
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const iso = (t: number | undefined | null) => (t === undefined || t === null ? t : new Date(t).toISOString());
export const ms = (t: Timestamp | undefined) => (t ? timestampMs(t) : undefined);
export const at = (s: string) => Date.parse(s);

/** A policy: the defaults with `p` over them. */
export const policy = (p: Partial<SchedulePolicy> = {}): SchedulePolicy => ({ ...defaultSchedulePolicy, ...p });

export interface Harness {
  owner: TestOwner;
  client: ChronologClient;
  time: Client<typeof TimeService>;
  calls: ActionContext[];
  /** Runs of `jobs.slow` wait for this to be set true. */
  gate: { open: boolean };
}

/** The `jobs` plugin: `run` records its calls; `slow` records and waits for the gate; `strict` has an input schema; `closed` allows no one from outside. */
export function jobsPlugin(calls: ActionContext[], gate: { open: boolean }, schedules: Record<string, ScheduleDefinition> = {}): PluginDefinition {
  return definePlugin({
    name: "jobs",
    actions: {
      run: { allow: ["*"], run: (ctx) => void calls.push(ctx) },
      slow: {
        allow: ["*"],
        async run(ctx) {
          calls.push(ctx);
          while (!gate.open) await new Promise((r) => setTimeout(r, 5));
        },
      },
      strict: { allow: ["*"], inputSchema: { type: "object", required: ["items"], properties: { items: { type: "array" } } }, run: () => ({}) },
      closed: { allow: ["partner"], run: (ctx) => void calls.push(ctx) },
    },
    schedules,
  });
}

export async function harness(
  clock: ManualClock,
  options: {
    dataDir?: string;
    schedules?: Record<string, ScheduleDefinition>;
    config?: NonNullable<Parameters<typeof startTestOwner>[0]>["config"];
    token?: string;
    holds?: boolean;
    lookaheadMs?: number;
  } = {},
): Promise<Harness> {
  const owner = await startTestOwner({
    clock,
    timers: clock,
    heartbeatIntervalMs: 600_000,
    shutdownGraceMs: 200,
    ...(options.lookaheadMs === undefined ? {} : { timerLookaheadMs: options.lookaheadMs }),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.config ? { config: options.config } : {}),
  });
  let closed: Promise<void> | undefined;
  const closeOwner = owner.close.bind(owner);
  const close = () => (closed ??= closeOwner());
  cleanups.push(close);
  const calls: ActionContext[] = [];
  const gate = { open: true };
  const ex = runExecutor({
    url: owner.url,
    token: options.token,
    plugins: [jobsPlugin(calls, gate, options.schedules)],
    credits: 16,
    maxBackoffMs: 200,
    holds: options.holds,
    onError: () => {},
  });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  const client = createClient({ url: owner.url, token: options.token });
  return { owner: Object.assign(owner, { close }), client, time: createRpcClient(TimeService, client.transport), calls, gate };
}

/** The occurrence rows of `timerId`, by due moment. */
export function occurrences(h: Harness, timerId: string): Promise<Record<string, unknown>[]> {
  return ownerRows(h, "SELECT id, due_ms, status, origin, error FROM timer_occurrences WHERE timer_id = ? ORDER BY due_ms, id", [timerId]);
}

export const every = (n: number) => ({ when: { case: "everyMs" as const, value: BigInt(n) } });
export const cron = (expression: string, zone = "", dst?: { gap?: DstGap; repeated?: DstRepeated }) => ({
  when: { case: "cron" as const, value: { expression, zone, dst } },
});
export const fields = async (p: Promise<unknown>, code: Code, message: RegExp = /./) =>
  (await expectConnectError(p, code, message)).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);

/** The single occurrence the catch-up policy "latest" owes at `nowMs`: the most recent due moment, and the next one after it. */
export function owedOccurrence(timer: TimerMoments, nowMs: number): { dueMs: number; nextDueMs: number | null } {
  const owed = owedOccurrences({ ...timer, policy: { ...(timer.policy ?? defaultSchedulePolicy), catchUp: "latest", catchUpWindowMs: 0 } }, nowMs);
  return { dueMs: owed.dueMs[owed.dueMs.length - 1] ?? (timer.nextDueMs as number), nextDueMs: owed.nextDueMs };
}

/** An every-minute timer anchored at T0 + 1 min, next due `nextDueMs`. */
export const minutely = (nextDueMs: number, p: Partial<SchedulePolicy> = {}, occurrences = 0) => ({
  id: "t",
  spec: { kind: "every", everyMs: MIN } as TimerSpec,
  nextDueMs,
  policy: policy({ anchorMs: T0 + MIN, ...p }),
  occurrences,
});
