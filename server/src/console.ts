// The console (a single-page app in the browser) served by the owner under `/console/` on its
// own port, HTTP/1.1 and HTTP/2, next to the RPCs and `/metrics`.
//
// The files are static, built by `npm run build` (Vite, console/vite.config.ts) into
// dist/console/. They hold no secret and no data: the page calls the owner's public API with the
// token the operator types in, so they are served to anyone, like a login page. Every answer
// carries a strict content security policy: scripts, styles and calls from this origin only, no
// inline code, no frames, no plugins.

import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { extname, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { Logger } from "./logger.js";
import type { HttpHandler, HttpResponse } from "./http-handler.js";

/** The path prefix of the console. */
export const consolePath = "/console/";

/**
 * The console's content security policy. `style-src` allows no inline `<style>` or `style=""`
 * (the app sets styles through the CSSOM, which CSP does not govern); `connect-src 'self'` is the
 * owner's own API on this origin.
 */
export const consoleCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/** Text files are sent gzipped to clients that accept it (the app's script: ~480 KiB, ~150 KiB gzipped). */
const compressible = new Set([".html", ".js", ".css", ".map", ".json", ".svg", ".txt"]);
const gzipped = promisify(gzip);

/**
 * Where the built console is: dist/console/ next to the bundle (dist/main.js and its chunks), or
 * the repository's dist/console/ when the owner runs from its sources (server/src/ under tsx).
 */
export function defaultConsoleDir(): string {
  const nextToBundle = fileURLToPath(new URL("./console/", import.meta.url));
  const fromSources = fileURLToPath(new URL("../../dist/console/", import.meta.url));
  return existsSync(`${nextToBundle}index.html`) ? nextToBundle : fromSources;
}

/** What the owner's config tells the console (`console` in the config file), served as `/console/settings.json`. */
export interface ConsoleSettings {
  /** A trace viewer's URL with `{trace_id}` where the trace id goes (e.g. Jaeger's `https://jaeger.example/trace/{trace_id}`). */
  trace_url?: string;
}

/**
 * The `/console/` handler for `listen({ extraHttpHandler })`. Files under assets/ (their names
 * carry a content hash) are cached for a year; every other path under `/console/` but a file at
 * its top is the app's index.html (the app routes in the browser), never cached. `/console`
 * redirects to `/console/`. `/console/settings.json` is `settings` (no secret: it is served to anyone, as the files are).
 * Other paths are not handled (false).
 */
export function consoleHttpHandler(dir: string, logger: Logger, settings: ConsoleSettings = {}): HttpHandler {
  const settingsJson = JSON.stringify(settings);
  const root = normalize(dir.endsWith(sep) ? dir : dir + sep);
  // Gzipped files by path, made once: assets never change under their (hashed) names, and a
  // rebuild's index.html is a new body (compared before the cached one is used).
  const compressed = new Map<string, { body: Buffer; gz: Buffer }>();
  const gzipOf = async (file: string, body: Buffer): Promise<Buffer> => {
    const hit = compressed.get(file);
    if (hit?.body.equals(body)) return hit.gz;
    const gz = await gzipped(body);
    if (compressed.size >= 64) compressed.clear(); // earlier builds' assets
    compressed.set(file, { body, gz });
    return gz;
  };
  return (req, res) => {
    const url = req.url ?? "";
    const pathname = url.split("?")[0];
    if (pathname === "/console") {
      answer(res, 308, "", { Location: consolePath });
      return true;
    }
    if (!pathname.startsWith(consolePath)) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      answer(res, 405, "only GET and HEAD under /console/\n", { Allow: "GET, HEAD" });
      return true;
    }
    let relative: string;
    try {
      relative = decodeURIComponent(pathname.slice(consolePath.length));
    } catch {
      answer(res, 400, "bad path\n");
      return true;
    }
    // A file is under assets/ or at the top (favicon.ico); any other path is a route of the app,
    // dots and all (/console/events/order.o-3, /console/collections/sys.notes).
    const isAsset = relative.startsWith("assets/") || (!relative.includes("/") && extname(relative) !== "");
    const file = normalize(root + (isAsset ? relative : "index.html"));
    if (!file.startsWith(root) || relative.includes("\0") || relative.split("/").includes("..")) {
      answer(res, 404, "not found\n");
      return true;
    }
    if (relative === "settings.json") {
      answer(res, 200, req.method === "HEAD" ? "" : settingsJson, { "Content-Type": contentTypes[".json"], "Cache-Control": "no-cache" });
      return true;
    }
    const acceptsGzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    readFile(file)
      .then(async (body) => {
        const type = extname(file);
        const zip = acceptsGzip && compressible.has(type) && body.length > 1024;
        const sent = zip ? await gzipOf(file, body) : body;
        answer(res, 200, req.method === "HEAD" ? Buffer.alloc(0) : sent, {
          "Content-Type": contentTypes[type] ?? "application/octet-stream",
          "Content-Length": String(sent.length),
          "Cache-Control": relative.startsWith("assets/") ? "public, max-age=31536000, immutable" : "no-cache",
          Vary: "Accept-Encoding",
          ...(zip ? { "Content-Encoding": "gzip" } : {}),
        });
      })
      .catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT" || err.code === "EISDIR") {
          if (isAsset) answer(res, 404, "not found\n");
          else answer(res, 503, `the console is not built: run \`npm run build\` (looked in ${root})\n`);
          return;
        }
        logger.error({ err, file }, "reading a console file failed");
        answer(res, 500, "reading the file failed\n");
      });
    return true;
  };
}

function answer(res: HttpResponse, status: number, body: string | Buffer, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.statusCode = status;
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Content-Security-Policy", consoleCsp);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("X-Frame-Options", "DENY");
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  (res as { end(chunk?: string | Buffer): void }).end(body);
}
