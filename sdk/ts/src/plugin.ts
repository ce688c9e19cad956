import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { PulseScope, RetentionKeep, type PluginManifestSchema } from "./gen/chronolog/v1/plugin_pb.js";
import type { ActionContext } from "./action.js";
import { cancelOnOf, dstOf, schedulePolicyOf, type CancelOnOption, type DstOptions, type SchedulePolicyOptions } from "./time-requests.js";
import type { DeliveryContext } from "./executor.js";

/** An event type declaration. */
export interface EventDefinition {
  /** JSON Schema (draft 2020-12) for the data. */
  schema?: JsonObject;
  /** Who may emit it from outside: `*`, `role:<role>` or principal names. */
  allow?: string[];
  /** Who may read it, besides admins and the executors that may host the plugin: `*`, `role:<role>` or principal names. Default: everyone reaching the event's space. */
  read?: string[];
  description?: string;
}

/** A processor in code. Times in ms. */
export interface ProcessorDefinition {
  /** Event types (default: every type). */
  on?: string | string[];
  /** MongoDB filter on the event's data. */
  where?: JsonObject;
  /** Lane key path, e.g. `data._id`: one event at a time per key, in order. */
  key?: string;
  /**
   * A number: lanes in flight at once (default 1). An object: deliveries in flight per key value
   * (`limit`, default 1; `key` a path into the event, e.g. `data.customer_id`, or the `key` above),
   * in all (`total`; default: no bound but the executors' credits), and what a new event of a key
   * with work in flight does (`ifActive`: "queue", the default, "skip" or "coalesce").
   */
  concurrency?: number | ConcurrencyOptions;
  /** Deliveries started per period, per key (`key` a path into the event); an event past it waits, other keys go on. */
  rate?: RateOptions;
  /**
   * A burst of a key's events makes one delivery: the last event, with `ctx.debounced` the count
   * it stands for, once the key was quiet for `periodMs` or `maxWaitMs` after the burst's first.
   */
  debounce?: { key?: string; periodMs: number; maxWaitMs?: number };
  /** Path into the event giving its priority (a number, e.g. `data.priority`): keys whose next event has a higher one start first. */
  priority?: string;
  /** Default 30,000. */
  ackTimeoutMs?: number;
  /**
   * After a try's ack timeout its `ctx.signal` aborts, and the owner waits this long more for its
   * ack (an OK one still finishes the event) before the next try; meanwhile no later event of
   * the key starts. Default: `ackTimeoutMs`; 0: do not wait.
   */
  timeoutGraceMs?: number;
  /** Waits between tries (default [1000, 5000]: 3 tries). */
  retryDelaysMs?: number[];
  /** Where a new processor starts (default "end"). */
  start?: "end" | "beginning" | { afterSeq: number };
  /** Who may read its `processor.*` events, besides admins and the executors that may host the plugin. Default: no one else. */
  read?: string[];
  /** Handles one delivery; throw to fail it (TerminalError: no more tries). */
  run(ctx: DeliveryContext): Promise<void> | void;
}

/**
 * An action in code. Times in ms.
 *
 * Failure semantics: `run` resolving is the call's output (undefined: `{}`),
 * recorded as `action.completed`; throwing (an Error or a TerminalError: the
 * owner never retries an action by itself) records `action.failed` and the
 * caller gets ABORTED with the message. A caller calling again with the same
 * call id runs it again (`ctx.attempt` > 1); work under the run (emit, call,
 * collection writes) gets the same derived ids, so it is not done twice.
 * `ctx.signal` aborts when the caller cancels, its deadline or the action's
 * timeout passes, or the stream to the owner is lost (the owner then runs the
 * call on another executor as a retry).
 */
