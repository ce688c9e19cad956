// Retention rules as the owner's config and plugin manifests declare them (log/retention-rules.ts):
// checked at load (a bad rule names its field) and resolved per event type, the config's first.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../server/src/config.js";
import { configRetentionRules, eventKeyOf, keyOf, ruleFor, withEventPathKeys } from "../server/src/log/retention-rules.js";
import { compileManifest, manifestFromJson } from "../server/src/plugins/manifest.js";
import { tempDir } from "./helpers/owner.js";

const principals = [{ name: "admin", token: "admin-token-0123456789", role: "admin" }];
/** The event type the `rooms` test plugin declares. */
const rooms = { "rooms.joined": { allow: ["*"] } };

function configFile(log: unknown): string {
  const path = join(tempDir(), "config.json");
  writeFileSync(path, JSON.stringify({ principals, log }));
  return path;
}

describe("retention rules", () => {
  it("reads the config's rules and log-wide limit", () => {
    const config = loadConfig(
      configFile({
        retention: {
          rules: [
            { types: "booking.*", max_age_ms: 3_600_000 },
            { types: "rooms.updated", keep: "latest_per_key", key: "data._id" },
          ],
          max_bytes: 1_000_000,
          warn_bytes: 800_000,
        },
      }),
    );
    const rules = configRetentionRules(config.log?.retention);
    expect(rules).toMatchObject([
      { types: "booking.*", maxAgeMs: 3_600_000, maxCount: 0, maxBytes: 0, latestPerKey: undefined, source: "config" },
      { types: "rooms.updated", latestPerKey: ["data", "_id"] },
    ]);
  });

  it("refuses a config rule without a limit, a key without keep, keep without a key, a bad pattern or an unknown field", () => {
    expect(() => loadConfig(configFile({ retention: { rules: [{ types: "a.b" }] } }))).toThrow(/rules\[0\]: a retention rule needs a limit/);
    expect(() => loadConfig(configFile({ retention: { rules: [{ types: "a.b", max_count: 1, key: "_id" }] } }))).toThrow(/key is only for keep/);
    expect(() => loadConfig(configFile({ retention: { rules: [{ types: "a.b", keep: "latest_per_key" }] } }))).toThrow(/needs key/);
    expect(() => loadConfig(configFile({ retention: { rules: [{ types: "a*b", max_count: 1 }] } }))).toThrow(/types must be/);
    expect(() => loadConfig(configFile({ retention: { rules: [{ types: "a.b", max_days: 1 }] } }))).toThrow(/max_days/);
    expect(() => loadConfig(configFile({ retention: { max_bytes: -1 } }))).toThrow(/max_bytes/);
  });

  it("refuses a limit written as 0 or less, naming it, in the config and in a manifest's JSON form", () => {
    for (const [field, what] of [
      ["max_count", "count"],
      ["max_age_ms", "age"],
      ["max_bytes", "size"],
    ])
      for (const value of [0, -5]) {
        expect(() => loadConfig(configFile({ retention: { rules: [{ types: "a.b", [field]: value }] } })), `${field} ${value}`).toThrow(
          `log.retention.rules[0].${field}: ${field} must be 1 or more, not ${value} (leave it out for no ${what} limit)`,
        );
        expect(() => manifestFromJson({ name: "rooms", events: rooms, retention: [{ types: "rooms.*", [field]: value }] }, "test")).toThrow(
          `retention[0].${field}: ${field} must be 1 or more, not ${value}`,
        );
      }
    expect(() => manifestFromJson({ name: "rooms", events: rooms, retention: [{ types: "rooms.*", maxCount: "0" }] }, "test")).toThrow(
      "retention[0].max_count: max_count must be 1 or more, not 0",
    );
    // Another limit beside a 0 is still a 0 written.
    expect(() => loadConfig(configFile({ retention: { rules: [{ types: "a.b", max_count: 0, max_age_ms: 1000 }] } }))).toThrow(/max_count must be 1 or more/);
  });

  it("compiles a manifest's rules and refuses bad ones with the field", () => {
    const compiled = compileManifest(
      manifestFromJson(
        { name: "rooms", events: rooms, retention: [{ types: "rooms.*", max_count: 10, keep: "RETENTION_KEEP_LATEST_PER_KEY", key: "data.room.id" }] },
        "test",
      ),
    );
    expect(compiled.retention).toEqual([
      { types: "rooms.*", maxAgeMs: 0, maxCount: 10, maxBytes: 0, latestPerKey: ["data", "room", "id"], source: "plugin rooms" },
    ]);
    expect(() => compileManifest(manifestFromJson({ name: "rooms", events: rooms, retention: [{ types: "rooms.*" }] }, "test"))).toThrow(/retention\[0\]/);
    expect(() => compileManifest(manifestFromJson({ name: "rooms", events: rooms, retention: [{ types: "Rooms", max_age_ms: 5 }] }, "test"))).toThrow(
      /retention\[0\].types/,
    );
  });

  it("refuses a manifest's rule that covers none of its own types (it would apply to nothing); a stored one loads as it was", () => {
    const withRule = (types: string) =>
      manifestFromJson({ name: "rooms", events: rooms, collections: { bookings: {} }, retention: [{ types, max_count: 1 }] }, "test");
    for (const types of ["rooms.*", "rooms.joined", "*", "bookings.updated", "bookings.*"])
      expect(compileManifest(withRule(types)).retention, types).toHaveLength(1);
    for (const types of ["action.*", "processor.failed", "other.*"])
      expect(() => compileManifest(withRule(types)), types).toThrow(
        /retention\[0\]\.types: .* covers none of the plugin's event types or its collections' change events/,
      );
    expect(compileManifest(withRule("action.*"), { stored: true }).retention).toHaveLength(1);
  });

  it("takes a compaction key as a path into the event and refuses one that is not, at config load and at registration", () => {
    const keyed = (key: string) => ({ retention: { rules: [{ types: "a.b", keep: "latest_per_key", key }] } });
    expect(configRetentionRules(loadConfig(configFile(keyed("type"))).log?.retention)[0].latestPerKey).toEqual(["type"]);
    for (const key of ["_id", "room.id", "dat._id", "data.", "data..x", "actor.in"])
      expect(() => loadConfig(configFile(keyed(key))), key).toThrow(/rules\[0\]\.key: key must be a path into the event starting with data/);
    const manifest = (key: string) =>
      manifestFromJson({ name: "rooms", events: rooms, retention: [{ types: "rooms.*", keep: "RETENTION_KEEP_LATEST_PER_KEY", key }] }, "test");
    expect(() => compileManifest(manifest("_id"))).toThrow(/retention\[0\]\.key: key must be a path into the event starting with data .*"_id"/);
    // A manifest stored by an earlier version, whose key was a bare path into the data, keeps its meaning.
    const stored = manifest("room.id");
    withEventPathKeys(stored.retention);
    expect(compileManifest(stored).retention[0].latestPerKey).toEqual(["data", "room", "id"]);
    const current = manifest("data._id");
    withEventPathKeys(current.retention);
    expect(current.retention[0].key).toBe("data._id");
  });

  it("applies the config's first matching rule before the plugin's", () => {
    const config = configRetentionRules({
      rules: [
        { types: "rooms.updated", max_count: 5 },
        { types: "*", max_age_ms: 1 },
      ],
    });
    const own = compileManifest(manifestFromJson({ name: "rooms", events: rooms, retention: [{ types: "rooms.*", max_count: 10 }] }, "test")).retention;
    expect(ruleFor("rooms.updated", config, own)?.maxCount).toBe(5);
    expect(ruleFor("rooms.created", config, own)?.maxAgeMs).toBe(1);
    expect(ruleFor("rooms.created", [], own)?.maxCount).toBe(10);
    expect(ruleFor("other.thing", [], own)).toBeUndefined();
  });

  it("reads a key at a path into the event", () => {
    const event = { id: "e-1", type: "room.set", cause: "", data: '{"room":{"id":7}}' };
    expect(eventKeyOf(event, ["data", "room", "id"])).toBe("7");
    expect(eventKeyOf(event, ["type"])).toBe('"room.set"');
    expect(eventKeyOf(event, ["data", "floor"])).toBeUndefined();
    expect(keyOf({ room: { id: 7 } }, ["room", "id"])).toBe("7");
    expect(keyOf({ room: { id: "7" } }, ["room", "id"])).toBe('"7"');
    expect(keyOf({ room: 1 }, ["room", "id"])).toBeUndefined();
  });
});
