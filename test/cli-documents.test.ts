// The command line's collection commands (docs create|get|find|patch|replace|delete) as real
// processes against an owner: each answers what the API answers, errors included, and writes
// commit their change events; seqs print as JSON numbers; tables cut to a terminal's width.
//
// @module-tag serial
// @module-tag postgres

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { formatTable } from "../server/src/cli/table.js";
import { cli } from "./helpers/cli.js";
import { startTestOwner } from "./helpers/owner.js";

describe("chronolog docs", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let client: ChronologClient;
  const run = (args: string[]) => cli(["--url", owner.url, ...args]);

  beforeAll(async () => {
    owner = await startTestOwner();
    client = createClient({ url: owner.url });
    const rooms = definePlugin({
      name: "rooms",
      collections: {
        room: {
          allow: ["*"],
          schema: { type: "object", required: ["_id", "floor"], properties: { _id: { type: "string" }, floor: { type: "integer" }, view: { type: "string" } } },
        },
      },
    });
    await client.registerPlugin(manifestOf(rooms));
  });
  afterAll(() => owner.close());

  it("create, get, find, patch, replace and delete, each with its change event", async () => {
    const created = await run(["docs", "create", "room", '{"_id":"r-101","floor":1,"view":"garden"}']);
    expect(created.stderr).toBe("");
    const answer = JSON.parse(created.stdout);
    expect(answer).toEqual({ doc: { _id: "r-101", floor: 1, view: "garden" }, seq: expect.any(Number) });
    const [event] = await collect(client.read({ types: ["room.created"] }));
    expect(Number(event.seq)).toBe(answer.seq);

    await run(["docs", "create", "room", '{"_id":"r-201","floor":2}']);
    expect(JSON.parse((await run(["docs", "get", "room", "r-101"])).stdout)).toEqual({ _id: "r-101", floor: 1, view: "garden" });

    const found = await run(["docs", "find", "room", "--filter", '{"floor":{"$gte":1}}', "--sort", '{"floor":-1}', "--limit", "5"]);
    expect(
      found.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)._id),
    ).toEqual(["r-201", "r-101"]);

    const patched = JSON.parse((await run(["docs", "patch", "room", "r-101", "--set", '{"floor":3}', "--unset", "view"])).stdout);
    expect(patched.doc).toEqual({ _id: "r-101", floor: 3 });
    expect(await client.getDocument("room", "r-101")).toEqual({ _id: "r-101", floor: 3 });

    const replaced = JSON.parse((await run(["docs", "replace", "room", "r-201", '{"_id":"r-201","floor":4,"view":"sea"}'])).stdout);
    expect(replaced.doc).toEqual({ _id: "r-201", floor: 4, view: "sea" });

    const deleted = JSON.parse((await run(["docs", "delete", "room", "r-201"])).stdout);
    expect(deleted).toEqual({ seq: expect.any(Number) });
    const types = (await collect(client.read({ types: ["room.created", "room.updated", "room.deleted"] }))).map((e) => e.type);
    expect(types).toEqual(["room.created", "room.created", "room.updated", "room.updated", "room.deleted"]);
  });

  it("answers the API's errors, and refuses bad JSON before sending", async () => {
    expect(await run(["docs", "get", "room", "r-999"])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^chronolog: NotFound: .*r-999/) });
    await run(["docs", "create", "room", '{"_id":"r-301","floor":3}']);
    expect(await run(["docs", "create", "room", '{"_id":"r-301","floor":3}'])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^chronolog: AlreadyExists: /),
    });
    expect(await run(["docs", "create", "room", '{"_id":"r-302","floor":"high"}'])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^chronolog: InvalidArgument: .*floor/),
    });
    expect(await run(["docs", "create", "suite", '{"_id":"s-1"}'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^chronolog: NotFound: .*suite/) });
    expect(await run(["docs", "find", "room", "--filter", "{nope"])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^chronolog: --filter is not valid JSON/),
    });
    expect(await run(["docs", "patch", "room", "r-301"])).toMatchObject({ code: 1, stderr: "chronolog: docs patch needs --set JSON, --unset PATH or both\n" });
    expect(await run(["docs", "find", "room", "--limit", "0"])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("must be a whole number from 1 to 1000"),
    });
    const tls = owner.url.replace("http://", "https://");
    expect(await cli(["--url", tls, "docs", "get", "room", "r-301"])).toMatchObject({
      code: 1,
      stderr: `chronolog: Unavailable: the owner at ${tls} does not speak TLS: use an http:// URL (or start the owner with tls in its config)\n`,
    });
  });

  it("emit (its data as an argument or from stdin) and tail print seq as a JSON number", async () => {
    await client.registerPlugin(manifestOf(definePlugin({ name: "notes", events: { "note.added": { allow: ["*"], schema: { type: "object" } } } })));
    const emitted = JSON.parse((await run(["emit", "note.added", '{"text":"hi"}'])).stdout);
    expect(typeof emitted.seq).toBe("number");
    const tailed = (await run(["tail", "--no-follow", "--type", "note.added"])).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(tailed.map((e) => e.seq)).toEqual([emitted.seq]);
    // Data past the shell's argument limit comes from stdin.
    const text = "y".repeat(300_000);
    const piped = JSON.parse((await cli(["--url", owner.url, "emit", "note.added", "-"], JSON.stringify({ text }))).stdout);
    expect((await client.log.getEvent({ id: piped.id })).event?.data).toEqual({ text });
  });
});

describe("tables on a terminal", () => {
  const header = ["ID", "ACTION", "WHEN"];
  const rows = [["weekly-report", "bookings.report", 'cron "0 9 * * 1" in Europe/Berlin']];

  it("cut the free-text columns to fit the width, with an ellipsis; ids and names stay whole", () => {
    const lines = formatTable(header, rows, ["WHEN"], 50).split("\n");
    expect(lines).toEqual(["ID             ACTION           WHEN", 'weekly-report  bookings.report  cron "0 9 * * 1" …']);
    expect(formatTable(header, rows, ["WHEN"], 40).split("\n")[1]).toBe('weekly-report  bookings.report  cron "0…');
  });

  it("stay whole when they fit, with nothing to cut, and when piped", () => {
    expect(formatTable(header, rows, ["WHEN"], 200).split("\n")[1]).toBe('weekly-report  bookings.report  cron "0 9 * * 1" in Europe/Berlin');
    expect(formatTable(header, rows, [], 20).split("\n")[1]).toBe('weekly-report  bookings.report  cron "0 9 * * 1" in Europe/Berlin');
    expect(formatTable(header, rows, ["WHEN"]).split("\n")[1]).toBe('weekly-report  bookings.report  cron "0 9 * * 1" in Europe/Berlin'); // not a terminal
  });
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
