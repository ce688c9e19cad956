// The causal tree of an event as timeline rows (views/timeline.tsx draws them): from the event at
// the top of its chain down, each event with the deliveries of the processors on its type and
// their tries, each action call with its attempts and outcome, each timer set with the calls its
// occurrences made. Built from the log alone: the events of the tree (ReadLog's cause filter,
// `descendants`), the processors' `on` types (the plugins' manifests) and, for admins, their
// cursors (whether a delivery is done).
//
// Where each event goes: under its cause; a call of time (an `action.started` without a cause,
// naming its timer) under the `timer.triggered` or `timer.backfilled` that names its call id, else
// under the last `timer.scheduled` of its timer before it; `timer.failed` and `timer.skipped`
// under that `timer.scheduled` too. Processor records (`processor.retried`, `.failed`) are the
// tries of their delivery; `action.retried`, `.completed` and `.failed` the attempts of their call.

import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { duration, ms } from "./format.js";

export type RowKind = "event" | "delivery" | "try" | "call" | "attempt" | "timer";

/** One line of the timeline. */
export interface Row {
  kind: RowKind;
  /** Unique among the rows. */
  key: string;
  depth: number;
  label: string;
  detail: string;
  /** The event the row links to (its page). */
  event?: Event;
  /** Where the row links when not to an event (a processor, the time view). */
  href?: string;
  startMs: number;
  /** Its end: undefined for a moment (an event) or something not ended. */
  endMs?: number;
  outcome: string;
  /** `ok`, `bad`, `warn` or "" (the badge's class). */
  tone: "ok" | "bad" | "warn" | "";
  /** The event of the page is this row's. */
  current: boolean;
}

/** What the rows are made from. */
export interface TreeInput {
  /** The event at the top of the chain. */
  root: Event;
  /** The events under it (ReadLog `cause` with `descendants`), in seq order. */
  under: Event[];
  /** Full processor names by the event types they are `on`. */
  processorsOn: Map<string, string[]>;
  /** Processors' cursors (ack floors), when the reader may see them (admins). */
  cursors?: Map<string, bigint>;
  /** The id of the event whose page this is. */
  currentId: string;
  /** Now, ms (a timer not yet due). */
  nowMs: number;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);
const callRecordTypes = new Set(["action.retried", "action.completed", "action.failed"]);
const processorRecordTypes = new Set(["processor.retried", "processor.failed"]);

/** The event that made `e` in the tree (see the module's comment), or undefined at the top. */
function parentOf(e: Event, byId: Map<string, Event>, events: Event[]): string | undefined {
  if (e.cause) return byId.has(e.cause) ? e.cause : undefined;
  const timerId = str(e.data?.timer_id);
  if (!timerId) return undefined;
  if (e.type === "action.started") {
    const callId = str(e.data?.call_id);
    const trigger = events.find(
      (t) =>
        (t.type === "timer.triggered" && t.data?.occurrence_id === callId) ||
        (t.type === "timer.backfilled" && Array.isArray(t.data?.occurrence_ids) && t.data.occurrence_ids.includes(callId)),
    );
    if (trigger) return trigger.id;
  }
  if (e.type !== "action.started" && e.type !== "timer.failed" && e.type !== "timer.skipped") return undefined;
  const set = events.filter((t) => t.type === "timer.scheduled" && t.data?.timer_id === timerId && t.seq < e.seq).at(-1);
  return set?.id;
}

