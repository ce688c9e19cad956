// The console (console/, served by the owner under /console/) end to end in headless Debian
// Chromium (playwright-core, as browser.test.ts): a real owner with principals, a real executor
// process (TS SDK, plugin `desk` of helpers/console-executor.ts) and its declared schedule. Each
// view renders the owner's data; the buttons change the owner (checked through the SDK and the
// executor's own output); a client token sees no admin button and a forged admin call from its
// page is refused. Screenshots of each view go to test/artifacts/console/ (gitignored).
// Over TLS the page and its calls go over HTTP/2 in the browser. The static files themselves (CSP,
// content types, HTTP/1.1 and HTTP/2 in plaintext) are checked in console-files.test.ts.
//
// @module-tag serial
// @module-tag sqlite-only

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import type { Owner } from "../server/src/owner.js";
import { launchChromium, skipWithoutChromium, watchProblems } from "./helpers/chromium.js";
import { cli } from "./helpers/cli.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const artifacts = join(repo, "test/artifacts/console");
const tokens = { admin: "console-admin-token-0123456789", client: "console-client-token-0123456789", executor: "console-executor-token-0123456789" };
const processor = "desk.triage";

/** The owner serves dist/console/, which `npm test` (test/run.mjs) builds first. */
function builtConsole(): void {
  if (!existsSync(join(repo, "dist/console/index.html"))) throw new Error("dist/console/ is missing: run the tests with `npm test` (or `npm run build` first)");
}

/** A line the executor printed: a delivery of `desk.triage` or a call of `desk.remind`. */
type Line = { kind: "delivery"; seq: number; id: string; attempt: number } | { kind: "call"; callId: string; input?: { what?: string } };

