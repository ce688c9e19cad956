import { ProcessorStatusSchema, type ProcessorStatus } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { client, type ClientFlags } from "./client-commands.js";
import { jsonLine } from "./json.js";
import { formatTable } from "./table.js";

/**
 * `chronolog cursors`: lists every processor's cursor from
 * AdminService.ListProcessors (admin role; PERMISSION_DENIED otherwise) as a
 * table (NAME, ACK FLOOR, READ TO, LAG, IN FLIGHT, RETRIES, FAILURES,
 * PAUSED, and when a processor declares flow limits: RATE WAITS, DEBOUNCED,
 * LIMITS) or, with `json`, as JSON lines (the API's ProcessorStatus in proto3
 * JSON). READ TO is the API's `delivered`: the highest seq the processor read
 * from the log, events it skipped (another type, its filter) or holds (paused,
 * a flow limit) included, so it is not what was handed out; a standby knows
 * only the ack floor and shows it.
 */
export async function cursorsCommand(flags: ClientFlags & { json: boolean }): Promise<void> {
  const { processors } = await client(flags).admin.listProcessors({});
  if (flags.json) {
    for (const p of processors) console.log(jsonLine(ProcessorStatusSchema, p));
    return;
  }
  const limited = processors.some((p) => p.limits !== "");
  const header = [
    "NAME",
    "ACK FLOOR",
    "READ TO",
    "LAG",
    "IN FLIGHT",
    "RETRIES",
    "FAILURES",
    "PAUSED",
    ...(limited ? ["RATE WAITS", "DEBOUNCED", "LIMITS"] : []),
  ];
  const rows = processors.map((p) => [
    p.name,
    String(p.ackFloor),
    String(p.delivered),
    String(p.lag),
    String(p.inFlight),
    String(p.retries),
    String(p.failures),
    p.paused ? "yes" : "no",
    ...(limited ? [rateWaitsText(p), debouncedText(p), p.limits || "-"] : []),
  ]);
  console.log(formatTable(header, rows, ["LIMITS"]));
}

/** RATE WAITS: `N (T s), W now`: deliveries that waited for a token, how long in all, and the events waiting now ("-" without a rate). */
function rateWaitsText(p: ProcessorStatus): string {
  if (!/(^|; )rate /.test(p.limits)) return "-";
  return `${p.rateWaits} (${(Number(p.rateWaitMs) / 1000).toFixed(1)} s), ${p.rateWaiting} now`;
}

/** DEBOUNCED: `H held, D for E`: events in bursts now, deliveries made for bursts and the events they stood for ("-" without a debounce). */
function debouncedText(p: ProcessorStatus): string {
  if (!/(^|; )debounce /.test(p.limits)) return "-";
  return `${p.debounceHeld} held, ${p.debounceDeliveries} for ${p.debounceEvents}`;
}
