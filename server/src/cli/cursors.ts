import { ProcessorStatusSchema } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { client, type ClientFlags } from "./client-commands.js";
import { jsonLine } from "./json.js";
import { formatTable } from "./table.js";

/**
 * `chronolog cursors`: lists every processor's cursor from
 * AdminService.ListProcessors (admin role; PERMISSION_DENIED otherwise) as a
 * table (NAME, ACK FLOOR, DELIVERED, LAG, IN FLIGHT, RETRIES, FAILURES,
 * PAUSED) or, with `json`, as JSON lines (the API's ProcessorStatus in proto3
 * JSON).
 */
export async function cursorsCommand(flags: ClientFlags & { json: boolean }): Promise<void> {
  const { processors } = await client(flags).admin.listProcessors({});
  if (flags.json) {
    for (const p of processors) console.log(jsonLine(ProcessorStatusSchema, p));
    return;
  }
  const header = ["NAME", "ACK FLOOR", "DELIVERED", "LAG", "IN FLIGHT", "RETRIES", "FAILURES", "PAUSED"];
  const rows = processors.map((p) => [
    p.name,
    String(p.ackFloor),
    String(p.delivered),
    String(p.lag),
    String(p.inFlight),
    String(p.retries),
    String(p.failures),
    p.paused ? "yes" : "no",
  ]);
  console.log(formatTable(header, rows));
}
