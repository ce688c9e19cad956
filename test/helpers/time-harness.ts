// The harness of the time suites (time*.test.ts): an in-process owner on a ManualClock passed as both
// `clock` and `timers` (the TimerHost where the owner arms its one timer), its clients, and an SDK
// executor hosting the `remind` plugin. Owners get a 10-minute heartbeat interval so a manual clock
// moved by days never trips the executor watchdog.

import { timestampFromMs, timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { createClient as createRpcClient, type Client } from "@connectrpc/connect";
import { afterEach } from "vitest";
import type { ManualClock } from "../../server/src/clock.js";
import { createClient, type ChronologClient } from "../../sdk/ts/src/client.js";
import { runExecutor, type ActionContext, type Executor } from "../../sdk/ts/src/executor.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { definePlugin, manifestOf, type PluginDefinition } from "../../sdk/ts/src/plugin.js";
import { ownerRows, startTestOwner } from "./owner.js";

export type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
/** Run after each test, last first (see {@link cleanUpAfterEach}). */
export const cleanups: (() => Promise<void> | void)[] = [];

/** Registers the afterEach that runs {@link cleanups}: call once at a test file's top. */
export function cleanUpAfterEach(): void {
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
  });
}

/** 2026-03-02T12:00:00Z, a Monday. */
export const T0 = Date.UTC(2026, 2, 2, 12);
export const DAY = 86_400_000;

export interface Harness {
  owner: TestOwner;
  client: ChronologClient;
  time: Client<typeof TimeService>;
  admin: Client<typeof AdminService>;
  /** Every invocation the executor ran, in order. */
  calls: ActionContext[];
}

/** A plugin whose actions record their invocations in `calls`. */
export function remindPlugin(calls: ActionContext[]): PluginDefinition {
  return definePlugin({
    name: "remind",
    actions: {
      send: {
        allow: ["*"],
        run(ctx) {
          calls.push(ctx);
          return { n: calls.length };
        },
      },
      strict: {
        allow: ["*"],
        inputSchema: { type: "object", required: ["to"], properties: { to: { type: "string" } } },
        run: () => ({}),
      },
      quick: {
        allow: ["*"],
        timeoutMs: 200, // waits for a host at most this long
        run(ctx) {
          calls.push(ctx);
          return {};
        },
      },
    },
  });
}

export async function executor(url: string, plugin: PluginDefinition, token?: string, holds?: boolean): Promise<Executor> {
  const ex = runExecutor({ url, plugins: [plugin], credits: 16, maxBackoffMs: 200, token, holds, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  return ex;
}

/**
 * An in-process owner on `clock` (also its TimerHost), its clients, and an executor hosting
 * `remind` (`holds`: false for one the owner sends calls of time to at their moment on `clock`).
 */
export async function harness(
  clock: ManualClock,
  options: { dataDir?: string; calls?: ActionContext[]; executor?: boolean; lookaheadMs?: number; holds?: boolean } = {},
): Promise<Harness> {
  const lookahead = options.lookaheadMs === undefined ? {} : { timerLookaheadMs: options.lookaheadMs };
  const owner = await startTestOwner({
    clock,
    timers: clock,
    heartbeatIntervalMs: 600_000,
    shutdownGraceMs: 200,
    ...lookahead,
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  const closeOwner = owner.close.bind(owner);
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= closeOwner());
  cleanups.push(close);
  const client = createClient({ url: owner.url });
  const calls = options.calls ?? [];
  const plugin = remindPlugin(calls);
  await client.registerPlugin(manifestOf(plugin));
  if (options.executor !== false) await executor(owner.url, plugin, undefined, options.holds);
  return {
    owner: Object.assign(owner, { close }),
    client,
    time: createRpcClient(TimeService, client.transport),
    admin: createRpcClient(AdminService, client.transport),
    calls,
  };
}

export const at = (ms: number) => ({ when: { case: "at" as const, value: timestampFromMs(ms) } });
export const every = (ms: number) => ({ when: { case: "everyMs" as const, value: BigInt(ms) } });
export const cron = (expression: string, zone = "") => ({ when: { case: "cron" as const, value: { expression, zone } } });
export const ms = (t: Timestamp | undefined) => (t ? timestampMs(t) : undefined);
export const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

/** The occurrence rows of `timerId`, by due moment. */
export function occurrences(h: Harness, timerId: string): Promise<Record<string, unknown>[]> {
  return ownerRows(h, "SELECT id, due_ms, status, attempts, call_id, lateness_ms, error FROM timer_occurrences WHERE timer_id = ? ORDER BY due_ms", [timerId]);
}