export interface ActionDefinition {
  /** JSON Schema (draft 2020-12) for the input; violations are INVALID_ARGUMENT at `input/...`. */
  inputSchema?: JsonObject;
  /** Top-level input fields kept out of the log (`action.started`); `run` still gets them. */
  privateFields?: string[];
  /** Record action.started / completed / failed / retried (default true); false: no events at all. */
  record?: boolean;
  /** Who may call it from outside: `*`, `role:<role>` or principal names. Default: only code under a cause. */
  allow?: string[];
  /** How long one run may take (default 30,000); also bounds the wait for an executor. */
  timeoutMs?: number;
  /** Who may read its `action.*` events (inputs, outputs, errors) and its timers' `timer.*` events, besides admins and the executors that may host the plugin. Default: no one else. */
  read?: string[];
  /**
   * After the run's timeout its `ctx.signal` aborts, and the owner waits this long more for its
   * answer (an OK one still completes the call) before it records the call failed; meanwhile no
   * other run of the call id starts. Default: `timeoutMs`; 0: fail at once.
   */
  timeoutGraceMs?: number;
  /**
   * Calls in flight at once per key of the input (`limit`, default 1; `key` a path such as
   * `input.customer_id`) and in all, across executors (`total`); without a key, `limit` counts every
   * call. A call past a limit waits for a slot (within its wait for an executor).
   */
  concurrency?: Omit<ConcurrencyOptions, "ifActive" | "weights">;
  /** Calls started per period, per key (`key` a path such as `input.customer_id`); a call past it waits (within its wait for an executor). */
  rate?: RateOptions;
  /** Path into the call giving its priority (a number, e.g. `input.priority`): calls waiting for a concurrency slot start highest first. */
  priority?: string;
  /** Runs one call. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing is a call with no output
  run(ctx: ActionContext, input: JsonObject): Promise<JsonObject | void> | JsonObject | void;
}

/** Concurrency limits of a processor or an action (`concurrency_limit` in the manifest). */
export interface ConcurrencyOptions {
  /** In flight at once per key value. */
  limit?: number;
  /** Path giving the key: `data.…` into an event, `input.…` into a call. */
  key?: string;
  /** In flight at once in all, across executors. */
  total?: number;
  /** Processors: what a new event of a key with work in flight does. */
  ifActive?: "queue" | "skip" | "coalesce";
  /**
   * Processors: weighted fair turns, the weight of a key value (1 to 1,000; values not listed
   * weigh 1). With a backlog, a key of weight 3 starts 3 deliveries where a key of weight 1 starts one.
   */
  weights?: Record<string, number>;
}

/** A rate: a token bucket per key value (`rate` in the manifest). */
export interface RateOptions {
  /** Starts per period. */
  limit: number;
  /** Default 1,000. */
  periodMs?: number;
  /** Path giving the key; absent: one rate for all. */
  key?: string;
  /** Starts at once after a quiet time at most (default `limit`). */
  burst?: number;
}

/** A collection declaration. */
export interface CollectionDefinition {
  /** JSON Schema (draft 2020-12) for documents, `_id` included. */
  schema?: JsonObject;
  /** Top-level fields kept out of change events. */
  privateFields?: string[];
  /** Write `<name>.created|updated|deleted` events (default true). */
  events?: boolean;
  /** Keep in SQLite (default true); false: memory only, no events. */
  durable?: boolean;
  /** Append-only ledger: create only, no events. */
  records?: boolean;
  /** Who may write from outside: `*`, `role:<role>` or principal names. Default: only code under a cause. */
  allow?: string[];
}

/**
 * A pulse: calls an action of the same plugin at every interval boundary,
 * counted from the epoch (nothing stored). Missed intervals are not made up;
 * while a call runs, the next boundary is skipped. The action reads which
 * interval it is for in `ctx.pulse`.
 */
export interface PulseDefinition {
  /** An action of this plugin (its name in `actions`); called with input `{}`. */
  action: string;
  /** Cycle length in seconds, at least 1. */
  cycleSeconds: number;
  /** Intervals per cycle (default 1); must split the cycle into whole ms, each >= 100 ms. */
  intervals?: number;
  /** `component` (default): one executor makes each call; `replica`: every connected executor instance hosting it. */
  scope?: "component" | "replica";
}

/**
 * A declared schedule: calls an action as the system at
 * the moments of a cron expression in a time zone, or every so many ms.
 * Stored: an owner that was down calls the missed moment once when back (or
 * as `policy.catchUp` says). Admins pause, resume, trigger and backfill it
 * over TimeService as the timer `<plugin>/<name>`.
 */
export interface ScheduleDefinition {
  /** `plugin.action`, or an action of this plugin by name. */
  action: string;
  /** Input of every call. */
  input?: JsonObject;
  /** 5-field cron expression, e.g. `0 9 * * 1`. Give this or `everyMs`. */
  cron?: string;
  /** IANA zone for `cron` (default UTC). */
  zone?: string;
  /** Every so many ms (at least 1,000). */
  everyMs?: number;
  /** Skip an occurrence later than this (ms; default: never skip). */
  maxLatenessMs?: number;
  /** Waits before retrying a failed occurrence (default [10000, 30000]). */
  retryDelaysMs?: number[];
  /** Declared but not running. */
  disabled?: boolean;
  /** Made only by the owner of this region (default 0). */
  region?: number;
  /** What `cron`'s fixed-hour wall times do across daylight-saving changes (default shift / first). */
  dst?: DstOptions;
  /** Jitter, start/end, maximum count, overlap and catch-up (absent: the default). */
  policy?: SchedulePolicyOptions;
  /** Events that pause the schedule (`timer.paused`, caused by the event; ResumeTimer resumes it). */
  cancelOn?: CancelOnOption[];
}

/**
 * A retention rule (`retention` in the manifest, docs/retention.md): which of the plugin's
 * events (its event types and its collections' change events) the log may let go. Give a limit
 * (each 1 or more; absent: none) or `keep`. The owner's config rules come first.
 */
export interface RetentionDefinition {
  /** The types it covers: `*`, a prefix ending in `*` (`booking.*`) or one type. */
  types: string;
  /** Events committed longer ago than this are candidates. */
  maxAgeMs?: number;
  /** Of each type, events older than its newest `maxCount` are candidates. */
  maxCount?: number;
  /** Of each type, events older than its newest ones taking `maxBytes` (as stored) are candidates. */
  maxBytes?: number;
  /** Compaction: of the events with the same value at `key`, all but the last are candidates. */
  keep?: "latest_per_key";
  /** With `keep`: a path into the event, e.g. `data._id` (or `type`, `cause`). */
  key?: string;
}

/** A plugin defined in code. */
export interface PluginDefinition {
  name: string;
  version?: string;
  events?: Record<string, EventDefinition>;
  processors?: Record<string, ProcessorDefinition>;
  /** Collections, by global name (their events are `<collection>.created` ...). */
  collections?: Record<string, CollectionDefinition>;
  /** Actions hosted by executors running this plugin, called as `<name>.<action>`. */
  actions?: Record<string, ActionDefinition>;
  /** Pulses, hosted by executors running this plugin (`hello.pulses` lists them as `<name>.<pulse>`). */
  pulses?: Record<string, PulseDefinition>;
  /** Schedules, run by the owner as the system; their actions run in executors hosting them. */
  schedules?: Record<string, ScheduleDefinition>;
  /** Retention rules for the plugin's events, in order (after any `manifest.retention`). */
  retention?: RetentionDefinition[];
  /** Other manifest parts, as in the manifest's JSON form. */
  manifest?: Omit<MessageInitShape<typeof PluginManifestSchema>, "name" | "version" | "events" | "processors" | "actions" | "collections">;
}

/** Declares a plugin (identity; gives type checking). */
export function definePlugin(definition: PluginDefinition): PluginDefinition {
  return definition;
}

/** The manifest a plugin registers: everything but the code. */
export function manifestOf(p: PluginDefinition): MessageInitShape<typeof PluginManifestSchema> {
  const processors = Object.fromEntries(
    Object.entries(p.processors ?? {}).map(([name, d]) => [
      name,
      {
        on: d.on === undefined ? [] : Array.isArray(d.on) ? d.on : [d.on],
        where: d.where,
        key: d.key ?? "",
        concurrency: typeof d.concurrency === "number" ? d.concurrency : 0,
        concurrencyLimit: typeof d.concurrency === "object" ? d.concurrency : undefined,
        rate: d.rate,
        debounce: d.debounce,
        priority: d.priority ?? "",
        ackTimeoutMs: d.ackTimeoutMs ?? 0,
        timeoutGraceMs: d.timeoutGraceMs,
        retryDelaysMs: d.retryDelaysMs ?? [],
        start: startOf(d.start),
        read: d.read ?? [],
      },
    ]),
  );
  const actions = Object.fromEntries(
    Object.entries(p.actions ?? {}).map(([name, d]) => [
      name,
      {
        inputSchema: d.inputSchema,
        privateFields: d.privateFields ?? [],
        record: d.record,
        allow: d.allow ?? [],
        timeoutMs: d.timeoutMs ?? 0,
        timeoutGraceMs: d.timeoutGraceMs,
        read: d.read ?? [],
        concurrencyLimit: d.concurrency,
        rate: d.rate,
        priority: d.priority ?? "",
      },
    ]),
  );
  const collections = Object.fromEntries(
    Object.entries(p.collections ?? {}).map(([name, d]) => [
      name,
      { schema: d.schema, privateFields: d.privateFields ?? [], events: d.events, durable: d.durable, records: d.records ?? false, allow: d.allow ?? [] },
    ]),
  );
  const pulses = Object.fromEntries(
    Object.entries(p.pulses ?? {}).map(([name, d]) => [
      name,
      { action: d.action, cycleSeconds: d.cycleSeconds, intervals: d.intervals ?? 1, scope: d.scope === "replica" ? PulseScope.REPLICA : PulseScope.COMPONENT },
    ]),
  );
  const schedules = Object.fromEntries(
    Object.entries(p.schedules ?? {}).map(([name, d]) => [
      name,
      {
        action: d.action,
        input: d.input,
        cron: d.cron ?? "",
        zone: d.zone ?? "",
        everyMs: BigInt(d.everyMs ?? 0),
        maxLatenessMs: BigInt(d.maxLatenessMs ?? 0),
        retryDelaysMs: d.retryDelaysMs ?? [],
        disabled: d.disabled ?? false,
        region: d.region ?? 0,
        dst: d.dst && dstOf(d.dst),
        policy: d.policy && schedulePolicyOf(d.policy),
        cancelOn: cancelOnOf(d.cancelOn),
      },
    ]),
  );
  const retention = (p.retention ?? []).map((r) => ({
    types: r.types,
    maxAgeMs: BigInt(r.maxAgeMs ?? 0),
    maxCount: BigInt(r.maxCount ?? 0),
    maxBytes: BigInt(r.maxBytes ?? 0),
    keep: r.keep === "latest_per_key" ? RetentionKeep.LATEST_PER_KEY : RetentionKeep.UNSPECIFIED,
    key: r.key ?? "",
  }));
  const rest = (p.manifest ?? {}) as Record<string, unknown>;
  const declared = { ...((rest.actions as Record<string, unknown> | undefined) ?? {}), ...actions };
  const declaredCollections = { ...((rest.collections as Record<string, unknown> | undefined) ?? {}), ...collections };
  return {
    ...rest,
    name: p.name,
    version: p.version ?? "",
    events: p.events ?? {},
    processors,
    actions: declared,
    collections: declaredCollections,
    pulses: { ...((rest.pulses as Record<string, unknown> | undefined) ?? {}), ...pulses },
    schedules: { ...((rest.schedules as Record<string, unknown> | undefined) ?? {}), ...schedules },
    retention: [...((rest.retention as unknown[] | undefined) ?? []), ...retention],
  } as MessageInitShape<typeof PluginManifestSchema>;
}

function startOf(start: ProcessorDefinition["start"]) {
  if (start === undefined || start === "end") return { position: { case: "end" as const, value: true } };
  if (start === "beginning") return { position: { case: "beginning" as const, value: true } };
  return { position: { case: "afterSeq" as const, value: BigInt(start.afterSeq) } };
}
