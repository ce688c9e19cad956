import { toJson } from "@bufbuild/protobuf";
import { timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { TimerKind, TimerSchema, type Timer } from "../../../sdk/ts/src/gen/chronolog/v1/time_pb.js";
import type { TimerKindName } from "../../../sdk/ts/src/client.js";
import { client, type ClientFlags } from "./client-commands.js";
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
 * `chronolog timers` (SPEC O1, T4): lists the timers the caller may read (ListTimers, every
 * page), pending ones by next fire time first, as a table (ID, KIND, ACTION, WHEN, NEXT DUE,
 * OCCURRENCES, CHAIN[, PREVIEW]) or as JSON lines. With `--preview N` each timer is fetched
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
    for (const timer of timers) console.log(JSON.stringify(toJson(TimerSchema, timer)));
    return;
  }
  const header = ["ID", "KIND", "ACTION", "WHEN", "NEXT DUE", "OCCURRENCES", "CHAIN", ...(flags.preview ? ["PREVIEW"] : [])];
  const rows = timers.map((t) => [
    t.id,
    kindName(t.kind),
    t.action,
    whenText(t),
    t.paused ? "paused" : t.disabled ? "disabled" : t.nextDue ? iso(t.nextDue) : "spent",
    String(t.occurrences),
    String(t.chainDepth),
    ...(flags.preview ? [t.preview.map(iso).join(", ")] : []),
  ]);
  console.log(formatTable(header, rows));
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

/** A moment given on the command line: an ISO-8601 time (e.g. `2026-03-01T00:00:00Z`). */
function parseMoment(text: string, flag: string): Date {
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) throw new Error(`${flag} must be an ISO-8601 time such as 2026-03-01T00:00:00Z, got ${JSON.stringify(text)}`);
  return d;
}

/**
 * `chronolog pause-timer ID [--note TEXT]` and `resume-timer` (SPEC B1, O1): pauses or resumes a
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

/** `chronolog trigger-timer ID` (SPEC B1): makes one occurrence now; prints its id and due moment. */
export async function triggerTimerCommand(timerId: string, flags: ClientFlags): Promise<void> {
  const { occurrenceId, due } = await client(flags).triggerTimer(timerId);
  console.log(`${timerId}: triggered occurrence ${occurrenceId} due ${due.toISOString()}`);
}

/**
 * `chronolog backfill-timer ID --start ISO --end ISO [--json]` (SPEC B1): one occurrence per fire
 * time in [start, end), in order; prints DUE, OCCURRENCE and made/existing per occurrence (JSON
 * lines with --json).
 */
export async function backfillTimerCommand(timerId: string, flags: ClientFlags & { start: string; end: string; json: boolean }): Promise<void> {
  const made = await client(flags).backfillTimer(timerId, parseMoment(flags.start, "--start"), parseMoment(flags.end, "--end"));
  if (flags.json) {
    for (const o of made) console.log(JSON.stringify({ occurrenceId: o.occurrenceId, due: o.due.toISOString(), existing: o.existing }));
    return;
  }
  console.log(formatTable(["DUE", "OCCURRENCE", "STATE"], made.map((o) => [o.due.toISOString(), o.occurrenceId, o.existing ? "existing" : "made"])));
}
