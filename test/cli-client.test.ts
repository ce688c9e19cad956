// The client commands of the command line as real processes against an owner: --url and
// --token before or after the command, the time commands (schedule, unschedule, delay,
// cancel-delay), a closed stdout pipe (EPIPE) and numeric options checked before any request.
//
// @module-tag serial
// @module-tag sqlite-only

import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { DateTime } from "luxon";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor, type ActionContext } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { chronologArgs } from "./helpers/chronolog.js";
import { cli } from "./helpers/cli.js";
import { eventsOf } from "./helpers/log-snapshot.js";
import { onPostgres, startTestOwner, tempDir } from "./helpers/owner.js";
import { deadPort } from "./helpers/standby.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const tokens = { admin: "admin-token-0123456789", web: "web-client-token-0123" };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** An owner (local admin, no config) with an executor hosting `jobs.run`, which records its calls. */
async function ownerWithJobs() {
  const owner = await startTestOwner({ shutdownGraceMs: 100 });
  cleanups.push(() => owner.close());
  const calls: ActionContext[] = [];
  const plugin = definePlugin({ name: "jobs", actions: { run: { allow: ["*"], run: (ctx) => void calls.push(ctx) } } });
  const executor = runExecutor({ url: owner.url, plugins: [plugin], onError: () => {} });
  cleanups.push(() => executor.stop(50));
  await executor.ready;
  return { owner, calls, client: createClient({ url: owner.url }) };
}

/** Runs `command` in bash from the repository; resolves with its output (the pipeline's statuses go to stderr as `status=A,B`). */
function bash(command: string): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("bash", ["-c", `${command}; echo "status=\${PIPESTATUS[*]}" >&2`], { cwd: repo }, (_error, stdout, stderr) => resolve({ stdout, stderr }));
  });
}

