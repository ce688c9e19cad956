import type { JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import type { Principal } from "../auth/principal.js";
import { fail } from "../errors.js";
import type { ExecutorHub } from "../executors/hub.js";
import type { ActionCalls } from "../actions/index.js";
import { newId } from "../log/ids.js";
import { pageByteBudget } from "../log/read.js";
import { dismissFailed } from "../processors/dismissal.js";
import type { ProcessorEngine } from "../processors/engine.js";
import type { Processors } from "../processors/manager.js";
import { engineStatus, type ProcessorStatus } from "../processors/status.js";
import type { Committer } from "../store/committer.js";
import type { Db } from "../store/sql.js";
import type { CursorStatements, FailedDeliveryRow } from "../store/cursors.js";
import type { EventReads } from "../store/events.js";
import { checkCursorFloor } from "../log/read.js";
import { runMaintenanceSql } from "../store/sqlite/maintenance.js";
import { principalOf } from "./context.js";
import { eventToProto, msFromTimestamp } from "../proto-values.js";
import { pageSizeFromProto, seqFromProto } from "./convert.js";

/** What AdminService's reads need: the processors' states, and the store's cursors and log. */
export interface AdminReadDeps {
  /** Every declared processor's state, by name (a standby reads them from the store without blocking the event loop). */
  statuses(): ProcessorStatus[] | Promise<ProcessorStatus[]>;
  /** Failed deliveries of one processor by seq, or of all by processor and seq, read without blocking the event loop. */
  failed(processor?: string): Promise<FailedDeliveryRow[]>;
  /** The log's reads that do not block the event loop. */
  reads: EventReads;
}

/** Where a page of ListFailedDeliveries ended: the last failed delivery it listed. */
interface FailedKey {
  processor: string;
  seq: number;
}

function failedToken(key: FailedKey): string {
  return Buffer.from(JSON.stringify([key.processor, key.seq])).toString("base64url");
}

function parseFailedToken(token: string): FailedKey {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(token, "base64url").toString());
  } catch {
    // malformed: refused below
  }
  if (!Array.isArray(key) || typeof key[0] !== "string" || !Number.isSafeInteger(key[1]))
    fail("bad_request", "page_token is not one returned by ListFailedDeliveries", [{ field: "page_token", description: "malformed" }]);
  return { processor: key[0], seq: key[1] };
}

/**
 * The index in `rows` (by processor, then seq) of the first failed delivery after `key`: a page
 * goes on where the last one ended even when deliveries before it were redelivered or dismissed.
 */
function after(rows: readonly FailedKey[], key: FailedKey): number {
  const start = rows.findIndex((r) => r.processor === key.processor);
  if (start < 0) {
    // Every failed delivery of that processor went: the next processor in the list's order.
    const next = rows.findIndex((r) => r.processor > key.processor);
    return next < 0 ? rows.length : next;
  }
  let i = start;
  while (i < rows.length && rows[i].processor === key.processor && rows[i].seq <= key.seq) i++;
  return i;
}

/** What the AdminService handlers need. */
export interface AdminDeps {
  processors: Processors;
  actions: ActionCalls;
  hub: ExecutorHub;
  committer: Committer;
  /** The owner's connection: maintenance SQL checks statements on it and reads the database's path. */
  db: Db;
  cursors: CursorStatements;
  /** The log's reads that do not block the event loop. */
  reads: EventReads;
  /** As AdminReadDeps.failed. */
  failed(processor?: string): Promise<FailedDeliveryRow[]>;
  /** How many failed deliveries each processor has on record, read without blocking the event loop. */
  failureCounts(): Promise<Map<string, number>>;
  /** Where the log starts (retention removed what was before): a cursor below it is refused. */
  firstSeq?: () => number;
}

/**
 * AdminService's reads of what the store holds (ListProcessors, ListFailedDeliveries), which a
 * standby serves too; every method needs the admin role.
 */