describe.skipIf(skipWithoutChromium("console.test.ts"))("console (served by the owner, in Debian Chromium)", () => {
  let owner: Owner & { url: string };
  let admin: ChronologClient;
  let executor: ChildProcess;
  let context: BrowserContext;
  const lines: Line[] = [];
  /** Content security policy violations and page errors seen on any page. */
  const pageProblems: string[] = [];
  const folders: string[] = [];

  const deliveries = (id: string) => lines.filter((l) => l.kind === "delivery" && l.id === id);
  const calls = () => lines.filter((l) => l.kind === "call");
  const triage = async () => (await admin.admin.listProcessors({})).processors.find((p) => p.name === processor)!;

  async function open(path: string, token = tokens.admin, signedIn = "#who"): Promise<Page> {
    const page = await context.newPage();
    watchProblems(page, pageProblems);
    await page.goto(`${owner.url}/console${path}`);
    await page.waitForSelector("#token");
    await page.fill("#token", token);
    await page.click("#sign-in");
    try {
      await page.waitForSelector(signedIn, { timeout: 10_000 });
    } catch (e) {
      await page.screenshot({ path: join(artifacts, "failed-sign-in.png") });
      throw new Error(`${String(e)}\n${await page.content()}\n${pageProblems.join("\n")}`);
    }
    return page;
  }

  async function screenshot(page: Page, name: string): Promise<void> {
    // Usable at 1280×800: nothing is wider than the window.
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    const outside = await page.$$eval("button, input, select, a", (els) =>
      els.filter((el) => el.getBoundingClientRect().right > window.innerWidth).map((el) => el.outerHTML),
    );
    expect(outside).toEqual([]);
    await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
  }

  beforeAll(async () => {
    builtConsole();
    rmSync(artifacts, { recursive: true, force: true });
    mkdirSync(artifacts, { recursive: true });
    owner = await startTestOwner({
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "web", token: tokens.client, role: "client" },
          { name: "desk-executor", token: tokens.executor, role: "executor" },
        ],
      },
    });
    admin = createClient({ url: owner.url, token: tokens.admin });
    executor = spawn(process.execPath, ["--import", "tsx", "test/helpers/console-executor.ts", owner.url, tokens.executor], {
      cwd: repo,
      stdio: ["ignore", "pipe", "pipe"],
    });
    createInterface({ input: executor.stdout! }).on("line", (line) => lines.push(JSON.parse(line) as Line));
    await new Promise<void>((resolve, reject) => {
      let err = "";
      executor.stderr!.on("data", (b: Buffer) => {
        err += b.toString();
        if (err.includes("executor ready")) resolve();
      });
      executor.once("exit", (code) => reject(new Error(`executor exited (${code}):\n${err}`)));
    });
    await admin.emit("ticket.opened", { title: "printer on fire" }, { id: "t-1", actor: { id: "user:ana" } });
    await admin.emit("ticket.opened", { title: "cannot log in", fail: true }, { id: "t-bad" });
    await until(async () => (await triage()).failures === 1n && (await triage()).lag === 0n, "t-1 triaged and t-bad failed");
    const profile = tempDir("chronolog-chromium-");
    folders.push(profile);
    context = await launchChromium(profile); // (it ignores HTTPS errors: the TLS test's owner has a self-signed certificate)
  });
  afterAll(async () => {
    await context?.close();
    executor?.kill("SIGKILL");
    await owner?.close();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  it("log: the live tail shows an event emitted from outside within a second; filters; the event page links its causes both ways", async () => {
    const page = await open("/");
    await page.waitForSelector("#tail-status[data-state=live]");
    await page.waitForSelector("#tail tr[data-id=t-1]");
    const { event } = await admin.emit("ticket.opened", { title: "from outside" }, { id: "t-live" });
    const emitted = Date.now();
    await page.waitForSelector("#tail tr[data-id=t-live]", { timeout: 1000 });
    expect(Date.now() - emitted).toBeLessThan(1000);
    expect(await page.getAttribute("#tail tr[data-id=t-live]", "data-seq")).toBe(String(event!.seq));
    await until(async () => deliveries("t-live").length === 1, "t-live delivered");

    // An event emitted with the CLI and the admin's token (a principal without actor defaults) names who emitted it.
    const emittedByCli = await cli([
      "emit",
      "ticket.opened",
      '{"title": "from the command line"}',
      "--id",
      "t-cli",
      "--url",
      owner.url,
      "--token",
      tokens.admin,
    ]);
    expect(emittedByCli.code).toBe(0);
    await page.waitForSelector("#tail tr[data-id=t-cli]");
    expect(await page.textContent("#tail tr[data-id=t-cli] td.actor")).toBe("via=principal:ops");
    expect(await page.textContent("#tail tr[data-id=t-live] td.actor")).toBe("via=principal:ops");
    await screenshot(page, "log");

    // Older events, a page from the server at a time: the tail starts 100 seqs before the head.
    await admin.emitBatch(Array.from({ length: 120 }, (_, i) => ({ type: "ticket.opened", data: { title: `batch ${i}` }, id: `t-batch-${i}` })));
    await until(async () => deliveries("t-batch-119").length === 1 && (await triage()).lag === 0n, "the batch triaged");
    await page.reload();
    await page.waitForSelector("#tail-status[data-state=live]");
    const head = (await admin.log.readLog({ pageSize: 1 })).headSeq;
    await until(async () => (await page.textContent("#older-from")) === `shown from seq ${head - 99n}`, "the tail's start");
    expect(await page.$("#tail tr[data-id=t-1]")).toBeNull();
    await page.click("#older");
    await page.waitForSelector("#tail tr.older[data-id=t-1]");
    expect(await page.textContent("#older-from")).toBe("from the start of the log");
    const seqs = await page.$$eval("#tail tbody tr", (rows) => rows.map((r) => Number(r.getAttribute("data-seq"))));
    expect(seqs).toEqual(Array.from({ length: Number(head) }, (_, i) => Number(head) - i)); // every event, newest first, once

    // Type and where filters: the tail starts again with only the matching events.
    await page.fill("#filter-types", "ticket.opened");
    await page.fill("#filter-where", '{"title": "printer on fire"}');
    await page.click("#apply-filter");
    await page.waitForSelector("#tail-status[data-state=live]");
    await page.click("#older"); // t-1 is more than 100 seqs back
    await until(
      async () => (await page.$$eval("#tail tbody tr", (rows) => rows.map((r) => r.getAttribute("data-id")))).join() === "t-1",
      "only t-1 in the filtered tail",
    );

    // The filter is in the address: a reload, the address opened in another tab, back and forward show the filter they name.
    const filtered = new URL(page.url());
    expect(filtered.pathname).toBe("/console/");
    expect(filtered.searchParams.getAll("type")).toEqual(["ticket.opened"]);
    expect(filtered.searchParams.get("where")).toBe('{"title": "printer on fire"}');
    const onlyT1 = async (p: Page) => {
      await p.waitForSelector("#tail-status[data-state=live]");
      expect([await p.inputValue("#filter-types"), await p.inputValue("#filter-where")]).toEqual(["ticket.opened", '{"title": "printer on fire"}']);
      await p.click("#older");
      await until(async () => (await p.$$eval("#tail tbody tr", (rows) => rows.map((r) => r.getAttribute("data-id")))).join() === "t-1", "only t-1 again");
    };
    await page.reload();
    await onlyT1(page);
    const bookmarked = await open(`/${filtered.search}`);
    await onlyT1(bookmarked);
    await bookmarked.close();
    await page.goBack();
    await page.waitForSelector("#tail tr[data-type='ticket.triaged']"); // the whole log's tail again
    expect([new URL(page.url()).search, await page.inputValue("#filter-types"), await page.inputValue("#filter-where")]).toEqual(["", "", ""]);
    await page.goForward();
    await onlyT1(page);
    await page.fill("#filter-where", "{not json");
    await page.click("#apply-filter");
    await page.waitForSelector("text=where: ");

    // Search by id: the event page with data, actor, time, and the event made under it.
    await page.fill("#search-id", "t-1");
    await page.click("#search");
    await page.waitForSelector("#event[data-id=t-1]");
    expect(JSON.parse((await page.textContent("#event-data"))!)).toEqual({ title: "printer on fire" });
    expect(await page.textContent("#event-actor")).toBe("id=user:ana");
    expect(await page.textContent("#event-cause")).toBe("none");
    // Its timeline: t-1, its delivery to the processor, and the event the processor made under it.
    const triaged = await page.waitForSelector("#timeline tr[data-kind=event]:not(.current) .event-link");
    const triagedId = (await triaged.getAttribute("data-id"))!;
    expect(await page.$$eval("#timeline tbody tr", (trs) => trs.map((tr) => tr.getAttribute("data-kind")))).toEqual(["event", "delivery", "event"]);
    expect(await page.getAttribute(`#timeline tr[data-kind=delivery]`, "data-outcome")).toBe("done");
    expect((await admin.log.getEvent({ id: triagedId })).event!.cause).toBe("t-1");
    await screenshot(page, "event");
    await page.click(`#timeline .event-link[data-id="${triagedId}"]`);
    await page.waitForSelector(`#event[data-id="${triagedId}"]`);
    await page.waitForSelector("#event-cause .event-link[data-id=t-1]");
    await page.goto(`${owner.url}/console/events/no-such-event`);
    await page.waitForSelector("#event-error");
    expect(await page.textContent("#event-error")).toMatch(/^NotFound: /);
    await page.close();
  });

  it("processors: pausing from the page stops deliveries and resuming restarts them; moving the cursor to a seq or a time says what is delivered again", async () => {
    const page = await open("/processors");
    const row = `#processors tr[data-name="${processor}"]`;
    await page.waitForSelector(`${row} .limits .rate-waits`);
    expect(await page.textContent(`${row} .limits`)).toMatch(/^rate 1000 per 1 s \(burst 1000\)rate waits: 0 \(.*\), 0 waiting$/);
    await page.waitForSelector(`${row}[data-paused=false]`);
    await page.waitForSelector("#lag-chart[data-samples='3']", { timeout: 10_000 });

    // The delivery latency of the last minute, as ListProcessors reports it.
    await admin.emit("ticket.opened", { title: "timed" }, { id: "t-timed" });
    await until(async () => deliveries("t-timed").length === 1 && (await triage()).lag === 0n, "t-timed triaged");
    const shown = (ms: number) => (ms < 10 ? `${ms.toFixed(2)} ms` : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);
    await until(async () => {
      const cells = [await page.textContent(`${row} td.latency-p50`), await page.textContent(`${row} td.latency-p99`)];
      const l = (await triage()).latency;
      return l !== undefined && l.count >= 1n && l.p99Ms >= l.p50Ms && cells.join() === [shown(l.p50Ms), shown(l.p99Ms)].join();
    }, "the page shows the owner's p50 and p99");

    await page.click(`${row} button.pause`);
    await page.waitForSelector(`${row}[data-paused=true]`);
    expect((await triage()).paused).toBe(true);
    await admin.emit("ticket.opened", { title: "while paused" }, { id: "t-paused" });
    await until(async () => (await page.textContent(`${row} td.lag`)) === "1", "the page shows a lag of 1");
    await new Promise((r) => setTimeout(r, 1500));
    expect(deliveries("t-paused")).toEqual([]);
    await page.click(`${row} button.pause`);
    await page.waitForSelector(`${row}[data-paused=false]`);
    await until(async () => deliveries("t-paused").length === 1, "t-paused delivered after the resume");
    const samples = Number(await page.getAttribute("#lag-chart", "data-samples"));
    await page.waitForSelector(`#lag-chart[data-samples='${samples + 2}']`, { timeout: 10_000 });
    await screenshot(page, "processors"); // the lag chart shows the pause

    // Move the cursor back by 2: the confirm says 2 events are delivered again, then they are.
    await until(async () => (await triage()).lag === 0n, "caught up");
    const floor = (await triage()).ackFloor;
    await page.click(`${row} button.details`);
    await page.fill("#move-target", String(floor - 2n));
    await page.click("#move-check");
    expect(await page.textContent("#move-confirm-text")).toBe(
      `Move the cursor of ${processor} back from ${floor} to ${floor - 2n}: 2 events of the log (seqs ${floor - 1n} to ${floor}) will be delivered again (those the processor's filter matches).`,
    );
    const before = lines.length;
    await page.click("#move-confirm");
    await until(async () => /^desk\.triage: cursor at \d+$/.test((await page.textContent("#action-result")) ?? ""), "the move's answer");
    // The move is recorded (processor.cursor_moved): the head is past the old cursor now.
    await until(async () => (await triage()).ackFloor > floor && (await triage()).lag === 0n, "caught up again after the move");
    const inRange = (await admin.log.readLog({ afterSeq: floor - 2n, pageSize: 2, types: ["ticket.opened"] })).events.filter((e) => e.seq <= floor);
    const redelivered = lines.slice(before).flatMap((l) => (l.kind === "delivery" && BigInt(l.seq) <= floor ? [l.seq] : []));
    expect(redelivered.sort()).toEqual(inRange.map((e) => Number(e.seq)));
    expect(redelivered.every((seq) => BigInt(seq) > floor - 2n)).toBe(true);

    // Move it to a time: the confirm counts from the first event committed at or after it.
    const paused = (await admin.log.getEvent({ id: "t-paused" })).event!;
    const moment = timestampDate(paused.at!);
    const all = (await admin.log.readLog({ pageSize: 1000 })).events;
    const target = all.find((e) => timestampDate(e.at!).getTime() >= moment.getTime())!.seq - 1n;
    const now = (await triage()).ackFloor;
    await page.selectOption("#move-kind", "time");
    await page.fill("#move-target", moment.toISOString());
    await page.click("#move-check");
    expect(await page.textContent("#move-confirm-text")).toBe(
      `Move the cursor of ${processor} back from ${now} to ${target}: ${now - target} events of the log (seqs ${target + 1n} to ${now}) will be delivered again (those the processor's filter matches).`,
    );
    await page.click("#move-confirm");
    await until(
      async () => /^desk\.triage: cursor at \d+$/.test((await page.textContent("#action-result")) ?? "") && (await page.$("#move-confirm-box")) === null,
      "the move to a time",
    );
    await until(async () => deliveries("t-paused").length === 2, "t-paused delivered again");
    await page.close();
  });

  it("processors: a redrive from the page delivers the failed event again; a dismissal forgets it", async () => {
    const page = await open("/processors");
    const row = `#processors tr[data-name="${processor}"]`;
    await page.click(`${row} button.details`);
    const bad = (await admin.log.getEvent({ id: "t-bad" })).event!;
    const failedRow = `#failed tr[data-seq="${bad.seq}"]`;
    await page.waitForSelector(failedRow);
    expect(await page.textContent(`${failedRow} td.error-text`)).toBe("ticket t-bad cannot be triaged");
    await screenshot(page, "failed-deliveries");
    expect(deliveries("t-bad")).toHaveLength(1);
    await page.click(`${failedRow} button.redrive`);
    await until(async () => (await page.textContent("#action-result")) === `${processor}: 1 failed deliveries queued again`, "the redrive's answer");
    await until(async () => deliveries("t-bad").length === 2, "t-bad delivered again");

    // It fails again; dismissed from the page (after the confirm), it leaves the list and is recorded.
    await until(async () => (await admin.admin.listFailedDeliveries({ processor })).deliveries.some((d) => d.event?.seq === bad.seq), "t-bad failed again");
    await until(async () => (await page.$(`${failedRow} button.dismiss`)) !== null, "the failed row again");
    const asked: string[] = [];
    page.once("dialog", (d) => {
      asked.push(d.message());
      void d.accept();
    });
    await page.click(`${failedRow} button.dismiss`);
    await until(async () => (await page.textContent("#action-result")) === `${processor}: 1 failed deliveries dismissed`, "the dismissal's answer");
    expect(asked).toEqual([`Dismiss the failed delivery of seq ${bad.seq}? It is not delivered again.`]);
    expect((await admin.admin.listFailedDeliveries({ processor })).deliveries).toHaveLength(0);
    await until(async () => (await page.$(failedRow)) === null, "the row gone");
    const dismissed = (await admin.log.readLog({ types: ["processor.dismissed"] })).events;
    expect(dismissed.map((e) => e.data)).toContainEqual(expect.objectContaining({ processor, seqs: [Number(bad.seq)] }));
    await page.close();
  });

  it("time: the declared schedule with its next fire times; pause with a note and resume; trigger now makes one call; a delay is cancelled", async () => {
    const delay = await admin.delay("desk.remind", { what: "later" }, { intervalMs: 3_600_000 }, "unbounded", {
      cancelOn: [{ type: "ticket.triaged", match: { "data.ticket": "input.what" } }],
    });
    const page = await open("/time");
    const schedule = (await admin.time.listTimers({})).timers.find((t) => t.schedule === "new-year")!;
    const row = `#timers tr[data-id="${schedule.id}"]`;
    await page.waitForSelector(row);
    expect(await page.textContent(`${row} td.next-due`)).toContain("in ");
    await page.click(`${row} button.link`);
    await page.waitForSelector(`.preview[data-timer="${schedule.id}"] .preview-times li`);
    const preview = (await admin.getTimer(schedule.id, { previewCount: 5 })).preview;
    expect(await page.$$eval(`.preview[data-timer="${schedule.id}"] .preview-times li`, (items) => items.length)).toBe(preview.length);
    await page.waitForSelector(`#timers tr[data-id="${delay.delayId}"]`);
    expect(await page.textContent(`#timers tr[data-id="${delay.delayId}"] .cancel-on`)).toBe("cancelled by ticket.triaged (data.ticket = input.what)");
    await screenshot(page, "time");

    await page.fill("#timer-note", "maintenance window");
    await page.click(`${row} button.pause`);
    await page.waitForSelector(`${row}[data-paused=true]`);
    const paused = await admin.getTimer(schedule.id);
    expect([paused.paused, paused.pauseNote]).toEqual([true, "maintenance window"]);
    await page.click(`${row} button.pause`);
    await page.waitForSelector(`${row}[data-paused=false]`);
    expect((await admin.getTimer(schedule.id)).paused).toBe(false);

    // One call, of the occurrence the trigger made.
    await page.click(`${row} button.trigger`);
    const triggered = /^desk\/new-year triggered: occurrence (\S+)$/;
    await until(async () => triggered.test((await page.textContent("#time-result")) ?? ""), "the trigger's answer");
    const occurrence = triggered.exec((await page.textContent("#time-result"))!)![1];
    const callsOf = (id: string) => calls().filter((c) => c.kind === "call" && c.callId === id).length;
    await until(async () => callsOf(occurrence) === 1, "the triggered call");
    await new Promise((r) => setTimeout(r, 1500));
    expect(callsOf(occurrence)).toBe(1);
    // The triggered call is in the lateness histogram (read from /metrics with the page's token).
    await until(async () => Number(await page.getAttribute("#lateness-chart", "data-total")) >= 1, "the lateness histogram counts the call", 15_000);
    await screenshot(page, "time-lateness");

    // Backfill the last three years: three yearly occurrences, each called once.
    const threeYearsAgo = new Date();
    threeYearsAgo.setUTCFullYear(threeYearsAgo.getUTCFullYear() - 3);
    await page.fill(".backfill-start", threeYearsAgo.toISOString());
    await page.click(".backfill-run");
    await page.waitForSelector(".backfill-result.ok:not(:empty)");
    expect(await page.textContent(".backfill-result")).toBe("3 occurrences in the range: 3 made now, 0 made before");
    const [backfilled] = (await admin.log.readLog({ types: ["timer.backfilled"] })).events;
    const made = backfilled.data!.occurrence_ids as string[];
    expect(made).toHaveLength(3);
    await until(async () => made.every((id) => callsOf(id) === 1), "the backfilled calls");

    // A delay and a one-shot schedule whose call was made are spent (no next due moment, nothing to cancel).
    const soon = await admin.delay("desk.remind", { what: "soon" }, { intervalMs: 200 }, "unbounded");
    const once = await admin.schedule("desk.remind", { what: "once" }, { at: Date.now() + 200 }, { timerId: "once" });
    const called = (what: string) => calls().some((c) => c.kind === "call" && c.input?.what === what);
    await until(async () => called("soon") && called("once"), "the delay's and the one-shot's calls");
    for (const id of [soon.delayId, once.id]) {
      await page.waitForSelector(`#timers tr[data-id="${id}"][data-state=spent]`);
      expect(await page.textContent(`#timers tr[data-id="${id}"] td.state`)).toBe("spent");
      expect(await page.$(`#timers tr[data-id="${id}"] button.cancel`)).toBeNull();
    }
    expect(await page.textContent(`${row} td.state`)).toBe("active");

    await page.click(`#timers tr[data-id="${delay.delayId}"] button.cancel`);
    await until(async () => (await page.textContent("#time-result")) === `delay ${delay.delayId} cancelled`, "the cancel's answer");
    await until(async () => (await page.$(`#timers tr[data-id="${delay.delayId}"]`)) === null, "the delay gone from the page");
    expect(await admin.getTimer(delay.delayId).catch((e: unknown) => ConnectError.from(e).code)).toBe(Code.NotFound);
    await page.close();
  });

  it("calls: a call with its status and attempts, and its page with its outcome; collections: find with a filter, a document's page", async () => {
    await admin.call("desk.remind", { what: "now" }, { callId: "c-console", actor: { id: "user:ana" } });
    const page = await open("/calls");
    const row = '#calls tr[data-call="c-console"]';
    await page.waitForSelector(`${row}[data-status=completed]`);
    expect(await page.textContent(`${row} td.attempts`)).toBe("1");
    const limits = '#action-limits tr[data-action="desk.remind"]';
    await page.waitForSelector(limits);
    expect(await page.$$eval(`${limits} td`, (cells) => cells.map((c) => c.textContent))).toEqual([
      "desk.remind",
      "rate 1000 per 1 s (burst 1000)",
      "0",
      "0",
      expect.stringMatching(/^0 \(.*\), 0 waiting$/),
    ]);
    const [triggered] = (await admin.log.readLog({ types: ["timer.triggered"] })).events;
    expect(await page.textContent(`#calls tr[data-call="${triggered.data!.occurrence_id}"] a.timer`)).toBe("timer desk/new-year (triggered)");
    await screenshot(page, "calls");
    await page.click(`${row} a`);
    await page.waitForSelector("#event[data-seq]");
    expect(await page.textContent("#event h2")).toContain("action.started");
    await page.waitForSelector("#timeline tr[data-kind=attempt]");
    expect(await page.getAttribute("#timeline tr[data-kind=call]", "data-outcome")).toBe("completed");

    for (const n of [1, 2, 3]) await admin.createDocument("notes", { _id: `note-${n}`, n });
    await page.click("a[data-nav=plugins]");
    await page.click("a[data-collection=notes]");
    await until(async () => (await page.$$("#documents tbody tr")).length === 3, "three notes");
    await page.fill("#doc-filter", '{"n": {"$gte": 2}}');
    await page.click("#doc-find");
    await until(
      async () => (await page.$$eval("#documents tbody tr", (rows) => rows.map((r) => r.getAttribute("data-id")))).join() === "note-2,note-3",
      "the filtered notes",
    );
    await screenshot(page, "collection");
    await page.click('#documents tr[data-id="note-3"] a');
    await page.waitForSelector("#document-body");
    expect(JSON.parse((await page.textContent("#document-body"))!)).toEqual({ _id: "note-3", n: 3 });
    await page.close();
  });

  it("executors and plugins: the connected session with what it hosts; the declared event types", async () => {
    const page = await open("/executors");
    const row = await page.waitForSelector("#executors tbody tr");
    const [session] = (await admin.admin.listExecutors({})).executors;
    expect(await row.getAttribute("data-session")).toBe(session.sessionId);
    expect(await page.textContent("#executors td.hosts")).toContain(`processors: ${processor}`);
    expect(await page.textContent("#executors td.hosts")).toContain("actions: desk.remind");
    expect(session.lastSeenAt).toBeDefined();
    expect(await page.textContent("#executors td.heard")).toMatch(/ago$/);
    await screenshot(page, "executors");
    await page.click("a[data-nav=plugins]");
    await page.waitForSelector("article.plugin[data-name=desk] tr[data-type='ticket.opened']");
    await screenshot(page, "plugins");
    await page.close();
  });

  it("streams: a stream's events in order of position, newest first on request, and its last position", async () => {
    await admin.emit("ticket.triaged", { step: 0 }, { stream: "ticket-t-9", expectedVersion: "noStream" });
    await admin.emit("ticket.triaged", { step: 1 }, { stream: "ticket-t-9", expectedVersion: 0 });
    await admin.emit("ticket.triaged", { step: 2 }, { stream: "ticket-t-9", expectedVersion: 1 });
    const page = await open("/time");
    await page.click("a[data-nav=streams]");
    await page.fill("#stream-name", "ticket-t-9");
    await page.click("form.toolbar button[type=submit]");
    await page.waitForSelector("#stream tr[data-position='2']");
    const positions = () => page.$$eval("#stream tbody tr", (rows) => rows.map((r) => r.getAttribute("data-position")));
    expect(await positions()).toEqual(["0", "1", "2"]);
    expect(await page.textContent("#stream-version")).toBe("last position 2");
    await page.check("#stream-backwards");
    await until(async () => (await positions())[0] === "2", "the newest first");
    expect(await positions()).toEqual(["2", "1", "0"]);
    await screenshot(page, "streams");

    // 52 events: a first page of 50, Next shows the last two, Previous the first page again.
    for (let i = 0; i < 52; i++) await admin.emit("ticket.triaged", { step: i }, { stream: "ticket-t-10" });
    await page.uncheck("#stream-backwards");
    await page.fill("#stream-name", "ticket-t-10");
    await page.click("form.toolbar button[type=submit]");
    await page.waitForSelector("#stream tr[data-position='49']");
    expect(await positions()).toHaveLength(50);
    expect(await page.isDisabled(".pager button:has-text('Previous')")).toBe(true);
    await page.click(".pager button:has-text('Next')");
    await until(async () => (await positions()).join() === "50,51", "the second page");
    expect(await page.isDisabled(".pager button:has-text('Next')")).toBe(true);
    await page.click(".pager button:has-text('Previous')");
    await until(async () => (await positions()).length === 50 && (await positions())[0] === "0", "the first page again");
    await page.close();
  });

  it("an owner without a config opens as the local admin, without asking for a token; its log is followed across restarts, a new log from its start", async () => {
    const manifest = { name: "local", events: { "local.e": { allow: ["*"] } } };
    let local = await startTestOwner();
    const port = local.port;
    const emit = async (id: string) => {
      const c = createClient({ url: `http://127.0.0.1:${port}` });
      await c.registerPlugin(manifest);
      await c.emit("local.e", {}, { id });
    };
    try {
      const page = await context.newPage();
      await page.goto(`${local.url}/console/`);
      await page.waitForSelector("#who[data-admin=true]");
      expect(await page.textContent("#who")).toBe("local admin (no config)");
      expect(await page.$("#token")).toBeNull();
      await page.waitForSelector("#tail-status[data-state=live]");
      await emit("first");
      await page.waitForSelector("#tail tr[data-id=first]");
      expect(await page.textContent("#tail tr[data-id=first] td.actor")).toBe("via=principal:local");
      const ids = () => page.$$eval("#tail tbody tr", (rows) => rows.map((r) => r.getAttribute("data-id")));

      // The same log again: the tail goes on after what it showed.
      const dataDir = local.dataDir;
      await local.close();
      await page.waitForSelector("#tail-status[data-state=error]");
      local = await startTestOwner({ dataDir, port });
      await emit("second");
      await page.waitForSelector("#tail tr[data-id=second]", { timeout: 15_000 });
      expect(await ids()).toEqual(["second", "first"]);

      // Another log at the same address: the tail starts again on it.
      await local.close();
      await page.waitForSelector("#tail-status[data-state=error]");
      local = await startTestOwner({ port });
      await emit("on-another-log");
      await page.waitForSelector("#tail tr[data-id=on-another-log]", { timeout: 15_000 });
      expect(await ids()).toEqual(["on-another-log"]);
      await page.close();
    } finally {
      await local.close();
    }
  });

  it("over TLS the page, its calls and its live tail go over HTTP/2", async () => {
    const dir = tempDir("chronolog-console-tls-");
    folders.push(dir);
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-days",
        "1",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    const secure = await startTestOwner({
      config: { principals: [{ name: "ops", token: tokens.admin, role: "admin" }], tls: { cert: join(dir, "cert.pem"), key: join(dir, "key.pem") } },
    });
    const url = `https://127.0.0.1:${secure.port}`;
    try {
      const page = await context.newPage();
      const protocols = new Set<string>();
      const cdp = await context.newCDPSession(page);
      await cdp.send("Network.enable");
      cdp.on("Network.responseReceived", (e) => {
        if (e.response.url.startsWith(url)) protocols.add(e.response.protocol ?? "?");
      });
      await page.goto(`${url}/console/`);
      await page.fill("#token", tokens.admin);
      await page.click("#sign-in");
      await page.waitForSelector("#tail-status[data-state=live]");
      const tls = createClient({ url, token: tokens.admin, ca: readFileSync(join(dir, "cert.pem")) });
      await tls.registerPlugin({ name: "secure", events: { "secure.checked": { allow: ["*"] } } });
      await tls.emit("secure.checked", {}, { id: "over-h2" });
      await page.waitForSelector("#tail tr[data-id=over-h2]");
      expect([...protocols]).toEqual(["h2"]);
      await page.close();
    } finally {
      await secure.close();
    }
  });

  it("a client token sees no admin views or buttons, and a forged admin call from its page is refused", async () => {
    const page = await open("/", tokens.client);
    expect(await page.getAttribute("#who", "data-admin")).toBe("false");
    await page.waitForSelector("#tail-status[data-state=live]");
    expect(await page.$$("a[data-nav=processors], a[data-nav=executors]")).toHaveLength(0);
    // A timer's input is its action's work: a client that may not read desk.remind's events sees the timer, not its input.
    const { delayId } = await admin.delay("desk.remind", { what: "a secret delay" }, { intervalMs: 3_600_000 }, "unbounded");
    await page.click("a[data-nav=time]");
    await page.waitForSelector("#timers tbody tr");
    expect(await page.$$("button.admin")).toHaveLength(0);
    await page.click(`#timers tr[data-id="${delayId}"] button.link`);
    await page.waitForSelector(`.preview[data-timer="${delayId}"] .input-withheld`);
    expect(await page.textContent(`.preview[data-timer="${delayId}"]`)).not.toContain("secret");
    await page.goto(`${owner.url}/console/processors`);
    await page.waitForSelector("text=This view needs the admin role.");
    expect(await page.$$("button.admin")).toHaveLength(0);
    await screenshot(page, "client");

    const forged = await page.evaluate(async (name) => {
      const token = sessionStorage.getItem("chronolog.console.token");
      const res = await fetch("/chronolog.v1.AdminService/SetProcessorPaused", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ processor: name, paused: true }),
      });
      return { status: res.status, body: (await res.json()) as { code: string; message: string } };
    }, processor);
    expect(forged.status).toBe(403);
    expect(forged.body.code).toBe("permission_denied");
    expect((await triage()).paused).toBe(false);

    // An event whose cause is an action.started (a client may not read those): the cause shows
    // as withheld, its id and type, nothing of the call's input.
    await admin.call("desk.remind", { what: "a secret errand" }, { callId: "c-withheld" });
    const [started] = (await admin.log.readLog({ types: ["action.started"], where: { call_id: "c-withheld" } })).events;
    const { event: under } = await admin.log.emit({ type: "ticket.triaged", data: { note: "under the call" }, cause: { eventId: started.id, position: 0 } });
    await page.goto(`${owner.url}/console/events/${encodeURIComponent(under!.id)}`);
    await page.waitForSelector(`#event-cause .event-link.withheld[data-id="${started.id}"]`);
    expect(await page.textContent("#event-cause")).toBe(`${started.id} action.started (withheld: this token may not read it)`);
    expect(await page.textContent("#event")).not.toContain("secret errand");
    await page.goto(`${owner.url}/console/events/${encodeURIComponent(started.id)}`);
    await page.waitForSelector("#event-error");
    expect(await page.textContent("#event-error")).toMatch(/^PermissionDenied: /);
    await page.close();

    // A wrong token gets the sign-in form again with the owner's answer.
    const wrong = await open("/", "not-a-token-of-this-owner", "#signin-error");
    expect(await wrong.textContent("#signin-error")).toBe("Unauthenticated: unknown bearer token");
    await wrong.close();
    expect(pageProblems).toEqual([]);
  });
});
