import type { ProcessorDeclaration } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { compileFilter, matchAll, type Filter } from "../log/filter.js";
import type { EventRecord } from "../store/events.js";
import { keyPath, numberPath } from "../log/key-path.js";
import { compileRate, type RateSpec } from "../flow/rate.js";
import { limitsText } from "../flow/limits-text.js";
import { compileDebounce, type DebounceSpec } from "./debounce.js";

/** What a new event of a key with work in flight does: waits its turn, is skipped, or replaces the key's waiting event. */
export type IfActive = "queue" | "skip" | "coalesce";

/** Where a new processor's cursor starts. */
export type StartAt = { kind: "end" } | { kind: "beginning" } | { kind: "after"; seq: number };

/** A processor declaration, checked and compiled. Times in ms. */
export interface ProcessorSpec {
  /** `plugin.processor`. */
  name: string;
  /** Event types it takes; null: every type. */
  on: Set<string> | null;
  where: Filter;
  /** The key of an event (its lane); null: the event is its own lane. */
  keyOf: (event: EventRecord) => string | null;
  /** Deliveries of one key in flight at once (1: a lane, in order). */
  keyLimit: number;
  /** Deliveries in flight at once in all (Infinity: bounded by the executors' credits only). */
  concurrency: number;
  /** What a new event of a key with work in flight does. */
  ifActive: IfActive;
  /** Its flow limits in a few words (limitsText), for listings. */
  limits: string;
  /** The weight of a key in fair turns (1 unless declared). */
  weightOf: (key: string) => number;
  /** Deliveries started per period, per rate key; absent: no rate. */
  rate?: RateSpec;
  /** The priority of an event (higher first; 0 without a declared priority). */
  priorityOf: (event: EventRecord) => number;
  /** Bursts of a key's events delivered once; absent: every event delivered. */
  debounce?: DebounceSpec;
  ackTimeoutMs: number;
  /**
   * How long past its ack timeout a try (told to cancel) may still answer, ms: meanwhile no other
   * try of its event and no later event of its key starts (default: `ackTimeoutMs`).
   */
  timeoutGraceMs: number;
  /** Waits before each retry; tries in all = length + 1. */
  retryDelaysMs: number[];
  start: StartAt;
}

/** Default retries: 3 tries in all, each wait longer than the last. */
export const defaultRetryDelaysMs = [1_000, 5_000];
export const defaultAckTimeoutMs = 30_000;

/** Compiles a declaration (its `where` was already checked at registration). */
export function compileProcessor(plugin: string, name: string, decl: ProcessorDeclaration): ProcessorSpec {
  const position = decl.start?.position;
  const limit = decl.concurrencyLimit;
  const key = limit?.key || decl.key;
  const start: StartAt =
    position?.case === "beginning" ? { kind: "beginning" } : position?.case === "afterSeq" ? { kind: "after", seq: Number(position.value) } : { kind: "end" };
  return {
    name: `${plugin}.${name}`,
    on: decl.on.length > 0 ? new Set(decl.on) : null,
    where: compileFilter(decl.where as Record<string, unknown> | undefined, `processors.${name}.where`),
    keyOf: keyPath(key),
    keyLimit: limit?.limit || 1,
    // Without a key, a limit counts every delivery (as an action's).
    concurrency: limit ? limit.total || (key === "" ? limit.limit : 0) || decl.concurrency || Number.POSITIVE_INFINITY : decl.concurrency || 1,
    ifActive: (limit?.ifActive || "queue") as IfActive,
    limits: limitsText(decl),
    weightOf: weightsOf(limit?.weights),
    rate: compileRate(decl.rate),
    debounce: compileDebounce(decl.debounce),
    priorityOf: numberPath(decl.priority),
    ackTimeoutMs: decl.ackTimeoutMs || defaultAckTimeoutMs,
    timeoutGraceMs: decl.timeoutGraceMs ?? (decl.ackTimeoutMs || defaultAckTimeoutMs),
    retryDelaysMs: decl.retryDelaysMs.length > 0 ? [...decl.retryDelaysMs] : defaultRetryDelaysMs,
    start,
  };
}

/** A key's weight from a declaration's `weights` (1 for keys not listed, and without weights). */
function weightsOf(weights: Record<string, number> | undefined): (key: string) => number {
  const byKey = new Map(Object.entries(weights ?? {}));
  return byKey.size === 0 ? () => 1 : (key) => byKey.get(key) ?? 1;
}

/**
 * True when the processor takes the event: its type is in `on`, its data
 * matches `where`, and it is not this processor's own trouble record (a
 * processor on every type must not feed on its own retries). An event `where`
 * cannot be applied to (e.g. `$in` on a non-array) does not match: the filter
 * answers false (compileFilter), so it never stops the processor or the owner.
 */
export function takes(spec: ProcessorSpec, event: EventRecord): boolean {
  if (spec.on !== null && !spec.on.has(event.type)) return false;
  if ((event.type === "processor.retried" || event.type === "processor.failed") && event.data.processor === spec.name) return false;
  return spec.where === matchAll || spec.where(event.data); // without a where the data is not read (nor parsed)
}
