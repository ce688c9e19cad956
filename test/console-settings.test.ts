// The console's settings from the owner's config (`console.trace_url`): checked when the config is
// read, and served to the page as /console/settings.json, an empty object without them.
//
// @module-tag sqlite-only

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../server/src/config.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const principals = `principals:\n  - name: ops\n    role: admin\n    token: console-settings-admin-token\n`;

describe("console.trace_url", () => {
  it("is an http(s) URL with {trace_id}; anything else is refused when the config is read, naming the field", () => {
    const file = join(tempDir(), "owner.yaml");
    writeFileSync(file, `${principals}console:\n  trace_url: "https://jaeger.example/trace/{trace_id}"\n`);
    expect(loadConfig(file).console).toEqual({ trace_url: "https://jaeger.example/trace/{trace_id}" });
    for (const bad of ["https://jaeger.example/trace/", "javascript:alert('{trace_id}')", "jaeger.example/{trace_id}"]) {
      writeFileSync(file, `${principals}console:\n  trace_url: "${bad}"\n`);
      expect(() => loadConfig(file)).toThrow(/invalid config .*owner\.yaml: \/console\/trace_url/);
    }
    writeFileSync(file, `${principals}console:\n  tracer: "https://jaeger.example/{trace_id}"\n`);
    expect(() => loadConfig(file)).toThrow(/\/console must NOT have additional properties \(tracer\)/);
  });

  it("is served to the console as /console/settings.json, without a token; {} when the config names none", async () => {
    const owner = await startTestOwner({
      config: {
        principals: [{ name: "ops", role: "admin", token: "console-settings-admin-token" }],
        console: { trace_url: "http://127.0.0.1:16686/trace/{trace_id}" },
      },
    });
    cleanups.push(() => owner.close());
    const answer = await fetch(`${owner.url}/console/settings.json`);
    expect([answer.status, answer.headers.get("content-type"), await answer.json()]).toEqual([
      200,
      "application/json; charset=utf-8",
      { trace_url: "http://127.0.0.1:16686/trace/{trace_id}" },
    ]);
    expect(answer.headers.get("content-security-policy")).toContain("default-src 'none'");
    const bare = await startTestOwner();
    cleanups.push(() => bare.close());
    expect(await (await fetch(`${bare.url}/console/settings.json`)).json()).toEqual({});
  });
});
