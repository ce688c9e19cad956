// The console's static files as the owner serves them under /console/ (server/src/console.ts),
// over HTTP/1.1 (fetch) and HTTP/2 (h2c): a strict content security policy on every answer, the
// right content types and caching, the app's index.html for its routes, nothing outside the
// built folder, and a clear answer when the console is not built. test/console.test.ts drives
// the app itself in Chromium.
//
// @module-tag sqlite-only

import { existsSync, rmSync } from "node:fs";
import * as http2 from "node:http2";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleCsp } from "../server/src/console.js";
import type { Owner } from "../server/src/owner.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";

const repo = new URL("../", import.meta.url).pathname;

/** GET `path` over HTTP/2 (h2c, prior knowledge) from the owner at `url`. */
async function getH2(
  url: string,
  path: string,
  requestHeaders: http2.OutgoingHttpHeaders = {},
): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string; bytes: Buffer }> {
  const session = http2.connect(url);
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({ ":path": path, ...requestHeaders });
      let headers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      req.on("response", (h) => (headers = h));
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => resolve({ status: Number(headers[":status"]), headers, body: Buffer.concat(chunks).toString("utf8"), bytes: Buffer.concat(chunks) }));
      req.on("error", reject);
      req.end();
    });
  } finally {
    session.close();
  }
}

describe("console files (served by the owner, HTTP/1.1 and HTTP/2)", () => {
  let owner: Owner & { url: string };
  beforeAll(async () => {
    if (!existsSync(join(repo, "dist/console/index.html")))
      throw new Error("dist/console/ is missing: run the tests with `npm test` (or `npm run build` first)");
    owner = await startTestOwner();
  });
  afterAll(async () => owner?.close());

  it("serves the app with a strict content security policy and the right content types, on both HTTP versions", async () => {
    const page = await fetch(`${owner.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toBe(consoleCsp);
    expect(consoleCsp).toContain("script-src 'self'");
    expect(consoleCsp).not.toContain("unsafe");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await page.text();
    const script = /<script type="module" crossorigin src="(\/console\/assets\/[^"]+\.js)"><\/script>/.exec(html)![1];
    const style = /<link rel="stylesheet" crossorigin href="(\/console\/assets\/[^"]+\.css)">/.exec(html)![1];
    expect(html).not.toMatch(/<script>|<style|style="/); // nothing inline

    const js = await fetch(`${owner.url}${script}`);
    expect([js.status, js.headers.get("content-type"), js.headers.get("cache-control")]).toEqual([
      200,
      "text/javascript; charset=utf-8",
      "public, max-age=31536000, immutable",
    ]);
    const css = await fetch(`${owner.url}${style}`);
    expect([css.status, css.headers.get("content-type")]).toEqual([200, "text/css; charset=utf-8"]);

    const h2 = await getH2(owner.url, "/console/processors");
    expect([h2.status, h2.headers["content-type"], h2.headers["content-security-policy"]]).toEqual([200, "text/html; charset=utf-8", consoleCsp]);
    expect(h2.body).toBe(html); // a route of the app is its index.html
    // Also one with a dot in it (an event id, a collection name): not taken for a file.
    for (const route of ["/console/events/order.o-3", "/console/collections/sys.notes/a.b"]) {
      const res = await fetch(`${owner.url}${route}`);
      expect([res.status, await res.text()]).toEqual([200, html]);
    }
    const h2js = await getH2(owner.url, script);
    expect([h2js.status, h2js.headers["content-type"], h2js.headers["content-encoding"]]).toEqual([200, "text/javascript; charset=utf-8", undefined]);
    // Gzipped for a client that accepts it (the browser), the same script once inflated.
    const zipped = await getH2(owner.url, script, { "accept-encoding": "gzip, deflate, br" });
    expect([zipped.status, zipped.headers["content-encoding"], zipped.headers.vary]).toEqual([200, "gzip", "Accept-Encoding"]);
    expect(gunzipSync(zipped.bytes).toString("utf8")).toBe(h2js.body);
    expect(zipped.bytes.length).toBeLessThan(h2js.bytes.length / 2);

    const bare = await fetch(`${owner.url}/console`, { redirect: "manual" });
    expect([bare.status, bare.headers.get("location")]).toEqual([308, "/console/"]);
    expect((await fetch(`${owner.url}/console/assets/nothing-here.js`)).status).toBe(404);
    expect((await getH2(owner.url, "/console/%2e%2e/%2e%2e/package.json")).status).toBe(404);
    const post = await fetch(`${owner.url}/console/`, { method: "POST" });
    expect([post.status, post.headers.get("allow")]).toEqual([405, "GET, HEAD"]);
    // The RPCs and /metrics on the same port are untouched.
    expect((await fetch(`${owner.url}/metrics`)).status).toBe(200);
  });

  it("says how to build it when it is not built", async () => {
    const empty = tempDir("chronolog-no-console-");
    const bare = await startTestOwner({ consoleDir: empty });
    try {
      const res = await fetch(`${bare.url}/console/`);
      expect(res.status).toBe(503);
      expect(await res.text()).toMatch(/^the console is not built: run `npm run build`/);
    } finally {
      await bare.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
