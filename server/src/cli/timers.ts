import { timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { TimerKind, TimerSchema, type Timer } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import type {
  CancelOnOption,
  DelayWhen,
  DstOptions,
  OverdueBound,
  SchedulePolicyOptions,
  TimerKindName,
  TimerWhen,
} from "../../../sdk/ts/src/time-requests.js";
import { client, parseObject, type ClientFlags } from "./client-commands.js";
import { parseMoment } from "./parse.js";
import { jsonLine } from "./json.js";
import { formatTable } from "./table.js";

/** Options of `chronolog timers`. */
export interface TimersFlags extends ClientFlags {
  /** Only this kind. */
  kind?: TimerKindName;
  /** Also show each timer's next N fire times (1-100; GetTimer per timer). */
  preview?: number;
  /** JSON lines (the API's Timer in proto3 JSON) instead of a table. */
  json: boolean;
}

/**
 * `chronolog timers`: lists the timers the caller may read (ListTimers, every
 * page), pending ones by next fire time first, as a table (ID, KIND, ACTION, WHEN, NEXT DUE,
 * OCCURRENCES, CHAIN[, CANCEL ON when a timer has cancel_on][, PREVIEW]) or as JSON lines. With `--preview N` each timer is fetched
 * again with GetTimer for its next N fire times. Errors are the owner's (e.g.
 * UNAUTHENTICATED), printed by main.
 */
export async function timersCommand(flags: TimersFlags): Promise<void> {
  const c = client(flags);
  const timers: Timer[] = [];
  for await (const timer of c.listTimers({ kind: flags.kind })) {
    timers.push(flags.preview ? await c.getTimer(timer.id, { previewCount: flags.preview }) : timer);
  }
  if (flags.json) {
    for (const timer of timers) console.log(jsonLine(TimerSchema, timer));
    return;
  }
  const cancellable = timers.some((t) => t.cancelOn.length > 0);
  const header = [
    "ID",
    "KIND",
    "ACTION",
    "WHEN",
    "NEXT DUE",
    "OCCURRENCES",
    "CHAIN",
    ...(cancellable ? ["CANCEL ON"] : []),
    ...(flags.preview ? ["PREVIEW"] : []),
  ];
  const rows = timers.map((t) => [
    t.id,
    kindName(t.kind),
    t.action,
    whenText(t),
    nextDueText(t),
    String(t.occurrences),
    String(t.chainDepth),
    ...(cancellable ? [cancelOnText(t)] : []),
    ...(flags.preview ? [t.preview.map(iso).join(", ")] : []),
  ]);
  console.log(formatTable(header, rows, ["WHEN", "CANCEL ON", "PREVIEW"]));
}

/** The CANCEL ON column: each event that cancels the timer, `type (event path = input path, …)`, ", " between; "-" for none. */
function cancelOnText(t: Timer): string {
  if (t.cancelOn.length === 0) return "-";
  return t.cancelOn
    .map((c) => {
      const match = Object.entries(c.match).map(([event, input]) => `${event} = ${input}`);
      return match.length > 0 ? `${c.type} (${match.join(", ")})` : c.type;
    })
    .join(", ");
}

/**
 * The NEXT DUE column: the moment, or why there is none. A declared schedule without one is of
 * another region (only that region's owner makes it) or past its policy's end or count; the
 * table cannot tell which (the owner's region is not in the answer), so it says "none" and the
 * region. Timers and delays set at runtime are of the owner's region: without one they are spent.
 */
function nextDueText(t: Timer): string {
  if (t.paused) return "paused";
  if (t.disabled) return "disabled";
  if (t.nextDue) return iso(t.nextDue);
  return t.kind === TimerKind.DECLARED ? `none (region ${t.region})` : "spent";
}

function kindName(kind: TimerKind): string {
  return kind === TimerKind.RUNTIME ? "runtime" : kind === TimerKind.DECLARED ? "declared" : kind === TimerKind.DELAY ? "delay" : "?";
}

function iso(t: Timestamp): string {
  return new Date(timestampMs(t)).toISOString();
}

/** A timer's spec in a few words: `at …`, `cron "…" in Zone`, `every N ms`. */
function whenText(t: Timer): string {
  const when = t.spec?.when;
  switch (when?.case) {
    case "at":
      return `at ${iso(when.value)}`;
    case "cron":
      return `cron "${when.value.expression}" in ${when.value.zone || "UTC"}`;
    case "everyMs":
      return `every ${when.value} ms`;
    default:
      return "";
  }
}

/**
 * `chronolog pause-timer ID [--note TEXT]` and `resume-timer`: pauses or resumes a
 * recurring timer (admins for declared schedules; recorded as `timer.paused` / `timer.resumed`).
 * Prints `ID: paused` or `ID: resumed, next due …`, with "already"/"was not" when nothing changed.
 */
export async function setTimerPausedCommand(timerId: string, paused: boolean, flags: ClientFlags & { note?: string }): Promise<void> {
  const c = client(flags);
  if (paused) {
    const { unchanged } = await c.pauseTimer(timerId, { note: flags.note });
    console.log(`${timerId}: ${unchanged ? "already paused" : "paused"}`);
    return;
  }
  const { timer, unchanged } = await c.resumeTimer(timerId, { note: flags.note });
  console.log(unchanged ? `${timerId}: was not paused` : `${timerId}: resumed, next due ${timer.nextDue ? iso(timer.nextDue) : "none"}`);
}

/** `chronolog trigger-timer ID`: makes one occurrence now; prints its id and due moment. */
export async function triggerTimerCommand(timerId: string, flags: ClientFlags): Promise<void> {
  const { occurrenceId, due } = await client(flags).triggerTimer(timerId);
  console.log(`${timerId}: triggered occurrence ${occurrenceId} due ${due.toISOString()}`);
}

/**
 * `chronolog backfill-timer ID --start ISO --end ISO [--json]`: one occurrence per fire
 * time in [start, end), in order; prints DUE, OCCURRENCE and made/existing per occurrence (JSON
 * lines with --json).
 */
export async function backfillTimerCommand(timerId: string, flags: ClientFlags & { start: string; end: string; json: boolean }): Promise<void> {
  const made = await client(flags).backfillTimer(timerId, parseMoment(flags.start, "--start"), parseMoment(flags.end, "--end"));
  if (flags.json) {
    for (const o of made) console.log(JSON.stringify({ occurrenceId: o.occurrenceId, due: o.due.toISOString(), existing: o.existing }));
    return;
  }
  console.log(
    formatTable(
      ["DUE", "OCCURRENCE", "STATE"],
      made.map((o) => [o.due.toISOString(), o.occurrenceId, o.existing ? "existing" : "made"]),
    ),
  );
}

/** Options of `chronolog schedule` (commander has checked the numbers and choices). */
export interface ScheduleFlags extends ClientFlags {
  /** Events that cancel it (`--cancel-on`, repeatable). */
  cancelOn?: CancelOnOption[];
  /** Timer id (default: the owner makes one); the same id replaces that timer. */
  id?: string;
  cron?: string;
  zone?: string;
  dstGap?: DstOptions["gap"];
  dstRepeated?: DstOptions["repeated"];
  everyMs?: number;
  at?: string;
  overdue?: OverdueBound;
  jitterMs?: number;
  start?: string;
  end?: string;
  maxCount?: number;
  overlap?: SchedulePolicyOptions["overlap"];
  catchUp?: SchedulePolicyOptions["catchUp"];
  catchUpWindowMs?: number;
  json: boolean;
}

/**
 * `chronolog schedule ACTION [INPUT] (--cron EXPR [--zone Z] | --every-ms N | --at ISO) [--id ID]
 * [--overdue BOUND] [policy flags] [--json]`: sets a runtime timer calling
 * ACTION with INPUT (a JSON object, default `{}`); recorded as `timer.scheduled`. Prints
 * `ID: scheduled WHEN, next due ISO` (the Timer in proto3 JSON with --json). Errors are the
 * owner's (e.g. NOT_FOUND for an undeclared action, INVALID_ARGUMENT for a bad cron or zone).
 */
export async function scheduleCommand(action: string, input: string | undefined, flags: ScheduleFlags): Promise<void> {
  const given = [flags.cron !== undefined && "--cron", flags.everyMs !== undefined && "--every-ms", flags.at !== undefined && "--at"].filter(Boolean);
  if (given.length !== 1)
    throw new Error(`give exactly one of --cron EXPR (with --zone), --every-ms N or --at ISO-TIME${given.length > 1 ? `, not ${given.join(" and ")}` : ""}`);
  if (flags.cron === undefined && (flags.zone !== undefined || flags.dstGap !== undefined || flags.dstRepeated !== undefined))
    throw new Error("--zone, --dst-gap and --dst-repeated go with --cron");
  let when: TimerWhen;
  if (flags.cron !== undefined) {
    const dst = flags.dstGap || flags.dstRepeated ? { gap: flags.dstGap, repeated: flags.dstRepeated } : undefined;
    when = { cron: flags.cron, zone: flags.zone, dst };
  } else if (flags.everyMs !== undefined) when = { everyMs: flags.everyMs };
  else when = { at: parseMoment(flags.at!, "--at") };
  const policy: SchedulePolicyOptions = {
    jitterMs: flags.jitterMs,
    start: flags.start === undefined ? undefined : parseMoment(flags.start, "--start"),
    end: flags.end === undefined ? undefined : parseMoment(flags.end, "--end"),
    maxCount: flags.maxCount,
    overlap: flags.overlap,
    catchUp: flags.catchUp,
    catchUpWindowMs: flags.catchUpWindowMs,
  };
  const hasPolicy = Object.values(policy).some((v) => v !== undefined);
  const timer = await client(flags).schedule(action, parseObject(input ?? "{}", "input"), when, {
    timerId: flags.id,
    overdue: flags.overdue,
    policy: hasPolicy ? policy : undefined,
    cancelOn: flags.cancelOn,
  });
  if (flags.json) console.log(jsonLine(TimerSchema, timer));
  else console.log(`${timer.id}: scheduled ${whenText(timer)}, next due ${timer.nextDue ? iso(timer.nextDue) : "none"}`);
}

/**
 * `chronolog delay ACTION [INPUT] (--in-ms N | --at ISO) --overdue BOUND [--id DELAY-ID] [--json]`
 *: arms one call of ACTION later; `--overdue` is required, as in the API. With `--id`,
 * running the same command again arms nothing and prints the same delay. Prints
 * `DELAY-ID: due ISO` (`{"delayId","due"}` with --json); `cancel-delay DELAY-ID` cancels it.
 */
export async function delayCommand(
  action: string,
  input: string | undefined,
  flags: ClientFlags & { inMs?: number; at?: string; overdue: OverdueBound; id?: string; json: boolean; cancelOn?: CancelOnOption[] },
): Promise<void> {
  if ((flags.inMs === undefined) === (flags.at === undefined)) throw new Error("give exactly one of --in-ms N or --at ISO-TIME");
  const when: DelayWhen = flags.inMs !== undefined ? { intervalMs: flags.inMs } : { at: parseMoment(flags.at!, "--at") };
  const { delayId, due } = await client(flags).delay(action, parseObject(input ?? "{}", "input"), when, flags.overdue, {
    delayId: flags.id,
    cancelOn: flags.cancelOn,
  });
  if (flags.json) console.log(JSON.stringify({ delayId, due: due.toISOString() }));
  else console.log(`${delayId}: due ${due.toISOString()}`);
}

/** `chronolog unschedule ID`: stops a runtime timer (recorded as `timer.unscheduled`). */
export async function unscheduleCommand(timerId: string, flags: ClientFlags): Promise<void> {
  await client(flags).unschedule(timerId);
  console.log(`${timerId}: unscheduled`);
}

/** `chronolog cancel-delay ID`: cancels a pending delay (recorded as `timer.unscheduled`). */
export async function cancelDelayCommand(delayId: string, flags: ClientFlags): Promise<void> {
  await client(flags).cancelDelay(delayId);
  console.log(`${delayId}: cancelled`);
}