/** The rows of the tree of `input.root`, depth first, each level in seq order. */
export function timelineRows(input: TreeInput): Row[] {
  const events = [input.root, ...input.under.filter((e) => e.id !== input.root.id)];
  const byId = new Map(events.map((e) => [e.id, e]));
  const children = new Map<string, Event[]>();
  for (const e of events.slice(1)) {
    const parent = parentOf(e, byId, events) ?? input.root.id;
    children.set(parent, [...(children.get(parent) ?? []), e]);
  }
  const kids = (id: string) => children.get(id) ?? [];
  const rows: Row[] = [];
  const row = (r: Omit<Row, "current">) => rows.push({ ...r, current: r.event?.id === input.currentId });

  const any = (e: Event, depth: number): void => {
    if (e.type === "action.started") call(e, depth);
    else if (e.type === "timer.scheduled") timer(e, depth);
    else event(e, depth);
  };

  const event = (e: Event, depth: number): void => {
    row({ kind: "event", key: e.id, depth, label: e.type, detail: e.id, event: e, startMs: ms(e.at), outcome: "", tone: "" });
    const under = kids(e.id);
    const records = under.filter((k) => processorRecordTypes.has(k.type) && str(k.data?.processor));
    const work = under.filter((k) => !records.includes(k));
    const processors = [...new Set([...(input.processorsOn.get(e.type) ?? []), ...records.map((r) => str(r.data?.processor))])];
    // With one processor on the type, the work under the event is its delivery's.
    for (const p of processors)
      delivery(
        e,
        p,
        records.filter((r) => r.data?.processor === p),
        processors.length === 1 ? work : [],
        depth + 1,
      );
    if (processors.length !== 1) for (const k of work) any(k, depth + 1);
  };

  const delivery = (e: Event, processor: string, records: Event[], work: Event[], depth: number): void => {
    const retried = records.filter((r) => r.type === "processor.retried");
    const failed = records.find((r) => r.type === "processor.failed");
    const cursor = input.cursors?.get(processor);
    let outcome = "";
    let tone: Row["tone"] = "";
    if (failed) [outcome, tone] = ["failed", "bad"];
    else if (cursor !== undefined) [outcome, tone] = cursor >= e.seq ? ["done", "ok"] : ["pending", "warn"];
    else if (work.length > 0) [outcome, tone] = ["delivered", "ok"];
    // It ends with the last of its records and of the work it did (a call it made: with the call's end).
    const ends = [...records, ...work].map((r) => (r.type === "action.started" ? callEnd(r) : ms(r.at)));
    const tries = failed ? Number(failed.data?.attempts ?? retried.length + 1) : retried.length + 1;
    row({
      kind: "delivery",
      key: `${e.id}/${processor}`,
      depth,
      label: processor,
      detail: `delivery of #${e.seq}, ${tries} ${tries === 1 ? "try" : "tries"}`,
      href: "/processors",
      startMs: ms(e.at),
      endMs: ends.length > 0 && outcome !== "pending" ? Math.max(...ends) : undefined,
      outcome,
      tone,
    });
    for (const r of [...retried, ...(failed ? [failed] : [])]) {
      const attempt = r.type === "processor.failed" ? Number(r.data?.attempts ?? tries) : Number(r.data?.attempt ?? 0);
      row({
        kind: "try",
        key: r.id,
        depth: depth + 1,
        label: `try ${attempt}`,
        detail: str(r.data?.error),
        event: r,
        startMs: ms(r.at),
        outcome: r.type === "processor.failed" ? "gave up" : `retry in ${duration(Number(r.data?.retry_in_ms ?? 0))}`,
        tone: "bad",
      });
    }
    for (const k of work) any(k, depth + 1);
  };

  /** When the call of `started` ended (its last record's commit), or its start while it runs. */
  const callEnd = (started: Event): number => {
    const end = kids(started.id).find((k) => k.type === "action.completed" || k.type === "action.failed");
    return ms((end ?? started).at);
  };

  const call = (started: Event, depth: number): void => {
    const under = kids(started.id);
    const records = under.filter((k) => callRecordTypes.has(k.type));
    const end = records.find((r) => r.type !== "action.retried");
    const attempts = Math.max(1, ...records.map((r) => Number(r.data?.attempt ?? 1)));
    const [outcome, tone]: [string, Row["tone"]] =
      end?.type === "action.completed"
        ? ["completed", "ok"]
        : end?.type === "action.failed"
          ? ["failed", "bad"]
          : [attempts > 1 ? "retrying" : "running", "warn"];
    row({
      kind: "call",
      key: started.id,
      depth,
      label: str(started.data?.action),
      detail: `call ${str(started.data?.call_id)}, ${attempts} ${attempts === 1 ? "attempt" : "attempts"}`,
      event: started,
      startMs: ms(started.at),
      endMs: end ? ms(end.at) : undefined,
      outcome,
      tone,
    });
    for (const r of records) {
      const error = str(r.data?.error);
      row({
        kind: "attempt",
        key: r.id,
        depth: depth + 1,
        label: `attempt ${Number(r.data?.attempt ?? 1) - (r.type === "action.retried" ? 1 : 0)}`,
        detail: error,
        event: r,
        startMs: ms(r.at),
        outcome: r.type === "action.completed" ? "completed" : r.type === "action.failed" ? "failed" : "failed, retried",
        tone: r.type === "action.completed" ? "ok" : "bad",
      });
    }
    for (const k of under.filter((k) => !records.includes(k))) any(k, depth + 1);
  };

  const timer = (set: Event, depth: number): void => {
    const under = kids(set.id);
    const calls = under.filter((k) => k.type === "action.started");
    const missed = under.find((k) => k.type === "timer.failed" || k.type === "timer.skipped");
    const spec = set.data?.spec as Record<string, unknown> | undefined;
    const dueMs = num(spec?.at) ?? num(set.data?.next_due_ms);
    const kind = str(set.data?.kind) || "timer";
    let outcome = "";
    let tone: Row["tone"] = "";
    if (missed) [outcome, tone] = [missed.type === "timer.failed" ? "failed" : "skipped", "bad"];
    else if (calls.length > 0) [outcome, tone] = [`${calls.length} ${calls.length === 1 ? "call" : "calls"} made`, "ok"];
    else if (dueMs !== undefined && dueMs > input.nowMs) [outcome, tone] = [`due in ${duration(dueMs - input.nowMs)}`, "warn"];
    else if (dueMs !== undefined) [outcome, tone] = ["no call yet", "warn"];
    const every = num(spec?.every_ms);
    const when = spec?.cron
      ? `cron ${str(spec.cron)}`
      : every !== undefined
        ? `every ${duration(every)}`
        : dueMs !== undefined
          ? `in ${duration(dueMs - ms(set.at))}`
          : "";
    row({
      kind: "timer",
      key: set.id,
      depth,
      label: `${kind} ${str(set.data?.action)}`,
      detail: `timer ${str(set.data?.timer_id)}${when ? `, ${when}` : ""}`,
      event: set,
      startMs: ms(set.at),
      endMs: kind === "delay" || spec?.at !== undefined ? dueMs : undefined,
      outcome,
      tone,
    });
    for (const k of under) any(k, depth + 1);
  };

  any(input.root, 0);
  return rows;
}

/** The trace viewer's address of trace `traceId` (the config's `console.trace_url`, `{trace_id}` replaced); "" without a URL or a trace id. */
export function traceHref(traceUrl: string | undefined, traceId: string): string {
  return traceUrl && traceId ? traceUrl.replace("{trace_id}", encodeURIComponent(traceId)) : "";
}

/** The trace id an event carries (a `trace_id`, or the trace of a W3C `traceparent`), "" when none. */
export function traceIdOf(event: Event): string {
  const carried = event as unknown as { traceId?: unknown; traceparent?: unknown };
  if (typeof carried.traceId === "string" && carried.traceId) return carried.traceId;
  const parent = typeof carried.traceparent === "string" ? /^[0-9a-f]{2}-([0-9a-f]{32})-/.exec(carried.traceparent) : null;
  return parent?.[1] ?? "";
}
