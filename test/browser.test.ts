// The browser example (examples/browser) end to end in headless
// Chromium: the page is built with Vite, served from its own origin, and talks
// Connect over HTTP/1.1 (connect-web, fetch) to an owner on another port whose
// config allows that origin (CORS). An event emitted elsewhere (the TS SDK here)
// shows up on the page through Watch; the page's own Emit lands in the log; its
// errors are the owner's; an origin the config does not list gets nothing.
//
// Chromium is Debian's (`apt-get install -y --no-install-recommends chromium`,
// as .ci/run does), driven by playwright-core; no browser is ever downloaded.
//
// @module-tag serial
// @module-tag sqlite-only

import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync } from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize, sep } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { Code } from "@connectrpc/connect";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import type { Owner } from "../server/src/owner.js";
import { expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const CHROMIUM = "/usr/bin/chromium";
const missing = !existsSync(CHROMIUM);
if (missing && !process.env.CI) {
  console.warn(
    `browser.test.ts skipped: ${CHROMIUM} is missing (install Debian's chromium with: apt-get install -y --no-install-recommends chromium, as .ci/run does)`,
  );
}

/** The flags this machine needs: no sandbox as root, no GPU, no traffic to Google's hosts. */
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const tokens = { admin: "browser-admin-token-0123456789", web: "browser-web-token-0123456789" };

/** Builds the page with the same Vite config as `npm run build:browser`, into `outDir`. */
async function buildPage(outDir: string): Promise<void> {
  const child = spawn(
    process.execPath,
    [join(repo, "node_modules/vite/bin/vite.js"), "build", "--config", "examples/browser/vite.config.ts", "--outDir", outDir, "--emptyOutDir"],
    {
      cwd: repo,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout.on("data", (b: Buffer) => (output += b.toString()));
  child.stderr.on("data", (b: Buffer) => (output += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`vite build failed (${code}):\n${output}`);
}

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".map": "application/json",
  ".css": "text/css; charset=utf-8",
};

/** A tiny static server for `dir` on 127.0.0.1 (its own port: its own origin). */
async function serveStatic(dir: string): Promise<{ origin: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    const file = normalize(join(dir, path.endsWith("/") ? `${path}index.html` : path));
    if (!file.startsWith(dir + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": contentTypes[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe.skipIf(missing && !process.env.CI)("browser client (connect-web in Debian Chromium, cross-origin, HTTP/1.1)", () => {
  let site: Awaited<ReturnType<typeof serveStatic>>;
  let otherSite: Awaited<ReturnType<typeof serveStatic>>;
  let owner: Owner & { url: string };
  let admin: ChronologClient;
  let context: BrowserContext;
  /** Temporary folders (the built page, Chromium's profile), removed at the end. */
  const folders: string[] = [];
  /** HTTP versions Chromium reported for the owner's responses (CDP Network.responseReceived). */
  const protocols = new Set<string>();

  /** Opens the page from `origin` with these query parameters; resolves when the DOM is there. */
  async function open(origin: string, query: Record<string, string>): Promise<Page> {
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    cdp.on("Network.responseReceived", (e) => {
      if (e.response.url.startsWith(owner.url)) protocols.add(e.response.protocol ?? "?");
    });
    await page.goto(`${origin}/index.html?${new URLSearchParams(query)}`);
    return page;
  }

  beforeAll(async () => {
    if (missing) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y --no-install-recommends chromium)`);
    const dist = tempDir("chronolog-browser-dist-");
    folders.push(dist);
    await buildPage(dist);
    site = await serveStatic(dist);
    otherSite = await serveStatic(dist); // same files, another port: an origin the owner does not allow
    owner = await startTestOwner({
      pluginsDir: join(repo, "examples/quickstart/plugins"),
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "web", token: tokens.web, role: "client", actor: { via: "app:browser" } },
        ],
        cors: { origins: [site.origin] },
      },
    });
    admin = createClient({ url: owner.url, token: tokens.admin });
    const profile = tempDir("chronolog-chromium-"); // a fresh user data dir
    folders.push(profile);
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
  });
  afterAll(async () => {
    await context?.close();
    await owner?.close();
    await site?.close();
    await otherSite?.close();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  it("shows an event emitted elsewhere (TS SDK) live through Watch, after the catch-up", async () => {
    const before = await admin.emit("order.placed", { order_id: "o-before", amount: 1, email: "a@example.com" }, { id: "before-page" });
    const page = await open(site.origin, { owner: owner.url, token: tokens.web });
    await page.waitForSelector("#status[data-state=live]");
    expect(await page.textContent("#status")).toBe(`live (caught up at seq ${before.event!.seq})`);
    expect(await page.getAttribute("#events li[data-id=before-page]", "data-seq")).toBe(String(before.event!.seq));

    const { event } = await admin.emit("order.placed", { order_id: "o-elsewhere", amount: 7.5, email: "sdk@example.com" }, { id: "from-the-sdk" });
    const item = await page.waitForSelector("#events li[data-id=from-the-sdk]", { timeout: 10_000 });
    expect(await item.getAttribute("data-seq")).toBe(String(event!.seq));
    expect(await item.getAttribute("data-type")).toBe("order.placed");
    expect(await item.textContent()).toContain('{"order_id":"o-elsewhere","amount":7.5,"email":"sdk@example.com"}');
    // Newest first, and the status follows the events that came after the catch-up.
    expect(await page.$$eval("#events li", (items) => items.map((li) => li.getAttribute("data-id")))).toEqual(["from-the-sdk", "before-page"]);
    expect(await page.textContent("#status")).toBe(`live (last event at seq ${event!.seq})`);
    for (const n of [1, 2, 3]) {
      const { event: later } = await admin.emit("order.placed", { order_id: `o-later-${n}`, amount: n, email: "sdk@example.com" }, { id: `later-${n}` });
      await page.waitForSelector(`#events li[data-id=later-${n}]`, { timeout: 10_000 });
      expect(await page.getAttribute("#events li:first-child", "data-id")).toBe(`later-${n}`);
      expect(await page.textContent("#status")).toBe(`live (last event at seq ${later!.seq})`);
    }
    expect([...protocols]).toEqual(["http/1.1"]);
    await page.close();
  });

  it("goes on following when the owner at its URL starts again, on the same log or on another one (shown from its start)", async () => {
    const config = { principals: [{ name: "web", token: tokens.web, role: "client" as const }], cors: { origins: [site.origin] } };
    const pluginsDir = join(repo, "examples/quickstart/plugins");
    const dataDir = tempDir();
    folders.push(dataDir);
    let first = await startTestOwner({ pluginsDir, config, dataDir });
    const port = first.port;
    const web = () => createClient({ url: `http://127.0.0.1:${port}`, token: tokens.web });
    const order = (id: string) => ({ order_id: id, amount: 1, email: "a@example.com" });
    try {
      await web().emit("order.placed", order("one"), { id: "one" });
      const page = await open(site.origin, { owner: first.url, token: tokens.web });
      await page.waitForSelector("#events li[data-id=one]");
      await page.waitForSelector("#status[data-state=live]");
      const ids = () => page.$$eval("#events li", (items) => items.map((li) => li.getAttribute("data-id")));

      // The same log again (a restart): the page goes on after what it showed.
      await first.close();
      await page.waitForSelector("#status[data-state=retrying]");
      first = await startTestOwner({ pluginsDir, config, dataDir, port });
      await web().emit("order.placed", order("two"), { id: "two" });
      await page.waitForSelector("#events li[data-id=two]", { timeout: 15_000 });
      expect(await ids()).toEqual(["two", "one"]);

      // Another log at the same URL (a new data folder): its events are shown from its start, the old ones gone.
      await first.close();
      await page.waitForSelector("#status[data-state=retrying]");
      const fresh = tempDir();
      folders.push(fresh);
      first = await startTestOwner({ pluginsDir, config, dataDir: fresh, port });
      await web().emit("order.placed", order("other-log"), { id: "other-log" });
      await page.waitForSelector("#events li[data-id=other-log]", { timeout: 15_000 });
      expect(await ids()).toEqual(["other-log"]);
      expect(await page.getAttribute("#events li[data-id=other-log]", "data-seq")).toBe("1");
      await page.close();
    } finally {
      await first.close();
    }
  });

  it("emits from the page's form: the event is in the log, with the principal's actor, and on the page", async () => {
    const page = await open(site.origin, { owner: owner.url, token: tokens.web });
    await page.waitForSelector("#status[data-state=live]");
    await page.fill("#type", "order.placed");
    await page.fill("#data", '{"order_id": "o-web", "amount": 12.5, "email": "web@example.com"}');
    await page.fill("#id", "from-the-page");
    await page.click("#emit");
    await page.waitForSelector("#emit-result[data-state=committed]");
    const seq = await page.getAttribute("#emit-result", "data-seq");

    const stored = await admin.log.getEvent({ id: "from-the-page" });
    expect(String(stored.event!.seq)).toBe(seq);
    expect(stored.event!.type).toBe("order.placed");
    expect(stored.event!.data).toEqual({ order_id: "o-web", amount: 12.5, email: "web@example.com" });
    expect(stored.event!.actor?.via).toBe("app:browser");
    // The page's own Watch shows it too.
    await page.waitForSelector("#events li[data-id=from-the-page]");

    // Emitting again with the same id: the owner answers with the stored event.
    await page.click("#emit");
    await page.waitForSelector("#emit-result[data-state=existing]");
    expect(await page.getAttribute("#emit-result", "data-seq")).toBe(seq);
    expect(await page.$$("#events li[data-id=from-the-page]")).toHaveLength(1);
    await page.close();
  });

  it("shows the owner's errors and writes nothing: schema violation, undeclared type, bad token", async () => {
    const before = await logSnapshot(admin);
    const page = await open(site.origin, { owner: owner.url, token: tokens.web });
    await page.waitForSelector("#status[data-state=live]");

    await page.fill("#data", '{"order_id": "o-bad", "amount": -1, "email": "x"}');
    await page.fill("#id", "");
    await page.click("#emit");
    await page.waitForSelector("#emit-result[data-state=error]");
    expect(await page.textContent("#emit-result")).toBe(
      'InvalidArgument: data of order.placed does not match its schema: data/amount: must be >= 0 (rule: minimum); data/email: must match format "email" (rule: format)',
    );

    await page.fill("#type", "order.shipped");
    await page.fill("#data", "{}");
    await page.click("#emit");
    await until(async () => (await page.textContent("#emit-result"))?.startsWith("InvalidArgument: event type") ?? false, "the undeclared-type error");
    expect(await page.textContent("#emit-result")).toBe('InvalidArgument: event type "order.shipped" is not declared by any plugin');
    await page.close();

    const wrong = await open(site.origin, { owner: owner.url, token: "not-a-token-of-this-owner" });
    await wrong.waitForSelector("#status[data-state=error]");
    expect(await wrong.textContent("#status")).toMatch(/^Unauthenticated: /);
    await wrong.click("#emit");
    await wrong.waitForSelector("#emit-result[data-state=error]");
    expect(await wrong.textContent("#emit-result")).toMatch(/^Unauthenticated: /);
    await wrong.close();
    await expectUnchanged(admin, before);
  });

  it("an origin missing from cors.origins gets nothing: the browser blocks its calls", async () => {
    const before = await logSnapshot(admin);
    const page = await open(otherSite.origin, { owner: owner.url, token: tokens.web });
    await page.waitForSelector("#status[data-state=retrying]");
    await page.fill("#id", "from-a-foreign-origin");
    await page.click("#emit");
    await page.waitForSelector("#emit-result[data-state=error]");
    // fetch fails without telling why (CORS): connect-web reports it as Unknown or Unavailable.
    expect(await page.textContent("#emit-result")).toMatch(new RegExp(`^(${Code[Code.Unknown]}|${Code[Code.Unavailable]}): `));
    expect(await page.$$("#events li")).toHaveLength(0);
    await page.close();
    await expectUnchanged(admin, before);
  });
});
