// The event page's causal timeline in headless Debian Chromium, on the bookings example
// (examples/bookings): a booking created as a document writes `booking.created`; the processor
// `bookings.confirmer` calls `bookings.confirm`, which confirms it (`booking.updated`) and sets a
// delay; the delay's call `bookings.remind` emits `booking.reminded`. A real owner (with a config
// naming a trace viewer) and the example's plugin in an in-process SDK executor. The page of the
// first event and the page of the last show the same tree, nested as it happened, with outcomes
// and links, the first while the delay waits and after its call (the page reads the tree again);
// the owner serves the trace viewer's URL to the console.
//
// @module-tag serial
// @module-tag sqlite-only

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { bookings, reminderLeadMs } from "../examples/bookings/plugin.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import type { Owner } from "../server/src/owner.js";
import { launchChromium, skipWithoutChromium, watchProblems } from "./helpers/chromium.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const artifacts = join(repo, "test/artifacts/console");
const tokens = { admin: "timeline-admin-token-0123456789", executor: "timeline-executor-token-0123456789" };
const traceUrl = "https://jaeger.example/trace/{trace_id}";

/** A row of the timeline as the page shows it. */
interface ShownRow {
  kind: string;
  id: string;
  depth: number;
  label: string;
  outcome: string;
  took: string;
  current: boolean;
}

describe.skipIf(skipWithoutChromium("console-timeline.test.ts"))("the event page's timeline (in Debian Chromium)", () => {
  let owner: Owner & { url: string };
  let client: ChronologClient;
  let context: BrowserContext;
  let stopExecutor: () => Promise<void>;
  const problems: string[] = [];

  beforeAll(async () => {
    owner = await startTestOwner({
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "runner", token: tokens.executor, role: "executor" },
        ],
        console: { trace_url: traceUrl },
      },
    });
    client = createClient({ url: owner.url, token: tokens.admin });
    const executor = runExecutor({ url: owner.url, token: tokens.executor, plugins: [bookings], onError: () => {} });
    stopExecutor = () => executor.stop(100);
    await executor.ready;
    mkdirSync(artifacts, { recursive: true });
    context = await launchChromium(tempDir("chronolog-chromium-"));
  });
  afterAll(async () => {
    await context?.close();
    await stopExecutor?.();
    await owner?.close();
  });

  async function open(path: string): Promise<Page> {
    const page = await context.newPage();
    watchProblems(page, problems);
    await page.goto(`${owner.url}/console${path}`);
    await page.waitForSelector("#token");
    await page.fill("#token", tokens.admin);
    await page.click("#sign-in");
    await page.waitForSelector("#who");
    return page;
  }

  const rowsOf = (page: Page): Promise<ShownRow[]> =>
    page.$$eval("#timeline tbody tr", (trs) =>
      trs.map((tr) => ({
        kind: tr.getAttribute("data-kind") ?? "",
        id: tr.getAttribute("data-id") ?? "",
        depth: Number(/depth-(\d+)/.exec(tr.querySelector("td.what")?.className ?? "")?.[1] ?? -1),
        label: tr.querySelector("td.what a")?.textContent ?? "",
        outcome: tr.getAttribute("data-outcome") ?? "",
        took: tr.querySelector("td.took")?.textContent ?? "",
        current: tr.classList.contains("current"),
      })),
    );

  it("shows a booking's tree from its creation through the processor, the confirm call and its delay to the reminder, from either end", async () => {
    const settings = await fetch(`${owner.url}/console/settings.json`);
    expect(await settings.json()).toEqual({ trace_url: traceUrl });

    // Check-in 24 h and 10 s away: the reminder is due in 10 s.
    const checkIn = new Date(Date.now() + reminderLeadMs + 10_000).toISOString();
    await client.createDocument("booking", { _id: "b-1", guest: "Ana", room: "101", nights: 2, status: "pending", check_in: checkIn });
    const one = async (type: string): Promise<Event | undefined> => (await client.log.readLog({ types: [type] })).events[0];
    await until(async () => (await client.log.readLog({ types: ["action.completed"] })).events.length === 1, "the confirm call's end");
    const created = (await one("booking.created"))!;

    // Opened before the delay is due: the delay says when; its call and the reminder appear on the page when made.
    const page = await open(`/events/${created.id}`);
    const delayRow = await page.waitForSelector("#timeline tr[data-kind=timer]");
    expect(await delayRow.getAttribute("data-outcome")).toMatch(/^due in \d/);
    await until(async () => (await one("booking.reminded")) !== undefined, "the reminder", 30_000);
    await until(async () => (await client.log.readLog({ types: ["action.completed"] })).events.length === 2, "the reminder's call to end");
    const reminded = (await one("booking.reminded"))!;
    const expected = [
      ["event", 0, "booking.created", ""],
      ["delivery", 1, "bookings.confirmer", "done"],
      ["call", 2, "bookings.confirm", "completed"],
      ["attempt", 3, "attempt 1", "completed"],
      ["event", 3, "booking.updated", ""],
      ["timer", 3, "delay bookings.remind", "1 call made"],
      ["call", 4, "bookings.remind", "completed"],
      ["attempt", 5, "attempt 1", "completed"],
      ["event", 5, "booking.reminded", ""],
    ];
    const shapeOf = (rows: ShownRow[]) => rows.map((r) => [r.kind, r.depth, r.label, r.outcome]);
    let rows: ShownRow[] = [];
    await until(async () => JSON.stringify(shapeOf((rows = await rowsOf(page)))) === JSON.stringify(expected), "the page to show the reminder's call, ended");
    expect(shapeOf(rows)).toEqual(expected);
    expect(rows.filter((r) => r.current).map((r) => r.id)).toEqual([created.id]);
    // Calls and the delay have durations; the delay's is the wait until its moment.
    for (const r of rows.filter((r) => r.kind === "call" || r.kind === "timer" || r.kind === "delivery")) expect(r.took).toMatch(/^\d+(\.\d)? (ms|s)$/);
    expect(await page.textContent("#event")).not.toContain("Made under it");
    // No event here carries a trace id: no trace link.
    expect(await page.$$("a.trace")).toEqual([]);
    await page.screenshot({ path: join(artifacts, "timeline.png"), fullPage: true });

    // The reminder's page: the same tree, found up across the delay, the reminder marked.
    await page.click(`#timeline tr[data-id="${reminded.id}"] a.event-link`);
    await page.waitForSelector(`#event[data-id="${reminded.id}"]`);
    await page.waitForSelector(`#timeline tr.current[data-id="${reminded.id}"]`);
    expect((await rowsOf(page)).map((r) => [r.kind, r.depth, r.label])).toEqual(rows.map((r) => [r.kind, r.depth, r.label]));
    // A call's row opens its action.started page.
    const confirm = rows.find((r) => r.label === "bookings.confirm")!;
    await page.click(`#timeline tr[data-id="${confirm.id}"] a.event-link`);
    await page.waitForSelector(`#event[data-id="${confirm.id}"]`);
    expect(await page.textContent("#event h2")).toContain("action.started");
    await page.waitForSelector(`#timeline tr.current[data-id="${confirm.id}"]`);
    await page.close();
    expect(problems).toEqual([]);
  }, 60_000);
});
