import { Command, InvalidArgumentError, Option } from "commander";
import { Code, ConnectError } from "@connectrpc/connect";
import { emitCommand, registerCommand, tailCommand } from "./cli/client-commands.js";
import { cursorsCommand } from "./cli/cursors.js";
import { serveCommand } from "./cli/serve.js";
import { executorsCommand, failedCommand, moveCursorCommand, redeliverCommand, setPausedCommand, sqlCommand } from "./cli/admin.js";
import type { ClientFlags } from "./cli/client-commands.js";
import { backfillTimerCommand, setTimerPausedCommand, timersCommand, triggerTimerCommand } from "./cli/timers.js";

/** The `chronolog` command line (SPEC O1). */
const program = new Command("chronolog").description("Chronolog owner server and client").showHelpAfterError();

const urlOption = () => new Option("--url <url>", "owner URL").default(process.env.CHRONOLOG_URL ?? "http://127.0.0.1:50051");
const tokenOption = () => new Option("--token <token>", "bearer token (or CHRONOLOG_TOKEN)");

program
  .command("serve")
  .description("run an owner on its embedded SQLite log")
  .option("--data <dir>", "data folder", "./data")
  .option("--host <host>", "interface to bind", "127.0.0.1")
  .option("--port <port>", "port for gRPC, gRPC-Web and Connect (0: any free port)", parsePort, "50051")
  .option("--config <file>", "principals, CORS, TLS and limits (JSON or YAML)")
  .option("--plugins <dir>", "folder of plugin manifests to register at start")
  .option("--region <n>", "this owner's region (K6): it makes only declared schedules of this region (default: the config's, else 0)", parseRegion)
  .addOption(new Option("--synchronous <mode>", "SQLite synchronous: FULL survives power loss, NORMAL only a crash").choices(["FULL", "NORMAL", "full", "normal"]).default("FULL"))
  .addOption(new Option("--log-level <level>", "log level").choices(["trace", "debug", "info", "warn", "error", "silent"]).default("info"))
  .action(serveCommand);

program
  .command("emit <type> <json>")
  .description("emit one event and print it")
  .addOption(urlOption())
  .addOption(tokenOption())
  .option("--id <id>", "idempotency key")
  .action(emitCommand);

program
  .command("tail")
  .description("print the log from a seq, then follow it")
  .addOption(urlOption())
  .addOption(tokenOption())
  .option("--from <seq>", "first seq to print", "1")
  .option("--type <type>", "only this event type (repeatable)", (v: string, all: string[]) => [...all, v], [] as string[])
  .option("--where <json>", "MongoDB filter on the event's data")
  .option("--no-follow", "stop at the head instead of following")
  .action(tailCommand);

program
  .command("register <file>")
  .description("register a plugin manifest (JSON or YAML)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .action(registerCommand);

/** A region number, 0-4294967295 (K6). */
function parseRegion(value: string): string {
  if (!/^\d+$/.test(value) || Number(value) > 4294967295) throw new InvalidArgumentError("must be a number from 0 to 4294967295");
  return value;
}

program
  .command("timers")
  .description("list timers, schedules and delays with their next fire times")
  .addOption(urlOption())
  .addOption(tokenOption())
  .addOption(new Option("--kind <kind>", "only this kind").choices(["runtime", "declared", "delay"]))
  .option("--preview <n>", "also show the next N fire times (1-100)", parsePreview)
  .option("--json", "JSON lines instead of a table", false)
  .action(timersCommand);

program
  .command("pause-timer <timer-id>")
  .description("pause a recurring timer or declared schedule: it claims nothing until resumed (recorded as timer.paused)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .option("--note <text>", "why (recorded)")
  .action((timerId: string, flags: ClientFlags & { note?: string }) => setTimerPausedCommand(timerId, true, flags));

program
  .command("resume-timer <timer-id>")
  .description("resume a paused timer; at most one missed occurrence is made, by its catch-up policy (recorded as timer.resumed)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .option("--note <text>", "why (recorded)")
  .action((timerId: string, flags: ClientFlags & { note?: string }) => setTimerPausedCommand(timerId, false, flags));

program
  .command("trigger-timer <timer-id>")
  .description("make one occurrence of a timer now, as its actor (recorded as timer.triggered)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .action(triggerTimerCommand);

program
  .command("backfill-timer <timer-id>")
  .description("make one occurrence per fire time in [--start, --end), in order; moments already made are not made again (recorded as timer.backfilled)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .requiredOption("--start <iso-time>", "first moment of the range (inclusive)")
  .requiredOption("--end <iso-time>", "end of the range (exclusive), not in the future")
  .option("--json", "JSON lines instead of a table", false)
  .action(backfillTimerCommand);

program
  .command("cursors")
  .description("list processors with their cursors, lag, in-flight deliveries and failures (admin)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .option("--json", "JSON lines instead of a table", false)
  .action(cursorsCommand);

program
  .command("move-cursor <processor>")
  .description("move a processor's cursor to replay from a seq or a time (admin; recorded)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .option("--seq <n>", "events at or below this seq count as finished")
  .option("--at <iso-time>", "replay from the first event committed at or after this time")
  .action(moveCursorCommand);

program
  .command("pause <processor>")
  .description("stop handing out deliveries of a processor (admin; recorded; an already paused one is left alone and reported so)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .action((processor: string, flags: ClientFlags) => setPausedCommand(processor, true, flags));

program
  .command("resume <processor>")
  .description("resume a paused processor (admin; recorded; a running one is left alone and reported so)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .action((processor: string, flags: ClientFlags) => setPausedCommand(processor, false, flags));

program
  .command("failed")
  .description("list failed (parked) deliveries (admin)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .option("--processor <name>", "only this processor")
  .option("--json", "JSON lines instead of a table", false)
  .action(failedCommand);

program
  .command("redeliver <processor> [seqs...]")
  .description("deliver failed events again; all of the processor's when no seq is given (admin; recorded)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .action(redeliverCommand);

program
  .command("executors")
  .description("list connected executors (admin)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .option("--json", "JSON lines instead of a table", false)
  .action(executorsCommand);

program
  .command("sql <statement> [params...]")
  .description("run one maintenance SQL statement, recorded as maintenance.sql (admin)")
  .addOption(urlOption())
  .addOption(tokenOption())
  .action(sqlCommand);

/** A preview count, 1-100 (GetTimer's limit). */
function parsePreview(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 100) throw new InvalidArgumentError("must be a number from 1 to 100");
  return Number(value);
}

/** A TCP port, 0-65535; commander reports anything else as a usage error. */
function parsePort(value: string): string {
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError("must be a number from 0 to 65535");
  return value;
}

program.parseAsync().catch((e: unknown) => {
  if (e instanceof ConnectError) console.error(`chronolog: ${Code[e.code]}: ${e.rawMessage}`);
  else console.error(`chronolog: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});

