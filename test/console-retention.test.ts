// The console's log view says what log retention holds back, by holder (read from /metrics with
// an admin's token), in headless Debian Chromium against a real owner whose retention rule wants
// events a processor has not finished removed.
//
// @module-tag serial
// @module-tag sqlite-only

import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import type { RetentionPass } from "../server/src/log/retention-pass.js";
import { createClient } from "../sdk/ts/src/client.js";
import { launchChromium, skipWithoutChromium, watchProblems } from "./helpers/chromium.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const admin = { name: "ops", token: "console-admin-token-0123456789", role: "admin" as const };
const client = { name: "web", token: "console-client-token-0123456789", role: "client" as const };

describe.skipIf(skipWithoutChromium("console-retention.test.ts"))("console: what retention holds back", () => {
  let context: BrowserContext | undefined;
  const closing: (() => Promise<void>)[] = [];
  afterAll(async () => {
    await context?.close();
    for (const close of closing) await close();
  });

  it("the log view lists the events retention holds back by holder, for admins", async () => {
    if (!existsSync(join(repo, "dist/console/index.html")))
      throw new Error("dist/console/ is missing: run the tests with `npm test` (or `npm run build` first)");
    const clock = new ManualClock(Date.UTC(2026, 2, 2, 12));
    const owner = await startTestOwner({
      clock,
      timers: clock,
      config: { principals: [admin, client], log: { retention: { interval_ms: 60_000, rules: [{ types: "note.*", max_count: 1 }] } } },
    });
    closing.push(() => owner.close());
    const passes: RetentionPass[] = [];
    owner.logRetention.onPass((p) => passes.push(p));
    const c = createClient({ url: owner.url, token: admin.token });
    // A processor no executor runs: it finishes nothing, so it holds every note emitted after it was registered.
    await c.registerPlugin({
      name: "notes",
      events: { "note.added": { allow: ["*"] }, "note.pinned": { allow: ["*"] } },
      processors: { tally: { on: ["note.added"] } },
    });
    for (let i = 0; i < 3; i++) await c.emit("note.added", { i });
    await c.emit("note.pinned", {});
    await owner.settled();
    clock.advance(60_000);
    await until(() => passes.some((p) => p.held["processor:notes.tally"] === 2), "a pass held back the processor's notes");

    context = await launchChromium(tempDir("chronolog-chromium-"));
    const problems: string[] = [];
    const signIn = async (token: string) => {
      const page = await context!.newPage();
      watchProblems(page, problems);
      await page.goto(`${owner.url}/console/`);
      await page.waitForSelector("#token");
      await page.fill("#token", token);
      await page.click("#sign-in");
      await page.waitForSelector("#tail-status");
      return page;
    };
    const page = await signIn(admin.token);
    await page.waitForSelector("#retention-held", { timeout: 15_000 });
    expect(await page.getAttribute("#retention-held", "data-total")).toBe("2");
    expect(await page.textContent('#retention-held li[data-holder="processor:notes.tally"]')).toBe("2: processor notes.tally has not finished them");
    mkdirSync(join(repo, "test/artifacts/console"), { recursive: true });
    await page.screenshot({ path: join(repo, "test/artifacts/console/log-retention-held.png") });
    // A client may not read /metrics: its log view says nothing of retention.
    const other = await signIn(client.token);
    await until(async () => (await other.textContent("#tail-status"))?.startsWith("live") ?? false, "the client's tail is live");
    expect(await other.$("#retention-held")).toBeNull();
    expect(problems).toEqual([]);
  });
});
