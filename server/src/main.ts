import { Command, InvalidArgumentError, Option } from "commander";
import { Code, ConnectError } from "@connectrpc/connect";
import { emitCommand, ownerUnavailableStatus, readStreamCommand, registerCommand, tailCommand } from "./cli/client-commands.js";
import { cursorsCommand } from "./cli/cursors.js";
import { actionsCommand, limitsCommand } from "./cli/limits.js";
import { exportCommand } from "./cli/export.js";
import { healthCommand } from "./cli/health.js";
import {
  createDocumentCommand,
  deleteDocumentCommand,
  findDocumentsCommand,
  getDocumentCommand,
  patchDocumentCommand,
  replaceDocumentCommand,
} from "./cli/documents.js";
import { dismissCommand, executorsCommand, failedCommand, moveCursorCommand, redeliverCommand, setPausedCommand, sqlCommand } from "./cli/admin.js";
import type { ClientFlags } from "./cli/client-commands.js";
import { cancelOnOption, expectedVersionOption, idOption, maxSeq, msOption, seqOption, wholeNumberOption } from "./cli/parse.js";
import {
  backfillTimerCommand,
  cancelDelayCommand,
  delayCommand,
  scheduleCommand,
  setTimerPausedCommand,
  timersCommand,
  triggerTimerCommand,
  unscheduleCommand,
} from "./cli/timers.js";
import type { OverdueBound } from "../../sdk/ts/src/time-requests.js";
import { ownerVersion } from "./version.js";

/**
 * The `chronolog` command line. `--url`, `--token` and `--reads` are the program's options, so
 * they go before or after the command (`chronolog --url X tail`, `chronolog tail --url X`); each
 * client command reads them with its own options through {@link clientAction}.
 */
const program = new Command("chronolog")
  .description("Chronolog owner server and client")
  .version(ownerVersion, "-V, --version", "print the version")
  .addOption(
    new Option(
      "--url <url>",
      "owner URL, or several separated by commas (calls go to the leader among them), for the client commands (every command but serve)",
    )
      .env("CHRONOLOG_URL")
      .default("http://127.0.0.1:50051"),
  )
  .addOption(new Option("--token <token>", "bearer token, for the client commands").env("CHRONOLOG_TOKEN"))
  .addOption(
    new Option(
      "--reads <where>",
      "where the client commands' reads go: with every other call to the leader, or to any owner of --url in its order, a standby included (it serves what is committed)",
    )
      .choices(["leader", "any"])
      .env("CHRONOLOG_READS")
      .default("leader"),
  )
  .configureHelp({ showGlobalOptions: true })
  .showHelpAfterError();

/**
 * A client command's action: commander passes (...arguments, the command's options, the
 * command); `handler` gets the arguments and the options merged with the program's (`url`, `token`, `reads`).
 * A reader that stops early (`chronolog tail | head -2`) closes the pipe: the command then ends
 * quietly (status 0), as Unix tools do, instead of dying on an unhandled EPIPE.
 */
// biome-ignore lint/suspicious/noExplicitAny: commander passes each command its own arguments
function clientAction(handler: (...args: any[]) => void | Promise<void>): (...args: unknown[]) => void | Promise<void> {
  return (...args) => {
    endQuietlyOnClosedPipe();
    const command = args[args.length - 1] as Command;
    return handler(...args.slice(0, -2), command.optsWithGlobals());
  };
}

/** Exits 0 when stdout or stderr is a pipe whose reader went away (EPIPE); 1 on another output error. */
function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE") process.exit(0);
      if (stream === process.stdout) console.error(`chronolog: cannot write the output: ${e.message}`);
      process.exit(1);
    });
  }
}

const cancelOnHelp = "an event that cancels it while pending, e.g. order.paid:data.order_id=input.order_id (repeatable; TYPE alone: any event of the type)";
const overdueHelp = "how late a call may still be made: unbounded, on-time-or-never, or a maximum lateness in ms (later: recorded as skipped)";

