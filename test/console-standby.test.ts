// The console of a standby owner, in Chromium: a leader and a standby (real processes) on one
// PostgreSQL database of a real server. The standby's /console/ says it is a standby and links to
// the leader's console; it shows the read views (the live log, an event's page, processors as
// stored, timers, a durable collection's documents, plugins) without the buttons of changes,
// which a standby does not take; the leader's console says nothing of the kind. When the leader
// dies and the standby takes over, the same page becomes a leader's console and its log goes on.
//
// @module-tag serial

import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import { chronologArgs } from "./helpers/chronolog.js";
import { launchChromium, skipWithoutChromium, watchProblems } from "./helpers/chromium.js";
import { tempDir } from "./helpers/owner.js";
import { startPostgresServer, type PostgresServer } from "./helpers/postgres-server.js";
import { freePort } from "./helpers/standby.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const tokens = { ops: "standby-console-ops-token-0123" };
const manifest = {
  name: "st",
  version: "1",
  events: { "st.e": { allow: ["*"] } },
  collections: { notes: { durable: true, allow: ["*"] } },
  actions: { ping: { allow: ["*"] } },
  processors: { count: { on: ["st.e"] } },
};

/** `chronolog serve --store` as a child process, with its logs. */
interface OwnerProc {
  child: ChildProcess;
  url: string;
  logs: string[];
  exited: Promise<unknown>;
  waitLog(pattern: RegExp): Promise<void>;
}

