import type { JsonValue } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ExecutorStatusSchema, FailedDeliverySchema } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { client, type ClientFlags } from "./client-commands.js";
import { maxSeq, parseMoment, wholeNumber } from "./parse.js";
import { jsonLine } from "./json.js";
import { formatTable } from "./table.js";

/**
 * The operator commands over AdminService. Each needs
 * an admin token (PERMISSION_DENIED otherwise) and prints a table, or JSON
 * lines with `--json` (the API's messages in proto3 JSON).
 */

/** `chronolog move-cursor PROCESSOR (--seq N | --at ISO)`: replay from a seq or a time; prints the new cursor. `--seq` comes checked (0 to 2^53-1, see parse.ts). */
export async function moveCursorCommand(processor: string, flags: ClientFlags & { seq?: number; at?: string }): Promise<void> {
  if ((flags.seq === undefined) === (flags.at === undefined))
    throw new Error("give exactly one of --seq N (events at or below N count as finished) or --at ISO-TIME");
  let to;
  if (flags.seq !== undefined) {
    to = { case: "ackFloor" as const, value: BigInt(flags.seq) };
  } else {
    to = { case: "at" as const, value: timestampFromDate(parseMoment(flags.at!, "--at")) };
  }
  const { processor: status } = await client(flags).admin.moveCursor({ processor, to });
  console.log(`${processor}: ack floor ${status?.ackFloor}, lag ${status?.lag}`);
}

/**
 * `chronolog pause PROCESSOR` / `resume PROCESSOR`: prints `P: paused` / `P: running`, or
 * `P: already paused` / `P: already running` when there was nothing to change (nothing recorded).
 */
export async function setPausedCommand(processor: string, paused: boolean, flags: ClientFlags): Promise<void> {
  const { processor: status, unchanged } = await client(flags).admin.setProcessorPaused({ processor, paused });
  console.log(`${processor}: ${unchanged ? "already " : ""}${status?.paused ? "paused" : "running"}`);
}

/** `chronolog failed [--processor P] [--json]`: failed (parked) deliveries, oldest first, all pages. */
export async function failedCommand(flags: ClientFlags & { processor?: string; json: boolean }): Promise<void> {
  const admin = client(flags).admin;
  const rows: string[][] = [];
  let pageToken = "";
  do {
    const page = await admin.listFailedDeliveries({ processor: flags.processor ?? "", pageToken });
    for (const d of page.deliveries) {
      if (flags.json) console.log(jsonLine(FailedDeliverySchema, d));
      else rows.push([d.processor, String(d.seq), d.event?.type ?? "(removed from the log)", String(d.attempts), d.error]);
    }
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  if (!flags.json) console.log(formatTable(["PROCESSOR", "SEQ", "TYPE", "ATTEMPTS", "ERROR"], rows, ["ERROR"]));
}

/** `chronolog redeliver PROCESSOR [SEQ...]`: delivers failed events again (all of the processor's when no seq is given). */
export async function redeliverCommand(processor: string, seqs: string[], flags: ClientFlags): Promise<void> {
  const checked = seqs.map((s) => BigInt(wholeNumber(s, "each seq", 1, maxSeq)));
  const { count } = await client(flags).admin.redeliverFailed({ processor, seqs: checked });
  const skipped = new Set(checked).size - count;
  const note =
    skipped > 0
      ? ` (${skipped} of the seqs given not: no failed delivery on record, one being delivered again, or its event removed from the log; \`chronolog failed --processor ${processor}\` lists them)`
      : "";
  console.log(`${processor}: ${count} redelivered${note}`);
}

/** `chronolog dismiss PROCESSOR (SEQ... | --all)`: forgets failed deliveries without delivering them again (recorded). */
export async function dismissCommand(processor: string, seqs: string[], flags: ClientFlags & { all?: boolean }): Promise<void> {
  if ((flags.all ?? false) === seqs.length > 0) throw new Error("give the seqs of the failed deliveries to dismiss, or --all (not both)");
  const checked = seqs.map((s) => BigInt(wholeNumber(s, "each seq", 1, maxSeq)));
  const dismissed = await client(flags).admin.dismissFailed({ processor, seqs: checked, all: flags.all ?? false });
  const done = new Set(dismissed.seqs);
  const absent = [...new Set(checked)].filter((seq) => !done.has(seq));
  const note = absent.length > 0 ? `; not failed deliveries on record: ${seqList(absent)}` : "";
  console.log(`${processor}: ${dismissed.count} dismissed${dismissed.count > 0 ? ` (seqs ${seqList(dismissed.seqs)})` : ""}${note}`);
}

/** Seqs in order as a short list: every one up to 10, else the first 5, how many more, and the last. */
function seqList(seqs: bigint[]): string {
  if (seqs.length <= 10) return seqs.join(", ");
  return `${seqs.slice(0, 5).join(", ")}, … ${seqs.length - 6} more …, ${seqs[seqs.length - 1]}`;
}

/** `chronolog executors [--json]`: connected executor sessions. */
export async function executorsCommand(flags: ClientFlags & { json: boolean }): Promise<void> {
  const { executors } = await client(flags).admin.listExecutors({});
  if (flags.json) {
    for (const e of executors) console.log(jsonLine(ExecutorStatusSchema, e));
    return;
  }
  const sdk = (e: (typeof executors)[number]) => [e.sdk, e.sdkVersion].filter((s) => s !== "").join(" ") || "-";
  const rows = executors.map((e) => [
    e.executor,
    e.instanceId,
    e.principal,
    `${e.inFlight}/${e.credits}`,
    [...e.processors, ...e.actions, ...e.pulses].join(","),
    sdk(e),
    e.connectedAt ? timestampDate(e.connectedAt).toISOString() : "",
  ]);
  console.log(formatTable(["EXECUTOR", "INSTANCE", "PRINCIPAL", "IN FLIGHT/CREDITS", "HOSTS", "SDK", "CONNECTED"], rows, ["HOSTS"]));
}

/** `chronolog sql STATEMENT [PARAM...]`: maintenance SQL, recorded as `maintenance.sql`; prints rows as JSON lines or the change count. */
export async function sqlCommand(sql: string, params: string[], flags: ClientFlags): Promise<void> {
  const values = params.map((p) => ({ kind: { case: "stringValue" as const, value: p } }));
  const result = await client(flags).admin.executeSql({ sql, params: { values } });
  for (const row of result.rows) console.log(JSON.stringify(row as JsonValue));
  console.error(`${result.rows.length} rows, ${result.changes} changed; recorded at seq ${result.seq}`);
}