program
  .command("serve")
  .description("run an owner on its embedded SQLite log, or on PostgreSQL (--store) as the leader or a standby")
  .option("--data <dir>", "data folder", "./data")
  .addOption(
    new Option(
      "--store <url>",
      "run on this PostgreSQL database (postgres://user:password@host:5432/db) instead of --data; owners on one database elect one leader",
    ).env("CHRONOLOG_STORE"),
  )
  .option("--advertise-url <url>", "this owner's URL as clients reach it, which standbys tell them (default: http(s)://host:port)")
  .option(
    "--lease-ms <ms>",
    "PostgreSQL: how long the leader's lease lasts unrenewed; a standby takes over this long after the leader dies, 500-60000 (default 3000)",
    wholeNumberOption(500, 60_000),
  )
  .option("--host <host>", "interface to bind", "127.0.0.1")
  .option("--port <port>", "port for gRPC, gRPC-Web and Connect (0: any free port)", wholeNumberOption(0, 65535), 50051)
  .option("--config <file>", "principals, CORS, TLS, limits and timers (JSON or YAML; see the README's Configuration)")
  .option("--plugins <dir>", "folder of plugin manifests to register at start")
  .option(
    "--region <n>",
    "this owner's region: it makes only declared schedules of this region (default: the config's, else 0)",
    wholeNumberOption(0, 4294967295),
  )
  .option(
    "--timer-lookahead-ms <ms>",
    "how long before their moment calls of time are claimed and started, 0-1000 (default: the config's timers.lookahead_ms, else 250)",
    wholeNumberOption(0, 1000),
  )
  .option(
    "--call-retention-days <days>",
    "finished action calls older than this are deleted hourly, so a call id retried later runs as a new call unless its action records; 0 keeps them forever (default: the config's actions.call_retention_days, else 7)",
    wholeNumberOption(0, 36600),
  )
  .addOption(
    new Option("--synchronous <mode>", "SQLite synchronous: FULL survives power loss, NORMAL only a crash")
      .choices(["FULL", "NORMAL", "full", "normal"])
      .default("FULL"),
  )
  .addOption(new Option("--log-level <level>", "log level").choices(["trace", "debug", "info", "warn", "error", "silent"]).default("info"))
  // Loaded only for serve: the client commands start without the owner's modules (SQLite, schemas, time).
  .action(async (options, command: Command) => {
    const given = (name: string) => command.getOptionValueSource(name) === "cli";
    if (options.store !== undefined && given("data"))
      throw new Error("--data and --store name two stores: give one (--data: the embedded SQLite folder; --store: a PostgreSQL URL)");
    for (const name of ["advertiseUrl", "leaseMs"]) {
      if (options.store === undefined && given(name))
        throw new Error(`--${name === "leaseMs" ? "lease-ms" : "advertise-url"} is for owners on PostgreSQL (--store): an owner on SQLite has no standbys`);
    }
    return (await import("./cli/serve.js")).serveCommand(options);
  });

program
  .command("migrate")
  .description("create or upgrade the schema of a store (serve does it too), then exit")
  .option("--data <dir>", "SQLite data folder", "./data")
  .addOption(new Option("--store <url>", "a PostgreSQL database (postgres://...) instead of --data").env("CHRONOLOG_STORE"))
  .action(async (options) => (await import("./cli/serve.js")).migrateCommand(options));

program
  .command("copy-store")
  .description("copy an SQLite data folder (no owner running on it) into an empty PostgreSQL database, then exit")
  .option("--data <dir>", "SQLite data folder", "./data")
  .addOption(new Option("--store <url>", "the PostgreSQL database (postgres://...)").env("CHRONOLOG_STORE").makeOptionMandatory())
  .action(async (options) => (await import("./cli/serve.js")).copyStoreCommand(options));

program
  .command("export <folder>")
  .description("write the log's events from --from to --to into FOLDER (new or empty) as gzip-compressed NDJSON files and a manifest (admin)")
  .option("--from <seq>", "first seq to write", wholeNumberOption(1, maxSeq), 1)
  .option("--to <seq>", "last seq to write (default: the log's head when the export starts)", wholeNumberOption(1, maxSeq))
  .option("--file-events <n>", "at most N events a file (1-10000000)", wholeNumberOption(1, 10_000_000), 100_000)
  .option(
    "--file-bytes <n>",
    "a file ends once it holds N bytes of NDJSON before compression (1024-268435456)",
    wholeNumberOption(1024, 268_435_456),
    67_108_864,
  )
  .action(clientAction(exportCommand));

