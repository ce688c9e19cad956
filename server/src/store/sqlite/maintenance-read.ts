import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { ChronologError, fail } from "../../errors.js";

/** How long a maintenance query may run before its process is killed (ms). */
export const maintenanceReadTimeoutMs = 10_000;
/** Most rows a maintenance query may return. */
export const maintenanceReadMaxRows = 10_000;

/** The reader process: its own read-only connection; one statement; rows as JSON on stdout (CommonJS, run with `-e`). */
const readerSource = `
const Database = require(process.argv[1]);
let input = "";
process.stdin.on("data", (d) => (input += d)).on("end", () => {
  const { path, sql, params, maxRows } = JSON.parse(input);
  const safe = (row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString("base64") : v]));
  let answer;
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma("busy_timeout = 5000");
    const rows = [];
    for (const row of db.prepare(sql).iterate(...params)) {
      if (rows.length === maxRows) { answer = { tooMany: true }; break; }
      rows.push(safe(row));
    }
    answer ??= { rows };
  } catch (error) {
    answer = { error: error instanceof Error ? error.message : String(error) };
  }
  process.stdout.write(JSON.stringify(answer));
});
`;

/**
 * Runs a read-only maintenance query in a child process with its own read-only connection
 * to `dbPath`, so a slow or endless query (a recursive CTE without a bound) never stalls the
 * owner's only thread: after {@link maintenanceReadTimeoutMs} the process is killed and the
 * caller gets DEADLINE_EXCEEDED. More than {@link maintenanceReadMaxRows} rows is
 * RESOURCE_EXHAUSTED (add a LIMIT); SQLite's errors are INVALID_ARGUMENT. The child reads a
 * consistent snapshot of what was committed when it started.
 */
export function readInChild(dbPath: string, sql: string, params: unknown[], timeoutMs = maintenanceReadTimeoutMs): Promise<Record<string, unknown>[]> {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", readerSource, driver], { stdio: ["pipe", "pipe", "ignore"] });
    let out = "";
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", () => {
      clearTimeout(timer);
      try {
        if (timedOut)
          throw new ChronologError(
            "deadline_exceeded",
            `maintenance query ran longer than ${timeoutMs / 1000} s and was stopped; bound it (LIMIT, a WHERE on an index)`,
          );
        const answer = JSON.parse(out) as { rows?: Record<string, unknown>[]; tooMany?: boolean; error?: string };
        if (answer.tooMany) fail("too_large", `maintenance query returned more than ${maintenanceReadMaxRows} rows; add a LIMIT`);
        if (answer.error !== undefined) fail("bad_request", `maintenance SQL failed: ${answer.error}`, [{ field: "sql", description: answer.error }]);
        resolve(answer.rows ?? []);
      } catch (error) {
        reject(error);
      }
    });
    child.stdin.end(JSON.stringify({ path: dbPath, sql, params, maxRows: maintenanceReadMaxRows }));
  });
}