export function adminReads(deps: AdminReadDeps): Pick<ServiceImpl<typeof AdminService>, "listProcessors" | "listFailedDeliveries"> {
  return {
    async listProcessors(_req, ctx) {
      admin(ctx);
      return { processors: (await deps.statuses()).map(statusToProto) };
    },
    async listFailedDeliveries(req, ctx) {
      admin(ctx);
      const pageSize = pageSizeFromProto(req.pageSize, 100, 1000);
      const all = await deps.failed(req.processor || undefined);
      if (all.length === 0 && req.processor !== "" && !(await deps.statuses()).some((p) => p.name === req.processor))
        fail("not_found", `no processor named ${JSON.stringify(req.processor)} with failed deliveries (use plugin.processor)`);
      const key = req.pageToken ? parseFailedToken(req.pageToken) : undefined;
      if (key && req.processor !== "" && key.processor !== req.processor)
        fail("bad_request", `page_token is of another processor's list than ${JSON.stringify(req.processor)}`, [
          { field: "page_token", description: "of another list" },
        ]);
      const first = key ? after(all, key) : 0;
      const page = all.slice(first, first + pageSize);
      // The events read together (PostgreSQL: pipelined on the async connection); one no longer in the log comes without its event.
      const reads = await Promise.all(page.map((f) => deps.reads.readWithin(f.seq - 1, 1, Number.POSITIVE_INFINITY)));
      // Within ReadLog's byte budget too (the events of failed deliveries may be large): at least one per page.
      const deliveries = [];
      let bytes = 0;
      for (const [i, f] of page.entries()) {
        const read = reads[i];
        const event = read.events[0]?.seq === f.seq ? read.events[0] : undefined;
        const size = event ? read.bytes : 0;
        if (deliveries.length > 0 && bytes + size > pageByteBudget) break;
        bytes += size;
        deliveries.push({
          processor: f.processor,
          seq: BigInt(f.seq),
          event: event && eventToProto(event),
          error: f.error,
          attempts: f.attempts,
          failedSeq: BigInt(f.failedSeq),
        });
      }
      const last = deliveries.at(-1);
      const more = first + deliveries.length < all.length;
      return { deliveries, nextPageToken: more && last ? failedToken({ processor: last.processor, seq: Number(last.seq) }) : "" };
    },
  };
}

/**
 * AdminService: every method needs the admin role; a refused
 * call records nothing. Changes are recorded as runtime events.
 */