program
  .command("import <folder>")
  .description(
    "load an archive (chronolog export) into the empty log of a store no owner runs on, under the same seqs, ids and times; an import that stopped goes on where it stopped",
  )
  .option("--data <dir>", "SQLite data folder", "./data")
  .addOption(new Option("--store <url>", "a PostgreSQL database (postgres://...) instead of --data").env("CHRONOLOG_STORE"))
  .action(async (folder: string, options, command: Command) => {
    if (options.store !== undefined && command.getOptionValueSource("data") === "cli")
      throw new Error("--data and --store name two stores: give one (--data: the embedded SQLite folder; --store: a PostgreSQL URL)");
    return (await import("./cli/import.js")).importCommand(folder, options);
  });

program
  .command("emit <type> <json>")
  .description("emit one event and print it (json - : the data read from stdin)")
  .option("--id <id>", "idempotency key", idOption)
  .option("--stream <stream>", "append to this stream (e.g. order-o-1), at its next position")
  .option("--expected-version <v>", "with --stream: no_stream, any or the stream's last position (FAILED_PRECONDITION otherwise)", expectedVersionOption)
  .action(clientAction(emitCommand));

program
  .command("read-stream <stream>")
  .description("print one stream's events in position order as JSON lines, each with its position")
  .option("--backwards", "newest first", false)
  .option("--from <position>", "start at this position (inclusive)", seqOption)
  .action(clientAction(readStreamCommand));

program
  .command("tail")
  .description("print the log from a seq, then follow it")
  .option("--from <seq>", "first seq to print (default: the log's first kept seq)", seqOption)
  .option("--type <type>", "only this event type (repeatable)", (v: string, all: string[]) => [...all, v], [] as string[])
  .option("--where <json>", "MongoDB filter on the event's data")
  .option("--cause <id>", "only events made under this event or call id")
  .option("--descendants", "with --cause: down the whole chain (what was made under those, and so on)")
  .option("--from-first-seq", "when retention removed the events from --from on, start at the log's first kept seq (else an error says where the log starts)")
  .option("--no-follow", "stop at the head instead of following")
  .addHelpText(
    "after",
    `\nExit status: 0 at the head with --no-follow (or when the output's reader went away); ${ownerUnavailableStatus} when the owner stops\nor cannot be reached (it says after which seq: run it again with --from the next one); 1 on any other error.`,
  )
  .action(clientAction(tailCommand));

program.command("register <file>").description("register a plugin manifest (JSON or YAML)").action(clientAction(registerCommand));

const docs = program.command("docs").description("write, read and find documents of a collection (each write commits its change event)");

docs
  .command("create <collection> <json>")
  .description("create a document (its _id from the JSON, or one the owner makes); ALREADY_EXISTS when the _id is taken")
  .action(clientAction(createDocumentCommand));

docs.command("get <collection> <id>").description("print a document").action(clientAction(getDocumentCommand));

docs
  .command("find <collection>")
  .description("print the documents matching a filter, one JSON line each")
  .option("--filter <json>", "MongoDB filter (default: every document)")
  .option("--sort <json>", "field path to 1 or -1, e.g. '{\"created\":-1}' (default: _id order)")
  .option("--limit <n>", "at most N documents (1-1000, default 100)", wholeNumberOption(1, 1000))
  .action(clientAction(findDocumentsCommand));

docs
  .command("patch <collection> <id>")
  .description("set fields (by dotted path) and unset paths of a document")
  .option("--set <json>", 'fields to set, e.g. \'{"status":"confirmed","guest.name":"Ana"}\'')
  .option("--unset <path>", "a path to remove (repeatable)", (v: string, all: string[]) => [...all, v], [] as string[])
  .action(clientAction(patchDocumentCommand));

docs.command("replace <collection> <id> <json>").description("replace a document as a whole").action(clientAction(replaceDocumentCommand));

docs.command("delete <collection> <id>").description("delete a document").action(clientAction(deleteDocumentCommand));

program
  .command("timers")
  .description("list timers, schedules and delays with their next fire times")
  .addOption(new Option("--kind <kind>", "only this kind").choices(["runtime", "declared", "delay"]))
  .option("--preview <n>", "also show the next N fire times (1-100)", wholeNumberOption(1, 100))
  .option("--json", "JSON lines instead of a table", false)
  .action(clientAction(timersCommand));

program
  .command("pause-timer <timer-id>")
  .description("pause a recurring timer or declared schedule: it claims nothing until resumed (recorded as timer.paused)")
  .option("--note <text>", "why (recorded)")
  .action(clientAction((timerId: string, flags: ClientFlags & { note?: string }) => setTimerPausedCommand(timerId, true, flags)));

