// Reading from where the log starts, through the clients: the TypeScript and Python clients'
// read and watch, and `chronolog tail`, either refuse a seq retention removed the events after
// (OUT_OF_RANGE, BEFORE_LOG_START) or, asked to, start at the log's first kept seq.
//
// @module-tag serial
// @module-tag postgres

import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import type { RetentionPass } from "../server/src/log/retention-pass.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { cli } from "./helpers/cli.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const python = join(repo, ".venv/bin/python");
const admin = { name: "admin", token: "admin-token-0123456789", role: "admin" as const };
const MINUTE = 60_000;

describe("reading from the log's start through the clients", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let client: ChronologClient;
  /** The seqs of the `note.added` events retention kept (the newest 3 of 8). */
  let kept: number[];

  beforeAll(async () => {
    const clock = new ManualClock(Date.UTC(2026, 2, 2, 12));
    owner = await startTestOwner({
      clock,
      timers: clock,
      config: { principals: [admin], log: { retention: { interval_ms: MINUTE, rules: [{ types: "note.*", max_count: 3 }] } } },
    });
    client = createClient({ url: owner.url, token: admin.token });
    await client.registerPlugin({ name: "notes", events: { "note.added": { allow: ["*"] } } });
    const seqs: number[] = [];
    for (let i = 0; i < 8; i++) seqs.push(Number((await client.emit("note.added", { i })).event!.seq));
    const passes: RetentionPass[] = [];
    owner.logRetention.onPass((p) => passes.push(p));
    await owner.settled();
    clock.advance(MINUTE);
    await until(() => passes.some((p) => p.removedEvents > 0), "a retention pass removed events");
    kept = seqs.slice(5);
    expect(Number((await client.log.readLog({})).firstSeq)).toBe(kept[0]);
  });

  afterAll(async () => {
    await owner?.close();
  });

  it("the TypeScript client's read and watch", async () => {
    const from = BigInt(kept[0] - 3);
    const refused = await collect(client.read({ afterSeq: from })).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.OutOfRange);
    expect((refused as ConnectError).rawMessage).toMatch(/before the log's start/);
    expect((await collect(client.read({ afterSeq: from, fromFirstSeq: true }))).map((e) => Number(e.seq))).toEqual(kept);
    const seen: number[] = [];
    for await (const event of client.watch({ afterSeq: from, fromFirstSeq: true })) {
      seen.push(Number(event.seq));
      if (seen.length === kept.length) break;
    }
    expect(seen).toEqual(kept);
  });

  it("chronolog tail --from-first-seq", async () => {
    const args = ["tail", "--url", owner.url, "--token", admin.token, "--from", String(kept[0] - 2), "--no-follow"];
    const refused = await cli(args);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/OutOfRange: --from \d+: .*before the log's start.*; with --from-first-seq tail starts at the log's first kept seq instead/);
    const started = await cli([...args, "--from-first-seq"]);
    expect(started.code, started.stderr).toBe(0);
    const lines = started.stdout.trim().split("\n");
    expect(lines.map((l) => Number((JSON.parse(l) as { seq: string }).seq))).toEqual(kept);
    // --from 1 given is checked as any other; without --from, tail starts wherever the log starts.
    const base = ["tail", "--url", owner.url, "--token", admin.token, "--no-follow"];
    const fromOne = await cli([...base, "--from", "1"]);
    expect([fromOne.code, fromOne.stderr]).toEqual([1, expect.stringContaining(`OutOfRange: --from 1: the log starts at seq ${kept[0]}`)]);
    const plain = await cli(base);
    expect(plain.code, plain.stderr).toBe(0);
    expect(
      plain.stdout
        .trim()
        .split("\n")
        .map((l) => Number((JSON.parse(l) as { seq: string }).seq)),
    ).toEqual(kept);
  });

  it.skipIf(!existsSync(python) && !process.env.CI)("the Python client's read and watch", async () => {
    const script = [
      "import sys",
      "from chronolog import Client",
      "from chronolog.errors import ChronologError",
      "client = Client(sys.argv[1], token=sys.argv[2])",
      "after = int(sys.argv[3])",
      "try:",
      "    list(client.read(after_seq=after))",
      "except ChronologError as e:",
      "    print('refused', e.code().name, e.reason)",
      "print('read', [e.seq for e in client.read(after_seq=after, from_first_seq=True)])",
      "seen = []",
      "for e in client.watch(after_seq=after, from_first_seq=True):",
      "    seen.append(e.seq)",
      "    if len(seen) == 3:",
      "        break",
      "print('watch', seen)",
    ].join("\n");
    const { stdout } = await promisify(execFile)(python, ["-c", script, owner.url, admin.token, String(kept[0] - 3)], {
      env: { ...process.env, PYTHONPATH: join(repo, "sdk/python") },
      timeout: 30_000,
    });
    expect(stdout.trim().split("\n")).toEqual([
      expect.stringMatching(/^refused OUT_OF_RANGE BEFORE_LOG_START$/),
      `read [${kept.join(", ")}]`,
      `watch [${kept.join(", ")}]`,
    ]);
  });
});

async function collect<T>(events: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const e of events) out.push(e);
  return out;
}