describe.skipIf(skipWithoutChromium("console-standby.test.ts"))("a standby's console (PostgreSQL, in Debian Chromium)", () => {
  let server: PostgresServer;
  let folder: string;
  let leader: OwnerProc;
  let standby: OwnerProc;
  let context: BrowserContext;
  const started: OwnerProc[] = [];
  const pageProblems: string[] = [];

  async function serve(store: string): Promise<OwnerProc> {
    const url = `http://127.0.0.1:${await freePort()}`;
    const args = ["serve", "--store", store, "--port", new URL(url).port, "--plugins", join(folder, "plugins"), "--config", join(folder, "owner.json")];
    const child = spawn(process.execPath, [...chronologArgs, ...args], { cwd: repo, stdio: ["ignore", "ignore", "pipe"] });
    const logs: string[] = [];
    createInterface({ input: child.stderr! }).on("line", (line) => logs.push(String((JSON.parse(line) as { msg?: string }).msg ?? line)));
    const owner: OwnerProc = {
      child,
      url,
      logs,
      exited: new Promise((resolve) => child.once("exit", resolve)),
      waitLog: (pattern) => until(() => logs.some((l) => pattern.test(l)), `a log line matching ${pattern} (logs: ${logs.join(" | ")})`, 20_000),
    };
    started.push(owner);
    return owner;
  }

  /** A page of the console at `ownerUrl` + `path`, signed in as ops. */
  async function open(ownerUrl: string, path = "/"): Promise<Page> {
    const page = await context.newPage();
    watchProblems(page, pageProblems);
    await page.goto(`${ownerUrl}/console${path}`);
    await page.fill("#token", tokens.ops);
    await page.click("#sign-in");
    await page.waitForSelector("#who");
    return page;
  }

  beforeAll(async () => {
    server = await startPostgresServer();
    folder = tempDir();
    mkdirSync(join(folder, "plugins"));
    writeFileSync(join(folder, "plugins", "st.json"), JSON.stringify(manifest));
    writeFileSync(join(folder, "owner.json"), JSON.stringify({ principals: [{ name: "ops", token: tokens.ops, role: "admin" }] }));
    const admin = connectNative(server.url, "chronolog tests");
    admin.querySync("CREATE DATABASE console_standby");
    endNative(admin);
    const store = Object.assign(new URL(server.url), { pathname: "/console_standby" }).toString();
    leader = await serve(store);
    await leader.waitLog(/^owner serving/);
    standby = await serve(store);
    await standby.waitLog(/^console at .*a standby's/);
    const client = createClient({ url: leader.url, token: tokens.ops });
    for (const n of [1, 2, 3]) await client.emit("st.e", { n }, { id: `e-${n}` });
    await client.createDocument("notes", { _id: "n1", text: "first" });
    await client.delay("st.ping", {}, { intervalMs: 3_600_000 }, "unbounded", { delayId: "later" });
    await client.schedule("st.ping", {}, { everyMs: 3_600_000 }, { timerId: "hourly" });
    context = await launchChromium(tempDir("chronolog-chromium-"));
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    for (const o of started) o.child.kill("SIGKILL");
    await Promise.all(started.map((o) => o.exited));
    server?.stop();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it("says it is a standby, links to the leader's console, and shows the read views without their changes", async () => {
    const page = await open(standby.url);
    await page.waitForSelector("#standby");
    expect(await page.getAttribute("#who", "data-role")).toBe("standby");
    expect(await page.getAttribute("#leader-console", "href")).toBe(`${leader.url}/console/`);

    // The log, live: the leader's events, and one emitted at the leader while the page is open.
    await page.waitForSelector("#tail-status[data-state=live]");
    await page.waitForSelector("#tail tr[data-id=e-3]");
    const { event } = await createClient({ url: leader.url, token: tokens.ops }).emit("st.e", { n: 4 }, { id: "e-4" });
    await page.waitForSelector("#tail tr[data-id=e-4]", { timeout: 10_000 });
    expect(await page.textContent("#tail tr[data-id=e-4] td.actor")).toBe("via=principal:ops");
    await page.click("#tail tr[data-id=e-4] a");
    await page.waitForSelector("#event[data-id=e-4]");
    expect(JSON.parse((await page.textContent("#event-data"))!)).toEqual({ n: 4 });

    // Processors as stored: cursor and lag, no pause; what is in flight is the leader's to know.
    await page.click("a[data-nav=processors]");
    const row = '#processors tr[data-name="st.count"]';
    await until(async () => (await page.textContent(`${row} td.lag`)) === String(event!.seq), "the processor's lag");
    expect(await page.textContent(`${row} td.leader-only`)).toBe("on the leader");
    expect(await page.$$(`${row} button.pause`)).toHaveLength(0);
    await page.click(`${row} button.details`);
    await page.waitForSelector("text=No failed deliveries.");
    expect(await page.$$("#move-target, #redrive-all")).toHaveLength(0);

    // Time: a delay and a schedule, with no pause, trigger, cancel or backfill; the link goes to the same view at the leader.
    await page.click("a[data-nav=time]");
    await page.waitForSelector('#timers tr[data-id="later"][data-state=active]');
    await page.waitForSelector('#timers tr[data-id="hourly"][data-state=active]');
    expect(await page.$$("#timers button.pause, #timers button.trigger, #timers button.cancel, #timer-note")).toHaveLength(0);
    await page.click('#timers tr[data-id="hourly"] button.link'); // its next fire times, without a backfill
    await page.waitForSelector('.preview[data-timer="hourly"] .preview-times li');
    expect(await page.$$(".backfill")).toHaveLength(0);
    expect(await page.getAttribute("#leader-console", "href")).toBe(`${leader.url}/console/time`);

    // Executors are the leader's; plugins and a durable collection's documents are read here.
    expect(await page.$$("a[data-nav=executors]")).toHaveLength(0);
    await page.click("a[data-nav=plugins]");
    await page.click("a[data-collection=notes]");
    await page.waitForSelector('#documents tr[data-id="n1"]');
    await page.goto(`${standby.url}/console/executors`);
    await page.waitForSelector("#on-the-leader");
    await page.close();

    // The leader's console says nothing of standbys and offers the changes.
    const atLeader = await open(leader.url, "/processors");
    await atLeader.waitForSelector(`${row} button.pause`);
    expect(await atLeader.getAttribute("#who", "data-role")).toBe("leader");
    expect(await atLeader.$("#standby")).toBeNull();
    await atLeader.close();
    expect(pageProblems).toEqual([]);
  });

  it("becomes a leader's console when the standby takes over, its log going on", async () => {
    const page = await open(standby.url);
    await page.waitForSelector("#standby");
    await page.waitForSelector("#tail-status[data-state=live]");
    leader.child.kill("SIGKILL");
    await standby.waitLog(/^owner serving/);
    await page.waitForSelector("#who[data-role=leader]", { timeout: 20_000 });
    expect(await page.$("#standby")).toBeNull();
    await createClient({ url: standby.url, token: tokens.ops }).emit("st.e", { n: 5 }, { id: "e-5" });
    await page.waitForSelector("#tail tr[data-id=e-5]", { timeout: 15_000 });
    await page.click("a[data-nav=processors]");
    await page.waitForSelector('#processors tr[data-name="st.count"] button.pause');
    await page.close();
    expect(pageProblems).toEqual([]);
  });
});