program
  .command("resume-timer <timer-id>")
  .description("resume a paused timer; at most one missed occurrence is made, by its catch-up policy (recorded as timer.resumed)")
  .option("--note <text>", "why (recorded)")
  .action(clientAction((timerId: string, flags: ClientFlags & { note?: string }) => setTimerPausedCommand(timerId, false, flags)));

program
  .command("trigger-timer <timer-id>")
  .description("make one occurrence of a timer now, as its actor (recorded as timer.triggered)")
  .action(clientAction(triggerTimerCommand));

program
  .command("backfill-timer <timer-id>")
  .description("make one occurrence per fire time in [--start, --end), in order; moments already made are not made again (recorded as timer.backfilled)")
  .requiredOption("--start <iso-time>", "first moment of the range (inclusive)")
  .requiredOption("--end <iso-time>", "end of the range (exclusive), not in the future")
  .option("--json", "JSON lines instead of a table", false)
  .action(clientAction(backfillTimerCommand));

program
  .command("schedule <action> [input]")
  .description(
    "set a runtime timer calling ACTION with INPUT (a JSON object, default {}): by --cron in a --zone, --every-ms or once --at (recorded as timer.scheduled)",
  )
  .option("--id <timer-id>", "timer id (default: the owner makes one); the same id replaces that timer", idOption)
  .option("--cron <expr>", '5-field cron expression, e.g. "0 9 * * 1"')
  .option("--zone <zone>", "IANA time zone of --cron (default UTC)")
  .addOption(new Option("--dst-gap <policy>", "a --cron wall time in a daylight-saving gap: shift (default) or skip").choices(["shift", "skip"]))
  .addOption(new Option("--dst-repeated <policy>", "a --cron wall time that repeats: first (default), last or both").choices(["first", "last", "both"]))
  .option("--every-ms <n>", "every N ms (at least 1000), the first one N ms from now", msOption)
  .option("--at <iso-time>", "once, at this moment")
  .option("--overdue <bound>", `${overdueHelp} (default unbounded)`, parseOverdue)
  .option("--jitter-ms <n>", "make each occurrence up to N ms after its moment", msOption)
  .option("--start <iso-time>", "no moment before this")
  .option("--end <iso-time>", "no moment at or after this")
  .option("--max-count <n>", "spent after N occurrences", wholeNumberOption(1, Number.MAX_SAFE_INTEGER))
  .addOption(new Option("--overlap <policy>", "an occurrence while the previous one runs").choices(["allow", "skip", "bufferOne"]))
  .addOption(new Option("--catch-up <policy>", "missed occurrences owed after an outage").choices(["latest", "allWithinWindow", "none"]))
  .option("--catch-up-window-ms <n>", "with --catch-up allWithinWindow: how far back (at least 1000)", msOption)
  .option("--cancel-on <type[:data.path=input.path,...]>", cancelOnHelp, cancelOnOption)
  .option("--json", "print the timer as JSON", false)
  .action(clientAction(scheduleCommand));

program.command("unschedule <timer-id>").description("stop a runtime timer (recorded as timer.unscheduled)").action(clientAction(unscheduleCommand));

program
  .command("delay <action> [input]")
  .description(
    "arm one call of ACTION with INPUT (a JSON object, default {}) --in-ms from now or --at a moment; stored, survives restarts (recorded as timer.scheduled)",
  )
  .option("--in-ms <n>", "due N ms from now", msOption)
  .option("--at <iso-time>", "due at this moment")
  .requiredOption("--overdue <bound>", `${overdueHelp} (required)`, parseOverdue)
  .option("--id <delay-id>", "delay id (default: the owner makes one); the same delay with the same id is armed once, so a retry is safe", idOption)
  .option("--cancel-on <type[:data.path=input.path,...]>", cancelOnHelp, cancelOnOption)
  .option("--json", "print {delayId, due} as JSON", false)
  .action(clientAction(delayCommand));

program.command("cancel-delay <delay-id>").description("cancel a pending delay (recorded as timer.unscheduled)").action(clientAction(cancelDelayCommand));

program
  .command("cursors")
  .description("list processors with their cursors, lag, in-flight deliveries and failures (admin)")
  .option("--json", "JSON lines instead of a table", false)
  .action(clientAction(cursorsCommand));

program
  .command("move-cursor <processor>")
  .description("move a processor's cursor to replay from a seq or a time (admin; recorded)")
  .option("--seq <n>", "events at or below this seq count as finished: delivery goes on from n + 1 (0: replay the whole log)", seqOption)
  .option("--at <iso-time>", "replay from the first event committed at or after this time")
  .action(clientAction(moveCursorCommand));

