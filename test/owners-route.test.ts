// Where a client's calls go after an owner failure (sdk/ts/src/owners.ts): the next owner after one
// lost or unreachable, the leader a standby names, except the owner just lost, which a standby
// about to take over still names for a while. Fake clock; no owners.

import type { Transport } from "@connectrpc/connect";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Owners } from "../sdk/ts/src/owners.js";

const owners = () => new Owners(["http://a:1", "http://b:2"], () => ({}) as Transport, 15_000);

afterEach(() => vi.useRealTimers());

describe("a client's owners after a failure", () => {
  it("keeps a standby that names the leader just lost, for 5 s; then follows its pointer again", () => {
    vi.useFakeTimers({ now: Date.UTC(2026, 0, 1) });
    const o = owners();
    o.route("http://a:1", { kind: "lost" }); // the leader froze: its ping went unanswered
    expect(o.pick().url).toBe("http://b:2");
    o.route("http://b:2", { kind: "standby", leader: "http://a:1/" }); // its lease has not lapsed yet
    expect(o.pick().url).toBe("http://b:2");
    vi.setSystemTime(Date.UTC(2026, 0, 1) + 5_001);
    o.route("http://b:2", { kind: "standby", leader: "http://a:1" });
    expect(o.pick().url).toBe("http://a:1");
  });

  it("follows a standby's pointer to a leader no call lost, and moves past one unreachable", () => {
    const o = owners();
    o.route("http://a:1", { kind: "standby", leader: "http://b:2" });
    expect(o.pick().url).toBe("http://b:2");
    o.route("http://b:2", { kind: "unreached" });
    expect(o.pick().url).toBe("http://a:1");
    o.route("http://a:1", { kind: "standby", leader: "http://c:3" }); // a leader not given: added
    expect(o.pick().url).toBe("http://c:3");
  });
});