export function adminService(deps: AdminDeps): ServiceImpl<typeof AdminService> {
  /** The engines' states, with their failure counts read without blocking the event loop. */
  const statesOf = async (engines: ProcessorEngine[]) => {
    const failures = await deps.failureCounts();
    return engines.map((engine) => engineStatus(engine, deps.committer.head, failures.get(engine.spec.name) ?? 0));
  };
  const status = async (engine: ProcessorEngine) => statusToProto((await statesOf([engine]))[0]);
  const engineOf = (name: string) => deps.processors.get(name) ?? fail("not_found", `no processor named ${JSON.stringify(name)} (use plugin.processor)`);
  return {
    ...adminReads({ statuses: () => statesOf(deps.processors.list()), failed: deps.failed, reads: deps.reads }),
    async moveCursor(req, ctx) {
      const by = admin(ctx).name;
      const engine = engineOf(req.processor);
      let floor: number;
      if (req.to.case === "ackFloor") {
        const head = deps.committer.head;
        floor = seqFromProto(req.to.value, "ack_floor");
        if (floor > head) fail("bad_request", `ack_floor ${floor} is past the log head ${head}`, [{ field: "ack_floor", description: `at most ${head}` }]);
      } else if (req.to.case === "at") {
        const head = deps.committer.head; // before the read: what commits after it may be at or after that time
        floor = ((await deps.reads.firstAtOrAfter(msFromTimestamp(req.to.value, "at"))) ?? head + 1) - 1;
      } else fail("bad_request", "give ack_floor or at", [{ field: "to", description: "required" }]);
      checkCursorFloor(floor, deps.firstSeq?.() ?? 0); // OUT_OF_RANGE below the log's start: those events were removed
      await engine.moveCursor(floor, by);
      // The cursor as moved: the replay the move starts may acknowledge more while the failure counts are read.
      const moved = engineStatus(engine, deps.committer.head, 0);
      const failures = await deps.failureCounts();
      return { processor: statusToProto({ ...moved, failures: failures.get(engine.spec.name) ?? 0 }) };
    },
    async setProcessorPaused(req, ctx) {
      const by = admin(ctx).name;
      const engine = engineOf(req.processor);
      const changed = await engine.setPaused(req.paused, by);
      return { processor: await status(engine), unchanged: !changed };
    },
    async redeliverFailed(req, ctx) {
      const by = admin(ctx).name;
      const count = await engineOf(req.processor).redeliver(
        req.seqs.map((s) => seqFromProto(s, "seqs")),
        by,
      );
      return { count };
    },
    async dismissFailed(req, ctx) {
      const by = admin(ctx).name;
      const seqs = req.seqs.map((s) => seqFromProto(s, "seqs"));
      const dismissed = await dismissFailed(
        { cursors: deps.cursors, failed: deps.failed, committer: deps.committer, declared: (p) => deps.processors.get(p) !== undefined },
        req.processor,
        seqs,
        req.all,
        by,
      );
      return { count: dismissed.length, seqs: dismissed.map(BigInt) };
    },
    listActions(_req, ctx) {
      admin(ctx);
      return {
        actions: deps.actions.statuses().map((a) => ({ ...a, rateWaits: BigInt(a.rateWaits), rateWaitMs: BigInt(a.rateWaitMs) })),
      };
    },
    listExecutors(_req, ctx) {
      admin(ctx);
      return {
        executors: deps.hub.list().map((s) => ({
          sessionId: s.id,
          executor: s.hosting.executor,
          instanceId: s.hosting.instanceId,
          principal: s.principal.name,
          processors: [...s.processors],
          actions: [...s.actions],
          pulses: s.hosting.pulses,
          credits: s.credits,
          inFlight: s.inFlight.size,
          connectedAt: timestampFromMs(s.connectedAtMs),
          lastSeenAt: timestampFromMs(s.lastSeenMs),
          sdk: s.hosting.sdk ?? "",
          sdkVersion: s.hosting.sdkVersion ?? "",
        })),
      };
    },
    async executeSql(req, ctx) {
      const by = admin(ctx).name;
      const result = await runMaintenanceSql(
        deps.committer,
        deps.db,
        req.sql,
        req.params?.values.map((v) => (v.kind.case === "nullValue" ? null : v.kind.value)) ?? [],
        { id: newId(), by },
      );
      return { rows: result.rows as JsonObject[], changes: BigInt(result.changes), seq: BigInt(result.seq) };
    },
  };
}

function statusToProto(status: ProcessorStatus) {
  return {
    name: status.name,
    ackFloor: BigInt(status.ackFloor),
    delivered: BigInt(status.delivered),
    lag: BigInt(status.lag),
    inFlight: status.inFlight,
    retries: BigInt(status.retries),
    failures: BigInt(status.failures),
    paused: status.paused,
    limits: status.limits,
    rateWaits: BigInt(status.rateWaits),
    rateWaitMs: BigInt(status.rateWaitMs),
    rateWaiting: status.rateWaiting,
    debounceHeld: BigInt(status.debounceHeld),
    debounceDeliveries: BigInt(status.debounceDeliveries),
    debounceEvents: BigInt(status.debounceEvents),
    latency: status.latency && {
      p50Ms: status.latency.p50Ms,
      p99Ms: status.latency.p99Ms,
      count: BigInt(status.latency.count),
      windowSeconds: status.latency.windowMs / 1000,
    },
  };
}

/** The caller, when it is an admin; PERMISSION_DENIED otherwise. */
function admin(ctx: HandlerContext): Principal {
  const principal = principalOf(ctx);
  if (principal.role !== "admin")
    fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not use AdminService; the admin role is needed`);
  return principal;
}