program
  .command("pause <processor>")
  .description("stop handing out deliveries of a processor (admin; recorded; an already paused one is left alone and reported so)")
  .action(clientAction((processor: string, flags: ClientFlags) => setPausedCommand(processor, true, flags)));

program
  .command("resume <processor>")
  .description("resume a paused processor (admin; recorded; a running one is left alone and reported so)")
  .action(clientAction((processor: string, flags: ClientFlags) => setPausedCommand(processor, false, flags)));

program
  .command("failed")
  .description("list failed (parked) deliveries (admin)")
  .option("--processor <name>", "only this processor")
  .option("--json", "JSON lines instead of a table", false)
  .action(clientAction(failedCommand));

program
  .command("redeliver <processor> [seqs...]")
  .description("deliver failed events again; all of the processor's when no seq is given (admin; recorded)")
  .action(clientAction(redeliverCommand));

program
  .command("dismiss <processor> [seqs...]")
  .description(
    "forget failed deliveries without delivering them again: these seqs, or --all of the processor's (admin; recorded; retention lets their events go)",
  )
  .option("--all", "every failed delivery of the processor")
  .action(clientAction(dismissCommand));

program
  .command("limits")
  .description("list the flow limits (concurrency by key, rate, debounce, priority) of every processor and action that declares any")
  .option("--json", "JSON lines instead of a table", false)
  .action(clientAction(limitsCommand));

program
  .command("actions")
  .description("list actions with the calls holding and waiting for a concurrency slot, their rate waits and their limits (admin)")
  .option("--json", "JSON lines instead of a table", false)
  .action(clientAction(actionsCommand));

program
  .command("executors")
  .description("list connected executors (admin)")
  .option("--json", "JSON lines instead of a table", false)
  .action(clientAction(executorsCommand));

program
  .command("health")
  .description("show each owner of --url: its role (leader or standby), health status and the leader it names")
  .option("--json", "JSON lines instead of a table", false)
  .addHelpText("after", `\nExit status: 0 when an owner serves (leads); ${ownerUnavailableStatus} when none does.`)
  .action(clientAction(healthCommand));

program
  .command("sql <statement> [params...]")
  .description("run one maintenance SQL statement, recorded as maintenance.sql (admin)")
  .action(clientAction(sqlCommand));

/** `--overdue`: `unbounded`, `on-time-or-never` (or `onTimeOrNever`) or a whole number of ms (`{ maxLatenessMs }`). */
function parseOverdue(value: string): OverdueBound {
  if (value === "unbounded") return "unbounded";
  if (value === "on-time-or-never" || value === "onTimeOrNever") return "onTimeOrNever";
  if (/^\d+$/.test(value) && Number(value) <= Number.MAX_SAFE_INTEGER) return { maxLatenessMs: Number(value) };
  throw new InvalidArgumentError("must be unbounded, on-time-or-never or a whole number of ms");
}

program.parseAsync().catch((e: unknown) => {
  // An https:// URL to an owner that speaks plaintext fails in the TLS handshake, which the
  // transport reports as INTERNAL with OpenSSL's text: say what it means instead.
  if (e instanceof ConnectError && /wrong version number|packet length too long/.test(e.rawMessage)) {
    console.error(
      `chronolog: Unavailable: the owner at ${program.opts().url} does not speak TLS: use an http:// URL (or start the owner with tls in its config)`,
    );
  } else if (e instanceof ConnectError && e.code === Code.Unauthenticated) {
    const given = program.opts().token ? "the token given (--token or CHRONOLOG_TOKEN) is not one of the owner's" : "this owner needs a token";
    console.error(`chronolog: Unauthenticated: ${e.rawMessage}: ${given}; give a principal's token with --token or CHRONOLOG_TOKEN`);
  } else if (e instanceof ConnectError && e.code === Code.Unavailable && /ECONNREFUSED/.test(e.rawMessage)) {
    console.error(
      `chronolog: Unavailable: no owner answers at ${program.opts().url} (connection refused): start one with \`bin/chronolog serve\` (or \`npm run serve\` in the clone), or give its URL with --url or CHRONOLOG_URL`,
    );
  } else if (e instanceof ConnectError) console.error(`chronolog: ${Code[e.code]}: ${e.rawMessage}`);
  else console.error(`chronolog: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