describe("chronolog schedule, unschedule, delay, cancel-delay", () => {
  it("sets timers by --at, --cron in a zone and --every-ms with a policy; arms and cancels delays; the owner calls the action", async () => {
    const { owner, calls, client } = await ownerWithJobs();
    const run = (args: string[]) => cli(["--url", owner.url, ...args]);

    // Once, at a moment: the action gets the input and the timer as ctx.scheduled.
    const at = new Date(Math.ceil((Date.now() + 1_500) / 1000) * 1000).toISOString();
    const once = await run(["schedule", "jobs.run", '{"n":1}', "--at", at, "--id", "once"]);
    expect(once.stderr).toBe("");
    expect(once.stdout).toBe(`once: scheduled at ${at}, next due ${at}\n`);
    await until(() => calls.some((c) => c.input.n === 1), "the one-shot's call");
    expect(calls.find((c) => c.input.n === 1)!.scheduled).toMatchObject({ timerId: "once", due: new Date(at) });

    // By cron in a zone (JSON out): next Monday 09:00 in Berlin, with a DST policy.
    const weekly = await run(["schedule", "jobs.run", "--cron", "0 9 * * 1", "--zone", "Europe/Berlin", "--dst-gap", "skip", "--id", "weekly", "--json"]);
    const timer = JSON.parse(weekly.stdout);
    expect(timer).toMatchObject({
      id: "weekly",
      action: "jobs.run",
      spec: { cron: { expression: "0 9 * * 1", zone: "Europe/Berlin", dst: { gap: "DST_GAP_SKIP" } } },
    });
    const due = DateTime.fromISO(timer.nextDue).setZone("Europe/Berlin");
    expect([due.weekday, due.hour, due.minute]).toEqual([1, 9, 0]);

    // Every N ms with a lateness bound and a policy.
    const minutely = await run([
      "schedule",
      "jobs.run",
      '{"n":3}',
      "--every-ms",
      "60000",
      "--id",
      "minutely",
      "--overdue",
      "5000",
      "--jitter-ms",
      "1000",
      "--max-count",
      "3",
      "--overlap",
      "skip",
    ]);
    expect(minutely.stdout).toMatch(/^minutely: scheduled every 60000 ms, next due \d{4}-\d\d-\d\dT[\d:.]+Z\n$/);
    const stored = await client.getTimer("minutely");
    expect(stored.overdue?.bound).toEqual({ case: "maxLatenessMs", value: 5000n });
    expect(stored.policy).toMatchObject({ jitterMs: 1000n, maxCount: 3n, overlap: 2 /* OVERLAP_POLICY_SKIP */ });
    expect((await run(["unschedule", "minutely"])).stdout).toBe("minutely: unscheduled\n");
    await expect(client.getTimer("minutely")).rejects.toMatchObject({ code: Code.NotFound });

    // A delay: --overdue is required; it is made once, in --in-ms.
    const missing = await run(["delay", "jobs.run", "--in-ms", "300"]);
    expect([missing.code, missing.stderr]).toEqual([1, expect.stringContaining("error: required option '--overdue <bound>' not specified")]);
    const delay = await run(["delay", "jobs.run", '{"n":2}', "--in-ms", "300", "--overdue", "unbounded"]);
    expect(delay.stdout).toMatch(/^\S+: due \d{4}-\d\d-\d\dT[\d:.]+Z\n$/);
    await until(() => calls.some((c) => c.input.n === 2), "the delay's call");
    // With --id, running the same command again (an answer lost) arms nothing and prints the same delay.
    const retry = ["delay", "jobs.run", '{"n":5}', "--in-ms", "300", "--overdue", "unbounded", "--id", "job-5"];
    const first = await run(retry);
    expect(first.stdout).toMatch(/^job-5: due \d{4}-\d\d-\d\dT[\d:.]+Z\n$/);
    await until(() => calls.some((c) => c.input.n === 5), "the delay --id's call");
    expect((await run(retry)).stdout).toBe(first.stdout);
    const otherInput = await run(["delay", "jobs.run", '{"n":6}', "--in-ms", "300", "--overdue", "unbounded", "--id", "job-5"]);
    expect([otherInput.code, otherInput.stderr]).toEqual([1, expect.stringMatching(/^chronolog: AlreadyExists: delay_id "job-5" already names a delay/)]);
    expect(calls.filter((c) => c.input.n === 5)).toHaveLength(1);
    expect((await eventsOf(client, ["timer.scheduled"])).filter((e) => e.data?.timer_id === "job-5")).toHaveLength(1);
    // Another, cancelled before it is due: never called.
    const later = JSON.parse(
      (await run(["delay", "jobs.run", '{"n":4}', "--at", new Date(Date.now() + 60_000).toISOString(), "--overdue", "on-time-or-never", "--json"])).stdout,
    );
    expect((await client.getTimer(later.delayId)).overdue?.bound.case).toBe("onTimeOrNever");
    expect((await run(["cancel-delay", later.delayId])).stdout).toBe(`${later.delayId}: cancelled\n`);
    await expect(client.getTimer(later.delayId)).rejects.toMatchObject({ code: Code.NotFound });

    const recorded = await eventsOf(client, ["timer.scheduled", "timer.unscheduled"]);
    expect(recorded.map((e) => `${e.type} ${e.data?.timer_id}`)).toEqual(
      expect.arrayContaining([
        "timer.scheduled once",
        "timer.scheduled weekly",
        "timer.scheduled minutely",
        "timer.unscheduled minutely",
        `timer.unscheduled ${later.delayId}`,
      ]),
    );

    // Bad combinations and values are usage errors, before any request.
    const two = await run(["schedule", "jobs.run", "--every-ms", "60000", "--at", at]);
    expect([two.code, two.stderr]).toEqual([
      1,
      "chronolog: give exactly one of --cron EXPR (with --zone), --every-ms N or --at ISO-TIME, not --every-ms and --at\n",
    ]);
    const zoneAlone = await run(["schedule", "jobs.run", "--every-ms", "60000", "--zone", "UTC"]);
    expect(zoneAlone.stderr).toBe("chronolog: --zone, --dst-gap and --dst-repeated go with --cron\n");
    const badMs = await run(["schedule", "jobs.run", "--every-ms", "1e4"]);
    expect(badMs.stderr).toContain("error: option '--every-ms <n>' argument '1e4' is invalid. must be a whole number from 0 to 9007199254740991");
    const badOverdue = await run(["delay", "jobs.run", "--in-ms", "10", "--overdue", "soon"]);
    expect(badOverdue.stderr).toContain(
      "error: option '--overdue <bound>' argument 'soon' is invalid. must be unbounded, on-time-or-never or a whole number of ms",
    );
    // The owner's own checks come back as its errors.
    const tooOften = await run(["schedule", "jobs.run", "{}", "--every-ms", "10"]);
    expect([tooOften.code, tooOften.stderr]).toEqual([
      1,
      expect.stringMatching(/^chronolog: InvalidArgument: spec\.every_ms must be from 1000 to \d+ ms, got 10\n$/),
    ]);
  });
});

