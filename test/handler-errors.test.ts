// What a handler threw, as the TypeScript executor answers it and logs it (sdk/ts/src/handler-errors.ts).
import { describe, expect, it } from "vitest";
import { handlerError, loggedError } from "../sdk/ts/src/handler-errors.js";

describe("a handler's error", () => {
  it("is an Error's message, a string as it is, another value as JSON (not [object Object]), else as String gives it", () => {
    expect(handlerError(new Error("disk full"))).toBe("disk full");
    expect(handlerError("plain")).toBe("plain");
    expect(handlerError({ weird: true })).toBe('{"weird":true}');
    expect(handlerError(42)).toBe("42");
    expect(handlerError(undefined)).toBe("undefined");
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(handlerError(cycle)).toBe("[object Object]");
    expect(handlerError(10n)).toBe("10");
  });

  it("is cut to 2,000 characters in the executor's log line, saying how long it was", () => {
    expect(loggedError("short")).toBe("short");
    const long = "x".repeat(10_000_000);
    expect(loggedError(long)).toBe(`${"x".repeat(2_000)}… (10000000 characters)`);
  });
});