describe("client command options", () => {
  it("--url and --token work before and after the command name; CHRONOLOG_URL is the default", async () => {
    const owner = await startTestOwner({
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "web", token: tokens.web, role: "client" },
        ],
      },
    });
    cleanups.push(() => owner.close());
    const before = await cli(["--url", owner.url, "--token", tokens.admin, "cursors"]);
    expect([before.code, before.stdout]).toEqual([0, expect.stringMatching(/^NAME\s+ACK FLOOR/)]);
    const after = await cli(["cursors", "--url", owner.url, "--token", tokens.admin]);
    expect(after.stdout).toBe(before.stdout);
    const mixed = await cli(["--token", tokens.web, "sql", "SELECT 1", `--url=${owner.url}`]);
    expect([mixed.code, mixed.stderr]).toEqual([1, expect.stringContaining("PermissionDenied")]);
    const fromEnv = await new Promise<{ stdout: string }>((resolve) =>
      execFile(
        process.execPath,
        [...chronologArgs, "cursors"],
        { cwd: repo, env: { ...process.env, CHRONOLOG_URL: owner.url, CHRONOLOG_TOKEN: tokens.admin } },
        (_e, stdout) => resolve({ stdout }),
      ),
    );
    expect(fromEnv.stdout).toBe(before.stdout);
    const help = await cli(["tail", "--help"]);
    expect(help.stdout).toMatch(/Global Options:[\s\S]*--url <url>/);
  });

  it("a reader that closes the pipe early (| head -2) ends the command quietly with status 0, following or not", async () => {
    const owner = await startTestOwner();
    cleanups.push(() => owner.close());
    const client = createClient({ url: owner.url });
    await client.registerPlugin({ name: "bulk", events: { "bulk.item": { allow: ["*"] } } });
    // Far more output than a pipe buffers (64 KiB), so writes go on after head has exited.
    await client.emitBatch(Array.from({ length: 3000 }, (_, i) => ({ type: "bulk.item", data: { i, padding: "x".repeat(64) } })));
    const main = `node ${chronologArgs.join(" ")} --url ${owner.url}`;
    const sql = onPostgres ? [] : [`${main} sql "SELECT seq FROM events" 2>&1 | head -2`]; // ExecuteSql runs on the SQLite store only
    for (const command of [`${main} tail --no-follow | head -2`, `${main} tail | head -2`, ...sql]) {
      const { stdout, stderr } = await bash(command);
      expect(stdout.trim().split("\n"), command).toHaveLength(2);
      expect(stderr, command).toBe("status=0 0\n");
    }
  });

  it("numeric options and JSON arguments are checked before any request, with a usage message (no Internal: serialize binary)", async () => {
    const owner = await startTestOwner();
    cleanups.push(() => owner.close());
    const run = (args: string[]) => cli(["--url", owner.url, ...args]);
    const huge = await run(["move-cursor", "p", "--seq", "18446744073709551616"]);
    expect(huge.code).toBe(1);
    expect(huge.stderr).toMatch(/^error: option '--seq <n>' argument '18446744073709551616' is invalid\. must be a whole number from 0 to 9007199254740991\n/);
    expect(huge.stderr).not.toContain("Internal");
    const from = await run(["tail", "--no-follow", "--from", "abc"]);
    expect([from.code, from.stderr]).toEqual([1, expect.stringMatching(/^error: option '--from <seq>' argument 'abc' is invalid\./)]);
    // An empty id would mean "make one" (a retry armed twice): refused, like the other options.
    for (const args of [
      ["delay", "x.y", "--in-ms", "5", "--overdue", "unbounded", "--id", ""],
      ["schedule", "x.y", "--every-ms", "60000", "--id", ""],
      ["emit", "x.y", "{}", "--id", ""],
    ]) {
      const empty = await run(args);
      expect([empty.code, empty.stderr], args.join(" ")).toEqual([
        1,
        expect.stringMatching(/^error: option '--id <[a-z-]+>' argument '' is invalid\. must not be empty/),
      ]);
    }
    // JSON deeper than the owner takes (past ~50 levels it would not even encode): said before any request.
    const deep = await run(["emit", "x.y", `${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`]);
    expect([deep.code, deep.stderr]).toEqual([1, expect.stringMatching(/^chronolog: data is nested deeper than 32 levels \(at data\/a\/a\//)]);
    const seqs = await run(["redeliver", "p", "1", "99999999999999999999"]);
    expect([seqs.code, seqs.stderr]).toEqual([1, 'chronolog: each seq must be a whole number from 1 to 9007199254740991, got "99999999999999999999"\n']);
    // In range, the request is made: an unknown processor is the owner's NOT_FOUND.
    const unknown = await run(["move-cursor", "p", "--seq", "9007199254740991"]);
    expect(unknown.stderr).toMatch(/^chronolog: NotFound: /);
  });

  it("a bad --url and a missing or malformed manifest file get messages that name them", async () => {
    expect(await cli(["--url", "garbage", "emit", "a.b", "{}"])).toMatchObject({
      code: 1,
      stderr: 'chronolog: --url "garbage" is not an http:// or https:// URL (e.g. http://127.0.0.1:50051)\n',
    });
    expect(await cli(["register", "/chronolog-no-such-manifest.yaml"])).toMatchObject({
      code: 1,
      stderr: "chronolog: cannot read the manifest /chronolog-no-such-manifest.yaml: no such file\n",
    });
    const file = join(tempDir(), "bad.yaml");
    writeFileSync(file, "name: t\nschedules:\n  x:\n    action: t.a\n    every_ms: 60000\n    dst: {gap: DST_GAP_NOPE}\n");
    expect(await cli(["register", file])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(new RegExp(`^chronolog: the manifest ${file} is not a PluginManifest \\(nothing was sent\\): .*DST_GAP_NOPE`)),
    });
    // Nothing listening at the URL: say so and how to start an owner; a token missing or unknown: name --token and CHRONOLOG_TOKEN.
    const nobody = `http://127.0.0.1:${await deadPort()}`;
    expect(await cli(["--url", nobody, "emit", "a.b", "{}"])).toMatchObject({
      code: 1,
      stderr: `chronolog: Unavailable: no owner answers at ${nobody} (connection refused): start one with \`bin/chronolog serve\` (or \`npm run serve\` in the clone), or give its URL with --url or CHRONOLOG_URL\n`,
    });
    const guarded = await startTestOwner({ config: { principals: [{ name: "ops", token: tokens.admin, role: "admin" }] } });
    cleanups.push(() => guarded.close());
    expect(await cli(["--url", guarded.url, "emit", "a.b", "{}"])).toMatchObject({
      code: 1,
      stderr:
        "chronolog: Unauthenticated: missing bearer token: send the header `authorization: Bearer <token>`: this owner needs a token; give a principal's token with --token or CHRONOLOG_TOKEN\n",
    });
    expect((await cli(["--url", guarded.url, "--token", "not-a-token-0123456", "emit", "a.b", "{}"])).stderr).toBe(
      "chronolog: Unauthenticated: unknown bearer token: the token given (--token or CHRONOLOG_TOKEN) is not one of the owner's; give a principal's token with --token or CHRONOLOG_TOKEN\n",
    );
    // A processor's and an action's `concurrency: {...}` as the docs write it (the manifest's shorthand for concurrency_limit).
    const limits = join(tempDir(), "limits.yaml");
    writeFileSync(
      limits,
      "name: lim\nevents:\n  lim.happened: {}\nprocessors:\n  sync: {on: [lim.happened], concurrency: {limit: 2, key: data.a}}\nactions:\n  charge: {concurrency: {limit: 1, key: input.customer}}\n",
    );
    const registered = await cli(["--url", guarded.url, "--token", tokens.admin, "register", limits]);
    expect([registered.code, registered.stderr]).toEqual([0, ""]);
    expect(JSON.parse(registered.stdout)).toMatchObject({ plugin: "lim", revision: expect.anything() });
    writeFileSync(file, "name: [unclosed\n");
    expect(await cli(["register", file])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(new RegExp(`^chronolog: the manifest ${file} is not valid YAML \\(nothing was sent\\): `)),
    });
  });
});
